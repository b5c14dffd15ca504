import Foundation
import TestSupport
import XCTest

/// Internet radio through the daemon: a FLAC (and an AAC) station served by Tests/Radio/radio_server.py
/// (paced at the stream's own rate, ICY titles interleaved), played to the paced test device.
final class DaemonRadioTests: XCTestCase {
    override func setUpWithError() throws { try requirePacedDevice() }

    /// A profile with short stream timeouts, so outages are seen within the tests' patience.
    private func profile(_ world: DaemonBench, caFile: String? = nil) throws -> String {
        var text = "[player]\nstream_buffer_ms = 500\nstream_timeout_seconds = 2\n"
        if let caFile { text += "stream_ca_file = \"\(caFile)\"\n" }
        let path = world.path("radio.toml")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A daemon on the paced device with `profile`'s stream settings.
    private func radioDaemon(caFile: String? = nil) throws -> DaemonBench {
        let world = try DaemonBench(start: false)
        world.daemon.arguments = ["--config", try profile(world, caFile: caFile)]
        try world.daemon.start()
        return world
    }

    /// A station of `seconds` of FLAC, sent at its own rate.
    private func station(_ bench: DaemonBench, seconds: Double, arguments: [String] = [], certificate: String? = nil,
                         key: String? = nil) throws -> RadioStation {
        let file = try bench.fixture("station.flac", taggedFixture(1, seconds: seconds))
        let size = (try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
        return try RadioStation(file: file, arguments: ["--rate", String(Int(Double(size) / seconds))] + arguments,
                                certificate: certificate, key: key)
    }

    /// Waits for a `state` event carrying an error, and returns its text.
    private func itemError(_ subscriber: ControlSocket, timeout: Double) -> String? {
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline {
            for event in subscriber.collectEvents(timeout: 0.5) {
                if let error = event.message.object("data")?.string("error") { return error }
            }
            subscriber.events.removeAll()
        }
        return nil
    }

    func testTitlesReachNowPlayingAndTheStationIsReconnectedAfterADrop() throws {
        let world = try radioDaemon()
        let daemon = world.daemon
        let radio = try station(world, seconds: 20, arguments: [
            "--metaint", "8000", "--title-every", "20", "--titles", "Artist A - First", "Artist B - Second",
        ])
        let added = try world.ok("add", radio.url())
        XCTAssertTrue(added.stdout.contains("added 1"), added.stdout)
        let subscriber = try daemon.connect()
        _ = try subscriber.result("subscribe", ["topics": ["nowPlaying"]])
        subscriber.events.removeAll()
        try world.ok("play")

        let first = try world.waitForStatus(timeout: 20, "the first ICY title") { $0.string("title") == "Artist A - First" }
        let published = subscriber.collectEvents(timeout: 0.5).compactMap { $0.message.object("data") }
        XCTAssertTrue(published.contains { $0.object("info")?.bool("isLiveStream") == true }, "\(published.map(jsonText))")
        XCTAssertTrue(first.isNull("duration") || first["duration"] == nil, jsonText(first))
        XCTAssertEqual(first.string("album"), "Tonearm Test Radio", jsonText(first))
        XCTAssertEqual(first.object("stream")?.string("state"), "playing", jsonText(first))
        XCTAssertEqual(first.object("commands")?.bool("changePlaybackPosition"), false, "a live stream cannot seek")
        XCTAssertEqual(first.object("commands")?.bool("skipForward"), false)
        let seek = try world.cli("seek", "5")
        XCTAssertNotEqual(seek.status, 0, "a seek in a live stream is refused: \(seek)")
        try world.waitForStatus(timeout: 20, "the second ICY title") { $0.string("title") == "Artist B - Second" }

        radio.kill()
        let down = try world.waitForStatus(timeout: 20, "reconnecting once the station is gone") {
            $0.object("stream")?.string("state") == "reconnecting"
        }
        XCTAssertEqual(down.string("state"), "playing", "an outage is not an end: \(jsonText(down))")
        XCTAssertEqual(down.double("rate"), 0, "nothing is heard while reconnecting: \(jsonText(down))")
        let text = try world.ok("status")
        XCTAssertTrue(text.stdout.contains("stream: reconnecting"), text.stdout)
        try radio.start()
        let back = try world.waitForStatus(timeout: 30, "playing again once the station is back") {
            $0.object("stream")?.string("state") == "playing" && $0.double("rate") == 1
        }
        XCTAssertEqual(back.string("state"), "playing")
        try world.waitForStatus(timeout: 20, "the new connection's first title") { $0.string("title") == "Artist A - First" }
        // Heard again: the device is open and the clock runs past where it stood.
        let resumedAt = back.double("elapsed") ?? 0
        try world.waitForStatus(timeout: 20, "elapsed running again") {
            $0.object("device")?.string("state") == "open" && ($0.double("elapsed") ?? 0) > resumedAt + 0.5
        }
        let log = daemonLogLines(daemon.log)
        XCTAssertTrue(log.contains { $0.contains("reconnecting (attempt 1") }, daemonReport(daemon))
        XCTAssertTrue(log.contains { $0.contains("connected again; playing on") }, daemonReport(daemon))
        XCTAssertGreaterThanOrEqual(radio.requests.count, 1, "the restarted station was asked again")
        // What the device held played out and it stopped: it never ran dry.
        XCTAssertEqual(try daemon.status().object("device")?.int("underruns"), 0, daemonReport(daemon))
    }

    /// An AAC station (raw ADTS, `audio/aac`, as most stations send): it plays, its ICY titles
    /// reach status, and a drop is reconnected to.
    func testAnAACStationPlaysShowsItsTitlesAndIsReconnectedAfterADrop() throws {
        try XCTSkipUnless(toolsAvailable("ffmpeg"), "ffmpeg makes the AAC station's stream")
        let world = try radioDaemon()
        let daemon = world.daemon
        let seconds = 20.0
        let flac = try world.fixture("aac-station.flac", taggedFixture(1, seconds: seconds, sampleRate: 44100))
        let file = world.path("aac-station.aac")
        try runChecked("ffmpeg", ["-v", "error", "-y", "-i", flac, "-c:a", "aac", "-b:a", "128k", "-f", "adts", file], timeout: 120)
        let size = (try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
        let radio = try RadioStation(file: file, arguments: [
            "--rate", String(Int(Double(size) / seconds)), "--content-type", "audio/aac", "--bitrate", "128",
            "--metaint", "8000", "--title-every", "8", "--titles", "AAC Artist - First", "AAC Artist - Second",
        ])
        try world.ok("add", radio.url())
        try world.ok("play")

        let first = try world.waitForStatus(timeout: 20, "the AAC station's first ICY title") {
            $0.string("title") == "AAC Artist - First" && $0.double("rate") == 1
        }
        XCTAssertEqual(first.string("state"), "playing", jsonText(first))
        XCTAssertEqual(first.object("stream")?.string("state"), "playing", jsonText(first))
        XCTAssertEqual(first.object("stream")?.string("contentType"), "audio/aac", jsonText(first))
        XCTAssertEqual(first.string("album"), "Tonearm Test Radio", jsonText(first))
        XCTAssertTrue(first.isNull("duration") || first["duration"] == nil, jsonText(first))
        XCTAssertEqual(first.object("commands")?.bool("changePlaybackPosition"), false, "a live stream cannot seek")
        let startedAt = first.double("elapsed") ?? 0
        try world.waitForStatus(timeout: 20, "the AAC station heard: elapsed runs") {
            $0.object("device")?.string("state") == "open" && ($0.double("elapsed") ?? 0) > startedAt + 0.5
        }
        try world.waitForStatus(timeout: 20, "the second ICY title") { $0.string("title") == "AAC Artist - Second" }

        radio.kill()
        let down = try world.waitForStatus(timeout: 20, "reconnecting once the station is gone") {
            $0.object("stream")?.string("state") == "reconnecting"
        }
        XCTAssertEqual(down.string("state"), "playing", "an outage is not an end: \(jsonText(down))")
        try radio.start()
        let back = try world.waitForStatus(timeout: 30, "the AAC station playing again once it is back") {
            $0.object("stream")?.string("state") == "playing" && $0.double("rate") == 1 && $0.string("title") == "AAC Artist - First"
        }
        let resumedAt = back.double("elapsed") ?? 0
        try world.waitForStatus(timeout: 20, "elapsed running again") {
            $0.object("device")?.string("state") == "open" && ($0.double("elapsed") ?? 0) > resumedAt + 0.5
        }
        let log = daemonLogLines(daemon.log)
        XCTAssertTrue(log.contains { $0.contains("(audio/aac)") }, daemonReport(daemon))
        XCTAssertTrue(log.contains { $0.contains("connected again; playing on") }, daemonReport(daemon))
        XCTAssertFalse(log.contains { $0.contains("ADTS") }, "no frame was lost: \(daemonReport(daemon))")
    }

    func testA404FailsTheItemAndASilentStationIsReconnecting() throws {
        let world = try radioDaemon()
        let daemon = world.daemon
        let radio = try station(world, seconds: 2)
        let subscriber = try daemon.connect()
        _ = try subscriber.result("subscribe", ["topics": ["state"]])
        subscriber.events.removeAll()
        try world.ok("add", radio.url("/missing"))
        try world.ok("play")
        let error = itemError(subscriber, timeout: 20)
        XCTAssertEqual(error, radio.url("/missing") + ": cannot open: HTTP 404 Not Found", daemonReport(daemon))
        try world.waitForStatus(timeout: 10, "stopped after the only item failed") { $0.string("state") == "stopped" }

        try world.ok("clear")
        try world.ok("add", radio.url("/silent"))
        try world.ok("play")
        let silent = try world.waitForStatus(timeout: 20, "a silent station is reconnecting") {
            $0.object("stream")?.string("state") == "reconnecting"
        }
        XCTAssertTrue(silent.object("stream")?.string("error")?.hasPrefix("timed out") == true, jsonText(silent))
        XCTAssertEqual(silent.string("state"), "playing", jsonText(silent))
        // A command is answered at once while the decoder waits for the network.
        try world.ok("stop")
        try world.waitForStatus(timeout: 5, "stopped") { $0.string("state") == "stopped" }
    }

    func testAnHTTPSStationWithItsOwnCertificateIsRefusedUntilItsCAIsTrusted() throws {
        let world = try radioDaemon()
        let daemon = world.daemon
        let certificate = world.path("station.pem")
        let key = world.path("station.key")
        try runChecked("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                                   "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", certificate])
        let radio = try station(world, seconds: 10, certificate: certificate, key: key)
        let subscriber = try daemon.connect()
        _ = try subscriber.result("subscribe", ["topics": ["state"]])
        subscriber.events.removeAll()
        try world.ok("add", radio.url())
        try world.ok("play")
        let error = itemError(subscriber, timeout: 20) ?? ""
        XCTAssertTrue(error.hasPrefix(radio.url() + ": cannot open: certificate not trusted"), error)
        daemon.terminate()

        daemon.arguments = ["--config", try profile(world, caFile: certificate)]
        try daemon.start()
        try world.ok("clear")
        try world.ok("add", radio.url())
        try world.ok("play")
        try world.waitForStatus(timeout: 20, "the trusted station plays") {
            $0.object("stream")?.string("state") == "playing" && $0.double("rate") == 1
        }
    }

    func testPlaylistFilesAddTheirStationsAndFiles() throws {
        let world = try radioDaemon()
        let radio = try station(world, seconds: 10)
        let track = try world.fixture("local.flac", taggedFixture(2, seconds: 1))
        let pls = world.path("station.pls")
        try "[playlist]\nNumberOfEntries=1\nFile1=\(radio.url())\nTitle1=Test FM\n".write(toFile: pls, atomically: true, encoding: .utf8)
        let m3u = world.path("mixed.m3u")
        try "#EXTM3U\n#EXTINF:-1,Listed Station\n\(radio.url())\nlocal.flac\n".write(toFile: m3u, atomically: true, encoding: .utf8)
        let added = try world.ok("add", pls, m3u)
        XCTAssertTrue(added.stdout.contains("added 3, queue 3"), added.stdout)
        let queue = try world.daemon.result("queue")
        let paths = (queue.array("items") ?? []).compactMap { ($0 as? [String: Any])?.string("path") }
        XCTAssertEqual(paths, [radio.url(), radio.url(), track], jsonText(queue))
        try world.ok("play")
        // The station sends no ICY titles: the playlist's title stands.
        let playing = try world.waitForStatus(timeout: 20, "the listed station plays") {
            $0.object("stream")?.string("state") == "playing" && $0.double("rate") == 1
        }
        XCTAssertEqual(playing.string("title"), "Test FM", jsonText(playing))
    }
}
