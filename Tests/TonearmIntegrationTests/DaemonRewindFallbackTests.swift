import Foundation
import TestSupport
import XCTest

/// A PCM that is not rewound — here JACK's ALSA plugin, which has no sound card behind it. With
/// `[output] buffer_ms` the daemon plays with the frame sizes instead, says so once in the log
/// and in `doctor`, and commands still work, heard a (small) buffer late.
final class DaemonRewindFallbackTests: XCTestCase {
    override func setUpWithError() throws { try requirePacedDevice() }

    /// A daemon on `paced` with `output` as the profile's `[output]`, playing a track of
    /// `seconds` on an open device: the daemon and the first status that says so.
    private func playing(_ output: String, seconds: Double) throws -> (DaemonBench, [String: Any]) {
        let world = try DaemonBench(device: "paced", start: false)
        world.daemon.arguments = ["--config", try profile(world, "[output]\n" + output)]
        try world.daemon.start()
        let track = try world.fixture("track.flac", taggedFixture(1, seconds: seconds))
        try world.ok("add", track)
        try world.ok("play")
        let playing = try world.waitForStatus(timeout: 5, "playing on an open device") {
            $0.string("state") == "playing" && $0.object("device")?.string("state") == "open"
        }
        return (world, playing)
    }

    func testAPluginWithNoCardPlaysWithTheFrameSizesAndSaysSoOnce() throws {
        let (world, playing) = try self.playing("buffer_ms = 500", seconds: 20)
        let device = playing.object("device") ?? [:]
        XCTAssertEqual(device.bool("rewinds"), false, jsonText(device))
        XCTAssertEqual(device.int("bufferFrames"), 1024, "the frame sizes, not 500 ms: \(jsonText(device))")
        XCTAssertEqual(device.int("periodFrames"), 256, jsonText(device))

        // Commands still work; the device is reopened (pause, seek), but it is said once.
        try world.ok("volume", "40")
        try world.ok("pause")
        try world.waitForStatus(timeout: 3, "paused") { $0.string("state") == "paused" }
        try world.ok("play")
        try world.ok("seek", "5")
        let after = try world.waitForStatus(timeout: 3, "playing from 5 s") {
            $0.string("state") == "playing" && ($0.double("elapsed") ?? 0) >= 5
        }
        XCTAssertEqual(after.double("volume"), 40, jsonText(after))
        XCTAssertEqual(after.object("device")?.int("underruns"), 0, jsonText(after))
        XCTAssertEqual(after.object("device")?.int("rewindCount"), 0, jsonText(after))

        let said = daemonLogLines(world.daemon.log).filter { $0.contains("'paced' is not rewound") }
        XCTAssertEqual(said.count, 1, daemonReport(world.daemon))
        XCTAssertTrue(said.first?.contains("playing with a buffer of 1024 frames instead, so commands are heard 21 ms late") == true,
                      "\(said)")
        let doctor = try world.daemon.result("doctor")
        let flags = (doctor.array("redFlags") ?? []).compactMap { $0 as? [String: Any] }
        let flag = flags.first { $0.string("flag") == "noRewind" }
        XCTAssertNotNil(flag, jsonText(doctor))
        XCTAssertTrue(flag?.string("detail")?.contains("commands are heard 21 ms late") == true, jsonText(doctor))
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
    }

    /// A buffer in frames long enough to rewind is probed as well (its length and the device
    /// decide, not the unit): on a PCM that is not rewound it plays with the frames as given,
    /// `status` and `doctor` say so, and the log says nothing, since nothing was put in place of
    /// what the profile asked.
    func testALongBufferInFramesIsProbedAndKept() throws {
        let (world, playing) = try self.playing("period_frames = 2048\nbuffer_frames = 8192", seconds: 10)
        let device = playing.object("device") ?? [:]
        XCTAssertEqual(device.bool("rewinds"), false, jsonText(device))
        XCTAssertEqual(device.int("periodFrames"), 2048, jsonText(device))
        XCTAssertEqual(device.int("bufferFrames"), 8192, jsonText(device))
        XCTAssertFalse(world.daemon.log.contains("is not rewound"), daemonReport(world.daemon))
        let doctor = try world.daemon.result("doctor")
        let flags = (doctor.array("redFlags") ?? []).compactMap { $0 as? [String: Any] }
        let flag = flags.first { $0.string("flag") == "noRewind" }
        XCTAssertTrue(flag?.string("detail")?.contains("it plays with a buffer of 8192 frames") == true, jsonText(doctor))
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
    }

    /// A buffer shorter than `DeviceFormat.shortestRewoundMilliseconds` (the default 1024
    /// frames) is not probed, in either unit, and nothing is said.
    func testAShortBufferIsNotProbed() throws {
        for output in ["", "buffer_ms = 50"] {
            let (world, playing) = try self.playing(output, seconds: 10)
            XCTAssertTrue(playing.object("device")?.isNull("rewinds") ?? false, "\(output): \(jsonText(playing))")
            XCTAssertFalse(world.daemon.log.contains("is not rewound"), daemonReport(world.daemon))
            let doctor = try world.daemon.result("doctor")
            let flags = (doctor.array("redFlags") ?? []).compactMap { ($0 as? [String: Any])?.string("flag") }
            XCTAssertFalse(flags.contains("noRewind"), jsonText(doctor))
            XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
        }
    }
}
