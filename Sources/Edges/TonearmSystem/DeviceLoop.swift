import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// What a descriptor is waited for (`readable`, `writable`), and what poll(2) said of it.
public struct PollEvents: OptionSet, Sendable, Hashable {
    public let rawValue: Int16
    public init(rawValue: Int16) { self.rawValue = rawValue }

    public static let readable = PollEvents(rawValue: Int16(POLLIN))
    public static let writable = PollEvents(rawValue: Int16(POLLOUT))
    /// Exceptional: for /proc/self/mountinfo, the mount table changed.
    public static let priority = PollEvents(rawValue: Int16(POLLPRI))
    /// Reported whether asked for or not.
    public static let error = PollEvents(rawValue: Int16(POLLERR))
    public static let hangUp = PollEvents(rawValue: Int16(POLLHUP))
    /// The descriptor is not open.
    public static let invalid = PollEvents(rawValue: Int16(POLLNVAL))
}

/// A device thread's one wait: poll(2) over its descriptors and a wake pipe, until one of them
/// is ready, a deadline on the monotonic clock passes, or another thread calls `wake`. GPIO
/// lines, input devices and a serial port all wait here.
public final class DevicePoll: Sendable {
    private let wakeup = Wakeup()

    public init() {}

    /// Why there is no wake pipe (the system's words); a wait then lasts at most 100 ms, so a
    /// stop is still seen.
    public var failure: String? { wakeup.failure }

    /// Makes the wait in progress, or the next one, return at once.
    public func wake() { wakeup.post() }

    /// Waits for `devices` until `deadline` (nil: no deadline) and returns what each reported,
    /// in order; all empty when woken or when the deadline passed. A signal ends the wait
    /// early, like a wake-up.
    public func wait(for devices: [(FileDescriptor, PollEvents)], until deadline: Double?) throws(Errno) -> [PollEvents] {
        var descriptors = [pollfd(fd: wakeup.descriptor, events: Int16(POLLIN), revents: 0)]
        for (device, events) in devices { descriptors.append(pollfd(fd: device.rawValue, events: events.rawValue, revents: 0)) }
        var timeout: Int32 = -1
        if let deadline {
            // Rounded up: waking a little early would only find nothing due and wait again.
            let milliseconds = ((deadline - monotonicSeconds()) * 1000).rounded(.up)
            timeout = Int32(max(0, min(milliseconds, 3_600_000)))
        }
        if wakeup.descriptor < 0 { timeout = timeout < 0 ? 100 : min(timeout, 100) }
        if poll(&descriptors, nfds_t(descriptors.count), timeout) < 0 {
            let error = Errno(rawValue: errno)
            guard error == .interrupted else { throw error }
            return Array(repeating: [], count: devices.count)
        }
        if descriptors[0].revents != 0 { wakeup.consume() }
        return descriptors.dropFirst().map { PollEvents(rawValue: $0.revents) }
    }
}

/// A named thread that runs one device loop until stopped. The loop looks at `isStopping`
/// after each wait; `stop` raises it, wakes the wait with `wake` and joins the thread.
///
///     let poll = DevicePoll()
///     let loop = DeviceLoop(name: "tonearm-input", wake: poll.wake) { isStopping in
///         while !isStopping() { … try poll.wait(for: devices, until: deadline) … }
///     }
///     …
///     loop.stop()
public final class DeviceLoop: Sendable {
    private final class Flag: Sendable {
        let raised = Atomic(false)
        var isRaised: Bool { raised.load(ordering: .acquiring) }
    }

    private let flag = Flag()
    private let wake: @Sendable () -> Void
    private let thread = Mutex<NamedThread?>(nil)

    /// Starts the thread `name` (15 characters at most) running `body`, which is handed a
    /// function that says whether to stop.
    public init(name: String, wake: @escaping @Sendable () -> Void, body: @escaping @Sendable (_ isStopping: @escaping @Sendable () -> Bool) -> Void) {
        self.wake = wake
        let flag = self.flag
        let started = NamedThread(name: name) { body { flag.isRaised } }
        thread.withLock { $0 = started }
    }

    public var isStopping: Bool { flag.isRaised }

    /// Raises the flag, wakes the loop and waits for its thread to end. Idempotent; called on
    /// the loop's own thread it only raises the flag.
    public func stop() {
        flag.raised.store(true, ordering: .releasing)
        wake()
        let running = thread.withLock { thread -> NamedThread? in
            guard let running = thread, !running.isCurrent else { return nil }
            thread = nil
            return running
        }
        running?.join()
    }
}
