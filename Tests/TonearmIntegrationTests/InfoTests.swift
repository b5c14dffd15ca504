import Foundation
import TestSupport
import XCTest

/// `tonearm info --json`: one object per file and line.
final class InfoTests: XCTestCase {
    override func setUpWithError() throws {
        guard toolsAvailable("flac", "metaflac") else { throw XCTSkip("flac is not installed; run ./scripts/setup") }
    }

    private func objects(_ result: ProcessResult) throws -> [[String: Any]] {
        try result.stdout.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw TestSupportError("not a JSON object: \(line)")
            }
            return object
        }
    }

    func testTagsAndPicture() throws {
        let bench = try Bench()
        let fixture = FLACFixture(
            frames: 33075, sampleRate: 44100, channels: 2, bitsPerSample: 16, seed: 71,
            tags: [("TITLE", "Blue in Green"), ("ARTIST", "Miles Davis"), ("ALBUM", "Kind of Blue"),
                   ("ALBUMARTIST", "Miles Davis Sextet"), ("TRACKNUMBER", "3/12"), ("DISCNUMBER", "1"),
                   ("DATE", "1959-08-17"), ("GENRE", "Jazz"), ("REPLAYGAIN_TRACK_GAIN", "-6.5 dB"),
                   ("REPLAYGAIN_TRACK_PEAK", "0.912")],
            picture: FixturePicture(type: 3, width: 37, height: 23, description: "cover"))
        let path = try bench.fixture("tagged.flac", fixture)
        let png = TinyPNG.make(width: 37, height: 23)

        let result = try bench.info([path])
        assertExit(result, 0)
        let all = try objects(result)
        XCTAssertEqual(all.count, 1, result.stdout)
        guard let info = all.first else { return }
        XCTAssertEqual(info["file"] as? String, path)
        XCTAssertEqual(info["sampleRate"] as? Int, 44100)
        XCTAssertEqual(info["channels"] as? Int, 2)
        XCTAssertEqual(info["bitsPerSample"] as? Int, 16)
        XCTAssertEqual(info["totalFrames"] as? Int, 33075)
        XCTAssertEqual(info["duration"] as? Double ?? -1, 0.75, accuracy: 1e-9)
        XCTAssertEqual(info["title"] as? String, "Blue in Green")
        XCTAssertEqual(info["artist"] as? String, "Miles Davis")
        XCTAssertEqual(info["album"] as? String, "Kind of Blue")
        XCTAssertEqual(info["albumArtist"] as? String, "Miles Davis Sextet")
        XCTAssertEqual(info["trackNumber"] as? Int, 3)
        XCTAssertEqual(info["trackTotal"] as? Int, 12)
        XCTAssertEqual(info["discNumber"] as? Int, 1)
        XCTAssertEqual(info["date"] as? String, "1959-08-17")
        XCTAssertEqual(info["genre"] as? String, "Jazz")
        let gain = info["replayGain"] as? [String: Any]
        XCTAssertEqual(gain?["trackGain"] as? Double ?? 0, -6.5, accuracy: 1e-9)
        XCTAssertEqual(gain?["trackPeak"] as? Double ?? 0, 0.912, accuracy: 1e-9)
        XCTAssertTrue(gain?["albumGain"] is NSNull, "albumGain: \(String(describing: gain?["albumGain"]))")
        XCTAssertTrue(gain?["albumPeak"] is NSNull)
        let pictures = info["pictures"] as? [[String: Any]] ?? []
        XCTAssertEqual(pictures.count, 1, result.stdout)
        if let picture = pictures.first {
            XCTAssertEqual(picture["type"] as? String, "frontCover")
            XCTAssertEqual(picture["mimeType"] as? String, "image/png")
            XCTAssertEqual(picture["width"] as? Int, 37)
            XCTAssertEqual(picture["height"] as? Int, 23)
            XCTAssertEqual(picture["bytes"] as? Int, png.count)
        }
    }

    /// Encoded from stdin to stdout: STREAMINFO has no total. Length unknown, still plays exactly.
    func testUnknownLength() throws {
        let bench = try Bench()
        let fixture = FLACFixture(frames: 30011, sampleRate: 48000, channels: 2, bitsPerSample: 24, seed: 72,
                                  totalSamplesInStreamInfo: false)
        let path = try bench.fixture("stream.flac", fixture)
        XCTAssertEqual(try FLACBytes(path: path).totalSamples, 0, "the fixture has a total after all")
        let metaflac = try runChecked("metaflac", ["--show-total-samples", path])
        XCTAssertEqual(metaflac.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "0")

        let result = try bench.info([path])
        assertExit(result, 0)
        let info = try objects(result).first
        XCTAssertTrue(info?["totalFrames"] is NSNull, result.stdout)
        XCTAssertTrue(info?["duration"] is NSNull, result.stdout)
        XCTAssertEqual(info?["sampleRate"] as? Int, 48000)
        XCTAssertEqual(info?["bitsPerSample"] as? Int, 24)

        let reference = try referenceDecode(path)
        assertSamplesEqual(reference, fixture.leftJustifiedSamples(), channels: 2, "flac -d against the generated PCM")
        let play = try bench.play([path], device: "capture")
        assertExit(play, 0)
        XCTAssertTrue(play.stderr.contains("length unknown"), play.stderr)
        let capture = try bench.capture()
        XCTAssertEqual(capture.alsaFormatName, "S24_3LE")
        assertSamplesEqual(try capture.samples(), reference, channels: 2, "capture against flac -d")
    }

    /// Several files: one line each, in order; a bad one makes the exit status 1.
    func testSeveralFilesAndAFailure() throws {
        let bench = try Bench()
        let a = try bench.fixture("a.flac", FLACFixture(frames: 4410, seed: 73, tags: [("TITLE", "A")]))
        let b = try bench.fixture("b.flac", FLACFixture(frames: 9600, sampleRate: 96000, channels: 1, bitsPerSample: 24, seed: 74))
        let missing = bench.path("missing.flac")
        let ok = try bench.info([a, b])
        assertExit(ok, 0)
        let both = try objects(ok)
        XCTAssertEqual(both.map { $0["file"] as? String }, [a, b])
        XCTAssertEqual(both.last?["channels"] as? Int, 1)
        XCTAssertTrue(both.last?["title"] is NSNull)
        XCTAssertEqual((both.last?["pictures"] as? [Any])?.count, 0)

        let bad = try bench.info([a, missing])
        assertExit(bad, 1)
        XCTAssertEqual(try objects(bad).count, 1, bad.stdout)
        XCTAssertEqual(bad.stderrLines, ["tonearm: \(missing): cannot open: No such file or directory"])
    }
}
