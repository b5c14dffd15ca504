import TonearmControlPlane

/// Turns one push button's edges into commands: debounce, then press, long press or
/// hold-to-repeat. Pure: the caller passes the time of every edge and tick, in seconds, and
/// ticks again at `nextDeadline`.
///
/// Times are measured on confirmed levels: a press counts from the moment its level had been
/// stable for `debounce` (so from the last bounce), a release likewise. A press therefore
/// lasts from the last bounce of the press to the last bounce of the release, and every
/// command is `debounce` later than the edge that caused it.
///
/// - No hold behaviour: the press command is sent on press.
/// - Long press: released before the threshold, the press command is sent on release; held
///   for the threshold (exactly that long counts), the long command is sent once, at the
///   threshold, and the release sends nothing — unless the long command is a held command
///   (a scan begun, such as `seekForward begin`), whose `end` the release then sends.
/// - Repeat (volume): the press command on press, again after `delay`, then every `interval`
///   while held. Late ticks catch up, so the count depends only on how long it was held.
///
/// A button found pressed when the recognizer starts sends nothing until it has been released.
public struct ButtonRecognizer: Sendable {
    public struct Settings: Sendable, Equatable {
        /// What holding the button does besides pressing it. A button either repeats or has a
        /// long press, never both.
        public enum Hold: Sendable, Equatable {
            case none
            /// `command` once the button has been held `after` seconds.
            case longPress(Command, after: Double = 0.600)
            /// The press command again `delay` seconds after the press, then every `interval`
            /// (at least a millisecond).
            case repeats(delay: Double = 0.4, interval: Double = 0.1)
        }

        public var press: Command
        public var hold: Hold
        /// Seconds a new level must be stable before it counts.
        public var debounce: Double

        public init(press: Command, hold: Hold = .none, debounce: Double = 0.020) {
            self.press = press
            self.hold = hold
            self.debounce = debounce
        }
    }

    private enum Gesture: Sendable {
        case released
        /// Pressed, long press possible, since the press counted.
        case pressed(since: Double)
        /// Repeating: `sent` repeats so far (the press itself not counted).
        case repeating(since: Double, sent: Int)
        /// The long command has been sent.
        case longSent
        /// Nothing more until release (pressed with no hold behaviour, or found pressed).
        case held
    }

    public let settings: Settings
    private var level: DebouncedLevel
    private var gesture: Gesture
    private var now = -Double.infinity

    /// `pressed`: the level read when the line was opened (true = pressed, after active-low).
    public init(_ settings: Settings, pressed: Bool = false) {
        self.settings = settings
        level = DebouncedLevel(debounce: settings.debounce, stable: pressed)
        gesture = pressed ? .held : .released
    }

    /// The button's level as it counts now (debounced).
    public var isPressed: Bool { level.stable ?? false }

    /// When `tick` (or an edge) next has something to decide, or nil if nothing until an edge.
    public var nextDeadline: Double? {
        switch (level.confirmation, holdDeadline) {
        case let (confirm?, hold?): return min(confirm, hold)
        case let (confirm, hold): return confirm ?? hold
        }
    }

    /// An edge to `pressed` at `time` (levels already corrected for active-low). Returns what
    /// fell due up to this edge.
    public mutating func edge(pressed: Bool, at time: Double) -> [Command] {
        let due = tick(at: time)
        level.edge(pressed, at: now)
        return due
    }

    /// Everything due by `time`, in order. Times earlier than one already seen count as that one.
    public mutating func tick(at time: Double) -> [Command] {
        now = max(now, time)
        var due: [Command] = []
        while true {
            let confirm = level.confirmation
            // A long press or repeat due at the same time as a release still happens: "held
            // that long" includes exactly that long.
            if let hold = holdDeadline, hold <= now + sameTime, hold <= (confirm ?? .infinity) + sameTime {
                fireHold(into: &due)
            } else if let confirm, confirm <= now + sameTime, let change = level.confirm() {
                levelChanged(to: change.level, at: change.at, into: &due)
            } else {
                return due
            }
        }
    }

    private var holdDeadline: Double? {
        switch (gesture, settings.hold) {
        case let (.pressed(since), .longPress(_, after)):
            return since + after
        case let (.repeating(since, sent), .repeats(delay, interval)):
            // Multiplied, not summed, so long holds do not drift.
            return since + delay + Double(sent) * max(interval, 0.001)
        default:
            return nil
        }
    }

    private mutating func fireHold(into due: inout [Command]) {
        switch (gesture, settings.hold) {
        case let (.pressed, .longPress(command, _)):
            due.append(command)
            gesture = .longSent
        case let (.repeating(since, sent), .repeats):
            due.append(settings.press)
            gesture = .repeating(since: since, sent: sent + 1)
        default:
            break
        }
    }

    private mutating func levelChanged(to pressed: Bool, at time: Double, into due: inout [Command]) {
        if pressed {
            guard case .released = gesture else { return }
            switch settings.hold {
            case .none:
                due.append(settings.press)
                gesture = .held
            case .longPress:
                gesture = .pressed(since: time)
            case .repeats:
                due.append(settings.press)
                gesture = .repeating(since: time, sent: 0)
            }
        } else {
            switch gesture {
            case .pressed:
                due.append(settings.press)
            case .longSent:
                if case let .longPress(command, _) = settings.hold, command.isScanBegin {
                    due.append(command.scanning(.end))
                }
            case .released, .repeating, .held:
                break
            }
            gesture = .released
        }
    }
}

extension Command {
    /// `seekForward begin` or `seekBackward begin`: a scan that a release ends.
    var isScanBegin: Bool {
        guard case .remote(let request) = self else { return false }
        return request.scanning == .begin
    }
}
