import Dispatch
import Synchronization
@testable import TonearmDaemon
import TonearmLibrary
import XCTest

/// The state is written off the command path: the newest record, once changes settle; at once
/// when urgent; and on the way out after the write under way, with how each went handed back.
final class StateWriterTests: XCTestCase {
    /// What the writer wrote, and a way to wait for its announcements.
    private final class Disk: Sendable {
        let written = Mutex<[Double]>([])
        let announced = DispatchSemaphore(value: 0)
        /// Signalled as each write begins.
        let entered = DispatchSemaphore(value: 0)
        /// Holds every write until signalled, when set.
        let gate: DispatchSemaphore?
        let failure: String?

        init(gate: DispatchSemaphore? = nil, failure: String? = nil) {
            self.gate = gate
            self.failure = failure
        }

        func writer(settle: Double) -> StateWriter {
            StateWriter(settle: settle, write: { (record) throws(LibraryError) in
                self.entered.signal()
                self.gate?.wait()
                if let failure = self.failure { throw .cannotSaveState("/state/state.json", cause: failure) }
                self.written.withLock { $0.append(record.volume) }
            }, notify: { self.announced.signal() })
        }

        var volumes: [Double] { written.withLock { $0 } }

        func waitForAnnouncement(_ file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertEqual(announced.wait(timeout: .now() + 10), .success, "the writer announced a save", file: file, line: line)
        }
    }

    private func record(volume: Double) -> PlayerStateRecord { PlayerStateRecord(queue: ["/music/a.flac"], volume: volume) }

    func testABurstOfAHundredChangesIsOneSaveOfTheLast() {
        let disk = Disk()
        let writer = disk.writer(settle: 2)
        for step in 1...100 { writer.submit(record(volume: Double(step))) }
        disk.waitForAnnouncement()
        XCTAssertEqual(disk.volumes, [100])
        XCTAssertEqual(writer.takeOutcomes().map(\.failure), [nil])
        XCTAssertEqual(writer.takeOutcomes(), [], "taken once")
        // The way out writes what it is given, after nothing else.
        XCTAssertEqual(writer.finish(record(volume: 7)).map(\.failure), [nil])
        XCTAssertEqual(disk.volumes, [100, 7])
    }

    func testAnUrgentRecordIsWrittenAtOnceInPlaceOfTheOneWaiting() {
        let disk = Disk()
        let writer = disk.writer(settle: 600)
        writer.submit(record(volume: 1))
        writer.submit(record(volume: 2), urgent: true)
        disk.waitForAnnouncement()
        XCTAssertEqual(disk.volumes, [2], "written long before the 600 s settle, once")
        _ = writer.finish(record(volume: 3))
        XCTAssertEqual(disk.volumes, [2, 3])
    }

    func testTheWayOutWaitsForTheWriteUnderWayAndDropsTheRecordWaiting() throws {
        let gate = DispatchSemaphore(value: 0)
        let disk = Disk(gate: gate)
        let writer = disk.writer(settle: 0)
        writer.submit(record(volume: 1), urgent: true)
        // The first write is under way, held at the gate; a record waits behind it.
        XCTAssertEqual(disk.entered.wait(timeout: .now() + 10), .success, "the first write began")
        writer.submit(record(volume: 2), urgent: true)
        let finished = Mutex<[StateWriter.Outcome]?>(nil)
        let done = DispatchSemaphore(value: 0)
        let last = record(volume: 3)
        DispatchQueue.global().async {
            let outcomes = writer.finish(last)
            finished.withLock { $0 = outcomes }
            done.signal()
        }
        let deadline = Date() + 10
        while !writer.isFinishing && Date() < deadline { usleep(1000) }
        XCTAssertTrue(writer.isFinishing)
        XCTAssertEqual(done.wait(timeout: .now() + 0.2), .timedOut, "finish waits for the write under way")
        gate.signal()  // the first write
        gate.signal()  // finish's own
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(disk.volumes, [1, 3], "the record that waited is not written: the last one replaces it")
        XCTAssertEqual(try XCTUnwrap(finished.withLock { $0 }).map(\.failure), [nil, nil], "the write under way, then finish's")
    }

    func testAFailedWriteSaysWhy() {
        let disk = Disk(failure: "No space left on device")
        let writer = disk.writer(settle: 0)
        writer.submit(record(volume: 1))
        disk.waitForAnnouncement()
        XCTAssertEqual(writer.takeOutcomes().map(\.failure), ["No space left on device"])
        XCTAssertEqual(writer.finish(record(volume: 2)).map(\.failure), ["No space left on device"])
        XCTAssertEqual(disk.volumes, [])
    }
}
