import TonearmControlPlane

/// One kind of serial display's protocol, as pure functions of states, times and bytes: no
/// file descriptor, no clock of its own. `SerialDisplay`'s thread owns one and does the I/O;
/// tests drive one directly.
///
/// Each shows a part of the control plane's `ControlState`: Now Playing, the transport, the
/// queue position, volume and mute, and which commands are enabled. Times (`now`) are seconds
/// on the clock of `NowPlayingInfo.timestamp` (CLOCK_MONOTONIC in the daemon).
public protocol SerialDisplayDriver: Sendable {
    /// The bytes that bring a display that knows nothing (just opened, or just rebooted) to
    /// `state`. Forgets what was sent before.
    mutating func start(_ state: ControlState, now: Double) -> [UInt8]

    /// The bytes that change what the display shows to `state`: only what changed, nothing
    /// when nothing did.
    mutating func update(_ state: ControlState, now: Double) -> [UInt8]

    /// When the display must be redrawn although the state has not changed (an LCD's clock
    /// and scrolling), or nil. Always later than the `now` of the last call.
    var nextTick: Double? { get }

    /// The redraw due at `now`: only what changed.
    mutating func tick(now: Double) -> [UInt8]

    /// What the display sent, in order. Any bytes at all are accepted; a partial message is
    /// kept for the next call, within a few hundred bytes.
    mutating func receive(_ bytes: UnsafeRawBufferPointer) -> [DisplayInput]
}

extension SerialDisplayDriver {
    /// `receive` for an array (tests).
    public mutating func receive(_ bytes: [UInt8]) -> [DisplayInput] {
        bytes.withUnsafeBytes { receive($0) }
    }
}

/// What a display's bytes meant.
public enum DisplayInput: Equatable, Sendable {
    /// A command for the daemon.
    case command(Command)
    /// Bytes to send back (an error line, `pong`). Best effort: `SerialDisplay` sends a few a
    /// second at most, and none while the display is not reading.
    case reply([UInt8])
    /// The display lost what it showed (it rebooted, or loaded another page): send the whole
    /// state again.
    case resend
}

// MARK: Formatting shared by the drivers

/// "1:05", "12:34", "1:02:03": whole seconds, rounded down.
func clockText(_ seconds: Double) -> String {
    let total = seconds.isFinite ? max(0, Int(seconds.rounded(.down))) : 0
    let (hours, minutes, secs) = (total / 3600, total / 60 % 60, total % 60)
    let ss = secs < 10 ? "0\(secs)" : "\(secs)"
    if hours > 0 {
        let mm = minutes < 10 ? "0\(minutes)" : "\(minutes)"
        return "\(hours):\(mm):\(ss)"
    }
    return "\(minutes):\(ss)"
}

/// "12.500", "0.000", "-1.250": exactly three decimals, so a display without floating point
/// reads milliseconds by dropping the dot.
func fixed3(_ value: Double) -> String {
    let millis = value.isFinite ? Int((value * 1000).rounded()) : 0
    let magnitude = millis.magnitude
    let fraction = magnitude % 1000
    let digits = fraction < 10 ? "00\(fraction)" : fraction < 100 ? "0\(fraction)" : "\(fraction)"
    return "\(millis < 0 ? "-" : "")\(magnitude / 1000).\(digits)"
}

/// Whether the display's clock, last set from `sent` at `sentAt`, still agrees with `state`
/// at `now`: same rate and duration, and positions within a quarter of a second (a state
/// published again on the same trajectory is not a seek).
func sameClock(_ sent: ControlState, _ state: ControlState, now: Double) -> Bool {
    let (old, new) = (sent.nowPlaying, state.nowPlaying)
    return old.rate == new.rate && old.duration == new.duration && abs(old.elapsed(at: now) - new.elapsed(at: now)) < 0.25
}

extension ControlState {
    /// The display keeps the clock it was last sent: a state on the same trajectory keeps that
    /// anchor rather than the new one (so a drift never adds up to a jump).
    func keepingClock(of sent: ControlState?, now: Double) -> ControlState {
        guard let sent, sameClock(sent, self, now: now) else { return self }
        var kept = self
        (kept.nowPlaying.elapsed, kept.nowPlaying.timestamp) = (sent.nowPlaying.elapsed, sent.nowPlaying.timestamp)
        return kept
    }

    /// Whether the command a control sends is enabled; commands without a name (none a board
    /// sends) count as enabled.
    func isEnabled(_ command: Command) -> Bool { command.name.map(isEnabled) ?? true }
}
