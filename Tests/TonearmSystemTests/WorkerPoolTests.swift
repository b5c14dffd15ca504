import Glibc
import Synchronization
import TonearmSystem
import XCTest

/// The worker pool: clients served in turn, results back to the awaiting task, and no wake-up
/// while there is no work.
final class WorkerPoolTests: XCTestCase {
    func testTheQueueServesEachClientInTurnAndEachClientsJobsInOrder() {
        var queue = FairQueue<String>()
        for job in ["a1", "a2", "a3", "a4"] { queue.push(job, for: "a") }
        queue.push("b1", for: "b")
        queue.push("c1", for: "c")
        queue.push("c2", for: "c")
        XCTAssertEqual(queue.count, 7)
        var served: [String] = []
        served.append(queue.pop()!)
        // A client that comes while others wait joins the end of the line.
        queue.push("d1", for: "d")
        while let job = queue.pop() { served.append(job) }
        XCTAssertEqual(served, ["a1", "b1", "c1", "a2", "d1", "c2", "a3", "a4"])
        XCTAssertEqual(queue.count, 0)
        // Emptied, a client starts a new turn.
        queue.push("b2", for: "b")
        queue.push("a5", for: "a")
        XCTAssertEqual([queue.pop(), queue.pop(), queue.pop()], ["b2", "a5", nil])
    }

    func testAPoolServesAClientsOneJobBeforeAnothersHundred() {
        let pool = WorkerPool(name: "test-pool", threads: 1)
        let order = Mutex<[String]>([])
        let gate = Wakeup(), done = Wakeup()
        // The one worker is held until every job is queued.
        pool.submit(for: "gate") { gate.wait() }
        for n in 1...100 { pool.submit(for: "busy") { order.withLock { $0.append("busy \(n)") } } }
        pool.submit(for: "other") { order.withLock { $0.append("other") } }
        pool.submit(for: "busy") { done.post() }
        gate.post()
        done.wait()
        XCTAssertEqual(order.withLock { $0 }, ["busy 1", "other"] + (2...100).map { "busy \($0)" })
    }

    func testErrorsComeBackTypedAndWorkRunsOnANamedWorker() async throws {
        struct Refused: Error, Equatable {}
        let pool = WorkerPool(name: "test-named", threads: 2)
        do {
            _ = try await pool.run(for: "x") { () throws(Refused) -> Int in throw Refused() }
            XCTFail("no error")
        } catch {
            XCTAssertEqual(error, Refused())
        }
        let name = try await pool.run(for: "x") { () throws(Refused) -> String in
            String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: "/proc/thread-self/comm"))) ?? Data(), as: UTF8.self)
        }
        XCTAssertTrue(name == "test-named 1\n" || name == "test-named 2\n", name)
    }

    /// The calling thread's id, the first field of its `stat`.
    private static func threadID() -> Int {
        let stat = (try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8)) ?? ""
        return Int(stat.split(separator: " ").first ?? "") ?? -1
    }

    /// The idle daemon makes no context switch: a worker with nothing to do sleeps until posted.
    func testAnIdleWorkerIsNotWoken() async throws {
        let pool = WorkerPool(name: "test-idle", threads: 2)
        let thread = try await pool.run(for: "x") { () throws(CancellationError) -> Int in Self.threadID() }
        func switches() throws -> Int {
            let status = try String(contentsOfFile: "/proc/self/task/\(thread)/status", encoding: .utf8)
            let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") })
            return try XCTUnwrap(Int(line.split(separator: "\t").last ?? ""))
        }
        try await Task.sleep(for: .milliseconds(50))
        let before = try switches()
        try await Task.sleep(for: .milliseconds(500))
        XCTAssertEqual(try switches(), before)
        // And it still wakes for work.
        let again = try await pool.run(for: "y") { () throws(CancellationError) -> Int in Self.threadID() }
        XCTAssertTrue(again > 0)
    }
}
