import TonearmControlPlane

/// A level switch (a mute switch, the ignition-sense line) as commands: `on` or `off` each time
/// its debounced level changes, and once for the first level known (the one read when the line
/// was opened), so the daemon starts in the switch's state. Pure: the caller passes times in
/// seconds and ticks at `nextDeadline`.
public struct SwitchDebouncer: Sendable {
    public struct Settings: Sendable, Equatable {
        public var on: Command
        public var off: Command
        /// Seconds a new level must be stable before it counts. An ignition line that dips
        /// while the engine cranks wants more than a contact does.
        public var debounce: Double

        public init(on: Command, off: Command, debounce: Double = 0.020) {
            self.on = on
            self.off = off
            self.debounce = debounce
        }
    }

    public let settings: Settings
    private var level: DebouncedLevel
    private var now = -Double.infinity

    /// The level is unknown until the first `edge` (give it the level read at start).
    public init(_ settings: Settings) {
        self.settings = settings
        level = DebouncedLevel(debounce: settings.debounce, stable: nil)
    }

    /// The switch's level as it counts now (debounced); nil until known.
    public var isOn: Bool? { level.stable }

    public var nextDeadline: Double? { level.confirmation }

    /// The line seen at `on` at `time`: an edge, or the level read at start. Returns what fell
    /// due up to then.
    public mutating func edge(on: Bool, at time: Double) -> [Command] {
        let due = tick(at: time)
        level.edge(on, at: now)
        return due
    }

    public mutating func tick(at time: Double) -> [Command] {
        now = max(now, time)
        guard let confirmation = level.confirmation, confirmation <= now + sameTime,
            let change = level.confirm()
        else { return [] }
        return [change.level ? settings.on : settings.off]
    }
}
