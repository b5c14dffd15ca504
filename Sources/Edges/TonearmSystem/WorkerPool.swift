#if canImport(Glibc)
import Glibc
#endif

/// Work that may take long — library queries, picture reads, cover scaling — on a few named
/// threads, so the task thread (every actor and plug-in) never waits for it. A task awaits its
/// result; it comes back through a continuation.
///
/// Clients take turns (`FairQueue`): one with a hundred queries waiting does not hold up
/// another's one. The threads start with the first work and then sleep on a wake-up while there
/// is none: an idle pool makes no context switch.
public final class WorkerPool: @unchecked Sendable {
    /// The pool the library's front ends share.
    public static let library = WorkerPool(name: "library", threads: 2)

    public typealias Job = @Sendable () -> Void

    private let name: String
    private let threadLimit: Int
    // A condition variable rather than a wake-up pipe: an idle pool holds no descriptor and
    // a job wakes one worker, not all of them. `queue` and `threads` are kept under `lock`.
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let jobsWaiting = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var queue = FairQueue<Job>()
    private var threads: [NamedThread] = []
    private var idle = 0

    /// `threads` workers at most, named "`name` 1", "`name` 2"….
    public init(name: String, threads: Int) {
        self.name = name
        threadLimit = max(1, threads)
        pthread_mutex_init(lock, nil)
        pthread_cond_init(jobsWaiting, nil)
    }


    /// Runs `work` on a worker, in `client`'s turn, and returns what it returned or threw.
    public func run<T: Sendable, E: Error>(for client: String, _ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, E>, Never>) in
            submit(for: client) {
                do throws(E) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Queues `job` in `client`'s turn; a worker starts when none is idle and there are fewer
    /// than the limit.
    public func submit(for client: String, _ job: @escaping Job) {
        pthread_mutex_lock(lock)
        queue.push(job, for: client)
        if idle == 0, threads.count < threadLimit {
            let number = threads.count + 1
            threads.append(NamedThread(name: "\(name) \(number)") { [self] in work() })
        }
        pthread_cond_signal(jobsWaiting)
        pthread_mutex_unlock(lock)
    }

    /// A worker: the next job in turn, or sleep until one comes.
    private func work() {
        while true {
            pthread_mutex_lock(lock)
            while queue.count == 0 {
                idle += 1
                pthread_cond_wait(jobsWaiting, lock)
                idle -= 1
            }
            let job = queue.pop()!
            pthread_mutex_unlock(lock)
            job()
        }
    }
}

/// The order a pool serves its clients: a queue per client, each client in turn, each
/// client's own jobs in the order they came.
public struct FairQueue<Job> {
    private var queues: [String: [Job]] = [:]
    /// Clients with jobs waiting, next first.
    private var turns: [String] = []
    public private(set) var count = 0

    public init() {}

    public mutating func push(_ job: Job, for client: String) {
        if queues[client, default: []].isEmpty { turns.append(client) }
        queues[client, default: []].append(job)
        count += 1
    }

    /// The first job of the client whose turn it is; that client goes to the back of the line.
    public mutating func pop() -> Job? {
        guard !turns.isEmpty else { return nil }
        let client = turns.removeFirst()
        let job = queues[client]!.removeFirst()
        if queues[client]!.isEmpty {
            queues[client] = nil
        } else {
            turns.append(client)
        }
        count -= 1
        return job
    }
}

/// Makes every allocation of 256 KB or more a mapping of its own, given back to the system
/// when freed. glibc otherwise raises that threshold to the largest block freed so far: once a
/// 3 MB picture read on a worker is dropped, the next ones come from heaps the process keeps,
/// and the daemon's resident size stays at its high-water mark. Call once, first in `main`.
public func returnLargeAllocationsToTheSystem() {
    // malloc.h is not in Glibc's module: mallopt is looked up, M_MMAP_THRESHOLD is -3.
    guard let symbol = dlsym(nil, "mallopt") else { return }
    let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
    _ = mallopt(-3, 256 << 10)
}
