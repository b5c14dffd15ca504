#if canImport(Glibc)
import Glibc
import Synchronization
#endif

/// A named POSIX thread running one closure. Threads are named by role (decoder, output), so
/// `top -H` and a debugger show where each byte of audio is.
public final class NamedThread: @unchecked Sendable {
    private var thread = pthread_t()

    private final class Box {
        let name: String
        let body: () -> Void
        init(name: String, body: @escaping () -> Void) {
            self.name = name
            self.body = body
        }
    }

    public init(name: String, body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Box(name: name, body: body)).toOpaque()
        let rc = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            nameCurrentThread(box.name)
            box.body()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create failed: \(rc)")
    }

    /// True on the thread itself.
    public var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }

    public func join() { pthread_join(thread, nil) }
}

/// Puts the calling thread in SCHED_IDLE: it runs only when no other thread wants the CPU, and
/// with no I/O priority of its own set, the kernel gives a SCHED_IDLE thread the idle I/O class
/// too. Returns 0 or the error number.
public func requestIdlePriority() -> Int32 {
    var param = sched_param(sched_priority: 0)
    let schedIdle: Int32 = 5  // SCHED_IDLE, which Glibc's module leaves out (it is GNU-only)
    return sched_setscheduler(0, schedIdle, &param) == 0 ? 0 : errno
}

/// Asks for SCHED_FIFO on the calling thread; returns 0 or the error number.
public func requestRealtimePriority(_ priority: Int32) -> Int32 {
    var param = sched_param()
    param.sched_priority = priority
    return pthread_setschedparam(pthread_self(), SCHED_FIFO, &param)
}

/// Locks memory the render path touches, so it never page-faults, or says why it was
/// refused (RLIMIT_MEMLOCK). Only these regions are locked, not the whole process, which
/// keeps the resident set small. Returns 0 or the error number.
public func lockRegions(_ regions: [UnsafeMutableRawBufferPointer]) -> Int32 {
    for region in regions where region.count > 0 {
        if mlock(region.baseAddress, region.count) != 0 { return errno }
    }
    return 0
}

public func sleepMilliseconds(_ ms: Int) {
    var request = timespec(tv_sec: ms / 1000, tv_nsec: (ms % 1000) * 1_000_000)
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}

/// Seconds on the monotonic clock.
public func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Names the calling thread (15 characters at most), as `top -H` and `ps -L` show it.
private func nameCurrentThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

/// Wakes a thread that waits for work, without a lock: a non-blocking pipe, so that a thread
/// can also wait for it beside other descriptors (`descriptor`, in its own `poll`, or an event
/// loop's). A pipe rather than an eventfd, which Glibc's Swift module does not declare. Posts
/// coalesce: one that finds the wake-up already posted makes no system call. A waiter returns
/// at the latest after its timeout, or only when posted (`wait()`).
///
/// The one wake-up pipe: every thread that sleeps until another gives it work waits on one
/// (the engine's doorbells, device loops, workers, the task thread).
public final class Wakeup: @unchecked Sendable {
    /// The read end: readable while a post waits to be taken; -1 when no pipe could be made.
    public let descriptor: Int32
    private let writeEnd: Int32
    private let posted = Atomic<Bool>(false)
    /// Why there is no pipe (the system's words: the process ran out of descriptors); nil when
    /// there is one. Without one a wait lasts at most 100 ms, so what it waits for is still seen.
    public let failure: String?

    public init() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            failure = String(cString: strerror(errno))
            (descriptor, writeEnd) = (-1, -1)
            return
        }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        (descriptor, writeEnd, failure) = (ends[0], ends[1], nil)
    }

    deinit {
        if descriptor >= 0 {
            close(descriptor)
            close(writeEnd)
        }
    }

    public func post() {
        guard writeEnd >= 0, !posted.exchange(true, ordering: .sequentiallyConsistent) else { return }
        var one: UInt8 = 1
        _ = write(writeEnd, &one, 1)
    }

    /// Sleeps until posted: for a thread with nothing to do until another gives it work.
    public func wait() { wait(timeout: -1) }

    public func wait(milliseconds: Int) { wait(timeout: Int32(clamping: max(0, milliseconds))) }

    /// Takes a post that was made, without waiting: for a thread that found the descriptor
    /// readable in its own poll.
    public func consume() {
        // Emptied, then marked not posted: a post in between finds it still posted and writes
        // nothing, but what it posted for is seen by the caller, which looks again after this.
        // The other way round, a post in between would be read here and leave it marked
        // posted with nothing to read: every later post would be lost.
        var bytes: (UInt64, UInt64) = (0, 0)
        _ = withUnsafeMutableBytes(of: &bytes) { read(descriptor, $0.baseAddress, $0.count) }
        _ = posted.exchange(false, ordering: .sequentiallyConsistent)
    }

    /// Sleeps until posted, `milliseconds` have passed (nil: no limit) or `other` is readable;
    /// whether it is.
    public func wait(milliseconds: Int?, orUntilReadable other: Int32) -> Bool {
        wait(timeout: milliseconds.map { Int32(clamping: max(0, $0)) } ?? -1, orUntilReadable: other)
    }

    /// One poll for every wait; `other` -1 is passed by (poll ignores a negative descriptor).
    @discardableResult
    private func wait(timeout: Int32, orUntilReadable other: Int32 = -1) -> Bool {
        var slots = (pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: other, events: Int16(POLLIN), revents: 0))
        let timeout = descriptor >= 0 ? timeout : timeout < 0 ? 100 : min(timeout, 100)
        withUnsafeMutableBytes(of: &slots) { raw in
            let first = raw.baseAddress!.assumingMemoryBound(to: pollfd.self)
            while poll(first, 2, timeout) < 0 && errno == EINTR {}
        }
        if slots.0.revents != 0 { consume() }
        return slots.1.revents != 0
    }
}
