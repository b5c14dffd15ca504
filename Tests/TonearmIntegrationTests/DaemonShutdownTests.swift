import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM or SIGINT while playing: fade out, save, exit 0; the next start restores the queue
/// and the position, paused.
///
/// Played to `pacedsplitcapture`, so where it was and how much it played on after the signal
/// are the audio that reached the device, not the time a busy machine took over the commands.
final class DaemonShutdownTests: XCTestCase {
    override func setUpWithError() throws { try requirePacedDevice() }

    func testSigtermSavesAndRestores() throws {
        let world = try DaemonBench(device: "pacedsplitcapture")
        let tracks = try (1...2).map { try world.fixture("term\($0).flac", taggedFixture($0, seconds: 10)) }
        try world.ok(["add"] + tracks)
        try world.ok("play")
        let playing = try world.waitForStatus(timeout: 30, "1.5 s played") {
            $0.string("state") == "playing" && ($0.double("elapsed") ?? 0) >= 1.5
        }
        XCTAssertEqual(playing.object("device")?.string("state"), "open")
        let slack = DaemonBench.captureSlack(playing)
        let queueBefore = try world.daemon.result("queue")

        // Where it is at the signal: from the last status before it, plus at most the audio that
        // reached the device from then to the exit.
        let capturedBeforeStatus = try world.capturedSeconds()
        let last = try world.status()
        let process = try XCTUnwrap(world.daemon.process)
        let capturedAtSignal = try world.capturedSeconds()
        process.send(SIGTERM)
        let result = process.wait(timeout: 60)
        let capturedAtExit = try world.capturedSeconds()
        XCTAssertNil(result.signal, "killed by a signal: \(result)")
        XCTAssertEqual(result.status, 0, daemonReport(world.daemon))
        // 8 s were left to play: it faded out and stopped instead.
        XCTAssertLessThan(capturedAtExit - capturedAtSignal, 1, "audio that reached the device after SIGTERM")
        XCTAssertTrue(world.daemon.log.contains("tonearmd stopped"), daemonReport(world.daemon))
        XCTAssertFalse(FileManager.default.fileExists(atPath: world.daemon.socketPath), "the socket file was left behind")

        // The saved state has the queue and the position.
        let saved = try XCTUnwrap(world.daemon.savedState(), "no readable state.json in \(world.daemon.stateDirectory)")
        XCTAssertEqual(saved["queue"] as? [String], tracks, jsonText(saved))
        XCTAssertEqual(saved.int("currentIndex"), 0, jsonText(saved))
        let position = saved.double("position") ?? -1
        let lastElapsed = last.double("elapsed") ?? 0
        let bracket = "saved \(position) s; elapsed \(lastElapsed) s before the signal, \(capturedAtExit - capturedBeforeStatus) s captured from then to the exit"
        XCTAssertGreaterThanOrEqual(position, lastElapsed - 0.01, bracket)
        XCTAssertLessThanOrEqual(position, lastElapsed + capturedAtExit - capturedBeforeStatus + slack, bracket)
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
        XCTAssertEqual(restored.double("elapsed") ?? -1, position, accuracy: 0.01, jsonText(restored))
        let queueAfter = try world.daemon.result("queue")
        XCTAssertEqual(paths(queueAfter), paths(queueBefore))
        XCTAssertEqual(queueAfter.int("currentIndex"), 0)
        XCTAssertTrue(world.daemon.log.contains("restored 2 queued tracks"), daemonReport(world.daemon))

        // And it plays on from there.
        let capturedBeforePlay = try world.capturedSeconds()
        try world.ok("play")
        let resumed = try world.status()
        let played = try world.capturedSeconds() - capturedBeforePlay
        XCTAssertEqual(resumed.string("state"), "playing")
        let elapsed = resumed.double("elapsed") ?? -1
        XCTAssertGreaterThanOrEqual(elapsed, position - 0.01, jsonText(resumed))
        XCTAssertLessThanOrEqual(elapsed, position + played + DaemonBench.captureSlack(resumed), "\(played) s captured: \(jsonText(resumed))")
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
    }

    /// SIGINT (Ctrl-C in a terminal) is the same request as SIGTERM; a second one while the
    /// daemon fades out changes nothing.
    func testSigintSavesAndASecondSignalWhileStoppingChangesNothing() throws {
        let world = try DaemonBench(device: "pacedsplitcapture")
        let track = try world.fixture("int.flac", taggedFixture(1, seconds: 10))
        try world.ok(["add", track])
        try world.ok("play")
        _ = try world.waitForStatus(timeout: 30, "1 s played") {
            $0.string("state") == "playing" && ($0.double("elapsed") ?? 0) >= 1.0
        }
        let process = try XCTUnwrap(world.daemon.process)
        process.send(SIGINT)
        process.send(SIGINT)
        process.send(SIGTERM)
        let result = process.wait(timeout: 60)
        XCTAssertNil(result.signal, "killed by a signal: \(result)")
        XCTAssertEqual(result.status, 0, daemonReport(world.daemon))
        XCTAssertTrue(world.daemon.log.contains("tonearmd stopped"), daemonReport(world.daemon))
        let saved = try XCTUnwrap(world.daemon.savedState(), "no readable state.json in \(world.daemon.stateDirectory)")
        XCTAssertEqual(saved["queue"] as? [String], [track], jsonText(saved))
        XCTAssertGreaterThanOrEqual(saved.double("position") ?? -1, 1.0, jsonText(saved))
        XCTAssertEqual(saved.bool("wasPlaying"), true, jsonText(saved))
    }

    private func paths(_ queue: [String: Any]) -> [String] {
        (queue.array("items") ?? []).compactMap { ($0 as? [String: Any])?.string("path") }
    }
}
