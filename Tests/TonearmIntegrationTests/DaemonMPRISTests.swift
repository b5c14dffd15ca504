import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// MPRIS on a private session bus, driven by Debian's playerctl and read with busctl: each
/// command checked against `tonearm status --json`, the properties against what plays.
final class DaemonMPRISTests: XCTestCase {
    override func setUpWithError() throws {
        guard toolsAvailable("dbus-daemon", "busctl", "playerctl") else {
            throw XCTSkip("dbus-daemon, busctl and playerctl are not installed; run ./scripts/setup")
        }
        try requirePacedDevice()
    }

    func testPlayerctlDrivesThePlayerAndSeesNowPlaying() throws {
        let world = try DaemonBench(start: false)
        let socket = world.path("bus")
        let address = "unix:path=" + socket
        let bus = try RunningProcess("/usr/bin/dbus-daemon", ["--config-file=/usr/share/dbus-1/session.conf", "--nofork", "--address=" + address],
                                     stdoutPath: world.path("bus.out"), stderrPath: world.path("bus.err"))
        defer {
            bus.send(SIGTERM)
            bus.wait(timeout: 5)
        }
        XCTAssertTrue(waitUntil(timeout: 10) { FileManager.default.fileExists(atPath: socket) }, "the bus is up")
        let music = world.path("music")
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        let first = try taggedFixture(1, seconds: 20).write(to: music + "/1.flac")
        let second = try taggedFixture(2, seconds: 20).write(to: music + "/2.flac")
        world.daemon.environment["DBUS_SESSION_BUS_ADDRESS"] = address
        world.daemon.arguments = ["--music-dir", music, "--mpris", "session"]
        try world.daemon.start()

        func playerctl(_ arguments: String...) throws -> ProcessResult {
            try runProcess("/usr/bin/playerctl", ["-p", "tonearm"] + arguments, environment: ["DBUS_SESSION_BUS_ADDRESS": address], timeout: 10)
        }
        XCTAssertTrue(try waitUntil(timeout: 10) { (try playerctl("status")).status == 0 }, "tonearm appears on the bus")
        XCTAssertEqual(try playerctl("status").stdout, "Stopped\n")

        _ = try world.ok("add", first, second)
        XCTAssertEqual(try playerctl("play").status, 0)
        try world.waitForStatus(timeout: 10, "playing") { $0.string("state") == "playing" && $0.double("rate") == 1 }
        XCTAssertTrue(try waitUntil(timeout: 5) { try playerctl("status").stdout == "Playing\n" })
        XCTAssertEqual(try playerctl("metadata", "title").stdout, "Track 1\n")
        XCTAssertEqual(try playerctl("metadata", "artist").stdout, try world.statusJSON().string("artist").map { $0 + "\n" })
        XCTAssertEqual(try playerctl("metadata", "mpris:length").stdout, "20000000\n")

        XCTAssertEqual(try playerctl("pause").status, 0)
        XCTAssertEqual(try world.statusJSON().string("state"), "paused")
        XCTAssertTrue(try waitUntil(timeout: 5) { try playerctl("status").stdout == "Paused\n" })
        XCTAssertEqual(try playerctl("play-pause").status, 0)
        XCTAssertEqual(try world.statusJSON().string("state"), "playing")

        XCTAssertEqual(try playerctl("next").status, 0)
        try world.waitForStatus(timeout: 10, "on track 2") { $0.string("title") == "Track 2" }
        XCTAssertTrue(try waitUntil(timeout: 5) { try playerctl("metadata", "title").stdout == "Track 2\n" })
        XCTAssertEqual(try playerctl("previous").status, 0)
        try world.waitForStatus(timeout: 10, "back on track 1") { $0.string("title") == "Track 1" }

        XCTAssertEqual(try playerctl("position", "12").status, 0)
        let moved = try world.statusJSON().double("elapsed") ?? 0
        XCTAssertEqual(moved, 12, accuracy: 1, "set position")
        let read = Double(try playerctl("position").stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        XCTAssertEqual(read, try world.statusJSON().double("elapsed") ?? 0, accuracy: 0.5, "Position, extrapolated when read")

        XCTAssertEqual(try playerctl("volume", "0.4").status, 0)
        XCTAssertEqual(try world.statusJSON().int("volume"), 40)
        XCTAssertEqual(try playerctl("loop", "Track").status, 0)
        XCTAssertEqual(try world.statusJSON().string("repeat"), "one")
        XCTAssertTrue(try waitUntil(timeout: 5) { try playerctl("loop").stdout == "Track\n" })
        XCTAssertEqual(try playerctl("shuffle", "On").status, 0)
        XCTAssertEqual(try world.statusJSON().bool("shuffle"), true)

        // busctl: the types of the properties, and errors for what is not there.
        func busctl(_ arguments: [String]) throws -> ProcessResult {
            try runProcess("/usr/bin/busctl", ["--address=" + address] + arguments, timeout: 10)
        }
        let object = ["org.mpris.MediaPlayer2.tonearm", "/org/mpris/MediaPlayer2"]
        XCTAssertEqual(try busctl(["get-property"] + object + ["org.mpris.MediaPlayer2", "Identity"]).stdout, "s \"Tonearm\"\n")
        XCTAssertEqual(try busctl(["get-property"] + object + ["org.mpris.MediaPlayer2.Player", "Volume"]).stdout, "d 0.4\n")
        XCTAssertEqual(try busctl(["get-property"] + object + ["org.mpris.MediaPlayer2.Player", "CanControl"]).stdout, "b true\n")
        XCTAssertTrue(try busctl(["introspect"] + object).stdout.contains(".PlayPause"))
        let unknown = try busctl(["get-property"] + object + ["org.mpris.MediaPlayer2.Player", "Colour"])
        XCTAssertNotEqual(unknown.status, 0)
        let wrongType = try busctl(["set-property"] + object + ["org.mpris.MediaPlayer2.Player", "Volume", "s", "loud"])
        XCTAssertNotEqual(wrongType.status, 0)
        XCTAssertEqual(try world.statusJSON().int("volume"), 40, "nothing changed")

        // Published on events only: nothing while it just plays, one change set for a pause.
        XCTAssertEqual(try playerctl("play").status, 0)
        try world.waitForStatus(timeout: 10, "playing again") { $0.string("state") == "playing" && $0.double("rate") == 1 }
        sleepSeconds(0.5)
        let monitorLog = world.path("monitor.json")
        let monitor = try RunningProcess("/usr/bin/busctl", ["--address=" + address, "monitor", "--json=short", "org.mpris.MediaPlayer2.tonearm"],
                                         stdoutPath: monitorLog, stderrPath: world.path("monitor.err"))
        defer {
            monitor.send(SIGTERM)
            monitor.wait(timeout: 5)
        }
        func changes() -> [String] {
            ((try? String(contentsOfFile: monitorLog, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.contains("\"PropertiesChanged\"") }.map(String.init)
        }
        sleepSeconds(3)
        XCTAssertEqual(changes().count, 0, "3 s of steady playback: no PropertiesChanged")
        XCTAssertEqual(try playerctl("pause").status, 0)
        XCTAssertTrue(waitUntil(timeout: 5) { changes().count >= 1 }, "the pause was signalled")
        sleepSeconds(1)
        XCTAssertEqual(changes().count, 1, "one PropertiesChanged for one pause: \(changes())")
        XCTAssertTrue(changes().first?.contains("Paused") ?? false, "\(changes())")
        XCTAssertFalse(changes().first?.contains("\"Position\"") ?? true, "Position is never signalled")

        XCTAssertEqual(try playerctl("stop").status, 0)
        XCTAssertEqual(try world.statusJSON().string("state"), "stopped")
        XCTAssertTrue(world.daemon.isRunning)
    }
}
