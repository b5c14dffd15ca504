import Foundation
import TestSupport
import XCTest

/// The `tonearm` CLI against a real `tonearmd` on the paced device (JACK dummy, real time).
final class DaemonCLITests: XCTestCase {
    override func setUpWithError() throws { try requirePacedDevice() }

    /// Three tagged 30-second CD-rate tracks: play, pause, resume, seek, next, previous, skip,
    /// repeat all wrapping, next refused at the end with repeat off, and playing out to stopped.
    ///
    /// Played to `pacedsplitcapture`, so every position is checked against the audio that
    /// reached the device while the commands ran, not against the time they took: a busy
    /// machine slows the commands down but cannot move a position out of its bracket. The
    /// tracks outlast any run of commands, and `previous` goes back a track within 15 s, so a
    /// slow command cannot let a track end or turn a step back into a restart.
    func testTransportThroughPacedDevice() throws {
        let world = try DaemonBench(device: "pacedsplitcapture", start: false)
        let config = world.path("previous.toml")
        try "[player]\nprevious_restarts_after_seconds = 15\n".write(toFile: config, atomically: true, encoding: .utf8)
        world.daemon.arguments = ["--config", config]
        try world.daemon.start()
        let tracks = try (1...3).map { try world.fixture("track\($0).flac", taggedFixture($0, seconds: 30, sampleRate: 44100)) }
        let added = try world.ok(["add"] + tracks)
        XCTAssertTrue(added.stdout.contains("added 3, queue 3"), "\(added)")
        try world.ok("play")

        // Playing track 1 on an open device.
        let playing = try world.waitForStatus(timeout: 30, "playing on an open device") {
            $0.string("state") == "playing" && $0.object("device")?.string("state") == "open"
        }
        var status = try world.statusJSON()
        XCTAssertEqual(status.string("state"), "playing")
        XCTAssertEqual(status.string("title"), "Track 1")
        XCTAssertEqual(status.string("artist"), "The Testers")
        XCTAssertEqual(status.string("album"), "Daemon Sessions")
        XCTAssertEqual(status.double("duration") ?? 0, 30, accuracy: 0.01)
        XCTAssertEqual(status.int("queueIndex"), 0)
        XCTAssertEqual(status.int("queueCount"), 3)
        XCTAssertEqual(status.double("rate"), 1)
        XCTAssertEqual(status.bool("eligible"), true, jsonText(status))
        XCTAssertEqual(status.object("commands")?.bool("play"), true, jsonText(status))
        XCTAssertEqual(status.object("device")?.string("name"), "pacedsplitcapture")
        XCTAssertEqual(status.object("device")?.string("state"), "open", jsonText(playing))
        XCTAssertEqual(status.object("device")?.int("underruns"), 0)

        // The human form, and --socket after the subcommand.
        let human = try runProcess(try tonearmBinary(), ["status", "--socket", world.daemon.socketPath],
                                   environment: world.bench.alsa.environment, timeout: 10)
        assertExit(human, 0)
        XCTAssertTrue(human.stdout.contains("Track 1 — The Testers"), human.stdout)
        XCTAssertTrue(human.stdout.contains("[1/3]"), human.stdout)

        // Pause: state paused, rate 0, elapsed frozen.
        try world.ok("pause")
        let paused1 = try world.statusJSON()
        sleepSeconds(0.5)
        let paused2 = try world.statusJSON()
        XCTAssertEqual(paused1.string("state"), "paused")
        XCTAssertEqual(paused1.double("rate"), 0)
        XCTAssertEqual(paused1.double("elapsed") ?? -1, paused2.double("elapsed") ?? -2, accuracy: 0.01, "elapsed moved while paused")
        let frozen = paused2.double("elapsed") ?? 0

        // Play resumes from there.
        status = try heardAfter(world, from: frozen, "play resumed where it paused") { try world.ok("play") }
        XCTAssertEqual(status.string("state"), "playing")
        XCTAssertEqual(status.double("rate"), 1)
        try world.waitForStatus(timeout: 30, "elapsed moving again") { ($0.double("elapsed") ?? 0) > frozen + 0.2 }

        // Seek.
        status = try heardAfter(world, from: 2.5, "seek to 2.5 s") { try world.ok("seek", "2.5") }
        XCTAssertEqual(status.int("queueIndex"), 0)

        // Next, then previous goes back a track; each from the start of its track, not 2.5 s in.
        status = try heardAfter(world, from: 0, "next") { try world.ok("next") }
        XCTAssertEqual(status.string("title"), "Track 2")
        XCTAssertEqual(status.int("queueIndex"), 1)
        status = try heardAfter(world, from: 0, "previous") { try world.ok("previous") }
        XCTAssertEqual(status.string("title"), "Track 1")
        XCTAssertEqual(status.int("queueIndex"), 0)

        // Skip forward and back, from where each found the track.
        try assertSkip(world, "+1.5", by: 1.5)
        try assertSkip(world, "-1", by: -1)

        // Repeat all: next from the last track wraps to the first.
        try world.ok("repeat", "all")
        try world.ok("next")
        try world.ok("next")
        status = try world.statusJSON()
        XCTAssertEqual(status.int("queueIndex"), 2, jsonText(status))
        XCTAssertEqual(status.string("repeat"), "all")
        try world.ok("next")
        status = try world.statusJSON()
        XCTAssertEqual(status.int("queueIndex"), 0, "repeat all did not wrap: \(jsonText(status))")
        XCTAssertEqual(status.string("title"), "Track 1")
        XCTAssertEqual(status.string("state"), "playing")

        // Repeat off: next on the last track is refused.
        try world.ok("repeat", "off")
        try world.ok("next")
        try world.ok("next")
        status = try world.statusJSON()
        XCTAssertEqual(status.int("queueIndex"), 2, jsonText(status))
        XCTAssertEqual(status.object("commands")?.bool("nextTrack"), false, jsonText(status))
        let refused = try world.cli("next")
        assertExit(refused, 1)
        XCTAssertTrue(refused.stderr.contains("tonearm: next: disabled"), "\(refused)")
        status = try world.statusJSON()
        XCTAssertEqual(status.int("queueIndex"), 2, "a refused next changed the track")

        // Play out the end of the last track: stopped.
        try world.ok("seek", "29.4")
        status = try world.waitForStatus(timeout: 60, "stopped at the end of the queue") { $0.string("state") == "stopped" }
        XCTAssertEqual(status.double("rate"), 0)
        XCTAssertEqual(status.int("queueCount"), 3)
        XCTAssertEqual(status.object("device")?.int("underruns"), 0, "underruns: \(jsonText(status))")
        XCTAssertTrue(world.daemon.isRunning, world.daemon.log)
        XCTAssertEqual(world.daemon.terminate()?.status, 0, world.daemon.log)
    }

    /// A short CD-rate track (resampled to the device's 48 kHz) is decoded to its end well before
    /// it is heard; a seek then restarts it. It must still play out to stopped, and the daemon
    /// must live through it.
    func testSeekInShortResampledTrackPlaysOut() throws {
        let world = try DaemonBench()
        let track = try world.fixture("short.flac", taggedFixture(1, seconds: 4, sampleRate: 44100))
        try world.ok("add", track)
        try world.ok("play")
        try world.waitForStatus(timeout: 5, "1 s played") { ($0.double("elapsed") ?? 0) >= 1 }
        try world.ok("seek", "2")
        let status = try world.waitForStatus(timeout: 5, "stopped at the end") { $0.string("state") == "stopped" }
        XCTAssertEqual(status.object("device")?.int("underruns"), 0, jsonText(status))
        XCTAssertTrue(world.daemon.isRunning, daemonReport(world.daemon))
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
    }

    /// `tonearm skip AMOUNT` moves elapsed by `by` seconds from where it was when the skip
    /// came (at least the elapsed read before it, at most that and the audio played since).
    private func assertSkip(_ world: DaemonBench, _ amount: String, by seconds: Double,
                            file: StaticString = #filePath, line: UInt = #line) throws {
        var before: [String: Any] = [:]
        let after = try heardAfter(world, from: {
            before = try world.status(file: file, line: line)
            return (before.double("elapsed") ?? 0) + seconds
        }, "skip \(amount)", file: file, line: line) { try world.ok("skip", amount) }
        XCTAssertEqual(after.int("queueIndex"), before.int("queueIndex"), "skip \(amount) changed the track", file: file, line: line)
    }

    /// Runs `command` and returns the status read after it, whose elapsed must lie between
    /// `position` and `position` plus the audio that reached the device from just before
    /// `position` was known to just after the status (and `DaemonBench.captureSlack`).
    @discardableResult
    private func heardAfter(_ world: DaemonBench, from position: Double, _ what: String,
                            file: StaticString = #filePath, line: UInt = #line,
                            _ command: () throws -> Void) throws -> [String: Any] {
        try heardAfter(world, from: { position }, what, file: file, line: line, command)
    }

    private func heardAfter(_ world: DaemonBench, from position: () throws -> Double, _ what: String,
                            file: StaticString = #filePath, line: UInt = #line,
                            _ command: () throws -> Void) throws -> [String: Any] {
        let capturedBefore = try world.capturedSeconds()
        let position = try position()
        try command()
        let status = try world.status(file: file, line: line)
        let played = try world.capturedSeconds() - capturedBefore
        let elapsed = status.double("elapsed") ?? -1
        let slack = DaemonBench.captureSlack(status)
        let message = "\(what): elapsed \(elapsed) s, from \(position) s with \(played) s captured meanwhile: \(jsonText(status))"
        XCTAssertGreaterThanOrEqual(elapsed, position - 0.01, message, file: file, line: line)
        XCTAssertLessThanOrEqual(elapsed, position + played + slack, message, file: file, line: line)
        return status
    }
}
