import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The MPD server through Debian's `mpc` against the real daemon on the paced device: status,
/// playback, the queue, browsing and searching the library, volume and options, `idle`.
final class DaemonMPDTests: XCTestCase {
    private static let embedded = mpdTreeEmbeddedPicture
    private static let cover = mpdTreeCover

    private func writeTree(_ directory: String) throws {
        try writeMPDTree(directory, seconds: 5, pictures: true)
    }

    private struct MPC {
        let port: Int

        @discardableResult
        func run(_ arguments: String..., timeout: Double = 15) throws -> String {
            try run(arguments, timeout: timeout)
        }

        @discardableResult
        func run(_ arguments: [String], timeout: Double = 15) throws -> String {
            let result = try runProcess("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", String(port)] + arguments, environment: [:], timeout: timeout)
            guard result.status == 0 else { throw TestSupportError("mpc \(arguments.joined(separator: " ")): \(result)") }
            return result.stdout
        }

        func start(_ arguments: String...) throws -> RunningProcess {
            try RunningProcess("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", String(port)] + arguments, environment: [:])
        }
    }

    /// Runs `mpc ARGUMENTS` until its output holds `what` (errors count as not yet: the server
    /// may still be starting).
    private func waitFor(_ mpc: MPC, _ what: String, in arguments: String..., timeout: Double = 10) throws -> String {
        var last = ""
        let seen = waitUntil(timeout: timeout) {
            do {
                last = try mpc.run(arguments)
            } catch {
                last = "\(error)"
                return false
            }
            return last.contains(what)
        }
        XCTAssertTrue(seen, "mpc \(arguments.joined(separator: " ")) never said \(what); last: \(last)")
        return last
    }

    func testMpcDrivesThePlayerAndBrowsesTheLibrary() throws {
        let world = try DaemonBench(start: false)
        let music = world.path("music")
        try writeTree(music)
        let port = try freeTCPPort()
        let playlists = world.path("playlists")
        try FileManager.default.createDirectory(atPath: playlists, withIntermediateDirectories: true)
        let profile = world.path("board.toml")
        try "[library]\nplaylist_dir = \"\(playlists)\"\n".write(toFile: profile, atomically: true, encoding: .utf8)
        world.daemon.arguments = ["--config", profile, "--music-dir", music, "--mpd-port", String(port)]
        try world.daemon.start()
        let mpc = MPC(port: port)
        _ = try waitFor(mpc, "volume", in: "status")
        try mpc.run("update", "--wait", timeout: 30)

        XCTAssertEqual(try mpc.run("ls"), "Artist 1\nArtist 2\n")
        XCTAssertEqual(try mpc.run("ls", "Artist 2/Album 2-1"), "Artist 2/Album 2-1/1.flac\nArtist 2/Album 2-1/2.flac\n")
        XCTAssertEqual(try mpc.run("list", "album"), "Album 1-1\nAlbum 1-2\nAlbum 2-1\nAlbum 2-2\n")
        XCTAssertEqual(try mpc.run("list", "album", "genre", "Jazz"), "Album 2-1\nAlbum 2-2\n")
        XCTAssertEqual(try mpc.run("find", "album", "Album 1-2"), "Artist 1/Album 1-2/1.flac\nArtist 1/Album 1-2/2.flac\n")
        XCTAssertEqual(try mpc.run("find", "album", "album 1-2"), "", "find is case-sensitive")
        XCTAssertEqual(try mpc.run("search", "title", "SONG 2 OF 2"), "Artist 2/Album 2-1/2.flac\nArtist 2/Album 2-2/2.flac\n")
        let stats = try mpc.run("stats")
        XCTAssertTrue(stats.contains("Artists:      2") && stats.contains("Albums:       4") && stats.contains("Songs:        8"), stats)

        // The queue, and playing it.
        try mpc.run("add", "Artist 1/Album 1-1")
        try mpc.run("findadd", "album", "Album 2-2")
        XCTAssertEqual(try mpc.run("playlist"), """
            Artist 1 - Song 1 of 1-1
            Artist 1 - Song 2 of 1-1
            Artist 2 - Song 1 of 2-2
            Artist 2 - Song 2 of 2-2

            """)
        try mpc.run("play")
        _ = try waitFor(mpc, "[playing] #1/4", in: "status")
        XCTAssertEqual(try mpc.run("current"), "Artist 1 - Song 1 of 1-1\n")
        XCTAssertEqual(try world.statusJSON().string("state"), "playing", "the control plane says the same")
        try mpc.run("play", "3")
        _ = try waitFor(mpc, "Song 1 of 2-2", in: "current")
        try mpc.run("next", timeout: 15)
        try mpc.run("prev")
        _ = try waitFor(mpc, "[playing] #3/4", in: "status")

        // Volume and options, seen through the control plane too.
        try mpc.run("volume", "40")
        XCTAssertTrue(try mpc.run("status").contains("volume: 40%"))
        XCTAssertEqual(try world.statusJSON().int("volume"), 40)
        try mpc.run("repeat", "on")
        try mpc.run("random", "on")
        let options = try mpc.run("status")
        XCTAssertTrue(options.contains("repeat: on") && options.contains("random: on"), options)
        try mpc.run("random", "off")

        // Single, consume and ReplayGain are the player's modes.
        try mpc.run("single", "on")
        XCTAssertEqual(try world.statusJSON().string("single"), "on")
        XCTAssertEqual(try world.statusJSON().string("repeat"), "all", "repeat stays as it was")
        XCTAssertTrue(try mpc.run("status").contains("single: on"))
        try mpc.run("single", "once")
        XCTAssertEqual(try world.statusJSON().string("single"), "oneshot")
        XCTAssertTrue(try mpc.run("status").contains("single: once"))
        try mpc.run("single", "off")
        XCTAssertEqual(try world.statusJSON().string("single"), "off")
        try mpc.run("replaygain", "album")
        XCTAssertEqual(try world.statusJSON().object("replayGain")?["mode"] as? String, "album")
        XCTAssertEqual(try mpc.run("replaygain"), "replay_gain_mode: album\n")
        try mpc.run("replaygain", "off")
        try mpc.run("consume", "on")
        XCTAssertEqual(try world.statusJSON().bool("consume"), true)
        try mpc.run("next", timeout: 15)
        _ = try waitFor(mpc, "Song 2 of 2-2", in: "current")
        XCTAssertEqual(try mpc.run("playlist").split(separator: "\n").count, 3, "next consumed the song it left")
        try mpc.run("consume", "off")
        XCTAssertEqual(try world.statusJSON().bool("consume"), false)

        // Output 0 is the player's device: turned off, it is closed and nothing is heard.
        try mpc.run("disable", "1")
        XCTAssertTrue(try mpc.run("outputs").contains("is disabled"))
        let off = try world.waitForStatus(timeout: 10, "the output turned off") { $0.string("output") == "output turned off" }
        XCTAssertEqual(off.object("device")?["enabled"] as? Bool, false, jsonText(off))
        XCTAssertEqual(off.object("device")?["state"] as? String, "closed", jsonText(off))
        XCTAssertEqual(off.double("rate"), 0, "the clock stops while nothing is heard")
        XCTAssertEqual(off.string("state"), "playing", "the transport stays as it was")
        try mpc.run("enable", "1")
        let on = try world.waitForStatus(timeout: 10, "heard again") { $0.string("output") == "ok" && $0.double("rate") == 1 }
        XCTAssertEqual(on.object("device")?["state"] as? String, "open", jsonText(on))
        XCTAssertTrue(try mpc.run("outputs").contains("is enabled"))

        // Stored playlists: saved from the queue into the playlist directory, which idle tells.
        let stored = try mpc.start("idle", "stored_playlist")
        sleepSeconds(0.3)
        try mpc.run("save", "mine")
        XCTAssertEqual(stored.wait(timeout: 5).stdout, "stored_playlist\n")
        XCTAssertEqual(try mpc.run("lsplaylists"), "mine\n")
        XCTAssertEqual(try mpc.run("playlist", "mine").split(separator: "\n").count, 3)
        XCTAssertEqual(try String(contentsOfFile: playlists + "/mine.m3u", encoding: .utf8).split(separator: "\n").first,
                       "Artist 1/Album 1-1/1.flac", "relative to the music directory, as mpd writes them")
        XCTAssertThrowsError(try mpc.run("save", "mine"), "the name is taken")
        try mpc.run("rm", "mine")
        XCTAssertEqual(try mpc.run("lsplaylists"), "")

        // Pictures, in binary chunks: the cover file beside a song, and a song's own.
        let cover = try runProcess("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", String(port), "albumart", "Artist 1/Album 1-1/2.flac"],
                                   stdoutPath: world.path("cover.out"))
        XCTAssertEqual(cover.status, 0, "\(cover)")
        XCTAssertEqual(Array(FileManager.default.contents(atPath: world.path("cover.out")) ?? Data()), Self.cover)
        let own = try runProcess("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", String(port), "readpicture", "Artist 2/Album 2-1/1.flac"],
                                 stdoutPath: world.path("picture.out"))
        XCTAssertEqual(own.status, 0, "\(own)")
        XCTAssertEqual(Array(FileManager.default.contents(atPath: world.path("picture.out")) ?? Data()), Self.embedded)
        XCTAssertGreaterThan(Self.embedded.count, 8192, "more than one chunk")
        // No picture: no bytes and no error (mpc then shows its status, as after any command).
        let none = try mpc.run("readpicture", "Artist 1/Album 1-1/1.flac")
        XCTAssertEqual(none.split(separator: "\n").first.map { String($0) + "\n" }, try mpc.run("current"))
        XCTAssertFalse(none.contains("PNG"), none)
        XCTAssertThrowsError(try mpc.run("albumart", "Artist 2/Album 2-2/1.flac"), "no cover file")

        // idle hears the change another client makes.
        let idle = try mpc.start("idle", "mixer")
        sleepSeconds(0.3)
        try mpc.run("volume", "30")
        let heard = idle.wait(timeout: 5)
        XCTAssertEqual(heard.stdout, "mixer\n", "\(heard)")

        try mpc.run("pause")
        _ = try waitFor(mpc, "[paused]", in: "status")
        try mpc.run("del", "1")
        XCTAssertEqual(try mpc.run("playlist").split(separator: "\n").count, 2)
        try mpc.run("clear")
        XCTAssertEqual(try mpc.run("playlist"), "")
        let stopped = try mpc.run("status")
        XCTAssertFalse(stopped.contains("[playing]") || stopped.contains("[paused]"), stopped)
        XCTAssertTrue(world.daemon.isRunning)
    }

    func testTheServerRefusesWhatMPDRefusesAndKeepsServing() throws {
        let world = try DaemonBench(jack: false, device: "null", start: false)
        let port = try freeTCPPort()
        world.daemon.arguments = ["--mpd-port", String(port)]
        try world.daemon.start()
        let mpc = MPC(port: port)
        _ = try waitFor(mpc, "volume", in: "status")
        // Random bytes, an unknown command, a client that goes at once: the next is served.
        let fd = try connectTCP(port: port)
        var garbage = (0..<5000).map { _ in UInt8.random(in: 0...255) }
        garbage += Array("\nfrobnicate\n".utf8)
        _ = garbage.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        let status = try mpc.run("status")
        XCTAssertTrue(status.contains("volume:100%"), status)
        XCTAssertThrowsError(try mpc.run("ls"), "no library: an error, not a crash")
        XCTAssertTrue(world.daemon.isRunning)
    }

    /// python-mpd2 (PyPI), in a virtual environment made once and kept in ~/.cache.
    private func pythonMPD2() throws -> String { try pythonWith("python-mpd2==3.1.1") }

    /// Home Assistant's `mpd` integration, as its calls go: connect, status, currentsong,
    /// commands, readpicture, albumart, listplaylists, setvol, pause 0/1, play, stop, next,
    /// previous, repeat, single, random, seekcur, clear, load, add.
    private static let homeAssistant = #"""
    import sys, time, mpd

    host, port, playlist, first, cover_song = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    client = mpd.MPDClient()
    client.timeout = 10
    client.connect(host, port)

    def check(condition, what):
        if not condition:
            raise SystemExit("failed: " + what)

    def wait_for(key, value):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            status = client.status()
            if status.get(key) == value:
                return status
            time.sleep(0.05)
        raise SystemExit("failed: status %s never %s: %r" % (key, value, client.status()))

    status = client.status()
    check(status["state"] == "stop" and status["playlistlength"] == "0", "a stopped, empty player: %r" % status)
    check(client.currentsong() == {}, "no current song")
    commands = client.commands()
    for name in ("readpicture", "albumart", "setvol", "seekcur", "load", "single"):
        check(name in commands, "commands lists " + name)
    check([p["playlist"] for p in client.listplaylists()] == [playlist], "listplaylists: %r" % client.listplaylists())
    client.load(playlist)
    check(client.status()["playlistlength"] == "2", "load")
    client.add(cover_song)
    check(client.status()["playlistlength"] == "3", "add")
    client.setvol(55)
    check(client.status()["volume"] == "55", "setvol")
    client.play()
    wait_for("state", "play")
    song = client.currentsong()
    check(song["file"] == first and song["pos"] == "0", "currentsong: %r" % song)
    check(client.readpicture(song["file"]) == {}, "readpicture of a song without one")
    art = client.albumart(cover_song)
    check(art["binary"].startswith(b"\x89PNG") and art["binary"][-8:-4] == b"IEND", "albumart: the whole PNG")
    client.pause(1)
    wait_for("state", "pause")
    client.pause(0)
    wait_for("state", "play")
    client.next()
    wait_for("song", "1")
    client.previous()
    wait_for("song", "0")
    client.repeat(1)
    client.single(1)
    client.random(1)
    status = client.status()
    check((status["repeat"], status["single"], status["random"]) == ("1", "1", "1"), "options: %r" % status)
    client.random(0)
    client.seekcur(2)
    check(float(client.status()["elapsed"]) >= 2, "seekcur")
    client.stop()
    wait_for("state", "stop")
    client.clear()
    check(client.status()["playlistlength"] == "0", "clear")
    client.close()
    print("ok")
    """#

    func testHomeAssistantsCallsThroughPythonMPD2() throws {
        let python = try pythonMPD2()
        let world = try DaemonBench(start: false)
        let music = world.path("music")
        try writeTree(music)
        let playlists = world.path("playlists")
        try FileManager.default.createDirectory(atPath: playlists, withIntermediateDirectories: true)
        XCTAssertTrue(FileManager.default.createFile(atPath: playlists + "/Evening.m3u",
                                                     contents: Data("#EXTM3U\nArtist 2/Album 2-2/1.flac\nArtist 2/Album 2-2/2.flac\n".utf8)))
        let profile = world.path("board.toml")
        XCTAssertTrue(FileManager.default.createFile(atPath: profile, contents: Data("[library]\nplaylist_dir = \"\(playlists)\"\n".utf8)))
        let port = try freeTCPPort()
        world.daemon.arguments = ["--config", profile, "--music-dir", music, "--mpd-port", String(port)]
        try world.daemon.start()
        let mpc = MPC(port: port)
        _ = try waitFor(mpc, "volume", in: "status")
        try mpc.run("update", "--wait", timeout: 30)
        let script = world.path("home-assistant.py")
        XCTAssertTrue(FileManager.default.createFile(atPath: script, contents: Data(Self.homeAssistant.utf8)))
        let result = try runProcess(python, [script, "127.0.0.1", String(port), "Evening", "Artist 2/Album 2-2/1.flac",
                                             "Artist 1/Album 1-1/1.flac"], timeout: 60)
        XCTAssertEqual(result.status, 0, "\(result)")
        XCTAssertEqual(result.stdout, "ok\n", "\(result)")
        XCTAssertTrue(world.daemon.isRunning)
    }
}

/// The picture in "Artist 2/Album 2-1/1.flac", and the cover file of "Artist 1/Album 1-1".
let mpdTreeEmbeddedPicture = TinyPNG.make(width: 300, height: 200)
let mpdTreeCover = TinyPNG.make(width: 120, height: 120)

/// The MPD tests' tree: two artists × two albums × two tracks of `seconds`, tagged as a tagger
/// would; with `pictures`, one embedded picture and one cover file.
func writeMPDTree(_ directory: String, seconds: Int, pictures: Bool) throws {
    let samples = FLACFixture(frames: 44100 * seconds, sampleRate: 44100, channels: 2).samples()
    let picture = LibFLACEncoder.Picture(type: 3, mimeType: "image/png", width: 300, height: 200, data: mpdTreeEmbeddedPicture)
    for a in 1...2 {
        for b in 1...2 {
            for t in 1...2 {
                let path = "\(directory)/Artist \(a)/Album \(a)-\(b)/\(t).flac"
                try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                        withIntermediateDirectories: true)
                try LibFLACEncoder.write(samples, to: path, sampleRate: 44100, channels: 2, bits: 16, tags: [
                    ("ARTIST", "Artist \(a)"), ("ALBUMARTIST", "Artist \(a)"), ("ALBUM", "Album \(a)-\(b)"),
                    ("TITLE", "Song \(t) of \(a)-\(b)"), ("TRACKNUMBER", "\(t)"), ("DATE", "\(1990 + a)"),
                    ("GENRE", a == 1 ? "Blues" : "Jazz"),
                ], pictures: pictures && a == 2 && b == 1 && t == 1 ? [picture] : [])
            }
        }
    }
    if pictures {
        guard FileManager.default.createFile(atPath: "\(directory)/Artist 1/Album 1-1/cover.png", contents: Data(mpdTreeCover)) else {
            throw TestSupportError("cannot write the cover file")
        }
    }
}
