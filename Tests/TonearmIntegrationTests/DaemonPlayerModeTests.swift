import Foundation
import TestSupport
import XCTest

/// Single, consume and ReplayGain through the CLI: the profile's ReplayGain is the default, a
/// client's change wins and, like the other modes, survives a restart; bad values are refused.
final class DaemonPlayerModeTests: XCTestCase {
    func testModesComeFromTheProfileChangeFromTheCLIAndSurviveARestart() throws {
        let world = try DaemonBench(jack: false, device: "null", start: false)
        let profile = world.path("board.toml")
        try "[player]\nreplay_gain = \"track\"\nreplay_gain_preamp = 1.5\n".write(toFile: profile, atomically: true, encoding: .utf8)
        world.daemon.arguments = ["--config", profile]
        try world.daemon.start()

        var status = try world.statusJSON()
        XCTAssertEqual(status.object("replayGain")?["mode"] as? String, "track", jsonText(status))
        XCTAssertEqual(status.object("replayGain")?["preamp"] as? Double, 1.5)
        XCTAssertEqual(status.string("single"), "off")
        XCTAssertEqual(status.bool("consume"), false)
        XCTAssertEqual(try world.ok("replaygain").stdout, "track, pre-amp 1.5 dB, files without tags 0.0 dB\n")

        _ = try world.ok("replaygain", "album", "--missing-preamp", "-4")
        _ = try world.ok("single", "oneshot")
        _ = try world.ok("consume", "on")
        status = try world.statusJSON()
        XCTAssertEqual(status.object("replayGain")?["mode"] as? String, "album", "the mode changed")
        XCTAssertEqual(status.object("replayGain")?["preamp"] as? Double, 1.5, "what was not given stays")
        XCTAssertEqual(status.object("replayGain")?["missingPreamp"] as? Double, -4)

        let refused = try world.cli("replaygain", "loud")
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("MODE must be off, track, album or auto"), "\(refused)")
        XCTAssertThrowsError(try world.daemon.result("replayGain", ["preamp": 40])) { error in
            XCTAssertTrue("\(error)".contains("the ReplayGain pre-amp must be between -15 and 15 dB, not 40.0"), "\(error)")
        }
        XCTAssertEqual(try world.cli("single", "twice").status, 64)

        _ = world.daemon.terminate()
        try world.daemon.start()
        status = try world.statusJSON()
        XCTAssertEqual(status.object("replayGain")?["mode"] as? String, "album", "kept across the restart: \(jsonText(status))")
        XCTAssertEqual(status.object("replayGain")?["missingPreamp"] as? Double, -4)
        XCTAssertEqual(status.string("single"), "oneshot")
        XCTAssertEqual(status.bool("consume"), true)
    }
}
