import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A `[[link]]` end to end: a scripted MPRIS player on a private bus (python3-dbus, as
/// shairport-sync's player would answer), a client whose session carries the linked name, and
/// the daemon's every face — `status`, MPD, Tonearm's own MPRIS, `tonearm` — showing that
/// player's Now Playing and sending it the commands.
final class DaemonLinkTests: XCTestCase {
    private static let playerName = "org.mpris.MediaPlayer2.ShairportSync"
    /// Generous: the suite runs beside other load.
    private static let patience = 30.0

    override func setUpWithError() throws {
        guard toolsAvailable("dbus-daemon", "busctl", "playerctl", "mpc") else {
            throw XCTSkip("dbus-daemon, busctl, playerctl and mpc are not installed; run ./scripts/setup")
        }
        guard (try? runProcess("/usr/bin/python3", ["-c", "import dbus, dbus.service, dbus.mainloop.glib; from gi.repository import GLib"]))?.status == 0 else {
            throw XCTSkip("the scripted player needs python3-dbus and python3-gi; run ./scripts/setup")
        }
        try requirePacedDevice()
    }

    func testALinkedPlayerIsNowPlayingEverywhereAndTakesTheCommands() throws {
        let world = try DaemonBench(start: false)
        let address = "unix:path=" + world.path("bus")
        let bus = try PrivateBus(address: address, config: "/usr/share/dbus-1/session.conf", log: world.path("bus"))
        defer { bus.stop() }
        let calls = world.path("calls")
        let cover = world.path("airplay cover.png")
        try Data(Self.coverPNG).write(to: URL(fileURLWithPath: cover))
        var player: RunningProcess? = try startPlayer(world, address: address, calls: calls, cover: cover)
        defer {
            player?.send(SIGKILL)
            _ = player?.wait(timeout: 5)
        }

        let music = world.path("music")
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        let tracks = try (1...2).map { try taggedFixture($0, seconds: 60).write(to: music + "/\($0).flac") }
        let port = try freeTCPPort()
        let profile = world.path("board.toml")
        try """
            [mpris]
            bus = "session"

            [[link]]
            session = "shairport-sync"
            mpris = "\(Self.playerName)"
            bus = "session"
            """.write(toFile: profile, atomically: true, encoding: .utf8)
        world.daemon.environment["DBUS_SESSION_BUS_ADDRESS"] = address
        world.daemon.environment["XDG_RUNTIME_DIR"] = world.path("run")
        try FileManager.default.createDirectory(atPath: world.path("run"), withIntermediateDirectories: true)
        world.daemon.arguments = ["--config", profile, "--music-dir", music, "--mpd-port", String(port)]
        try world.daemon.start()
        func mpc(_ arguments: String...) throws -> String {
            let result = try runProcess("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", String(port)] + arguments, timeout: 15)
            guard result.status == 0 else { throw TestSupportError("mpc \(arguments.joined(separator: " ")): \(result)") }
            return result.stdout
        }
        func playerctl(_ arguments: String...) throws -> String {
            try runProcess("/usr/bin/playerctl", ["-p", "tonearm"] + arguments, environment: ["DBUS_SESSION_BUS_ADDRESS": address], timeout: 15).stdout
        }
        func recorded() -> [String] {
            ((try? String(contentsOfFile: calls, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        func linkPresent(_ status: [String: Any]) -> Bool? {
            (status.array("links")?.first as? [String: Any])?.bool("present")
        }

        // The player's own Now Playing, and the link waiting for a session of its name.
        try world.ok(["add"] + tracks)
        try world.ok("play")
        try world.waitForStatus(timeout: Self.patience, "the player playing, the linked player seen") {
            $0.string("state") == "playing" && $0.string("title") == "Track 1" && linkPresent($0) == true
        }
        XCTAssertTrue(try world.status().isNull("nowPlayingLink"), "no session of that name yet")

        // A program's session named as the link says takes Now Playing: the linked player's is
        // the daemon's now.
        let app = try world.daemon.connect()
        _ = try app.result("subscribe", ["topics": ["nowPlaying", "remoteCommand"]])
        let session = try XCTUnwrap(try app.result("sessionOpen", ["category": "playback", "remoteCommands": true, "name": "shairport-sync"])
            .int("session"))
        _ = try app.result("sessionActivate", ["session": session])
        try waitForNowPlaying(app, title: "Song 1")
        var status = try world.status()
        XCTAssertEqual(status.string("title"), "Song 1")
        XCTAssertEqual(status.string("artist"), "Scripted Artist, Guest", "both artists")
        XCTAssertEqual(status.string("album"), "Private Bus")
        XCTAssertEqual(status.double("duration"), 180)
        XCTAssertEqual(status.string("state"), "playing")
        XCTAssertEqual(status.double("rate"), 1)
        XCTAssertEqual(status.double("elapsed") ?? 0, 5, accuracy: Self.patience, "the player's Position, extrapolated")
        XCTAssertGreaterThanOrEqual(status.double("elapsed") ?? 0, 5)
        XCTAssertEqual(status.object("nowPlayingLink")?.string("session"), "shairport-sync")
        let artwork = try XCTUnwrap(status.object("artwork"), "the cover the player names")
        XCTAssertTrue(artwork.string("id")?.hasPrefix("link-") ?? false, "\(artwork)")
        XCTAssertEqual(artwork.int("width"), 1)
        XCTAssertEqual(try world.daemon.result("artwork", ["artwork": artwork.string("id") ?? ""]).string("data"),
                       Data(Self.coverPNG).base64EncodedString(), "served as it is")
        let line = try world.ok("status").stdout
        XCTAssertTrue(line.hasPrefix("▶ Song 1 — Scripted Artist, Guest  0:") && line.contains(" / 3:00  (shairport-sync)"), line)
        XCTAssertTrue(try world.ok("doctor").stdout.contains(
            "link:        sessions 'shairport-sync' ↔ \(Self.playerName) on the session bus — there"))
        XCTAssertEqual(try mpc("-f", "%file%;%title%;%artist%;%album%", "current"), "shairport-sync;Song 1;Scripted Artist, Guest;Private Bus\n")
        XCTAssertTrue(try mpc("status").contains("[playing]"))
        XCTAssertTrue(waitUntil(timeout: Self.patience) { (try? playerctl("metadata", "title")) == "Song 1\n" }, "Tonearm's own MPRIS")
        XCTAssertEqual(try playerctl("metadata", "artist"), "Scripted Artist, Guest\n")
        XCTAssertEqual(try playerctl("status"), "Playing\n")
        let art = try playerctl("metadata", "mpris:artUrl").trimmingCharacters(in: .whitespacesAndNewlines)
        let artFile = FileManager.default.contents(atPath: String(art.dropFirst("file://".count)))
        XCTAssertEqual(artFile.map { Array($0.prefix(3)) }, [0xFF, 0xD8, 0xFF], "the linked cover, as Tonearm's MPRIS covers are: \(art)")

        // `tonearm next` reaches the player's Next; the player moves on and says so.
        try world.ok("next")
        XCTAssertTrue(waitUntil(timeout: Self.patience) { recorded() == ["Next"] }, "\(recorded())")
        try waitForNowPlaying(app, title: "Song 2")
        XCTAssertEqual(try world.status().string("title"), "Song 2")
        // MPD's next too.
        _ = try mpc("next")
        XCTAssertTrue(waitUntil(timeout: Self.patience) { recorded() == ["Next", "Next"] }, "\(recorded())")
        try waitForNowPlaying(app, title: "Song 3")
        XCTAssertEqual(try mpc("-f", "%title%", "current"), "Song 3\n")
        XCTAssertEqual(try world.status().int("queueIndex"), nil, "not the queue's")

        // The player changes its metadata by itself: it is everywhere without being asked.
        XCTAssertEqual(try runProcess("/usr/bin/busctl", ["--address=" + address, "call", Self.playerName, "/org/mpris/MediaPlayer2",
                                                          "org.tonearm.Script", "SetTitle", "s", "Renamed by the player"], timeout: 15).status, 0)
        try waitForNowPlaying(app, title: "Renamed by the player")
        XCTAssertEqual(try mpc("-f", "%title%", "current"), "Renamed by the player\n")
        XCTAssertTrue(waitUntil(timeout: Self.patience) { (try? playerctl("metadata", "title")) == "Renamed by the player\n" })

        // Pause and a position: the player's methods, and what it then says.
        try world.ok("pause")
        try waitForNowPlaying(app, reason: "paused")
        status = try world.status()
        XCTAssertEqual(status.string("state"), "paused")
        XCTAssertEqual(status.double("rate"), 0)
        try world.ok("seek", "42")
        try waitForNowPlaying(app, reason: "seek")
        XCTAssertEqual(try world.status().double("elapsed") ?? 0, 42, accuracy: 0.01, "paused where the player says")
        XCTAssertEqual(recorded(), ["Next", "Next", "Pause", "SetPosition /org/tonearm/script/track3 42000000"])
        XCTAssertTrue(app.events.filter { $0.message.string("event") == "remoteCommand" }.isEmpty,
                      "the session's own client is not asked: the player is")

        // The player goes: the session is as an unlinked one — the player's own Now Playing,
        // the commands to the session's client.
        player?.send(SIGTERM)
        _ = player?.wait(timeout: 10)
        player = nil
        try world.waitForStatus(timeout: Self.patience, "the linked player gone") {
            $0.isNull("nowPlayingLink") && linkPresent($0) == false && $0.string("title") == "Track 1"
        }
        let told = try world.ok("doctor").stdout
        XCTAssertTrue(told.contains("\(Self.playerName) on the session bus — NOT there\n")
            && told.contains("✗ linkedPlayerAbsent: session \(session) ('shairport-sync') owns Now Playing"), told)
        let doctor = try world.daemon.result("doctor")
        XCTAssertTrue((doctor.array("redFlags") as? [[String: Any]] ?? []).contains { $0.string("flag") == "linkedPlayerAbsent" }, jsonText(doctor))
        XCTAssertEqual(try world.daemon.result("sessions").int("nowPlayingOwner"), session, "the session still owns Now Playing")
        try world.ok("next")
        XCTAssertTrue(waitUntil(timeout: Self.patience) {
            app.collectEvents(timeout: 0.1).contains { $0.message.string("event") == "remoteCommand" }
        }, "to the session's client, as for any session")
        XCTAssertTrue(world.daemon.isRunning)

        // It comes back: its Now Playing again.
        player = try startPlayer(world, address: address, calls: calls, cover: cover)
        try waitForNowPlaying(app, title: "Song 1")
        XCTAssertEqual(try world.status().object("nowPlayingLink")?.string("session"), "shairport-sync")

        // The session closes: the player's own Now Playing returns, everywhere.
        _ = try app.result("sessionClose", ["session": session])
        try world.waitForStatus(timeout: Self.patience, "the player's own Now Playing") {
            $0.isNull("nowPlayingLink") && $0.string("title") == "Track 1" && linkPresent($0) == true
        }
        XCTAssertEqual(try mpc("-f", "%title%", "current"), "Track 1\n")
        XCTAssertTrue(waitUntil(timeout: Self.patience) { (try? playerctl("metadata", "title")) == "Track 1\n" })
        XCTAssertEqual(try world.daemon.result("sessions").int("nowPlayingOwner"), 1)
        try world.ok("play")
        try world.waitForStatus(timeout: Self.patience, "the player playing again") { $0.string("state") == "playing" }
        XCTAssertEqual(recorded().count, 4, "nothing more reached the linked player: \(recorded())")
        XCTAssertTrue(world.daemon.isRunning, daemonReport(world.daemon))
    }

    // MARK: Helpers

    /// Waits for a `nowPlaying` event with that title or reason.
    private func waitForNowPlaying(_ client: ControlSocket, title: String? = nil, reason: String? = nil,
                                   file: StaticString = #filePath, line: UInt = #line) throws {
        let deadline = monotonicSeconds() + Self.patience
        while monotonicSeconds() < deadline {
            let events = client.collectEvents(timeout: 0.5)
            let seen = events.contains { event in
                guard event.message.string("event") == "nowPlaying", let data = event.message.object("data") else { return false }
                return (title == nil || data.object("info")?.string("title") == title) && (reason == nil || data.string("reason") == reason)
            }
            if seen {
                client.events.removeAll { $0.message.string("event") == "nowPlaying" }
                return
            }
        }
        let seen = client.events.compactMap { $0.message.object("data") }.map(jsonText)
        XCTFail("no nowPlaying event with title \(title ?? "any") and reason \(reason ?? "any") within \(Self.patience) s; seen: \(seen)",
                file: file, line: line)
        throw TestSupportError("no such nowPlaying event")
    }

    /// The scripted player, once it owns its name.
    private func startPlayer(_ world: DaemonBench, address: String, calls: String, cover: String) throws -> RunningProcess {
        let script = world.path("player.py")
        try Self.playerScript.write(toFile: script, atomically: true, encoding: .utf8)
        let process = try RunningProcess("/usr/bin/python3", [script, address, Self.playerName, calls, "file://" + cover.replacingOccurrences(of: " ", with: "%20")],
                                         stdoutPath: world.path("player.out"), stderrPath: world.path("player.err"))
        let owned = waitUntil(timeout: Self.patience) {
            (try? runProcess("/usr/bin/busctl", ["--address=" + address, "status", Self.playerName], timeout: 10))?.status == 0
        }
        guard owned else {
            throw TestSupportError("the scripted player never owned its name: \((try? String(contentsOfFile: world.path("player.err"), encoding: .utf8)) ?? "")")
        }
        return process
    }

    /// A 1 × 1 PNG.
    private static let coverPNG: [UInt8] = Array(Data(base64Encoded:
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")!)

    /// An MPRIS player as shairport-sync's answers: Metadata, PlaybackStatus, Position and the
    /// Can… properties; Next, Previous, Play, Pause, PlayPause, Stop, Seek and SetPosition
    /// recorded (one line each) in the calls file and acted on, with the signals a player
    /// sends. `org.tonearm.Script.SetTitle` lets the test change the title as the player would.
    private static let playerScript = #"""
        import sys, time
        import dbus, dbus.service, dbus.mainloop.glib
        from gi.repository import GLib

        address, name, calls, art = sys.argv[1:5]
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        bus = dbus.bus.BusConnection(address)
        PLAYER, ROOT, PROPS = "org.mpris.MediaPlayer2.Player", "org.mpris.MediaPlayer2", "org.freedesktop.DBus.Properties"

        def record(line):
            with open(calls, "a") as f:
                f.write(line + "\n")

        class Player(dbus.service.Object):
            def __init__(self):
                super().__init__(bus, "/org/mpris/MediaPlayer2")
                self.track, self.title, self.status = 1, "Song 1", "Playing"
                self.anchor, self.since = 5_000_000, time.monotonic()

            def position(self):
                running = self.status == "Playing"
                return dbus.Int64(self.anchor + (int((time.monotonic() - self.since) * 1_000_000) if running else 0))

            def place(self, microseconds):
                self.anchor, self.since = microseconds, time.monotonic()

            def metadata(self):
                return dbus.Dictionary({
                    "mpris:trackid": dbus.ObjectPath("/org/tonearm/script/track%d" % self.track),
                    "xesam:title": self.title,
                    "xesam:artist": dbus.Array(["Scripted Artist", "Guest"], signature="s"),
                    "xesam:album": "Private Bus",
                    "mpris:length": dbus.Int64(180_000_000),
                    "mpris:artUrl": art,
                }, signature="sv")

            def player(self):
                return dbus.Dictionary({
                    "PlaybackStatus": self.status, "Metadata": self.metadata(), "Position": self.position(),
                    "Rate": dbus.Double(1.0), "CanGoNext": True, "CanGoPrevious": True, "CanPlay": True, "CanPause": True,
                    "CanSeek": True, "CanControl": True,
                }, signature="sv")

            def changed(self, *names):
                all = self.player()
                self.PropertiesChanged(PLAYER, dbus.Dictionary({n: all[n] for n in names}, signature="sv"), dbus.Array([], signature="s"))

            @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
            def Get(self, interface, prop):
                return self.GetAll(interface)[prop]

            @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
            def GetAll(self, interface):
                if interface == PLAYER:
                    return self.player()
                return dbus.Dictionary({"Identity": "Scripted", "CanQuit": False, "CanRaise": False, "HasTrackList": False}, signature="sv")

            @dbus.service.method(PROPS, in_signature="ssv")
            def Set(self, interface, prop, value):
                record("Set %s %s" % (prop, value))

            @dbus.service.signal(PROPS, signature="sa{sv}as")
            def PropertiesChanged(self, interface, changed, invalidated):
                pass

            @dbus.service.signal(PLAYER, signature="x")
            def Seeked(self, position):
                pass

            def skip(self, step):
                self.track += step
                self.title = "Song %d" % self.track
                self.place(0)
                self.changed("Metadata")

            @dbus.service.method(PLAYER)
            def Next(self):
                record("Next")
                self.skip(1)

            @dbus.service.method(PLAYER)
            def Previous(self):
                record("Previous")
                self.skip(-1)

            def play_state(self, status):
                self.place(self.position())
                self.status = status
                self.changed("PlaybackStatus")

            @dbus.service.method(PLAYER)
            def Play(self):
                record("Play")
                self.play_state("Playing")

            @dbus.service.method(PLAYER)
            def Pause(self):
                record("Pause")
                self.play_state("Paused")

            @dbus.service.method(PLAYER)
            def PlayPause(self):
                record("PlayPause")
                self.play_state("Paused" if self.status == "Playing" else "Playing")

            @dbus.service.method(PLAYER)
            def Stop(self):
                record("Stop")
                self.play_state("Stopped")

            @dbus.service.method(PLAYER, in_signature="x")
            def Seek(self, offset):
                record("Seek %d" % offset)
                self.place(max(0, self.position() + offset))
                self.Seeked(self.position())

            @dbus.service.method(PLAYER, in_signature="ox")
            def SetPosition(self, track, position):
                record("SetPosition %s %d" % (track, position))
                self.place(position)
                self.Seeked(self.position())

            @dbus.service.method("org.tonearm.Script", in_signature="s")
            def SetTitle(self, title):
                self.title = title
                self.changed("Metadata")

        player = Player()
        owned = dbus.service.BusName(name, bus)
        GLib.MainLoop().run()
        """#
}
