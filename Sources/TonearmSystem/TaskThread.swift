#if compiler(>=6.3)
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
#else
import Dispatch
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
/// That is with Swift 6.3, through its executor factory. Earlier compilers (Debian's 6.0) have
/// no way to replace the executors: there `install()` does nothing and `run()` hands the main
/// thread to libdispatch's main queue, so tasks run on the platform's pool as usual.
public enum TaskThread {
    /// Makes the task thread the main and default executor. Call once, first thing in a
    /// synchronous `main`, then start the program's task and call `run()`.
    public static func install() {
        #if compiler(>=6.3)
        _createExecutors(factory: Factory.self)
        #endif
    }

    /// Runs the program's tasks on the calling thread until `stop()`. Before Swift 6.3: the
    /// main actor's, for good (the program ends with `exit`).
    public static func run() {
        #if compiler(>=6.3)
        TaskThreadExecutor.shared.run()
        #else
        dispatchMain()
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

    init() {}

    func enqueue(_ job: consuming ExecutorJob) {
        schedule(UnownedJob(job))
    }

    private func schedule(_ job: UnownedJob) {
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

    private func schedule(_ job: UnownedJob, deadline: Double) {
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
        for job in due {
            job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
        }
        guard due.isEmpty else { return true }
        if stopped { return false }
        if let wait {
            wakeup.wait(milliseconds: max(1, Int((wait * 1000).rounded(.up))))
        } else {
            wakeup.wait()
        }
        jobs.withLock { $0.sleeping = false }
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
#endif
