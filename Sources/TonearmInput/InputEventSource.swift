#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import TonearmBoard
import TonearmSystem

/// Keys of a remote, a keyboard or a steering-wheel adapter, read as Linux input events and
/// sent as board commands: one `[[input]]` of a profile.
///
/// `path` is a device (`/dev/input/event3`), a FIFO carrying the same records, or a glob(3)
/// pattern (`/dev/input/by-id/*-event-kbd`). A pattern is read on every device it matches:
/// one USB remote or keyboard often shows up as several event devices (its media keys on a
/// second "consumer control" interface), and reading only the first would lose those keys.
///
/// Devices come and go: one missing at start, or one that goes away (unplugged, ENODEV, a
/// FIFO whose writer closed it), is logged once and tried again every `retryInterval`
/// seconds, a pattern being expanded again each time, so new matches are picked up too. A
/// scan (fast-forward, rewind) held when its device goes is ended. Nothing here stops the
/// daemon.
public final class InputEventSource: BoardCommandSource {
    /// "input /dev/input/event3".
    public let name: String
    public let path: String
    public let keyMap: InputKeyMap
    /// Seconds between attempts to open a device that is missing or went away.
    public let retryInterval: Double
    /// Each device is taken for this source alone (EVIOCGRAB) when opened.
    public let grab: Bool

    private struct Running {
        let thread: NamedThread
        let signal: StopSignal
    }

    private let running = Mutex<Running?>(nil)

    public init(path: String, keyMap: InputKeyMap = InputKeyMap(), retryInterval: Double = 0.5, grab: Bool = false) {
        self.name = "input \(path)"
        self.path = path
        self.keyMap = keyMap
        self.retryInterval = retryInterval
        self.grab = grab
    }

    /// A profile's `[[input]]`: its `path` and its `map` of key names or decimal codes to
    /// commands, over the default media keys (see `InputKeyMap.init(profile:)`); and `grab`.
    public convenience init(
        path: String, map: [String: BoardCommand], retryInterval: Double = 0.5, grab: Bool = false
    ) throws(InputError) {
        self.init(path: path, keyMap: try InputKeyMap(profile: map), retryInterval: retryInterval, grab: grab)
    }

    deinit { stop() }

    /// Starts the "tonearm-input" thread. `send` and `log` are called on it. A second start
    /// while running does nothing.
    public func start(send: @escaping @Sendable (BoardCommand) -> Void, log: @escaping @Sendable (BoardLogLevel, String) -> Void) {
        running.withLock { running in
            guard running == nil else { return }
            let signal = StopSignal()
            if let failure = signal.pipe.failure {
                log(.warning, "\(name): no wake-up pipe (\(failure)); stopping may take 100 ms")
            }
            let loop = InputDeviceLoop(
                pattern: path, keyMap: keyMap, retryInterval: retryInterval, grab: grab, signal: signal, send: send,
                log: log)
            running = Running(thread: NamedThread(name: "tonearm-input") { loop.run() }, signal: signal)
        }
    }

    /// Wakes the thread, closes the devices and waits for it. Idempotent; safe from `send`.
    public func stop() {
        guard let stopped = running.withLock({ running in defer { running = nil }; return running }) else { return }
        stopped.signal.raise()
        if !stopped.thread.isCurrent { stopped.thread.join() }
    }
}

/// Tells the input thread to finish: a flag, and a pipe its `poll` watches so it wakes at once.
final class StopSignal: Sendable {
    private let raised = Atomic<Bool>(false)
    /// Its descriptor is -1 when no pipe could be made; the thread then looks at the flag
    /// every 100 ms.
    let pipe = WakePipe()

    var isRaised: Bool { raised.load(ordering: .acquiring) }

    func raise() {
        raised.store(true, ordering: .releasing)
        pipe.wake()
    }
}
