#if compiler(>=6.3)
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
#else
import CSwiftConcurrency
import Dispatch
import Glibc
#endif
import Synchronization

/// A program's Swift tasks on one thread: the thread that calls `run()`.
///
/// Installed (`install()`) before the first task, it is the main and the default executor:
/// every actor, task and continuation of the program runs on that thread, in the order it was
/// enqueued, and `Task.sleep` is a deadline it keeps. When nothing is due it sleeps on a
/// semaphore — no thread pool, so nothing wakes while nothing happens (the platform's pool
/// keeps a monitor that wakes every second while it has threads). What runs here must not
/// block for long: threads that wait on devices are `NamedThread`s, and reach tasks through
/// continuations.
///
/// With Swift 6.3 that is its executor factory. Swift 6.0 (Debian's) has none: there `install()`
/// sets the runtime's hooks for the global executor, which hand every job (and every
/// `Task.sleep`) to the same thread instead of libdispatch's pool; the main actor's jobs, which
/// the runtime gives libdispatch's main queue past any hook, that thread runs too, draining the
/// queue when its descriptor says so.
public enum TaskThread {
    /// Makes the task thread the main and default executor. Call once, first thing in a
    /// synchronous `main`, then start the program's task and call `run()`.
    public static func install() {
        #if compiler(>=6.3)
        _createExecutors(factory: Factory.self)
        #else
        Hooks.install()
        #endif
    }

    /// Runs the program's tasks on the calling thread, the main thread, until `stop()`.
    public static func run() {
        #if compiler(>=6.3)
        TaskThreadExecutor.shared.run()
        #else
        TaskThreadExecutor.shared.run(drainingMainQueue: true)
        #endif
    }

    /// Ends `run()` once the jobs due have run.
    public static func stop() { TaskThreadExecutor.shared.stop() }

    #if compiler(>=6.3)
    private struct Factory: ExecutorFactory {
        static var mainExecutor: any MainExecutor { TaskThreadExecutor.shared }
        static var defaultExecutor: any TaskExecutor { TaskThreadExecutor.shared }
    }
    #endif
}

/// The executor behind `TaskThread`: the main executor too with Swift 6.3.
final class TaskThreadExecutor: TaskExecutor, @unchecked Sendable {
    /// The one instance `TaskThread.install()` makes the program's executor.
    static let shared = TaskThreadExecutor()

    private struct Jobs {
        var ready: [UnownedJob] = []
        /// By deadline (monotonic seconds), then by order of enqueueing.
        var timed: [(deadline: Double, order: Int, job: UnownedJob)] = []
        var enqueued = 0
        var sleeping = false
        var stopped = false

        /// Whether the runner sleeps and must be woken; it is taken as awake from here on.
        mutating func wakeRunner() -> Bool {
            defer { sleeping = false }
            return sleeping
        }
    }

    private let jobs = Mutex(Jobs())
    private let wakeup = Wakeup()
    #if !compiler(>=6.3)
    /// The descriptor of libdispatch's main queue, where Swift 6.0 sends the main actor's jobs,
    /// when this runs on the main thread for the program; -1 otherwise (poll passes it by).
    private var mainQueue: Int32 = -1
    #endif

    init() {}

    func enqueue(_ job: consuming ExecutorJob) {
        schedule(UnownedJob(job))
    }

    fileprivate func schedule(_ job: UnownedJob) {
        let wake = jobs.withLock { jobs in
            jobs.ready.append(job)
            return jobs.wakeRunner()
        }
        if wake { wakeup.post() }
    }

    #if compiler(>=6.3)
    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration,
                                  tolerance: C.Duration?, clock: C) {
        enqueue(job, deadline: monotonicSeconds() + Self.seconds(delay))
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant,
                                  tolerance: C.Duration?, clock: C) {
        enqueue(job, deadline: monotonicSeconds() + Self.seconds(clock.now.duration(to: instant)))
    }

    private func enqueue(_ job: consuming ExecutorJob, deadline: Double) {
        schedule(UnownedJob(job), deadline: deadline)
    }
    #endif

    fileprivate func schedule(_ job: UnownedJob, deadline: Double) {
        let wake = jobs.withLock { jobs in
            let entry = (deadline: deadline, order: jobs.enqueued, job: job)
            jobs.enqueued += 1
            let index = jobs.timed.firstIndex { $0.deadline > deadline } ?? jobs.timed.endIndex
            jobs.timed.insert(entry, at: index)
            // The runner sleeps until the first deadline: a new first one wakes it.
            return index == 0 ? jobs.wakeRunner() : false
        }
        if wake { wakeup.post() }
    }

    /// A clock's duration in seconds; a duration of another kind than `Duration` is taken as 0.
    private static func seconds<D>(_ duration: D) -> Double {
        guard let duration = duration as? Duration else { return 0 }
        let (seconds, attoseconds) = duration.components
        return max(0, Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// Runs jobs as they come and fall due, sleeping in between, until `stop()`.
    func run() {
        while turn() {}
    }

    #if !compiler(>=6.3)
    /// `run()`, and on the main thread with Swift 6.0, the jobs of libdispatch's main queue too.
    func run(drainingMainQueue: Bool) {
        if drainingMainQueue { mainQueue = _dispatch_get_main_queue_handle_4CF() }
        run()
    }
    #endif

    /// Runs what is due, or sleeps until something may be; false once stopped.
    private func turn() -> Bool {
        let (due, wait, stopped) = jobs.withLock { jobs -> ([UnownedJob], Double?, Bool) in
            var due = jobs.ready
            jobs.ready.removeAll(keepingCapacity: true)
            let now = monotonicSeconds()
            let taken = jobs.timed.prefix { $0.deadline <= now }.count
            due += jobs.timed.prefix(taken).map(\.job)
            jobs.timed.removeFirst(taken)
            if due.isEmpty && !jobs.stopped { jobs.sleeping = true }
            return (due, jobs.timed.first.map { $0.deadline - now }, jobs.stopped)
        }
        #if compiler(>=6.3)
        let isolation = asUnownedSerialExecutor()  // the main executor itself
        #else
        let isolation = MainActor.sharedUnownedExecutor  // the runtime's, on this same thread
        #endif
        for job in due {
            job.runSynchronously(isolatedTo: isolation, taskExecutor: asUnownedTaskExecutor())
        }
        guard due.isEmpty else { return true }
        if stopped { return false }
        let milliseconds = wait.map { max(1, Int(($0 * 1000).rounded(.up))) }
        #if compiler(>=6.3)
        if let milliseconds { wakeup.wait(milliseconds: milliseconds) } else { wakeup.wait() }
        jobs.withLock { $0.sleeping = false }
        #else
        let mainQueueHasJobs = wakeup.wait(milliseconds: milliseconds, orUntilReadable: mainQueue)
        jobs.withLock { $0.sleeping = false }
        if mainQueueHasJobs {
            var count: UInt64 = 0
            _ = read(mainQueue, &count, MemoryLayout<UInt64>.size)  // the queue's eventfd, emptied
            _dispatch_main_queue_callback_4CF(nil)
        }
        #endif
        return true
    }

    /// Ends `run()` once the jobs due have run.
    func stop() {
        let wake = jobs.withLock { jobs in
            jobs.stopped = true
            return jobs.wakeRunner()
        }
        if wake { wakeup.post() }
    }

    #if compiler(>=6.3)
    var isMainExecutor: Bool { true }
    #endif

    func checkIsolated() {}
}

#if compiler(>=6.3)
extension TaskThreadExecutor: MainExecutor, SchedulingExecutor {}
#else
extension TaskThreadExecutor: SerialExecutor {}

/// Swift 6.0's executor hooks: each a thin Swift function that the runtime calls with the job it
/// would have given libdispatch's pool, and the function that would have (not called).
private enum Hooks {
    typealias Enqueue = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void
    typealias EnqueueAfter = @convention(thin) (UInt64, UnownedJob, @convention(thin) (UInt64, UnownedJob) -> Void) -> Void
    typealias EnqueueAt = @convention(thin) (
        Int64, Int64, Int64, Int64, Int32, UnownedJob,
        @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob) -> Void
    ) -> Void

    static func install() {
        let enqueue: Enqueue = { job, _ in TaskThreadExecutor.shared.schedule(job) }
        // A delay in nanoseconds (`Task.sleep(nanoseconds:)`).
        let enqueueAfter: EnqueueAfter = { nanoseconds, job, _ in
            TaskThreadExecutor.shared.schedule(job, deadline: monotonicSeconds() + Double(nanoseconds) / 1e9)
        }
        // A deadline on one of the runtime's clocks (a `Clock`'s sleep), and a tolerance.
        let enqueueAt: EnqueueAt = { seconds, nanoseconds, _, _, clock, job, _ in
            var nowSeconds: Int64 = 0
            var nowNanoseconds: Int64 = 0
            swiftGetTime(&nowSeconds, &nowNanoseconds, clock)
            let delay = Double(seconds - nowSeconds) + Double(nanoseconds - nowNanoseconds) / 1e9
            TaskThreadExecutor.shared.schedule(job, deadline: monotonicSeconds() + max(0, delay))
        }
        swift_task_enqueueGlobal_hook = unsafeBitCast(enqueue, to: UnsafeMutableRawPointer.self)
        swift_task_enqueueGlobalWithDelay_hook = unsafeBitCast(enqueueAfter, to: UnsafeMutableRawPointer.self)
        swift_task_enqueueGlobalWithDeadline_hook = unsafeBitCast(enqueueAt, to: UnsafeMutableRawPointer.self)
    }
}

/// The runtime's reading of one of its clocks (1: continuous, 2: suspending).
@_silgen_name("swift_get_time")
private func swiftGetTime(_ seconds: UnsafeMutablePointer<Int64>, _ nanoseconds: UnsafeMutablePointer<Int64>, _ clock: Int32)
#endif
