import Foundation
import TestSupport
import XCTest

/// Internet radio from a real server: Debian's icecast2 on loopback, fed by ffmpeg (MP3 and ADTS
/// AAC, titles set through icecast's admin API) and ezstream (chained Ogg Vorbis, titles in each
/// file's comments), played by the daemon to the paced test device.
final class DaemonIcecastTests: XCTestCase {
    override func setUpWithError() throws {
        try requirePacedDevice()
        if let missing = IcecastServer.missingTools {
            throw XCTSkip("\(missing) not installed; run ./scripts/setup")
        }
        guard toolsAvailable("lame", "oggenc") else { throw XCTSkip("lame or oggenc is not installed; run ./scripts/setup") }
    }

    /// A daemon on the paced device with short stream timeouts, so outages are seen soon.
    private func radioDaemon() throws -> DaemonBench {
        let world = try DaemonBench(start: false)
        let profile = world.path("radio.toml")
        try "[player]\nstream_buffer_ms = 500\nstream_timeout_seconds = 2\n".write(toFile: profile, atomically: true, encoding: .utf8)
        world.daemon.arguments = ["--config", profile]
        try world.daemon.start()
        return world
    }

    /// `seconds` of a tagged tone as a 128 kb/s MP3.
    private func mp3(_ world: DaemonBench, _ name: String, seconds: Double) throws -> String {
        let flac = try world.fixture(name + ".flac", taggedFixture(1, seconds: seconds))
        let wav = world.path(name + ".wav")
        try runChecked("flac", ["-d", "-s", "-f", "-o", wav, flac])
        let mp3 = world.path(name + ".mp3")
        try runChecked("lame", ["--quiet", "-b", "128", wav, mp3])
        return mp3
    }

    /// `seconds` of a tone as Ogg Vorbis titled `title`.
    private func vorbis(_ world: DaemonBench, _ n: Int, title: String, seconds: Double) throws -> String {
        let flac = try world.fixture("chain\(n).flac", taggedFixture(n, seconds: seconds))
        let ogg = world.path("chain\(n).ogg")
        try runChecked("oggenc", ["-Q", "-t", title, "-a", "Chain Gang", "-o", ogg, flac])
        return ogg
    }

    /// Sets the mount's title through the admin API and waits until status shows it; prints how
    /// long that took.
    private func announce(_ title: String, _ server: IcecastServer, _ world: DaemonBench) throws {
        let asked = monotonicSeconds()
        try server.setTitle(title, mount: "/live.mp3")
        try world.waitForStatus(timeout: 30, "the title \(title)") { $0.string("title") == title }
        print(String(format: "icecast: '%@' reached the daemon's status %.2f s after the admin call", title, monotonicSeconds() - asked))
    }

    func testAnMP3MountPlaysAndTheTitlesSetThroughTheAdminAPIReachStatus() throws {
        let world = try radioDaemon()
        let server = try IcecastServer()
        try server.startMP3Source(file: try mp3(world, "live", seconds: 10), mount: "/live.mp3")
        try world.ok("add", server.url("/live.mp3"))
        try world.ok("play")
        let playing = try world.waitForStatus(timeout: 30, "the MP3 mount plays") {
            $0.string("state") == "playing" && $0.object("stream")?.string("state") == "playing" && $0.double("rate") == 1
        }
        XCTAssertEqual(playing.object("stream")?.string("contentType"), "audio/mpeg", jsonText(playing))
        XCTAssertEqual(playing.object("commands")?.bool("changePlaybackPosition"), false, "a live stream cannot seek")
        let nowPlaying = try world.daemon.result("nowPlaying")
        XCTAssertEqual(nowPlaying.bool("isLiveStream"), true, jsonText(nowPlaying))

        try announce("Artist A - First Song", server, world)
        try announce("Artist B - Second Song", server, world)
        let status = try world.daemon.status()
        XCTAssertEqual(status.object("stream")?.string("state"), "playing", jsonText(status))
        XCTAssertEqual(status.double("rate"), 1, jsonText(status))
        server.stop()
    }

    /// ffmpeg sending `file` (ADTS AAC) to `mount` at its own rate, over and over, as
    /// `audio/aac`; returns once icecast lists the mount. The caller ends the process.
    private func startAACSource(_ server: IcecastServer, file: String, mount: String) throws -> RunningProcess {
        let logPath = server.directory + "/aac-source.log"
        let source = try RunningProcess("ffmpeg", [
            "-nostdin", "-loglevel", "error", "-re", "-stream_loop", "-1", "-i", file, "-c", "copy",
            "-content_type", "audio/aac", "-f", "adts", "icecast://source:\(server.sourcePassword)@127.0.0.1:\(server.port)\(mount)",
        ], stdoutPath: logPath, stderrPath: logPath)
        let deadline = monotonicSeconds() + 20
        while monotonicSeconds() < deadline {
            if let reply = httpGet(port: server.port, "/status-json.xsl"), reply.body.contains("\"listenurl\":\"\(server.url(mount))\"") {
                return source
            }
            guard source.isRunning else { break }
            sleepSeconds(0.05)
        }
        source.send(SIGKILL)
        let why = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        throw TestSupportError("ffmpeg did not start \(mount): \(why)\n\(server.log)")
    }

    /// An AAC mount (ADTS from ffmpeg): a listener joins wherever icecast's burst starts, which
    /// need not be a frame's start.
    func testAnAACMountPlaysAndTheTitlesSetThroughTheAdminAPIReachStatus() throws {
        let world = try radioDaemon()
        let server = try IcecastServer()
        let flac = try world.fixture("live.flac", taggedFixture(1, seconds: 10, sampleRate: 44100))
        let file = world.path("live.aac")
        try runChecked("ffmpeg", ["-v", "error", "-y", "-i", flac, "-c:a", "aac", "-b:a", "128k", "-f", "adts", file], timeout: 120)
        let source = try startAACSource(server, file: file, mount: "/live.aac")
        defer {
            source.send(SIGTERM)
            source.wait(timeout: 10)
        }
        try world.ok("add", server.url("/live.aac"))
        try world.ok("play")
        let playing = try world.waitForStatus(timeout: 30, "the AAC mount plays") {
            $0.string("state") == "playing" && $0.object("stream")?.string("state") == "playing" && $0.double("rate") == 1
        }
        XCTAssertEqual(playing.object("stream")?.string("contentType"), "audio/aac", jsonText(playing))
        XCTAssertEqual(playing.object("commands")?.bool("changePlaybackPosition"), false, "a live stream cannot seek")
        let heardFrom = playing.double("elapsed") ?? 0
        try world.waitForStatus(timeout: 30, "the AAC mount heard: elapsed runs") {
            $0.object("device")?.string("state") == "open" && ($0.double("elapsed") ?? 0) > heardFrom + 0.5
        }

        for title in ["AAC Artist - First Song", "AAC Artist - Second Song"] {
            try server.setTitle(title, mount: "/live.aac")
            try world.waitForStatus(timeout: 30, "the title \(title)") { $0.string("title") == title }
        }
        let status = try world.daemon.status()
        XCTAssertEqual(status.object("stream")?.string("state"), "playing", jsonText(status))
        XCTAssertEqual(status.double("rate"), 1, jsonText(status))
        server.stop()
    }

    func testAnOggMountPlaysAndTheNextChainedFilesTitleReachesStatus() throws {
        let world = try radioDaemon()
        let server = try IcecastServer()
        let first = try vorbis(world, 1, title: "Ogg First", seconds: 12)
        let second = try vorbis(world, 2, title: "Ogg Second", seconds: 30)
        let subscriber = try world.daemon.connect()
        _ = try subscriber.result("subscribe", ["topics": ["nowPlaying"]])
        subscriber.events.removeAll()
        try server.startOggSource(files: [first, second], mount: "/live.ogg", name: "Chain FM")
        try world.ok("add", server.url("/live.ogg"))
        try world.ok("play")
        let playing = try world.waitForStatus(timeout: 30, "the Ogg mount plays") {
            $0.object("stream")?.string("state") == "playing" && $0.double("rate") == 1
        }
        XCTAssertEqual(playing.object("stream")?.string("contentType"), "application/ogg", jsonText(playing))
        let secondTitle = try world.waitForStatus(timeout: 30, "the second chained file's title") { $0.string("title") == "Ogg Second" }
        XCTAssertEqual(secondTitle.string("album"), "Chain FM", "the station's name is the album line: \(jsonText(secondTitle))")
        XCTAssertEqual(secondTitle.double("rate"), 1, "the next chained stream plays on: \(jsonText(secondTitle))")
        // Now Playing showed the station's name while the first file played, then the second's title.
        let titles = subscriber.collectEvents(timeout: 0.5).compactMap { $0.message.object("data")?.object("info")?.string("title") }
        XCTAssertEqual(titles.first, "Chain FM", "\(titles)")
        XCTAssertEqual(titles.last, "Ogg Second", "\(titles)")
        server.stop()
    }

    func testAServerKilledForSecondsIsReconnectedToAndItsNewTitleShown() throws {
        let world = try radioDaemon()
        let daemon = world.daemon
        let server = try IcecastServer()
        let file = try mp3(world, "live", seconds: 10)
        try server.startMP3Source(file: file, mount: "/live.mp3")
        try world.ok("add", server.url("/live.mp3"))
        try world.ok("play")
        try world.waitForStatus(timeout: 30, "the MP3 mount plays") {
            $0.object("stream")?.string("state") == "playing" && $0.double("rate") == 1
        }
        try announce("Before - The Outage", server, world)

        server.kill()
        let down = try world.waitForStatus(timeout: 30, "reconnecting once the server is gone") {
            $0.object("stream")?.string("state") == "reconnecting"
        }
        XCTAssertEqual(down.string("state"), "playing", "an outage is not an end: \(jsonText(down))")
        XCTAssertEqual(down.double("rate"), 0, "nothing is heard while reconnecting: \(jsonText(down))")
        // Down for a few seconds: several attempts fail meanwhile.
        try world.waitForStatus(timeout: 30, "a second failed attempt") {
            $0.object("stream")?.string("state") == "reconnecting" && ($0.object("stream")?.int("attempt") ?? 0) >= 2
        }
        sleepSeconds(3)
        let stillDown = try daemon.status()
        XCTAssertEqual(stillDown.object("stream")?.string("state"), "reconnecting", jsonText(stillDown))
        XCTAssertEqual(stillDown.double("rate"), 0, jsonText(stillDown))

        try server.start()
        try server.startMP3Source(file: file, mount: "/live.mp3")
        try server.setTitle("After - The Outage", mount: "/live.mp3")
        let back = try world.waitForStatus(timeout: 30, "playing again, with the new connection's title") {
            $0.object("stream")?.string("state") == "playing" && $0.double("rate") == 1 && $0.string("title") == "After - The Outage"
        }
        XCTAssertEqual(back.string("state"), "playing", jsonText(back))
        let resumedAt = back.double("elapsed") ?? 0
        try world.waitForStatus(timeout: 30, "elapsed running again") {
            $0.object("device")?.string("state") == "open" && ($0.double("elapsed") ?? 0) > resumedAt + 0.5
        }
        let log = daemonLogLines(daemon.log)
        XCTAssertTrue(log.contains { $0.contains("connected again; playing on") }, daemonReport(daemon))
        server.stop()
    }
}
