import Synchronization

/// A thread's sleep, ended by the threads that give it work.
///
/// The sleeper says what it waits for, then checks once more that it still has to (`ready`),
/// then sleeps on its wake-up pipe. Another thread that has just made work rings: a post,
/// but only when the sleeper is asleep and, when it waits for an amount — samples of room in a
/// producer's ring, samples of audio in the output's — when there is as much, so a thread that
/// writes or reads a ring every few milliseconds makes no system call for it while the other
/// side is awake or waits for more. A full fence on each side orders "I sleep" against "is it
/// asleep?": either the sleeper sees the work, or the ringer sees the sleeper.
///
/// The one doorbell: the engine's threads sleep by one, and the daemon's event loop watches
/// one (TonearmNetwork's `watch(on:)`) that the engine's threads, the library and the state
/// writer wake (`wake()`) when they have something to tell.
public final class Doorbell: Sendable {
    private let wakeup = Wakeup()
    /// 0 while awake; asleep, the samples it waits for (`anything`: it waits for something
    /// else, which only `ring()` and `wake()` end).
    private let awaited = Atomic<Int>(0)
    public static let anything = Int.max

    public init() {}

    /// Sleeps until woken or rung, unless `ready` (asked after saying it sleeps) is true.
    /// `amount`: the samples that end the sleep, for `ring(having:)`.
    public func sleep(awaiting amount: Int = anything, unless ready: () -> Bool) {
        awaited.store(max(1, amount), ordering: .sequentiallyConsistent)
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if !ready() { wakeup.wait() }
        awaited.store(0, ordering: .relaxed)
    }

    /// The same, for at most `milliseconds`: for a thread that watches something nobody rings
    /// for (a fade reaching 0), or that retries something on a timer.
    public func sleep(milliseconds: Int, awaiting amount: Int = anything, unless ready: () -> Bool) {
        awaited.store(max(1, amount), ordering: .sequentiallyConsistent)
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if !ready() { wakeup.wait(milliseconds: milliseconds) }
        awaited.store(0, ordering: .relaxed)
    }

    /// Wakes the thread whatever it waits for, asleep or about to be: for commands.
    public func wake() { wakeup.post() }

    /// What `wake()` makes readable, for a thread that waits in a poll of its own beside other
    /// descriptors (the output thread, on the device); it calls `consume()` once it finds it so.
    public var descriptor: Int32 { wakeup.descriptor }
    /// Why there is no wake-up pipe; nil when there is one (`Wakeup.failure`).
    public var failure: String? { wakeup.failure }
    public func consume() { wakeup.consume() }

    /// Wakes the thread if it sleeps. No system call when it does not.
    public func ring() {
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if awaited.load(ordering: .relaxed) != 0 { wakeup.post() }
    }

    /// Wakes the thread if it sleeps waiting for at most `amount` samples.
    public func ring(having amount: Int) {
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        let wanted = awaited.load(ordering: .relaxed)
        if wanted != 0 && wanted <= amount { wakeup.post() }
    }
}
