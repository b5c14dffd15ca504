import Synchronization
import TonearmSystem

/// GPIO lines that play a recorded timeline on a clock of their own, as fast as they are read:
/// `wait(until:)` jumps the clock to the next edge or to the deadline, whichever is first, so
/// long presses and repeats are decided by the timeline's times and never by sleeping. Chips,
/// line names and the errors for missing ones behave as libgpiod's do.
///
/// Edges are physical levels (`high`), as a logic analyser records them; active-low is
/// applied here, as the kernel does. The script ends at `end`: a wait that would go past it
/// reports `finished` and blocks until woken.
public final class ScriptedLineEventSource: LineEventSource, Sendable {
    public struct Chip: Sendable {
        public var name: String
        public var label: String
        public var lineCount: Int
        /// Line names, by offset ("GPIO17": 17).
        public var lineNames: [String: Int]

        public init(name: String = "gpiochip0", label: String = "scripted", lineCount: Int = 54, lineNames: [String: Int] = [:]) {
            self.name = name
            self.label = label
            self.lineCount = lineCount
            self.lineNames = lineNames
        }
    }

    /// A line on a scripted chip, by offset.
    public struct Address: Sendable, Hashable {
        public var chip: String
        public var offset: Int

        public init(chip: String = "gpiochip0", _ offset: Int) {
            self.chip = chip
            self.offset = offset
        }
    }

    public struct Edge: Sendable {
        public var line: Address
        public var high: Bool
        public var at: Double

        public init(_ line: Address, high: Bool, at: Double) {
            self.line = line
            self.high = high
            self.at = at
        }
    }

    /// A line that stops working at `at`, as when a USB GPIO expander is unplugged.
    public struct Loss: Sendable {
        public var line: Address
        public var at: Double
        public var reason: String

        public init(_ line: Address, at: Double, reason: String = "the line stopped reporting events") {
            self.line = line
            self.at = at
            self.reason = reason
        }
    }

    private enum Item: Sendable {
        case edge(Edge)
        case loss(Loss)

        var at: Double {
            switch self {
            case .edge(let edge): return edge.at
            case .loss(let loss): return loss.at
            }
        }

        var line: Address {
            switch self {
            case .edge(let edge): return edge.line
            case .loss(let loss): return loss.line
            }
        }
    }

    private struct State {
        var now: Double
        /// Opened lines by address, with the index `open` gave them and how they are requested.
        var opened: [Address: (index: Int, spec: GPIOLineSpec)] = [:]
        var pending: [Item]
        var woken = false
        var finished = false
        var closed = false
    }

    public let chips: [Chip]
    /// Physical levels when the lines are opened; lines not listed read low.
    public let initial: [Address: Bool]
    public let end: Double
    private let state: Mutex<State>
    private let wakeup = Wakeup()
    private let finishedSignal = Wakeup()

    public init(
        chips: [Chip] = [Chip()], initial: [Address: Bool] = [:], edges: [Edge], losses: [Loss] = [],
        start: Double = 0, end: Double
    ) {
        self.chips = chips
        self.initial = initial
        self.end = end
        // Stable: edges at the same time stay in the order given; losses come after them.
        let items = edges.map(Item.edge) + losses.map(Item.loss)
        let ordered = items.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
        state = Mutex(State(now: start, pending: ordered))
    }

    public func open(_ lines: [GPIOLineSpec], consumer: String) -> [Result<Bool, GPIOError>] {
        lines.enumerated().map { index, spec in
            let lineName = spec.line.description
            guard let chip = chips.first(where: { [$0.name, "/dev/" + $0.name, $0.label].contains(spec.chip) }) else {
                return .failure(GPIOError(chip: spec.chip, line: lineName, reason: GPIOError.chipReason(errno: 0)))
            }
            let offset: Int
            switch spec.line {
            case .offset(let number):
                guard number >= 0 && number < chip.lineCount else {
                    return .failure(GPIOError(chip: spec.chip, line: lineName, reason: "no such line (the chip has \(chip.lineCount))"))
                }
                offset = number
            case .named(let name):
                guard let number = chip.lineNames[name] else {
                    return .failure(GPIOError(chip: spec.chip, line: lineName, reason: "no line of that name"))
                }
                offset = number
            }
            let address = Address(chip: chip.name, offset)
            return state.withLock { state -> Result<Bool, GPIOError> in
                if state.opened[address] != nil {
                    return .failure(GPIOError(chip: spec.chip, line: lineName, reason: "already in use by '\(consumer)'"))
                }
                state.opened[address] = (index, spec)
                return .success((initial[address] ?? false) != spec.activeLow)
            }
        }
    }

    public func now() -> Double { state.withLock { $0.now } }

    public func wait(until deadline: Double?) -> [LineEvent] {
        enum Step { case events([LineEvent]), block }
        let step = state.withLock { state -> Step in
            if state.woken || state.closed {
                state.woken = false
                return .events([])
            }
            // Edges of lines nobody opened are not seen, as on a real chip.
            state.pending.removeAll { state.opened[$0.line] == nil }
            let target = deadline ?? .infinity
            if let next = state.pending.first, next.at <= target, next.at <= end {
                state.now = max(state.now, next.at)
                var events: [LineEvent] = []
                while let item = state.pending.first, item.at <= state.now {
                    state.pending.removeFirst()
                    guard let line = state.opened[item.line] else { continue }
                    switch item {
                    case .edge(let edge):
                        events.append(.edge(line: line.index, active: edge.high != line.spec.activeLow, at: edge.at))
                    case .loss(let loss):
                        let error = GPIOError(chip: line.spec.chip, line: line.spec.line.description, reason: loss.reason)
                        events.append(.lost(line: line.index, error))
                        state.opened[item.line] = nil
                    }
                }
                return .events(events)
            }
            if target <= end {
                state.now = max(state.now, target)
                return .events([])
            }
            state.now = max(state.now, end)
            state.finished = true
            return .block
        }
        switch step {
        case .events(let events):
            return events
        case .block:
            finishedSignal.post()
            while !state.withLock({ $0.woken || $0.closed }) { wakeup.wait(milliseconds: 100) }
            state.withLock { $0.woken = false }
            return []
        }
    }

    public func wake() {
        state.withLock { $0.woken = true }
        wakeup.post()
    }

    public func close() {
        state.withLock {
            $0.closed = true
            $0.opened = [:]
        }
        wakeup.post()
    }

    /// Whether the script has been played to its end (everything up to `end` has been read
    /// and the reader waits beyond it); waits up to `timeout` seconds of real time for it.
    public func waitUntilFinished(timeout: Double = 5) -> Bool {
        let limit = monotonicSeconds() + timeout
        while !state.withLock({ $0.finished }) {
            guard monotonicSeconds() < limit else { return false }
            finishedSignal.wait(milliseconds: 50)
        }
        return true
    }

    /// Whether any line is open (false again after `close`).
    public var isOpen: Bool { state.withLock { !$0.opened.isEmpty } }
}
