import Foundation
import TestSupport
import XCTest

/// Files and devices that cannot play: tonearm must fail fast, with one line that names the
/// culprit and the cause, and end by itself.
final class BadInputTests: XCTestCase {
    private var bench: Bench!
    private var good: String!

    override func setUpWithError() throws {
        guard toolsAvailable("flac") else { throw XCTSkip("flac is not installed; run ./scripts/setup") }
        bench = try Bench()
        good = try bench.fixture("good.flac", FLACFixture(frames: 22050, sampleRate: 44100, channels: 2, bitsPerSample: 16, seed: 51))
    }

    override func tearDown() {
        bench = nil
    }

    /// Runs `tonearm play` on `file` (to `device`); expects a failure in under 5 s and, with
    /// --quiet, exactly one line on stderr naming `name` and containing every `cause` part.
    /// Without --quiet, status lines may come too, but still exactly one error line.
    @discardableResult
    private func assertFails(_ file: String, device: String = "capture", names name: String? = nil, cause: [String],
                             line: UInt = #line) throws -> ProcessResult {
        let named = name ?? file
        let quiet = try bench.play([file], device: device, ["--quiet"], timeout: 20)
        XCTAssertFalse(quiet.timedOut, "hung: \(quiet)", line: line)
        XCTAssertNotEqual(quiet.status, 0, "\(quiet)", line: line)
        XCTAssertNil(quiet.signal, "crashed: \(quiet)", line: line)
        XCTAssertLessThan(quiet.seconds, 5, "took too long: \(quiet)", line: line)
        let lines = quiet.stderrLines
        XCTAssertEqual(lines.count, 1, "expected exactly one line on stderr: \(quiet)", line: line)
        if let only = lines.first {
            XCTAssertTrue(only.hasPrefix("tonearm: "), only, line: line)
            XCTAssertTrue(only.contains(named), "does not name \(named): \(only)", line: line)
            for part in cause {
                XCTAssertTrue(only.contains(part), "no '\(part)' in: \(only)", line: line)
            }
        }

        let loud = try bench.play([file], device: device, timeout: 20)
        XCTAssertFalse(loud.timedOut, "hung: \(loud)", line: line)
        XCTAssertEqual(loud.status, quiet.status, "\(loud)", line: line)
        let errors = loud.stderrLines.filter { $0.hasPrefix("tonearm: ") }
        XCTAssertEqual(errors, lines, "error lines without --quiet: \(loud)", line: line)
        return quiet
    }

    func testMissingFile() throws {
        try assertFails(bench.path("nothere.flac"), cause: ["cannot open", "No such file or directory"])
    }

    func testEmptyFile() throws {
        let path = bench.path("empty.flac")
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        try assertFails(path, cause: ["empty file"])
    }

    func testRandomBytes() throws {
        var random = SeededRandom(seed: 52)
        let path = bench.path("noise.flac")
        try Data((0..<8192).map { _ in UInt8(truncatingIfNeeded: random.next()) }).write(to: URL(fileURLWithPath: path))
        try assertFails(path, cause: ["not a FLAC file"])
    }

    func testTextFile() throws {
        let path = bench.path("notes.flac")
        try "Side A\n1. Overture\n2. Finale\n".write(toFile: path, atomically: true, encoding: .utf8)
        try assertFails(path, cause: ["not a FLAC file"])
    }

    func testDirectory() throws {
        let path = bench.path("album.flac")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try assertFails(path, cause: ["directory"])
    }

    /// Cut at 60 % of its size: what decodes plays (and is exact), then a clear error.
    func testTruncatedFile() throws {
        var bytes = try FLACBytes(path: good)
        bytes.bytes = Array(bytes.bytes[..<(bytes.bytes.count * 6 / 10)])
        let path = bench.path("cut.flac")
        try bytes.write(to: path)
        try assertFails(path, cause: ["truncated", "of 22050 frames"])
        let capture = try bench.capture()
        XCTAssertGreaterThan(capture.frames, 0, "nothing played before the cut")
        XCTAssertLessThan(capture.frames, 22050)
        let reference = try referenceDecode(good)
        assertSamplesEqual(try capture.samples(), Array(reference[..<(capture.frames * 2)]), channels: 2,
                           "the part before the cut against the intact file's reference")
    }

    /// Bytes flipped inside the audio frames (after the metadata): CRC errors and lost sync.
    func testCorruptAudio() throws {
        var bytes = try FLACBytes(path: good)
        let start = try bytes.audioOffset()
        let span = bytes.bytes.count - start
        for i in 0..<20 {
            bytes.bytes[start + span * (2 * i + 1) / 40] ^= 0xFF
        }
        let path = bench.path("corrupt.flac")
        try bytes.write(to: path)
        try assertFails(path, cause: ["corrupt audio", "decode errors"])
    }

    /// File A at 44.1 kHz followed by the frames of file B at 48 kHz (B's "fLaC" and
    /// metadata blocks stripped).
    func testSampleRateChangeMidStream() throws {
        let b = try bench.fixture("b.flac", FLACFixture(frames: 24000, sampleRate: 48000, seed: 53))
        let joined = try FLACBytes(path: good).bytes + FLACBytes(path: b).audioFrames()
        let path = bench.path("joined.flac")
        try FLACBytes(bytes: joined).write(to: path)
        try assertFails(path, cause: ["sample rate", "44100 Hz → 48000 Hz", "changes mid-stream"])
    }

    func testNonexistentDevice() throws {
        try assertFails(good, device: "nosuch", names: "nosuch", cause: ["cannot open ALSA PCM 'nosuch'"])
    }

    /// A bad file among good ones is caught before anything plays.
    func testBadFileAmongGoodOnesFailsBeforePlaying() throws {
        let missing = bench.path("missing.flac")
        let result = try bench.play([good, missing, good], device: "capture", ["--quiet"], timeout: 20)
        assertExit(result, 1)
        XCTAssertEqual(result.stderrLines, ["tonearm: \(missing): cannot open: No such file or directory"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: bench.alsa.capturePath), "audio played before the check")
    }
}
