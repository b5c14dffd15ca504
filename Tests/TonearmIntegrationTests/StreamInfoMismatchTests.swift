import Foundation
import TestSupport
import XCTest

/// STREAMINFO that disagrees with the audio frames. The frames are what tonearm plays.
///
/// `flac -d` (1.4.2) decodes a file whose STREAMINFO max block size is too small, but
/// refuses one whose STREAMINFO bits per sample or channel count differ from the frames
/// ("ERROR, bits-per-sample is 16 in frame but 24 in STREAMINFO", state ABORTED). The
/// patched files keep the original's audio frames byte for byte, so those captures are
/// compared with the reference decode of the unpatched original.
final class StreamInfoMismatchTests: XCTestCase {
    private var bench: Bench!
    private var original: String!
    private var reference: [Int32] = []
    private let fixture = FLACFixture(frames: 22050, sampleRate: 44100, channels: 2, bitsPerSample: 16, seed: 61, blockSize: 4096)

    override func setUpWithError() throws {
        guard toolsAvailable("flac") else { throw XCTSkip("flac is not installed; run ./scripts/setup") }
        bench = try Bench()
        original = try bench.fixture("original.flac", fixture)
        reference = try referenceDecode(original)
        assertSamplesEqual(reference, fixture.leftJustifiedSamples(), channels: 2, "flac -d against the generated PCM")
    }

    override func tearDown() {
        bench = nil
    }

    private func patched(_ name: String, _ edit: (inout FLACBytes) -> Void) throws -> String {
        var bytes = try FLACBytes(path: original)
        edit(&bytes)
        let path = bench.path(name)
        try bytes.write(to: path)
        return path
    }

    /// Plays `path` to `capture`; the run must end by itself, without a crash, exit 0 or 1.
    private func playAndCapture(_ path: String, line: UInt = #line) throws -> (ProcessResult, WAVFile?) {
        let result = try bench.play([path], device: "capture", timeout: 20)
        XCTAssertFalse(result.timedOut, "hung: \(result)", line: line)
        XCTAssertNil(result.signal, "crashed: \(result)", line: line)
        XCTAssertTrue([0, 1].contains(result.status), "\(result)", line: line)
        return (result, try? bench.capture())
    }

    /// Encoded with -b 4096, STREAMINFO's max block size patched to 16.
    func testMaxBlockSizeSmallerThanFrames() throws {
        let path = try patched("maxblock.flac") { $0.maxBlockSize = 16 }
        XCTAssertEqual(try FLACBytes(path: path).maxBlockSize, 16)
        let patchedReference = try referenceDecode(path)
        assertSamplesEqual(patchedReference, reference, channels: 2, "flac -d of the patched file")
        let (result, capture) = try playAndCapture(path)
        XCTAssertEqual(result.status, 0, "\(result)")
        guard let capture else { return XCTFail("no capture: \(result)") }
        XCTAssertEqual(capture.alsaFormatName, "S16_LE")
        assertSamplesEqual(try capture.samples(), patchedReference, channels: 2, "capture against flac -d")
    }

    /// Both block size limits patched to 16 (min ≤ max, but both far below the frames').
    func testMinAndMaxBlockSizeSmallerThanFrames() throws {
        let path = try patched("minmaxblock.flac") { $0.minBlockSize = 16; $0.maxBlockSize = 16 }
        let (result, capture) = try playAndCapture(path)
        XCTAssertEqual(result.status, 0, "\(result)")
        guard let capture else { return XCTFail("no capture: \(result)") }
        assertSamplesEqual(try capture.samples(), try referenceDecode(path), channels: 2, "capture against flac -d")
    }

    /// STREAMINFO says 24 (or 8) bits, the frames are 16-bit: tonearm plays the frames' 16 bits.
    func testWrongBitsPerSample() throws {
        for claimed in [24, 8] {
            let path = try patched("bits\(claimed).flac") { $0.bitsPerSample = claimed }
            XCTAssertEqual(try FLACBytes(path: path).bitsPerSample, claimed)
            let (result, capture) = try playAndCapture(path)
            XCTAssertEqual(result.status, 0, "STREAMINFO \(claimed)-bit: \(result)")
            XCTAssertTrue(result.stderr.contains("FLAC 16-bit 44100 Hz 2 ch → S16_LE 44100 Hz 2 ch"),
                          "STREAMINFO \(claimed)-bit: \(result.stderr)")
            guard let capture else { XCTFail("no capture: \(result)"); continue }
            XCTAssertEqual(capture.alsaFormatName, "S16_LE", "STREAMINFO \(claimed)-bit")
            assertSamplesEqual(try capture.samples(), reference, channels: 2,
                               "STREAMINFO \(claimed)-bit: capture against the original's reference")
            try assertInfoReportsFrames(path, bits: 16, channels: 2)
        }
    }

    /// STREAMINFO says 1 (or 6) channels, the frames are stereo: tonearm plays stereo.
    func testWrongChannelCount() throws {
        for claimed in [1, 6] {
            let path = try patched("channels\(claimed).flac") { $0.channels = claimed }
            XCTAssertEqual(try FLACBytes(path: path).channels, claimed)
            let (result, capture) = try playAndCapture(path)
            XCTAssertEqual(result.status, 0, "STREAMINFO \(claimed) ch: \(result)")
            XCTAssertTrue(result.stderr.contains("FLAC 16-bit 44100 Hz 2 ch → S16_LE 44100 Hz 2 ch"),
                          "STREAMINFO \(claimed) ch: \(result.stderr)")
            guard let capture else { XCTFail("no capture: \(result)"); continue }
            XCTAssertEqual(capture.channels, 2, "STREAMINFO \(claimed) ch")
            assertSamplesEqual(try capture.samples(), reference, channels: 2,
                               "STREAMINFO \(claimed) ch: capture against the original's reference")
            try assertInfoReportsFrames(path, bits: 16, channels: 2)
        }
    }

    /// `tonearm info` shows the format of the frames (its documented rule).
    private func assertInfoReportsFrames(_ path: String, bits: Int, channels: Int, line: UInt = #line) throws {
        let result = try bench.info([path])
        assertExit(result, 0, line: line)
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        XCTAssertEqual(object?["bitsPerSample"] as? Int, bits, result.stdout, line: line)
        XCTAssertEqual(object?["channels"] as? Int, channels, result.stdout, line: line)
    }
}
