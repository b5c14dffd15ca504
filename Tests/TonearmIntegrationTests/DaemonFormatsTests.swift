import Foundation
import TestSupport
import XCTest

/// A stick with an album in every format through the real daemon. Each album is one recording
/// cut into three tracks of odd lengths, encoded by Debian's encoders with its tags and a cover
/// (WAV's cover is a `cover.png` beside it): the library indexes every track with its tags, mpc
/// and the web page's library list them, mpc reads their pictures, Now Playing shows each
/// album's title and cover while it plays (the page's cover too), and an MP3 album followed by an Apple Lossless one plays gaplessly, bit-exact against
/// mpg123's decode and the source.
final class DaemonFormatsTests: XCTestCase {
    /// Frames at 44.1 kHz where the recording is cut: three tracks of odd lengths.
    private static let cuts = [0, 40_011, 91_237, 132_301]
    private static let recording = FLACFixture(frames: cuts.last!, sampleRate: 44100, channels: 2, bitsPerSample: 16, seed: 77).samples()
    private static let artist = "Stick Artist"
    private static let cover = TinyPNG.make(width: 64, height: 48)

    private struct Album {
        var name: String
        var suffix: String
        /// Whether the cover is in the files (else `cover.png` beside them).
        var embedsCover: Bool
    }

    private static let albums = [
        Album(name: "MP3 Album", suffix: "mp3", embedsCover: true),
        Album(name: "AAC Album", suffix: "m4a", embedsCover: true),
        Album(name: "ALAC Album", suffix: "m4a", embedsCover: true),
        Album(name: "Vorbis Album", suffix: "ogg", embedsCover: true),
        Album(name: "Opus Album", suffix: "opus", embedsCover: true),
        Album(name: "WAV Album", suffix: "wav", embedsCover: false),
    ]

    override func setUpWithError() throws {
        guard toolsAvailable("lame", "mpg123", "oggenc", "vorbiscomment", "opusenc", "ffmpeg", "mpc") else {
            throw XCTSkip("the encoders or mpc are not installed; run ./scripts/setup")
        }
    }

    private static func piece(_ track: Int) -> [Int32] {
        Array(recording[(cuts[track - 1] * 2)..<(cuts[track] * 2)])
    }

    /// `music/<album>/0N.<suffix>` for every album, and the cover beside them.
    private func writeStick(_ music: String) throws {
        for album in Self.albums {
            let directory = "\(music)/\(album.name)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let coverPath = "\(directory)/cover.png"
            try Data(Self.cover).write(to: URL(fileURLWithPath: coverPath))
            for track in 1...3 {
                let path = "\(directory)/0\(track).\(album.suffix)"
                let title = "\(album.name) \(track)"
                let samples = Self.piece(track)
                let tags = ["title=\(title)", "artist=\(Self.artist)", "album=\(album.name)", "track=\(track)/3"]
                let ffmpegTags = tags.flatMap { ["-metadata", $0] }
                let withCover = ["-map", "0", "-map", "1", "-c:v", "copy", "-disposition:v", "attached_pic"]
                switch album.name {
                case "MP3 Album":
                    try MP3Fixture.encode(samples, channels: 2, sampleRate: 44100, to: path, arguments: [
                        "-V", "2", "--tt", title, "--ta", Self.artist, "--tl", album.name, "--tn", "\(track)/3", "--ti", coverPath,
                    ])
                case "AAC Album":
                    try MP4Fixtures.encode(samples, to: path, codec: "aac", arguments: withCover + ffmpegTags, inputs: [coverPath])
                case "ALAC Album":
                    try MP4Fixtures.encode(samples, to: path, codec: "alac", arguments: withCover + ffmpegTags, inputs: [coverPath])
                case "Vorbis Album":
                    try OggFixtures.vorbis(samples, channels: 2, sampleRate: 44100, to: path, arguments: [
                        "-q", "4", "-t", title, "-a", Self.artist, "-l", album.name, "-N", "\(track)", "-c", "TRACKTOTAL=3",
                    ])
                    let block = OggFixtures.pictureBlock(type: 3, mimeType: "image/png", description: "", width: 64, height: 48,
                                                         data: Self.cover)
                    try runChecked(try which("vorbiscomment"),
                                   ["-a", "-t", "METADATA_BLOCK_PICTURE=" + Data(block).base64EncodedString(), path])
                case "Opus Album":
                    try OggFixtures.opus(samples, channels: 2, sampleRate: 44100, to: path, arguments: [
                        "--bitrate", "96", "--title", title, "--artist", Self.artist, "--album", album.name,
                        "--comment", "TRACKNUMBER=\(track)/3", "--picture", coverPath,
                    ])
                default:
                    let plain = path + ".plain.wav"
                    try WAVFile.write(samples, channels: 2, sampleRate: 44100, to: plain)
                    try runChecked(try which("ffmpeg"), ["-nostdin", "-v", "error", "-y", "-i", plain, "-c:a", "copy"]
                                   + ffmpegTags + ["-write_id3v2", "1", path])
                    try FileManager.default.removeItem(atPath: plain)
                }
            }
            if album.embedsCover { try FileManager.default.removeItem(atPath: coverPath) }
        }
    }

    private struct MPC {
        let port: Int

        func run(_ arguments: String...) throws -> String {
            let result = try runProcess("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", String(port)] + arguments, environment: [:], timeout: 15)
            guard result.status == 0 else { throw TestSupportError("mpc \(arguments.joined(separator: " ")): \(result)") }
            return result.stdout
        }

        /// `mpc readpicture URI` (or `albumart`) into a file: its bytes.
        func picture(_ command: String, _ uri: String, into path: String) throws -> [UInt8] {
            let result = try runProcess("/bin/sh", ["-c", "mpc -h 127.0.0.1 -p \(port) \(command) \"$1\" > \"$2\"", "sh", uri, path],
                                        environment: [:], timeout: 15)
            guard result.status == 0 else { throw TestSupportError("mpc \(command) \(uri): \(result)") }
            return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        }
    }

    func testEveryFormatsAlbumIsIndexedWithItsTagsAndCoverAndShownWhilePlaying() throws {
        let world = try DaemonBench(start: false)
        let music = world.path("music")
        try writeStick(music)
        let port = try freeTCPPort()
        let webPort = try freeTCPPort()
        world.daemon.arguments = ["--music-dir", music, "--mpd-port", String(port), "--web-port", String(webPort)]
        try world.daemon.start()
        let scanned = try waitUntil(timeout: 60) {
            (try world.statusJSON().object("library")?.object("scan")?.int("finishedJob") ?? 0) >= 1
        }
        XCTAssertTrue(scanned, "the scan did not finish")
        let library = try world.statusJSON().object("library") ?? [:]
        XCTAssertEqual(library.int("songs"), 3 * Self.albums.count, "\(library)")
        XCTAssertEqual(library.object("scan")?.int("failed"), 0, "\(library)")

        let mpc = MPC(port: port)
        for album in Self.albums {
            let listed = try mpc.run("-f", "%artist% ~ %album% ~ %title%", "find", "album", album.name)
            XCTAssertEqual(listed, (1...3).map { "\(Self.artist) ~ \(album.name) ~ \(album.name) \($0)\n" }.joined(), album.name)
            let uri = "\(album.name)/01.\(album.suffix)"
            if album.embedsCover {
                XCTAssertEqual(try mpc.picture("readpicture", uri, into: world.path("picture")), Self.cover, "\(album.name): readpicture")
            } else {
                XCTAssertEqual(try mpc.picture("albumart", uri, into: world.path("picture")), Self.cover, "\(album.name): albumart")
            }
            // The web page's library: the album's tracks, as the page asks for them.
            let request = #"{"command":"find","filters":[{"tag":"Album","value":"\#(album.name)"}]}"#
            let (code, text) = try web(webPort, "/api", ["-H", "Content-Type: application/json", "-d", request])
            XCTAssertEqual(code, 200, text)
            let songs = try XCTUnwrap(parseJSONObject(text)?.object("result")?.array("songs"), text)
            let titles = songs.compactMap { (($0 as? [String: Any])?["tags"] as? [String: Any])?["Title"].flatMap(Self.firstString) }
            XCTAssertEqual(titles.sorted(), (1...3).map { "\(album.name) \($0)" }, "\(album.name) on the web page: \(text)")
            let info = try XCTUnwrap(parseJSONObject(try world.ok("info", "--json", "\(music)/\(uri)").stdout))
            XCTAssertEqual(info.string("title"), "\(album.name) 1")
            XCTAssertEqual(info.array("pictures")?.count, album.embedsCover ? 1 : 0, "\(album.name): \(info)")
        }

        // Now Playing: each album's first title and a cover, while it plays.
        for album in Self.albums {
            try world.ok("clear")
            try world.ok("add", "\(music)/\(album.name)")
            try world.ok("play")
            let playing = try world.waitForStatus(timeout: 10, "\(album.name) playing") {
                $0.string("state") == "playing" && $0.string("title") == "\(album.name) 1"
            }
            XCTAssertEqual(playing.string("artist"), Self.artist)
            XCTAssertEqual(playing.string("album"), album.name)
            let artwork = try XCTUnwrap(world.statusJSON().object("artwork"), "\(album.name): no cover")
            XCTAssertEqual(artwork.int("width"), 64, "\(album.name): \(artwork)")
            XCTAssertEqual(artwork.int("height"), 48, "\(album.name): \(artwork)")
            let id = try XCTUnwrap(artwork.string("id"), "\(album.name): \(artwork)")
            let (code, image) = try web(webPort, "/art/\(id)?size=64")
            XCTAssertEqual(code, 200, "\(album.name): the page's cover: \(image.prefix(200))")
        }
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
    }

    /// A request to the web page's server: the status code and the body.
    private func web(_ port: Int, _ path: String, _ arguments: [String] = []) throws -> (code: Int, text: String) {
        let result = try runProcess("/usr/bin/curl", ["-sS", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}"] + arguments
                                    + ["http://127.0.0.1:\(port)\(path)"], environment: [:], timeout: 15)
        guard result.status == 0, let last = result.stdout.split(separator: "\n").last, let code = Int(last) else {
            throw TestSupportError("curl \(path): \(result)")
        }
        return (code, String(result.stdout.dropLast(last.count + 1)))
    }

    /// A tag's value: a string, or the first of several.
    private static func firstString(_ value: Any) -> String? {
        value as? String ?? (value as? [Any])?.first as? String
    }

    func testAnMP3AlbumThenAnALACAlbumPlayGaplesslyAndBitExact() throws {
        let world = try DaemonBench(jack: false, device: "capture", start: false)
        let music = world.path("music")
        try writeStick(music)
        world.daemon.arguments = ["--music-dir", music]
        try world.daemon.start()
        try world.ok("add", "\(music)/MP3 Album", "\(music)/ALAC Album")
        try world.ok("play")
        try world.waitForStatus(timeout: 30, "the queue played through") { $0.string("state") == "stopped" }
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))

        var expected: [Int32] = []
        for track in 1...3 { expected += try MP3Fixture.referenceDecode("\(music)/MP3 Album/0\(track).mp3") }
        let mp3Frames = expected.count / 2
        expected += Self.recording.map { $0 << 16 }
        let captured = try WAVFile(path: world.bench.alsa.capturePath).samples()
        XCTAssertEqual(captured.count / 2, expected.count / 2, "frames: every track's, no gap or overlap")
        let mismatch = zip(captured, expected).enumerated().first { $0.element.0 != $0.element.1 }.map { $0.offset / 2 }
        XCTAssertNil(mismatch, "the first frame that differs (the MP3 album's end at \(mp3Frames))")
    }
}
