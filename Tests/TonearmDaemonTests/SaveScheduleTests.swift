@testable import TonearmDaemon
import XCTest

/// A save that fails is tried again after 1 s, doubling to 60 s, and the log hears of it once per
/// change: failing, failing for another reason, saved again.
final class SaveScheduleTests: XCTestCase {
    func testSavesThatSucceedMayAlwaysBeTriedAndSayNothing() {
        var schedule = SaveSchedule()
        XCTAssertTrue(schedule.mayTry(at: 0))
        XCTAssertNil(schedule.succeeded(at: 0, directory: "/state"))
        XCTAssertTrue(schedule.mayTry(at: 0.001))
        XCTAssertNil(schedule.failure)
        XCTAssertNil(schedule.retryAt)
    }

    func testAFailingSaveBacksOffDoublingToAMinuteAndIsLoggedOnce() {
        var schedule = SaveSchedule()
        var now = 100.0
        var lines: [String] = []
        var waits: [Double] = []
        for _ in 0..<10 {
            XCTAssertTrue(schedule.mayTry(at: now))
            if let line = schedule.failed("No space left on device", at: now, directory: "/state") { lines.append(line) }
            let retry = try! XCTUnwrap(schedule.retryAt)
            waits.append(retry - now)
            XCTAssertFalse(schedule.mayTry(at: now), "no save is tried before the back-off passed")
            XCTAssertFalse(schedule.mayTry(at: retry - 0.001))
            now = retry
        }
        XCTAssertEqual(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60, 60])
        XCTAssertEqual(lines, ["cannot save the player state in /state (No space left on device); will retry, every 60 s at most, and say when it is saved again"])
        XCTAssertEqual(schedule.failure?.reason, "No space left on device")
        XCTAssertEqual(schedule.failure?.since, 100)
    }

    func testANewReasonIsLoggedAndKeepsTheBackOff() {
        var schedule = SaveSchedule()
        XCTAssertNotNil(schedule.failed("No space left on device", at: 0, directory: "/state"))
        XCTAssertNil(schedule.failed("No space left on device", at: 1, directory: "/state"))
        let line = schedule.failed("Read-only file system", at: 3, directory: "/state")
        XCTAssertEqual(line, "cannot save the player state in /state (Read-only file system); will retry, every 60 s at most, and say when it is saved again")
        XCTAssertEqual(schedule.retryAt, 7, "the third failure waits 4 s whatever its reason")
        XCTAssertEqual(schedule.failure?.since, 0, "failing since the first failure")
    }

    func testASaveThatSucceedsAgainIsLoggedOnceAndResetsTheBackOff() {
        var schedule = SaveSchedule()
        _ = schedule.failed("Read-only file system", at: 10, directory: "/state")
        _ = schedule.failed("Read-only file system", at: 11, directory: "/state")
        _ = schedule.failed("Read-only file system", at: 13, directory: "/state")
        XCTAssertEqual(schedule.succeeded(at: 100, directory: "/state"),
                       "the player state is saved again in /state (it could not be saved for 2 min)")
        XCTAssertNil(schedule.succeeded(at: 101, directory: "/state"))
        XCTAssertNil(schedule.failure)
        XCTAssertTrue(schedule.mayTry(at: 101))
        XCTAssertNotNil(schedule.failed("Read-only file system", at: 200, directory: "/state"), "a new failure is said again")
        XCTAssertEqual(schedule.retryAt, 201, "and backs off from 1 s again")
    }
}
