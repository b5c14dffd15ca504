import SystemPackage
import TonearmSystem
import XCTest

final class DeviceLoopTests: XCTestCase {
    func testAWaitKeepsItsDeadlineAndReportsAReadyDevice() throws {
        let poll = DevicePoll()
        XCTAssertNil(poll.failure)
        let ends = try FileDescriptor.pipe(options: [.nonBlocking, .closeOnExec])
        defer {
            try? ends.readEnd.close()
            try? ends.writeEnd.close()
        }
        let start = monotonicSeconds()
        XCTAssertEqual(try poll.wait(for: [(ends.readEnd, .readable)], until: start + 0.03), [[]])
        XCTAssertGreaterThanOrEqual(monotonicSeconds() - start, 0.029)

        _ = try [7 as UInt8].withUnsafeBytes { try ends.writeEnd.writeAvailable($0) }
        XCTAssertEqual(try poll.wait(for: [(ends.readEnd, .readable)], until: nil), [.readable])
        var byte: [UInt8] = [0]
        XCTAssertEqual(try byte.withUnsafeMutableBytes { try ends.readEnd.readAvailable(into: $0) }, 1)
        XCTAssertNil(try byte.withUnsafeMutableBytes { try ends.readEnd.readAvailable(into: $0) }, "nothing now is not an error")

        poll.wake()
        XCTAssertEqual(try poll.wait(for: [(ends.readEnd, .readable)], until: nil), [[]], "a wake before the wait ends it at once")
    }

    func testStopWakesTheLoopAndJoinsItsThread() {
        let poll = DevicePoll()
        let loop = DeviceLoop(name: "test-device", wake: poll.wake) { isStopping in
            while !isStopping() { _ = try? poll.wait(for: [], until: nil) }
        }
        XCTAssertFalse(loop.isStopping)
        let started = monotonicSeconds()
        loop.stop()
        XCTAssertLessThan(monotonicSeconds() - started, 5, "the loop waits with no deadline: only the wake ends it")
        XCTAssertTrue(loop.isStopping)
        loop.stop()  // idempotent
    }

    func testReopeningLogsEachProblemOnceAndSaysWhenItIsBack() {
        var reopening = Reopening(interval: 0.5)
        XCTAssertEqual(reopening.intervalText, "0.5 s")
        XCTAssertTrue(reopening.isDue(at: 0))
        reopening.attempted(at: 10)
        XCTAssertFalse(reopening.isDue(at: 10.4))
        XCTAssertTrue(reopening.isDue(at: 10.5))

        XCTAssertTrue(reopening.failed("/dev/ttyUSB0", "missing"))
        XCTAssertFalse(reopening.failed("/dev/ttyUSB0", "missing"), "once")
        XCTAssertTrue(reopening.failed("/dev/ttyUSB0", "access"), "a new problem is said")
        XCTAssertEqual(reopening.opened("/dev/ttyUSB0"), .first)
        reopening.lost("/dev/ttyUSB0", as: "missing", at: 20)
        XCTAssertEqual(reopening.nextAttempt, 20.5)
        XCTAssertFalse(reopening.failed("/dev/ttyUSB0", "missing"), "the loss said it already")
        XCTAssertEqual(reopening.opened("/dev/ttyUSB0"), .back)

        XCTAssertFalse(reopening.failed("/dev/input/event3", "access", after: 2), "a passing refusal is not worth a line")
        XCTAssertTrue(reopening.failed("/dev/input/event3", "access", after: 2))
        XCTAssertFalse(reopening.failed("/dev/input/event3", "access", after: 2))
    }
}
