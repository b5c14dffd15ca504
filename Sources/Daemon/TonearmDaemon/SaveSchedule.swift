/// When the player's state may be written, and what to say about it: a save that fails (a full
/// SD card, a card the kernel turned read-only) is tried again after 1 s, then 2, 4 … up to
/// 60 s, never in a loop; the log hears of it once when it starts failing, once when its reason
/// changes and once when a save succeeds again. Pure: the caller passes `now` and logs the lines.
struct SaveSchedule: Equatable {
    static let firstDelay = 1.0
    static let longestDelay = 60.0

    /// Why saving fails, and since when; nil while saves succeed.
    private(set) var failure: (reason: String, since: Double)?
    /// No save is tried before this while failing.
    private(set) var retryAt: Double?
    private var delay = Self.firstDelay

    static func == (a: Self, b: Self) -> Bool {
        a.failure?.reason == b.failure?.reason && a.failure?.since == b.failure?.since && a.retryAt == b.retryAt && a.delay == b.delay
    }

    /// Whether a save may be tried at `now`: always while saves succeed; once the back-off has
    /// passed while they fail.
    func mayTry(at now: Double) -> Bool { retryAt.map { now >= $0 } ?? true }

    /// A save was handed to the writer: no retry is due until it is known how it went.
    mutating func handedOver() { retryAt = nil }

    /// A save succeeded. The line to log when saves had been failing.
    mutating func succeeded(at now: Double, directory: String) -> String? {
        defer {
            failure = nil
            retryAt = nil
            delay = Self.firstDelay
        }
        guard let failure else { return nil }
        return "the player state is saved again in \(directory) (it could not be saved for \(Self.seconds(now - failure.since)))"
    }

    /// A save failed for `reason`. The line to log when saves were succeeding or failed for
    /// another reason; nil when it says nothing new.
    mutating func failed(_ reason: String, at now: Double, directory: String) -> String? {
        let line: String? = failure?.reason == reason ? nil
            : "cannot save the player state in \(directory) (\(reason)); will retry, every \(Int(Self.longestDelay)) s at most, and say when it is saved again"
        if failure?.reason != reason { failure = (reason, failure?.since ?? now) }
        retryAt = now + delay
        delay = min(delay * 2, Self.longestDelay)
        return line
    }

    private static func seconds(_ value: Double) -> String {
        value < 60 ? "\(Int(value.rounded())) s" : "\(Int((value / 60).rounded())) min"
    }
}
