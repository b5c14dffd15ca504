import TonearmControlPlane

/// A rotary encoder's two lines, A and B, as detents and commands. Pure and timeless: Gray code
/// needs no debounce, since a bouncing contact only steps back and forth between neighbours.
///
/// The lines' levels form a state AB that moves one step at a time: clockwise (A changes
/// before B) is 00 → 10 → 11 → 01 → 00. Steps are counted; a detent is reported when the
/// encoder arrives at a rest position (where it clicks into place) with the count at least
/// half a detent in one direction, and the count starts again from zero there. So:
///
/// - a contact that bounces, or a knob nudged and let back, counts nothing;
/// - a jump of two states (both lines changed between two events: a transition was missed when
///   turning fast) is ignored, not guessed at; the steps on either side of it still show the
///   direction, so the detent usually still counts, and a lost one is never counted backwards;
/// - whatever was lost, the count resynchronises at the next rest position; an encoder found
///   between rest positions at start counts from the first one it reaches.
public struct QuadratureDecoder: Sendable {
    /// State changes from one detent to the next: 4 for most mechanical encoders (a full
    /// Gray cycle per click), 2 for half-cycle ones, 1 to count every transition.
    public enum StepsPerDetent: Int, Sendable, CaseIterable {
        case one = 1, two = 2, four = 4
    }

    /// Where a 4-step encoder rests between detents: both lines inactive, both active, or
    /// whatever they read when the decoder starts (an encoder at rest), falling back to both
    /// inactive if they read differently. 2-step encoders rest at both; 1-step ones everywhere.
    public enum Rest: Sendable, Equatable {
        case initial, bothInactive, bothActive
    }

    public struct Settings: Sendable, Equatable {
        public var stepsPerDetent: StepsPerDetent
        public var clockwise: Command
        public var counterClockwise: Command
        public var rest: Rest

        public init(
            stepsPerDetent: StepsPerDetent = .four,
            clockwise: Command = .volume(.step(5)),
            counterClockwise: Command = .volume(.step(-5)),
            rest: Rest = .initial
        ) {
            self.stepsPerDetent = stepsPerDetent
            self.clockwise = clockwise
            self.counterClockwise = counterClockwise
            self.rest = rest
        }
    }

    public let settings: Settings
    private var a: Bool
    private var b: Bool
    /// Steps since the last rest position, + clockwise.
    public private(set) var count = 0
    /// For 4-step encoders, the rest state (`state` encoding).
    private let restState: Int
    /// False until the encoder has been seen at a rest position: steps before that are not
    /// counted from a known place.
    private var synchronised = false

    /// `a`, `b`: the levels read when the lines were opened.
    public init(_ settings: Settings = Settings(), a: Bool, b: Bool) {
        self.settings = settings
        self.a = a
        self.b = b
        switch settings.rest {
        case .bothInactive: restState = 0b00
        case .bothActive: restState = 0b11
        case .initial:
            let state = Self.state(a, b)
            restState = state == 0b11 ? 0b11 : 0b00
        }
        synchronised = isRest(Self.state(a, b))
    }

    /// Line A seen at `level`.
    public mutating func edge(a level: Bool) -> [Command] { commands(update(a: level, b: b)) }

    /// Line B seen at `level`.
    public mutating func edge(b level: Bool) -> [Command] { commands(update(a: a, b: level)) }

    /// Both lines' levels now; returns the detents completed, + clockwise.
    public mutating func update(a newA: Bool, b newB: Bool) -> Int {
        let from = Self.state(a, b)
        let to = Self.state(newA, newB)
        a = newA
        b = newB
        guard from != to else { return 0 }
        switch (Self.order[to] - Self.order[from] + 4) % 4 {
        case 1: count += 1
        case 3: count -= 1
        default: break  // two states apart: direction unknown, counted neither way
        }
        guard isRest(to) else { return 0 }
        guard synchronised else {
            synchronised = true
            count = 0
            return 0
        }
        let steps = settings.stepsPerDetent.rawValue
        // Half a detent or more rounds to a detent: a detent with one missed transition
        // arrives here 2 of 4 steps along.
        let detents = (abs(count) + steps / 2) / steps
        defer { count = 0 }
        return count < 0 ? -detents : detents
    }

    private func commands(_ detents: Int) -> [Command] {
        let command = detents > 0 ? settings.clockwise : settings.counterClockwise
        return Array(repeating: command, count: abs(detents))
    }

    private func isRest(_ state: Int) -> Bool {
        switch settings.stepsPerDetent {
        case .one: return true
        case .two: return state == 0b00 || state == 0b11
        case .four: return state == restState
        }
    }

    /// AB as two bits, A high.
    private static func state(_ a: Bool, _ b: Bool) -> Int { (a ? 0b10 : 0) | (b ? 0b01 : 0) }

    /// Each state's place in the clockwise cycle 00 → 10 → 11 → 01.
    private static let order = [0, 3, 1, 2]
}
