import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM while playing: fade out, save, exit 0; the next start restores the queue and the
/// position, paused.
final class DaemonShutdownTests: XCTestCase {
    override func setUpWithError() throws { try requirePacedDevice() }

    func testSigtermSavesAndRestores() throws {
        let world = try DaemonBench()
        let tracks = try (1...2).map { try world.fixture("term\($0).flac", taggedFixture($0, seconds: 10)) }
        try world.ok(["add"] + tracks)
        try world.ok("play")
        let playing = try world.waitForStatus(timeout: 5, "1.5 s played") {
            $0.string("state") == "playing" && ($0.double("elapsed") ?? 0) >= 1.5
        }
        XCTAssertEqual(playing.object("device")?.string("state"), "open")
        let queueBefore = try world.daemon.result("queue")

        // Where it is at the signal, from the last status before it.
        let last = try world.status()
        let readAt = monotonicSeconds()
        let process = try XCTUnwrap(world.daemon.process)
        process.send(SIGTERM)
        let signalled = monotonicSeconds()
        let positionAtSignal = (last.double("elapsed") ?? 0) + (signalled - readAt)
        let result = process.wait(timeout: 10)
        let took = monotonicSeconds() - signalled
        XCTAssertNil(result.signal, "killed by a signal: \(result)")
        XCTAssertEqual(result.status, 0, daemonReport(world.daemon))
        XCTAssertLessThan(took, 2, "took \(took) s to exit after SIGTERM")
        XCTAssertTrue(world.daemon.log.contains("tonearmd stopped"), daemonReport(world.daemon))
        XCTAssertFalse(FileManager.default.fileExists(atPath: world.daemon.socketPath), "the socket file was left behind")

        // The saved state has the queue and the position.
        let saved = try XCTUnwrap(world.daemon.savedState(), "no readable state.json in \(world.daemon.stateDirectory)")
        XCTAssertEqual(saved["queue"] as? [String], tracks, jsonText(saved))
        XCTAssertEqual(saved.int("currentIndex"), 0, jsonText(saved))
        XCTAssertEqual(saved.double("position") ?? -1, positionAtSignal, accuracy: 0.3, jsonText(saved))
        XCTAssertEqual(saved.bool("wasPlaying"), true, jsonText(saved))

        // Restart: the same queue, the same position, paused.
        _ = world.daemon.terminate()
        try world.daemon.start()
        let restored = try world.status()
        XCTAssertEqual(restored.string("state"), "paused", jsonText(restored))
        XCTAssertEqual(restored.double("rate"), 0)
        XCTAssertEqual(restored.string("title"), "Track 1")
        XCTAssertEqual(restored.int("queueIndex"), 0)
        XCTAssertEqual(restored.int("queueCount"), 2)
        XCTAssertEqual(restored.double("elapsed") ?? -1, positionAtSignal, accuracy: 0.5, jsonText(restored))
        let queueAfter = try world.daemon.result("queue")
        XCTAssertEqual(paths(queueAfter), paths(queueBefore))
        XCTAssertEqual(queueAfter.int("currentIndex"), 0)
        XCTAssertTrue(world.daemon.log.contains("restored 2 queued tracks"), daemonReport(world.daemon))

        // And it plays on from there.
        try world.ok("play")
        let resumed = try world.status()
        XCTAssertEqual(resumed.string("state"), "playing")
        XCTAssertEqual(resumed.double("elapsed") ?? -1, positionAtSignal, accuracy: 0.5, jsonText(resumed))
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
    }

    private func paths(_ queue: [String: Any]) -> [String] {
        (queue.array("items") ?? []).compactMap { ($0 as? [String: Any])?.string("path") }
    }
}
