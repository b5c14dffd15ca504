import Synchronization
import TonearmLibrary
import TonearmSystem

/// Writes the player's state off the command path. The daemon hands over each new record and
/// answers its command at once; a thread of its own ("state") writes the newest record
/// `settle` seconds after the first one it has not written (a burst of 100 volume steps is one
/// save, and a steady stream of changes is saved every `settle` seconds), or at once when the
/// record is urgent (the ignition went off). How each save went comes back as an `Outcome`,
/// announced through `notify`: the daemon takes them (`takeOutcomes`) with the engine's events.
///
/// The thread starts with the first record and waits without a timeout while it has none: an
/// idle writer makes no context switch.
final class StateWriter: Sendable {
    struct Outcome: Sendable, Equatable {
        /// When the record was written, or the write failed (monotonic seconds).
        let at: Double
        /// Why it could not be written; nil when it was.
        let failure: String?
    }

    private struct Pending {
        var record: PlayerStateRecord?
        /// When the pending record is written.
        var due = Double.infinity
        var outcomes: [Outcome] = []
        var writing = false
        var started = false
        var finished = false
        var thread: NamedThread?
    }

    let settle: Double
    private let write: @Sendable (PlayerStateRecord) throws(LibraryError) -> Void
    private let notify: @Sendable () -> Void
    private let pending = Mutex(Pending())
    private let wakeup = Wakeup()
    /// Rung by the writer when a write ends, for `finish`, which waits for it.
    private let written = Wakeup()

    init(settle: Double, write: @escaping @Sendable (PlayerStateRecord) throws(LibraryError) -> Void,
         notify: @escaping @Sendable () -> Void) {
        self.settle = settle
        self.write = write
        self.notify = notify
    }

    /// Writes `store`'s records; `store` is used by the writer alone from now on.
    convenience init(store: StateStore, settle: Double, notify: @escaping @Sendable () -> Void) {
        let box = UncheckedStore(store)
        self.init(settle: settle, write: { (record) throws(LibraryError) in try box.store.save(record) }, notify: notify)
    }

    /// The newest state, in place of any not yet written; `urgent`: written now.
    func submit(_ record: PlayerStateRecord, urgent: Bool = false, now: Double = monotonicSeconds()) {
        let start = pending.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.record = record
            state.due = urgent ? now : min(state.due, now + settle)
            defer { state.started = true }
            return !state.started
        }
        if start {
            let thread = NamedThread(name: "state") { [self] in run() }
            pending.withLock { $0.thread = thread }
        } else {
            wakeup.post()
        }
    }

    /// How the writes since the last call went, oldest first.
    func takeOutcomes() -> [Outcome] {
        pending.withLock { state in
            defer { state.outcomes = [] }
            return state.outcomes
        }
    }

    /// Whether `finish` was called: nothing more is written after its record.
    var isFinishing: Bool { pending.withLock { $0.finished } }

    /// The way out: waits for a write under way, writes `record` on the caller's thread, and
    /// ends the writer. Returns how every write since the last `takeOutcomes` went, this one last.
    func finish(_ record: PlayerStateRecord) -> [Outcome] {
        while pending.withLock({ state -> Bool in
            state.finished = true
            state.record = nil
            return state.writing
        }) {
            written.wait()
        }
        wakeup.post()
        pending.withLock { $0.thread }?.join()
        let outcome = attempt(record)
        return pending.withLock { state in
            defer { state.outcomes = [] }
            return state.outcomes + [outcome]
        }
    }

    private func run() {
        while true {
            let next = pending.withLock { state -> (record: PlayerStateRecord?, waitMilliseconds: Int?, done: Bool) in
                if state.finished { return (nil, nil, true) }
                guard let record = state.record else { return (nil, nil, false) }
                let now = monotonicSeconds()
                guard now >= state.due else { return (nil, Int(((state.due - now) * 1000).rounded(.up)), false) }
                state.record = nil
                state.due = .infinity
                state.writing = true
                return (record, nil, false)
            }
            if next.done { return }
            guard let record = next.record else {
                if let milliseconds = next.waitMilliseconds { wakeup.wait(milliseconds: milliseconds) } else { wakeup.wait() }
                continue
            }
            let outcome = attempt(record)
            pending.withLock { state in
                state.outcomes.append(outcome)
                state.writing = false
            }
            written.post()
            notify()
        }
    }

    private func attempt(_ record: PlayerStateRecord) -> Outcome {
        do throws(LibraryError) {
            try write(record)
            return Outcome(at: monotonicSeconds(), failure: nil)
        } catch {
            let reason: String
            if case .cannotSaveState(_, let cause) = error { reason = cause } else { reason = error.description }
            return Outcome(at: monotonicSeconds(), failure: reason)
        }
    }
}

/// A `StateStore` handed to the writer, which is then its only user.
private final class UncheckedStore: @unchecked Sendable {
    let store: StateStore
    init(_ store: StateStore) { self.store = store }
}
