import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// MPRIS on a private session bus and on a private system bus that has the policy file Board/
/// ships, driven by Debian's playerctl and read with busctl: each command checked against
/// `tonearm status --json`, every property's D-Bus type, what is signalled and when.
final class DaemonMPRISTests: XCTestCase {
    private static let name = "org.mpris.MediaPlayer2.tonearm"
    private static let object = [name, "/org/mpris/MediaPlayer2"]
    private static let player = "org.mpris.MediaPlayer2.Player"

    override func setUpWithError() throws {
        guard toolsAvailable("dbus-daemon", "busctl", "playerctl") else {
            throw XCTSkip("dbus-daemon, busctl and playerctl are not installed; run ./scripts/setup")
        }
    }

    func testPlayerctlOnTheSessionBus() throws {
        try requirePacedDevice()
        let world = try DaemonBench(start: false)
        let address = "unix:path=" + world.path("bus")
        let bus = try PrivateBus(address: address, config: "/usr/share/dbus-1/session.conf", log: world.path("bus"))
        defer { bus.stop() }
        let music = world.path("music")
        let tracks = try writeTracks(music)
        world.daemon.environment["DBUS_SESSION_BUS_ADDRESS"] = address
        world.daemon.environment["XDG_RUNTIME_DIR"] = world.path("run")
        try FileManager.default.createDirectory(atPath: world.path("run"), withIntermediateDirectories: true)
        world.daemon.arguments = ["--music-dir", music, "--mpris", "session"]
        try world.daemon.start()
        func playerctl(_ arguments: String...) throws -> ProcessResult {
            try runProcess("/usr/bin/playerctl", ["-p", "tonearm"] + arguments, environment: ["DBUS_SESSION_BUS_ADDRESS": address], timeout: 10)
        }
        func busctl(_ arguments: [String]) throws -> ProcessResult {
            try runProcess("/usr/bin/busctl", ["--address=" + address] + arguments, timeout: 10)
        }
        try checkPlayerctlDrives(world, tracks: tracks, playerctl: playerctl) { property, value in
            let command = ["Volume": "volume", "LoopStatus": "loop", "Shuffle": "shuffle"][property] ?? property
            return try runProcess("/usr/bin/playerctl", ["-p", "tonearm", command, value], environment: ["DBUS_SESSION_BUS_ADDRESS": address], timeout: 10)
        }
        try checkTypesAndRefusals(world, busctl: busctl)

        // The cover: written once under the runtime directory, named by mpris:artUrl.
        let art = try playerctl("metadata", "mpris:artUrl").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(art.hasPrefix("file://" + world.path("run") + "/tonearm/covers-tonearm/flac-") && art.hasSuffix(".jpg"),
                      "\(art)\n\(world.daemon.log)")
        let cover = FileManager.default.contents(atPath: String(art.dropFirst("file://".count)))
        XCTAssertEqual(cover.map { Array($0.prefix(3)) }, [0xFF, 0xD8, 0xFF], "the embedded PNG, as a JPEG of at most 512 px")
        XCTAssertEqual(try playerctl("metadata", "xesam:genre").stdout, "Test Jazz\n")
        XCTAssertEqual(try playerctl("metadata", "xesam:url").stdout, "file://" + tracks[0].replacingOccurrences(of: " ", with: "%20") + "\n")

        // Published on events only: nothing in 10 s of steady playback, one signal for each
        // event, and Seeked (not PropertiesChanged: no signalled property changes) for a seek.
        let monitor = try BusMonitor(address: address, name: Self.name, log: world.path("monitor.json"))
        defer { monitor.stop() }
        sleepSeconds(10)
        XCTAssertEqual(monitor.count("PropertiesChanged"), 0, "10 s of steady playback: \(monitor.signals())")
        XCTAssertEqual(monitor.count("Seeked"), 0)
        var changes = 0
        func expectOne(_ what: String, containing text: String, _ act: () throws -> Void) throws {
            try act()
            XCTAssertTrue(waitUntil(timeout: 5) { monitor.count("PropertiesChanged") > changes }, "\(what) was signalled")
            sleepSeconds(1)
            let all = monitor.signals().filter { $0.contains("\"PropertiesChanged\"") }
            XCTAssertEqual(all.count, changes + 1, "one PropertiesChanged for \(what): \(all.dropFirst(changes))")
            XCTAssertTrue(all.last?.contains(text) ?? false, "\(what): \(all.last ?? "")")
            XCTAssertFalse(all.last?.contains("\"Position\"") ?? true, "Position is never signalled")
            changes = all.count
        }
        try expectOne("a pause", containing: "\"Paused\"") { XCTAssertEqual(try playerctl("pause").status, 0) }
        try expectOne("play", containing: "\"Playing\"") { XCTAssertEqual(try playerctl("play").status, 0) }
        try expectOne("a track change", containing: "Track 2") { XCTAssertEqual(try playerctl("next").status, 0) }
        XCTAssertEqual(try playerctl("position", "7").status, 0)
        XCTAssertTrue(waitUntil(timeout: 5) { monitor.count("Seeked") == 1 }, "the seek was signalled")
        sleepSeconds(1)
        XCTAssertEqual(monitor.count("Seeked"), 1, "one Seeked for one seek")
        XCTAssertEqual(monitor.count("PropertiesChanged"), changes, "a seek changes no signalled property")
        let seeked = monitor.signals().first { $0.contains("\"Seeked\"") } ?? ""
        let position = Double(seeked.firstMatch(of: /"data":\[(\d+)\]/)?.1 ?? "") ?? -1
        XCTAssertEqual(position / 1_000_000, 7, accuracy: 0.5, "Seeked carries the new position: \(seeked)")
        XCTAssertEqual(try playerctl("position", "20+").status, 0, "a skip")
        XCTAssertTrue(waitUntil(timeout: 5) { monitor.count("Seeked") == 2 }, "a skip is a seek too")

        // OpenUri queues a file of the music directory and plays it; what it cannot play is
        // refused, saying why, and changes nothing.
        let queueLength = try world.statusJSON().int("queueCount") ?? 0
        XCTAssertEqual(try playerctl("open", "file://" + tracks[0].replacingOccurrences(of: " ", with: "%20")).status, 0)
        try world.waitForStatus(timeout: 10, "track 1 opened") {
            $0.string("title") == "Track 1" && $0.string("state") == "playing" && $0.int("queueCount") == queueLength + 1
        }
        for (uri, reason) in [("http://example.com/a.flac", "only file:// URIs"), ("file:///etc/passwd", "outside the music directory"),
                              ("file://" + tracks[0] + ".missing", "no such file")] {
            let refused = try busctl(["call"] + Self.object + [Self.player, "OpenUri", "s", uri])
            XCTAssertNotEqual(refused.status, 0, uri)
            XCTAssertTrue(refused.stderr.contains(reason), "\(uri): \(refused.stderr)")
        }
        XCTAssertEqual(try world.statusJSON().int("queueCount"), queueLength + 1, "nothing more queued")

        XCTAssertEqual(try playerctl("stop").status, 0)
        XCTAssertEqual(try world.statusJSON().string("state"), "stopped")
        XCTAssertTrue(world.daemon.isRunning)
        world.daemon.terminate()
        XCTAssertFalse(FileManager.default.fileExists(atPath: String(art.dropFirst("file://".count))), "the cover goes with the daemon")
    }

    func testTheSystemBusWithTheShippedPolicy() throws {
        guard toolsAvailable("setpriv", "useradd", "flac"), getuid() == 0 else {
            throw XCTSkip("needs root, setpriv, useradd and flac: the daemon runs as the service user")
        }
        let user = try ServiceUser("tonearm")
        defer { user.remove() }
        // A pipe as the device, drained: it keeps real time without a sound server.
        let world = try DaemonBench(jack: false, device: "pipe:", start: false)
        let directory = world.bench.directory.path
        let fifo = world.path("room.fifo")
        XCTAssertEqual(mkfifo(fifo, 0o666), 0)
        let drain = try RunningProcess("/bin/dd", ["if=" + fifo, "of=/dev/null", "bs=65536", "status=none"])
        defer {
            drain.send(SIGKILL)
            drain.wait(timeout: 5)
        }
        let tracks = try writeTracks(world.path("music"))
        let address = "unix:path=" + world.path("system_bus_socket")
        let config = world.path("system.conf")
        try PrivateBus.systemConfig(listening: address, including: packageRoot + "/Board/tonearm-dbus.conf").write(toFile: config, atomically: true, encoding: .utf8)
        var bus = try PrivateBus(address: address, config: config, log: world.path("system-bus"))
        defer { bus.stop() }
        try runChecked("/bin/chown", ["-R", "tonearm:tonearm", directory])
        try runChecked("/bin/chmod", ["0755", directory])

        // The daemon as root is not the service user: refused the name, saying what allows it.
        let intruder = try DaemonProcess(directory: world.path("intruder"), device: "null",
                                         environment: ["DBUS_SYSTEM_BUS_ADDRESS": address], arguments: ["--mpris", "system"], start: false)
        try FileManager.default.createDirectory(atPath: intruder.directory, withIntermediateDirectories: true)
        try intruder.start()
        XCTAssertTrue(waitUntil(timeout: 10) { intruder.log.contains("Board/tonearm-dbus.conf in /etc/dbus-1/system.d") }, intruder.log)
        XCTAssertTrue(intruder.log.contains("cannot own the name org.mpris.MediaPlayer2.tonearm: Permission denied"), intruder.log)
        intruder.terminate()

        world.daemon.device = "pipe:" + fifo
        world.daemon.launcher = ["/usr/bin/setpriv", "--reuid=tonearm", "--regid=tonearm", "--clear-groups", "--"]
        world.daemon.environment = ["DBUS_SYSTEM_BUS_ADDRESS": address, "XDG_RUNTIME_DIR": world.path("run")]
        world.daemon.arguments = ["--music-dir", world.path("music"), "--mpris", "system"]
        try world.daemon.start()

        // Clients as another user, nobody: playerctl looks for players on the system bus too,
        // from a session bus of its own.
        let session = world.path("nobody")
        try runChecked("/usr/bin/install", ["-d", "-o", "nobody", "-m", "0700", session])
        let asNobody = ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
        let sessionBus = try PrivateBus(address: "unix:path=" + session + "/bus", log: world.path("nobody-bus"), as: asNobody)
        defer { sessionBus.stop() }
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": address, "DBUS_SESSION_BUS_ADDRESS": "unix:path=" + session + "/bus", "HOME": session]
        func playerctl(_ arguments: String...) throws -> ProcessResult {
            try runProcess(asNobody[0], Array(asNobody.dropFirst()) + ["/usr/bin/playerctl", "-p", "tonearm"] + arguments,
                           environment: environment, timeout: 10)
        }
        func busctl(_ arguments: [String]) throws -> ProcessResult {
            try runProcess(asNobody[0], Array(asNobody.dropFirst()) + ["/usr/bin/busctl", "--address=" + address] + arguments, timeout: 10)
        }
        XCTAssertTrue(try waitUntil(timeout: 10) { try playerctl("status").status == 0 }, "tonearm on the system bus: \(world.daemon.log)")
        let uid = try runChecked("/usr/bin/id", ["-u", "tonearm"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let owner = try runProcess("/usr/bin/busctl", ["--address=" + address, "status", Self.name], timeout: 10)
        XCTAssertTrue(owner.stdout.contains("UID=\(uid)\n"), "owned by the service user: \(owner.stdout)")
        // playerctl 2.4.1 sends its property changes (volume, loop, shuffle) over the session
        // bus even for a player on the system bus: they go through busctl, as nobody too.
        try checkPlayerctlDrives(world, tracks: tracks, playerctl: playerctl) { property, value in
            let typed = property == "Volume" ? ["d", value] : property == "Shuffle" ? ["b", value == "On" ? "true" : "false"] : ["s", value]
            return try busctl(["set-property"] + Self.object + [Self.player, property] + typed)
        }
        try checkTypesAndRefusals(world, busctl: busctl)
        let squat = try busctl(["call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName", "su", Self.name + ".x", "0"])
        XCTAssertNotEqual(squat.status, 0, "nobody may not own the player's names")
        XCTAssertTrue(squat.stderr.contains("Access denied"), squat.stderr)

        // The bus goes away and comes back: the daemon plays on, and is found again.
        XCTAssertEqual(try playerctl("play").status, 0)
        try world.waitForStatus(timeout: 10, "playing") { $0.string("state") == "playing" && $0.double("rate") == 1 }
        bus.stop()
        XCTAssertTrue(waitUntil(timeout: 10) { world.daemon.log.contains("cannot read from the bus") }, world.daemon.log)
        let before = try world.statusJSON().double("elapsed") ?? 0
        try? FileManager.default.removeItem(atPath: world.path("system_bus_socket"))
        bus = try PrivateBus(address: address, config: config, log: world.path("system-bus-2"))
        XCTAssertTrue(try waitUntil(timeout: 15) { try playerctl("status").stdout == "Playing\n" }, "found again: \(world.daemon.log)")
        let status = try world.statusJSON()
        XCTAssertEqual(status.string("state"), "playing")
        XCTAssertEqual(status.string("output"), "ok", "playback never noticed")
        XCTAssertGreaterThan(status.double("elapsed") ?? 0, before)
    }

    func testANameAnotherDaemonOwnsIsTakenWhenItLetsGo() throws {
        let world = try DaemonBench(jack: false, device: "null", start: false)
        let address = "unix:path=" + world.path("bus")
        let bus = try PrivateBus(address: address, config: "/usr/share/dbus-1/session.conf", log: world.path("bus"))
        defer { bus.stop() }
        let first = try DaemonProcess(directory: world.path("first"), device: "null", environment: ["DBUS_SESSION_BUS_ADDRESS": address],
                                      arguments: ["--mpris", "session"], start: false)
        try FileManager.default.createDirectory(atPath: first.directory, withIntermediateDirectories: true)
        world.daemon.environment["DBUS_SESSION_BUS_ADDRESS"] = address
        world.daemon.arguments = ["--mpris", "session"]
        func owner() throws -> String {
            try runProcess("/usr/bin/busctl", ["--address=" + address, "status", Self.name], timeout: 10).stdout
        }
        try first.start()
        XCTAssertTrue(try waitUntil(timeout: 10) { try owner().contains("PID=\(first.pid ?? 0)\n") }, "the first daemon owns the name")
        try world.daemon.start()
        let waiting = "MPRIS: \(Self.name) is owned by another process (pid \(first.pid ?? 0)); Tonearm takes the name when it lets go"
        XCTAssertTrue(waitUntil(timeout: 10) { world.daemon.log.contains(waiting) }, world.daemon.log)
        XCTAssertTrue(try owner().contains("PID=\(first.pid ?? 0)\n"), "still the first's")
        first.terminate()
        XCTAssertTrue(try waitUntil(timeout: 10) { try owner().contains("PID=\(world.daemon.pid ?? 0)\n") }, "taken at once: \(world.daemon.log)")
        XCTAssertTrue(world.daemon.log.contains("MPRIS: \(Self.name) on the session bus"), world.daemon.log)
    }

    // MARK: The checks both buses share

    /// status, play, pause, play-pause, next, previous, position (get and set), metadata, loop,
    /// shuffle, volume: each through playerctl and checked against `tonearm status --json`.
    /// `set` sets a Player property (playerctl's volume, loop and shuffle, or busctl's
    /// set-property where playerctl cannot).
    private func checkPlayerctlDrives(_ world: DaemonBench, tracks: [String], playerctl: (String...) throws -> ProcessResult,
                                      set: (_ property: String, _ value: String) throws -> ProcessResult) throws {
        XCTAssertTrue(try waitUntil(timeout: 10) { (try playerctl("status")).status == 0 }, "tonearm appears on the bus")
        XCTAssertEqual(try playerctl("status").stdout, "Stopped\n")
        XCTAssertNotEqual(try playerctl("play").status, 0, "play is disabled with nothing queued")

        _ = try world.ok(["add"] + tracks)
        XCTAssertEqual(try playerctl("play").status, 0)
        try world.waitForStatus(timeout: 10, "playing") { $0.string("state") == "playing" && $0.double("rate") == 1 }
        XCTAssertTrue(try waitUntil(timeout: 5) { try playerctl("status").stdout == "Playing\n" })
        XCTAssertEqual(try playerctl("metadata", "title").stdout, "Track 1\n")
        XCTAssertEqual(try playerctl("metadata", "artist").stdout, try world.statusJSON().string("artist").map { $0 + "\n" })
        XCTAssertEqual(try playerctl("metadata", "album").stdout, "Daemon Sessions\n")
        XCTAssertEqual(try playerctl("metadata", "mpris:length").stdout, "60000000\n")
        XCTAssertEqual(try playerctl("metadata", "xesam:trackNumber").stdout, "1\n")
        XCTAssertEqual(try playerctl("metadata", "mpris:trackid").stdout, "'/org/tonearm/track/1'\n")

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
        XCTAssertEqual(try world.statusJSON().double("elapsed") ?? 0, 12, accuracy: 1, "set position")
        let read = Double(try playerctl("position").stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        XCTAssertEqual(read, try world.statusJSON().double("elapsed") ?? 0, accuracy: 0.5, "Position, extrapolated when read")

        XCTAssertEqual(try set("Volume", "0.4").status, 0)
        XCTAssertEqual(try world.statusJSON().int("volume"), 40)
        XCTAssertTrue(try waitUntil(timeout: 5) { try playerctl("volume").stdout == "0.400000\n" })
        XCTAssertEqual(try set("LoopStatus", "Track").status, 0)
        XCTAssertEqual(try world.statusJSON().string("repeat"), "one")
        XCTAssertTrue(try waitUntil(timeout: 5) { try playerctl("loop").stdout == "Track\n" })
        XCTAssertEqual(try set("LoopStatus", "None").status, 0)
        XCTAssertEqual(try world.statusJSON().string("repeat"), "off")
        XCTAssertEqual(try set("Shuffle", "On").status, 0)
        XCTAssertEqual(try world.statusJSON().bool("shuffle"), true)
        XCTAssertTrue(try waitUntil(timeout: 5) { try playerctl("shuffle").stdout == "On\n" })
        XCTAssertEqual(try set("Shuffle", "Off").status, 0)
        XCTAssertEqual(try world.statusJSON().bool("shuffle"), false)
    }

    /// Every member and its D-Bus type as busctl reads them, and the errors for what is not there.
    private func checkTypesAndRefusals(_ world: DaemonBench, busctl: ([String]) throws -> ProcessResult) throws {
        let introspection = try busctl(["introspect", "--no-pager"] + Self.object).stdout
        let members: [(String, String)] = [
            (".Raise", "method"), (".Quit", "method"), (".CanQuit", "property b"), (".CanRaise", "property b"),
            (".HasTrackList", "property b"), (".Identity", "property s"), (".DesktopEntry", "property s"),
            (".SupportedUriSchemes", "property as"), (".SupportedMimeTypes", "property as"),
            (".Next", "method"), (".Previous", "method"), (".Pause", "method"), (".PlayPause", "method"), (".Stop", "method"),
            (".Play", "method"), (".Seek", "method x"), (".SetPosition", "method ox"), (".OpenUri", "method s"), (".Seeked", "signal x"),
            (".PlaybackStatus", "property s"), (".LoopStatus", "property s"), (".Rate", "property d"), (".Shuffle", "property b"),
            (".Metadata", "property a{sv}"), (".Volume", "property d"), (".Position", "property x"), (".MinimumRate", "property d"),
            (".MaximumRate", "property d"), (".CanGoNext", "property b"), (".CanGoPrevious", "property b"), (".CanPlay", "property b"),
            (".CanPause", "property b"), (".CanSeek", "property b"), (".CanControl", "property b"),
        ]
        for (member, kind) in members {
            let line = introspection.split(separator: "\n").first { $0.hasPrefix(member + " ") }.map(String.init) ?? ""
            let words = line.split(separator: " ").map(String.init)
            XCTAssertEqual(words.dropFirst().prefix(kind.split(separator: " ").count).joined(separator: " "), kind, "\(member): \(line)")
        }
        let root = ["org.mpris.MediaPlayer2"]
        let expected: [([String], String)] = [
            (root + ["Identity"], "s \"Tonearm\"\n"), (root + ["CanQuit"], "b false\n"), (root + ["CanRaise"], "b false\n"),
            (root + ["HasTrackList"], "b false\n"), (root + ["DesktopEntry"], "s \"tonearm\"\n"),
            (root + ["SupportedUriSchemes"], "as 1 \"file\"\n"),
            ([Self.player, "Rate"], "d 1\n"), ([Self.player, "MinimumRate"], "d 1\n"), ([Self.player, "MaximumRate"], "d 1\n"),
            ([Self.player, "Volume"], "d 0.4\n"), ([Self.player, "CanControl"], "b true\n"), ([Self.player, "LoopStatus"], "s \"None\"\n"),
        ]
        for (property, value) in expected {
            XCTAssertEqual(try busctl(["get-property"] + Self.object + property).stdout, value, property.joined(separator: "."))
        }
        // Every decoder plug-in's MIME types, each once.
        let mimeTypes = try busctl(["get-property"] + Self.object + root + ["SupportedMimeTypes"]).stdout.trimmingCharacters(in: .newlines)
        let quoted = mimeTypes.split(separator: " ").dropFirst(2).map(String.init)
        XCTAssertTrue(mimeTypes.hasPrefix("as \(quoted.count) "), mimeTypes)
        XCTAssertEqual(Set(quoted).count, quoted.count, mimeTypes)
        for type in ["audio/flac"] { XCTAssertTrue(mimeTypes.contains("\"\(type)\""), "\(type) in \(mimeTypes)") }
        for property in ["Position", "Metadata", "PlaybackStatus", "CanSeek"] {
            XCTAssertEqual(try busctl(["get-property"] + Self.object + [Self.player, property]).status, 0, property)
        }
        let unknown = try busctl(["get-property"] + Self.object + [Self.player, "Colour"])
        XCTAssertNotEqual(unknown.status, 0)
        XCTAssertTrue(unknown.stderr.contains("no property Colour"), unknown.stderr)
        let wrongType = try busctl(["set-property"] + Self.object + [Self.player, "Volume", "s", "loud"])
        XCTAssertNotEqual(wrongType.status, 0)
        XCTAssertTrue(wrongType.stderr.contains("Volume has another type"), wrongType.stderr)
        let wrongArgument = try busctl(["call"] + Self.object + [Self.player, "Seek", "s", "far"])
        XCTAssertNotEqual(wrongArgument.status, 0)
        XCTAssertTrue(wrongArgument.stderr.contains("Seek takes (x)"), wrongArgument.stderr)
        let noMethod = try busctl(["call"] + Self.object + [Self.player, "Rewind"])
        XCTAssertNotEqual(noMethod.status, 0)
        let readOnly = try busctl(["set-property"] + Self.object + ["org.mpris.MediaPlayer2", "Identity", "s", "Other"])
        XCTAssertNotEqual(readOnly.status, 0)
        // A stale track id is ignored, as the spec says.
        let elapsed = try world.statusJSON().double("elapsed") ?? 0
        XCTAssertEqual(try busctl(["call"] + Self.object + [Self.player, "SetPosition", "ox", "/org/tonearm/track/999", "1000000"]).status, 0)
        XCTAssertEqual(try world.statusJSON().double("elapsed") ?? 0, elapsed, accuracy: 1.5, "nothing moved")
        XCTAssertEqual(try world.statusJSON().int("volume"), 40, "nothing changed")
    }

    /// Two tagged 60 s tracks with the same embedded cover in `music`.
    private func writeTracks(_ music: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        return try (1...2).map { n in
            var fixture = taggedFixture(n, seconds: 60)
            fixture.tags.append(("GENRE", "Test Jazz"))
            fixture.picture = FixturePicture(width: 32, height: 32)
            return try fixture.write(to: music + "/\(n) of 2.flac")
        }
    }
}

/// A dbus-daemon of the test's own, at `address`.
/// `busctl monitor` of one name's traffic, as JSON lines.
private struct BusMonitor {
    let process: RunningProcess
    let log: String

    init(address: String, name: String, log: String) throws {
        self.log = log
        process = try RunningProcess("/usr/bin/busctl", ["--address=" + address, "monitor", "--json=short", name],
                                     stdoutPath: log, stderrPath: log + ".err")
        sleepSeconds(0.5)
    }

    func signals() -> [String] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.contains("\"type\":\"signal\"") }.map(String.init)
    }

    func count(_ member: String) -> Int { signals().filter { $0.contains("\"member\":\"\(member)\"") }.count }

    func stop() {
        process.send(SIGTERM)
        process.wait(timeout: 5)
    }
}

/// The system user the service runs as, made for the test when the machine has none (as the
/// unit's install steps make it) and removed again afterwards.
private struct ServiceUser {
    let name: String
    let made: Bool

    init(_ name: String) throws {
        self.name = name
        made = getpwnam(name) == nil
        if made {
            try runChecked("/usr/sbin/useradd", ["--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name])
        }
    }

    func remove() {
        if made { _ = try? runProcess("/usr/sbin/userdel", [name]) }
    }
}
