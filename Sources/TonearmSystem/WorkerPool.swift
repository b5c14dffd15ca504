import Synchronization

/// Work that may take long — library queries, picture reads, cover scaling — on a few named
/// threads, so the task thread (every actor and plug-in) never waits for it. A task awaits its
/// result; it comes back through a continuation.
///
/// Clients take turns (`FairQueue`): one with a hundred queries waiting does not hold up
/// another's one. The threads start with the first work and then sleep on a wake-up while there
/// is none: an idle pool makes no context switch.
public final class WorkerPool: Sendable {
    /// The pool the library's front ends share.
    public static let library = WorkerPool(name: "library", threads: 2)

    public typealias Job = @Sendable () -> Void

    private struct State {
        var queue = FairQueue<Job>()
        var threads: [NamedThread] = []
    }

    private let name: String
    private let threadLimit: Int
    private let state = Mutex(State())
    private let wakeup = Wakeup()

    /// `threads` workers at most, named "`name` 1", "`name` 2"….
    public init(name: String, threads: Int) {
        self.name = name
        threadLimit = max(1, threads)
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

    /// Queues `job` in `client`'s turn, starting a worker while there are fewer than the limit.
    public func submit(for client: String, _ job: @escaping Job) {
        state.withLock { state in
            state.queue.push(job, for: client)
            guard state.threads.count < threadLimit, state.queue.count > 0 else { return }
            let number = state.threads.count + 1
            state.threads.append(NamedThread(name: "\(name) \(number)") { [self] in work() })
        }
        wakeup.post()
    }

    /// A worker: the next job in turn, or sleep until one comes.
    private func work() {
        while true {
            let (job, more) = state.withLock { state in (state.queue.pop(), state.queue.count > 0) }
            guard let job else {
                wakeup.wait()
                continue
            }
            // Every worker waits on the one wake-up, which the first awake takes: pass it on.
            if more { wakeup.post() }
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
