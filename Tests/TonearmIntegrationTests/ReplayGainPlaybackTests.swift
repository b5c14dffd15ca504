import Foundation
import TestSupport
import XCTest

/// ReplayGain through alsa-lib's `file` plugin: each track is heard at its own factor from its
/// first sample, a track at unity stays bit-perfect, and the mode off changes nothing.
final class ReplayGainPlaybackTests: XCTestCase {
    override func setUpWithError() throws {
        guard toolsAvailable("flac", "metaflac") else { throw XCTSkip("flac is not installed; run ./scripts/setup") }
    }

    /// Three gapless tracks of odd lengths, so their boundaries fall inside ALSA periods.
    private func album(_ bench: Bench) throws -> (paths: [String], references: [[Int32]]) {
        let tracks: [(frames: Int, tone: Double, tags: [(name: String, value: String)])] = [
            (10007, 440, [("ALBUM", "A"), ("REPLAYGAIN_TRACK_GAIN", "-6.00 dB"), ("REPLAYGAIN_TRACK_PEAK", "0.5"),
                          ("REPLAYGAIN_ALBUM_GAIN", "-3.00 dB"), ("REPLAYGAIN_ALBUM_PEAK", "0.9")]),
            (13001, 660, [("ALBUM", "A"), ("REPLAYGAIN_TRACK_GAIN", "0.00 dB"), ("REPLAYGAIN_TRACK_PEAK", "0.5"),
                          ("REPLAYGAIN_ALBUM_GAIN", "-3.00 dB"), ("REPLAYGAIN_ALBUM_PEAK", "0.9")]),
            // +6 dB would clip a peak of 0.8: limited to 1 / 0.8.
            (8191, 880, [("ALBUM", "A"), ("REPLAYGAIN_TRACK_GAIN", "+6.00 dB"), ("REPLAYGAIN_TRACK_PEAK", "0.8"),
                         ("REPLAYGAIN_ALBUM_GAIN", "-3.00 dB"), ("REPLAYGAIN_ALBUM_PEAK", "0.9")]),
        ]
        var paths: [String] = []
        var references: [[Int32]] = []
        for (i, track) in tracks.enumerated() {
            let path = try bench.fixture("track\(i + 1).flac",
                                         FLACFixture(frames: track.frames, tones: [Tone(track.tone, level: 0.5)], seed: UInt64(40 + i), tags: track.tags))
            paths.append(path)
            references.append(try referenceDecode(path))
        }
        return (paths, references)
    }

    /// Checks each track's stretch of the capture against its reference times `factor`: exactly
    /// when the factor is 1 (the integer path), else within the dither's 2 LSB at 16 bits.
    private func assertScaled(_ capture: [Int32], _ references: [[Int32]], _ factors: [Double],
                              file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(capture.count, references.reduce(0) { $0 + $1.count }, "samples at the device", file: file, line: line)
        var offset = 0
        for (index, (reference, factor)) in zip(references, factors).enumerated() {
            let heard = Array(capture[offset..<min(capture.count, offset + reference.count)])
            offset += reference.count
            if factor == 1 {
                assertSamplesEqual(heard, reference, channels: 2, "track \(index + 1) at unity", file: file, line: line)
                continue
            }
            var worst = 0.0
            var worstAt = 0
            for (i, (got, want)) in zip(heard, reference).enumerated() {
                let error = abs(Double(got >> 16) - Double(want >> 16) * factor)
                if error > worst { (worst, worstAt) = (error, i) }
            }
            XCTAssertLessThanOrEqual(worst, 2.0, "track \(index + 1) at ×\(factor): off by \(worst) LSB at sample \(worstAt) "
                                     + "(first samples heard \(heard.prefix(4).map { $0 >> 16 }), reference \(reference.prefix(4).map { $0 >> 16 }))",
                                     file: file, line: line)
        }
    }

    private func factor(_ decibels: Double) -> Double { pow(10, decibels / 20) }

    func testTrackModeChangesTheLevelOnEachTracksFirstSample() throws {
        let bench = try Bench()
        let (paths, references) = try album(bench)
        let result = try bench.play(paths, device: "capture", ["--replay-gain", "track"])
        assertExit(result, 0)
        let capture = try bench.capture()
        XCTAssertEqual(capture.alsaFormatName, "S16_LE")
        assertScaled(try capture.samples(), references, [factor(-6), 1, 1 / 0.8])
    }

    func testAlbumModeAndAutoOverOneAlbumPlayTheAlbumsGain() throws {
        for mode in ["album", "auto"] {
            let bench = try Bench()
            let (paths, references) = try album(bench)
            let result = try bench.play(paths, device: "capture", ["--replay-gain", mode])
            assertExit(result, 0)
            assertScaled(try bench.capture().samples(), references, Array(repeating: factor(-3), count: 3))
        }
    }

    func testThePreampAddsToEveryGainAndThePeakStillLimits() throws {
        let bench = try Bench()
        let (paths, references) = try album(bench)
        let result = try bench.play(paths, device: "capture", ["--replay-gain", "track", "--replay-gain-preamp", "3"])
        assertExit(result, 0)
        // Track 2 at +3 dB would peak at 0.5 × 1.41: under full scale, so not limited.
        assertScaled(try bench.capture().samples(), references, [factor(-3), factor(3), 1 / 0.8])
    }

    func testOffLeavesEveryTrackBitPerfect() throws {
        let bench = try Bench()
        let (paths, references) = try album(bench)
        let result = try bench.play(paths, device: "capture", ["--replay-gain", "off"])
        assertExit(result, 0)
        assertSamplesEqual(try bench.capture().samples(), references.flatMap { $0 }, channels: 2, "the three tracks, untouched")
    }

    func testAnUnknownModeIsRefused() throws {
        let bench = try Bench()
        let (paths, _) = try album(bench)
        let result = try bench.play(paths, device: "capture", ["--replay-gain", "loud"])
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("--replay-gain"), result.stderr)
    }
}
