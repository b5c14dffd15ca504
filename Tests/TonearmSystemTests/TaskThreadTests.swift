import Glibc
import Synchronization
@testable import TonearmSystem
import XCTest

/// The task thread's executor, run on a thread of the test's own (the process's executors stay
/// the platform's: installing it is for a program's `main`).
final class TaskThreadTests: XCTestCase {
    /// What the tasks saw.
    private final class Record: Sendable {
        let runner = Atomic<UInt>(0)
        let order = Mutex<[Int]>([])
        let threads = Mutex<Set<UInt>>([])
        let early = Mutex<[Int]>([])

        func note(_ index: Int) {
            threads.withLock { _ = $0.insert(UInt(pthread_self())) }
            order.withLock { $0.append(index) }
        }
    }

    private var executor: TaskThreadExecutor!
    private var runner: NamedThread!
    private let record = Record()

    override func setUp() {
        let executor = TaskThreadExecutor()
        let record = record
        self.executor = executor
        runner = NamedThread(name: "test-tasks") {
            record.runner.store(UInt(pthread_self()), ordering: .releasing)
            executor.run()
        }
    }

    override func tearDown() {
        executor.stop()
        runner.join()
    }

    func testTasksRunOnItsThreadInTheOrderTheyCame() async {
        let record = record
        var tasks: [Task<Void, Never>] = []
        for index in 0..<50 {
            tasks.append(Task(executorPreference: executor) { record.note(index) })
        }
        for task in tasks { await task.value }
        XCTAssertEqual(record.order.withLock { $0 }, Array(0..<50))
        XCTAssertEqual(record.threads.withLock { $0 }, [record.runner.load(ordering: .acquiring)])
    }

    func testSleepsEndInDeadlineOrderAndNotBefore() async throws {
        let record = record
        let start = monotonicSeconds()
        var tasks: [Task<Void, any Error>] = []
        for milliseconds in [60, 20, 40] {
            tasks.append(Task(executorPreference: executor) {
                try await Task.sleep(for: .milliseconds(milliseconds))
                if monotonicSeconds() - start < Double(milliseconds) / 1000 - 0.001 {
                    record.early.withLock { $0.append(milliseconds) }
                }
                record.note(milliseconds)
            })
        }
        for task in tasks { try await task.value }
        XCTAssertEqual(record.order.withLock { $0 }, [20, 40, 60])
        XCTAssertEqual(record.early.withLock { $0 }, [], "woke before its deadline")
        XCTAssertEqual(record.threads.withLock { $0 }, [record.runner.load(ordering: .acquiring)])
    }

    func testStopEndsRun() {
        let other = TaskThreadExecutor()
        let ended = Atomic<Bool>(false)
        let thread = NamedThread(name: "test-stop") {
            other.run()
            ended.store(true, ordering: .releasing)
        }
        other.stop()
        thread.join()
        XCTAssertTrue(ended.load(ordering: .acquiring))
    }
}
