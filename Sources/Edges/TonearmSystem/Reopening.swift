/// Opening devices that may be missing or may go away (an input device, a serial port): an
/// attempt every `interval` seconds, each problem logged once rather than at every attempt,
/// and whether an open is a device's first or its return. Kept by the thread that opens;
/// times are seconds on the monotonic clock.
public struct Reopening: Sendable {
    /// What an open was.
    public enum Opened: Sendable, Equatable {
        /// The device had never been open.
        case first
        /// It had been open, then went away or could not be opened: log that it is back.
        case back
    }

    public let interval: Double
    /// When the next attempt is due.
    public private(set) var nextAttempt = -Double.infinity
    /// Per device that is not open: the problem last seen, how many attempts in a row saw it,
    /// and whether it has been logged.
    private var problems: [String: (problem: String, count: Int, logged: Bool)] = [:]
    private var everOpened: Set<String> = []

    public init(interval: Double) {
        self.interval = interval
    }

    /// "1 s", "0.25 s": for messages that say how often.
    public var intervalText: String {
        interval == interval.rounded() ? "\(Int(interval)) s" : "\(interval) s"
    }

    public func isDue(at now: Double) -> Bool { now >= nextAttempt }

    /// An attempt was made at `now` (whatever came of it): the next is an interval later.
    public mutating func attempted(at now: Double) {
        nextAttempt = now + interval
    }

    /// `device` could not be opened, for `problem` (a short key: "missing", "access", an
    /// errno). True when a log line is due: the first time the problem is seen, or, with
    /// `after` above 1, the first time it has lasted that many attempts in a row (udev gives a
    /// new node its group a moment after the kernel makes it: a refusal that lasts is worth
    /// the advice, a passing one is not).
    public mutating func failed(_ device: String, _ problem: String, after attempts: Int = 1) -> Bool {
        var entry = problems[device] ?? (problem, 0, false)
        if entry.problem != problem { entry = (problem, 0, false) }
        entry.count += 1
        let due = !entry.logged && entry.count >= attempts
        if due { entry.logged = true }
        problems[device] = entry
        return due
    }

    /// `device` opened.
    public mutating func opened(_ device: String) -> Opened {
        let back = everOpened.contains(device)
        everOpened.insert(device)
        problems[device] = nil
        return back ? .back : .first
    }

    /// An open `device` went away, which the caller logs: attempts to open it again that fail
    /// with `problem` are not logged again; the next attempt is an interval from `now`.
    public mutating func lost(_ device: String, as problem: String, at now: Double) {
        problems[device] = (problem, 1, true)
        attempted(at: now)
    }

    /// Forgets what was logged about `device`: its next problem is logged again.
    public mutating func forget(_ device: String) {
        problems[device] = nil
    }
}
