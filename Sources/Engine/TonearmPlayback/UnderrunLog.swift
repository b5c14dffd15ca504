/// Underruns come in bursts, and a line for each would flood the journal: the log gets at most
/// one line per `interval`, with how many came since the last line and the running count.
///
/// The output thread only counts them (`PlaybackEngine.underruns`); whoever reads the engine's
/// events feeds the count in here and logs what comes back.
public struct UnderrunLog: Sendable {
    public let device: String
    public let interval: Double
    private var total = 0
    private var logged = 0  // the running count at the last line
    private var lastLine = -Double.infinity

    public init(device: String, interval: Double = 1) {
        self.device = device
        self.interval = interval
    }

    /// The running count, from `PlaybackEvent.underruns`.
    public mutating func record(total: Int) { self.total = max(self.total, total) }

    /// When the next line is due, if underruns came that are not logged yet: whoever logs
    /// wakes then, not on a timer of its own.
    public var nextLineAt: Double? { total > logged ? lastLine + interval : nil }

    /// The line to log now, if underruns came since the last one and `interval` has passed.
    public mutating func line(now: Double) -> String? {
        guard total > logged, now - lastLine >= interval else { return nil }
        let new = total - logged
        let since = lastLine.isFinite ? " in the last \(Int((now - lastLine).rounded())) s" : ""
        logged = total
        lastLine = now
        return "ALSA PCM '\(device)' underran \(new == 1 ? "once" : "\(new) times")\(since) (\(total) in all)"
    }
}
