import Synchronization
import TonearmAudio

/// What the output thread tells the control plane, in the order it happened. `nextEvents`
/// turns them into `PlaybackEvent`s.
enum OutputEvent: Equatable {
    /// The real-time priority, or the locking of the render path's memory, was refused (errno).
    case realtimeRefused(Int32)
    case memoryLockRefused(Int32)
    /// The device cannot take back what it has not played: it is opened with the small buffer.
    case rewindRefused
    /// The output stopped being heard; why is handed over in `PlaybackEngine.interruptions`.
    case interrupted
    /// The device is open again after an interruption.
    case reopened
    /// The device ran dry and was started again.
    case underrun
    /// Frames flow to the device again after an interruption.
    case resumed

    /// Two words: the kind, and the errno where there is one.
    fileprivate var words: (Int32, Int32) {
        switch self {
        case .realtimeRefused(let code): (0, code)
        case .memoryLockRefused(let code): (1, code)
        case .rewindRefused: (2, 0)
        case .interrupted: (3, 0)
        case .reopened: (4, 0)
        case .underrun: (5, 0)
        case .resumed: (6, 0)
        }
    }

    fileprivate init?(kind: Int32, code: Int32) {
        switch kind {
        case 0: self = .realtimeRefused(code)
        case 1: self = .memoryLockRefused(code)
        case 2: self = .rewindRefused
        case 3: self = .interrupted
        case 4: self = .reopened
        case 5: self = .underrun
        case 6: self = .resumed
        default: return nil
        }
    }
}

/// Output thread → control plane: the output's events in order, without a lock, in the one ring
/// type there is (two words an event). Neither side allocates or waits. An event that finds the
/// queue full — the control plane has not collected for thousands of them — is dropped and
/// counted (`takeLost`); the control plane then reads the output's state instead.
final class OutputEventQueue: @unchecked Sendable {
    private let ring: SPSCRing
    /// The output thread's copy of the event it pushes, and the control plane's of the one it
    /// pops.
    private let pushed = UnsafeMutablePointer<Int32>.allocate(capacity: 2)
    private let popped = UnsafeMutablePointer<Int32>.allocate(capacity: 2)
    private let lost = Atomic<Int>(0)

    init(events: Int) { ring = SPSCRing(capacity: 2 * events) }

    deinit {
        pushed.deallocate()
        popped.deallocate()
    }

    /// Output thread: false (and counted) when the queue is full.
    @discardableResult
    func push(_ event: OutputEvent) -> Bool {
        (pushed[0], pushed[1]) = event.words
        guard ring.write(UnsafeBufferPointer(start: pushed, count: 2), frameSize: 2) == 2 else {
            lost.add(1, ordering: .relaxed)
            return false
        }
        return true
    }

    /// Control plane: the oldest event not yet taken.
    func pop() -> OutputEvent? {
        guard ring.read(into: popped, count: 2) == 2 else { return nil }
        return OutputEvent(kind: popped[0], code: popped[1])
    }

    /// Control plane: how many events were dropped since the last call.
    func takeLost() -> Int { lost.exchange(0, ordering: .relaxed) }
}
