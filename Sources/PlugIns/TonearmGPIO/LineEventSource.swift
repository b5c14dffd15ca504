/// What happened on a requested line. `line` is the line's index in the list given to
/// `LineEventSource.open`.
public enum LineEvent: Sendable, Equatable {
    /// The line went active (true) or inactive (false), active-low already applied, at `at`
    /// seconds on the source's clock (`LineEventSource.now()`).
    case edge(line: Int, active: Bool, at: Double)
    /// The line can no longer be read (its chip went away); no more events will come from it.
    case lost(line: Int, GPIOError)
}

/// Edge events on a set of GPIO lines: the seam between the controls' logic and libgpiod.
/// `LibgpiodLineEventSource` is the real one; `ScriptedLineEventSource` plays a recorded
/// timeline, on its own clock, for tests.
///
/// `open`, `wait` and `close` are called from one thread at a time; `wake` from any thread.
public protocol LineEventSource: AnyObject, Sendable {
    /// Requests each line for edge events on both edges and reads its level. Returns, per line
    /// in order, whether it is active now or why it could not be had.
    func open(_ lines: [GPIOLineSpec], consumer: String) -> [Result<Bool, GPIOError>]

    /// Seconds on the clock event times are on (CLOCK_MONOTONIC for the real lines).
    func now() -> Double

    /// Waits until an event arrives, `deadline` (on `now()`'s clock) passes or `wake()` is
    /// called, and returns the events that arrived, oldest first; nil waits without a deadline.
    func wait(until deadline: Double?) -> [LineEvent]

    /// Makes a `wait` in progress, or the next one, return at once.
    func wake()

    /// Releases every line. Events are not read after this.
    func close()
}
