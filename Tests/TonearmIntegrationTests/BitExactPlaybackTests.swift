import Foundation
import TestSupport
import XCTest

/// Plays generated files into alsa-lib's `file` plugin over `null` and compares what reached
/// the device with the reference decoder's output, sample for sample.
final class BitExactPlaybackTests: XCTestCase {
    override func setUpWithError() throws {
        guard toolsAvailable("flac", "metaflac") else { throw XCTSkip("flac is not installed; run ./scripts/setup") }
    }

    /// Plays one fixture through `capture`; checks the device format in the WAV header and
    /// every sample against `flac -d` and against the generated PCM.
    private func assertBitExact(_ fixture: FLACFixture, file: StaticString = #filePath, line: UInt = #line) throws {
        let bench = try Bench()
        let flac = try bench.fixture("in.flac", fixture)
        let reference = try referenceDecode(flac)
        // flac is lossless: the reference decoder must give back exactly what was generated.
        assertSamplesEqual(reference, fixture.leftJustifiedSamples(), channels: fixture.channels,
                           "flac -d against the generated PCM", file: file, line: line)

        let result = try bench.play([flac], device: "capture")
        assertExit(result, 0, file: file, line: line)
        let container = expectedContainer(bits: fixture.bitsPerSample)
        XCTAssertTrue(result.stderr.contains("FLAC \(fixture.bitsPerSample)-bit \(fixture.sampleRate) Hz \(fixture.channels) ch → \(container.name) \(fixture.sampleRate) Hz \(fixture.channels) ch"),
                      "status line: \(result.stderr)", file: file, line: line)
        let capture = try bench.capture()
        XCTAssertEqual(capture.alsaFormatName, container.name, "device format", file: file, line: line)
        XCTAssertEqual(capture.containerBits, container.bits, file: file, line: line)
        XCTAssertEqual(capture.channels, fixture.channels, "channels", file: file, line: line)
        XCTAssertEqual(capture.sampleRate, fixture.sampleRate, "rate", file: file, line: line)
        XCTAssertFalse(capture.dataSizeRepaired, "the capture was not closed cleanly", file: file, line: line)
        assertSamplesEqual(try capture.samples(), reference, channels: fixture.channels,
                           "capture against flac -d", file: file, line: line)
    }

    func test16BitStereo44100() throws {
        try assertBitExact(FLACFixture(frames: 30000, sampleRate: 44100, channels: 2, bitsPerSample: 16))
    }

    func test24BitStereo96000() throws {
        try assertBitExact(FLACFixture(frames: 60000, sampleRate: 96000, channels: 2, bitsPerSample: 24, seed: 2))
    }

    func test8BitMono() throws {
        try assertBitExact(FLACFixture(frames: 16000, sampleRate: 22050, channels: 1, bitsPerSample: 8, seed: 3))
    }

    func test24BitSixChannels48000() throws {
        try assertBitExact(FLACFixture(frames: 24000, sampleRate: 48000, channels: 6, bitsPerSample: 24, seed: 4))
    }

    func test12Bit() throws {
        // Written as S16_LE with the 12 bits at the top (v << 4).
        try assertBitExact(FLACFixture(frames: 20000, sampleRate: 44100, channels: 2, bitsPerSample: 12, seed: 5))
    }

    func test20Bit() throws {
        // Written as S24_3LE with the 20 bits at the top (v << 4).
        try assertBitExact(FLACFixture(frames: 20000, sampleRate: 48000, channels: 2, bitsPerSample: 20, seed: 6))
    }

    func test32Bit() throws {
        // flac 1.4.2 encodes and decodes 32-bit streams; full-scale noise exercises every bit.
        try assertBitExact(FLACFixture(frames: 20000, sampleRate: 48000, channels: 2, bitsPerSample: 32,
                                       tones: [Tone(997, level: 0.5)], noiseLevel: 0.45, seed: 7))
    }

    func testNonStandardBlockSizeAndNoSeekTable() throws {
        try assertBitExact(FLACFixture(frames: 25000, channels: 2, bitsPerSample: 16, seed: 8,
                                       seekTable: false, blockSize: 1152))
    }

    /// The fixtures as `track1.flac`, `track2.flac`… and their reference decodes, concatenated.
    private func tracks(_ fixtures: [FLACFixture], in bench: Bench) throws -> (paths: [String], expected: [Int32]) {
        var paths: [String] = []
        var expected: [Int32] = []
        for (i, fixture) in fixtures.enumerated() {
            paths.append(try bench.fixture("track\(i + 1).flac", fixture))
            expected += try referenceDecode(paths[i])
        }
        return (paths, expected)
    }

    /// The names of the `captureperformat` files: one per device format the PCM was opened in.
    private func captureFiles(_ bench: Bench) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: bench.directory.path).filter { $0.hasPrefix("capture-") }.sorted()
    }

    /// Three files of one format in one run: the device gets exactly their concatenation.
    func testGaplessSameFormat() throws {
        let bench = try Bench()
        // Odd lengths, so track ends fall inside ALSA periods and FLAC blocks.
        let fixtures = [
            FLACFixture(frames: 10007, tones: [Tone(440, level: 0.5)], seed: 11),
            FLACFixture(frames: 13001, tones: [Tone(660, level: 0.5)], seed: 12),
            FLACFixture(frames: 8191, tones: [Tone(880, level: 0.5)], seed: 13),
        ]
        let (paths, expected) = try tracks(fixtures, in: bench)
        let result = try bench.play(paths, device: "capture")
        assertExit(result, 0)
        XCTAssertEqual(PlaySummary(stderr: result.stderr)?.files, 3, result.stderr)
        let capture = try bench.capture()
        XCTAssertEqual(capture.alsaFormatName, "S16_LE")
        XCTAssertEqual(capture.frames, 10007 + 13001 + 8191, "frames at the device")
        assertSamplesEqual(try capture.samples(), expected, channels: 2, "capture against the three references, concatenated")
    }

    /// A 16/44.1 file then a 24/48 one: the device is reconfigured between them.
    ///
    /// The `file` plugin truncates its output every time the PCM is reopened, so a single
    /// capture file would hold only the second track. The `captureperformat` PCM names its file
    /// after the device format (alsa-lib expands %r-%c-%f), so each format's audio lands in
    /// its own file and both can be checked in full.
    func testFormatChangeBetweenFiles() throws {
        try assertReopened(FLACFixture(frames: 22050, sampleRate: 44100, bitsPerSample: 16, seed: 21),
                           then: FLACFixture(frames: 24000, sampleRate: 48000, bitsPerSample: 24, seed: 22))
    }

    /// Plays `first` then `second` through `captureperformat`: each in its own device format
    /// (`expectedContainer`), so in its own file, bit-exact.
    private func assertReopened(_ first: FLACFixture, then second: FLACFixture, file: StaticString = #filePath, line: UInt = #line) throws {
        let bench = try Bench()
        let paths = [try bench.fixture("a.flac", first), try bench.fixture("b.flac", second)]
        let result = try bench.play(paths, device: "captureperformat")
        assertExit(result, 0, file: file, line: line)
        XCTAssertEqual(PlaySummary(stderr: result.stderr)?.files, 2, result.stderr, file: file, line: line)
        var names: [String] = []
        for (path, fixture) in zip(paths, [first, second]) {
            let (format, bits) = expectedContainer(bits: fixture.bitsPerSample)
            let capture = try WAVFile(path: bench.alsa.captureFile(rate: fixture.sampleRate, channels: 2, format: format))
            XCTAssertEqual(capture.containerBits, bits, file: file, line: line)
            assertSamplesEqual(try capture.samples(), try referenceDecode(path), channels: 2,
                               "\(path) (\(format) \(fixture.sampleRate))", file: file, line: line)
            names.append("capture-\(fixture.sampleRate)-2-\(format).wav")
        }
        XCTAssertEqual(try captureFiles(bench), names.sorted(), file: file, line: line)
    }

    /// 24 bits, then 16, then 24 again, at one rate: the device opened for the first holds every
    /// bit of the second, so it stays open in its format and the three join gaplessly, bit-exact,
    /// in one capture file; each status line names that format.
    func testFewerBitsFollowInTheOpenDevicesFormat() throws {
        let bench = try Bench()
        let fixtures = [FLACFixture(frames: 10007, sampleRate: 48000, bitsPerSample: 24, seed: 31),
                        FLACFixture(frames: 13001, sampleRate: 48000, bitsPerSample: 16, seed: 32),
                        FLACFixture(frames: 8191, sampleRate: 48000, bitsPerSample: 24, seed: 33)]
        let (paths, expected) = try tracks(fixtures, in: bench)
        let result = try bench.play(paths, device: "captureperformat")
        assertExit(result, 0)
        let lines = tonearmLines(result.stderr)
        for (i, bits) in [24, 16, 24].enumerated() {
            let line = lines.first { $0.hasPrefix("[\(i + 1)/3]") } ?? "(no [\(i + 1)/3] line)"
            XCTAssertTrue(line.hasSuffix("(0:00, FLAC \(bits)-bit 48000 Hz 2 ch → S24_3LE 48000 Hz 2 ch)"), line)
        }
        XCTAssertEqual(try captureFiles(bench), ["capture-48000-2-S24_3LE.wav"], "one device format, never reopened")
        let capture = try WAVFile(path: bench.alsa.captureFile(rate: 48000, channels: 2, format: "S24_3LE"))
        XCTAssertEqual(capture.frames, 10007 + 13001 + 8191, "frames at the device: no gap, no overlap")
        assertSamplesEqual(try capture.samples(), expected, channels: 2, "capture against the three references, concatenated")
    }

    /// 16 bits, then 24 at the same rate: the 16-bit device would cut the second's low bits, so
    /// it is reopened in a format that holds them.
    func testMoreBitsReopenTheDevice() throws {
        try assertReopened(FLACFixture(frames: 22050, sampleRate: 48000, bitsPerSample: 16, seed: 41),
                           then: FLACFixture(frames: 24000, sampleRate: 48000, bitsPerSample: 24, seed: 42))
    }

    /// Each status line names the device format its own track plays in, also when the
    /// tracks are short and the device is reconfigured between them.
    func testStatusLinesShowEachTracksOwnDeviceFormat() throws {
        let bench = try Bench()
        let first = try bench.fixture("a.flac", FLACFixture(frames: 22050, sampleRate: 44100, bitsPerSample: 16, seed: 21))
        let second = try bench.fixture("b.flac", FLACFixture(frames: 24000, sampleRate: 48000, bitsPerSample: 24, seed: 22))
        let result = try bench.play([first, second], device: "captureperformat")
        assertExit(result, 0)
        let lines = tonearmLines(result.stderr)
        let one = lines.first { $0.hasPrefix("[1/2]") } ?? "(no [1/2] line)"
        let two = lines.first { $0.hasPrefix("[2/2]") } ?? "(no [2/2] line)"
        XCTAssertTrue(one.hasSuffix("(0:00, FLAC 16-bit 44100 Hz 2 ch → S16_LE 44100 Hz 2 ch)"), one)
        XCTAssertTrue(two.hasSuffix("(0:00, FLAC 24-bit 48000 Hz 2 ch → S24_3LE 48000 Hz 2 ch)"), two)
    }

    /// `--start S` with S × rate a whole number N: the device gets the reference from frame N.
    func testStartOffset() throws {
        let cases: [(fixture: FLACFixture, start: String, frame: Int)] = [
            (FLACFixture(frames: 44100, sampleRate: 44100, channels: 2, bitsPerSample: 16, seed: 31), "0.25", 11025),
            // No seek table: libFLAC has to bisect.
            (FLACFixture(frames: 48000, sampleRate: 96000, channels: 2, bitsPerSample: 24, seed: 32, seekTable: false), "0.3", 28800),
        ]
        for (fixture, start, frame) in cases {
            let bench = try Bench()
            let flac = try bench.fixture("in.flac", fixture)
            let reference = try referenceDecode(flac)
            let result = try bench.play([flac], device: "capture", ["--start", start])
            assertExit(result, 0)
            let capture = try bench.capture()
            XCTAssertEqual(capture.frames, fixture.frames - frame, "frames after --start \(start)")
            assertSamplesEqual(try capture.samples(), Array(reference[(frame * fixture.channels)...]),
                               channels: fixture.channels, "--start \(start) (frame \(frame))")
        }
    }

    /// `--volume 50` on 16 bits: half the reference, within the dither (±2 LSB), and not the
    /// reference itself.
    func testVolumeHalf() throws {
        let bench = try Bench()
        let flac = try bench.fixture("in.flac", FLACFixture(frames: 22050, bitsPerSample: 16, seed: 41))
        let reference = try referenceDecode(flac).map { $0 >> 16 }
        let result = try bench.play([flac], device: "capture", ["--volume", "50"])
        assertExit(result, 0)
        let capture = try bench.capture()
        XCTAssertEqual(capture.alsaFormatName, "S16_LE")
        let output = try capture.samples().map { $0 >> 16 }
        XCTAssertEqual(output.count, reference.count)
        guard output.count == reference.count else { return }
        var worst = 0.0
        var worstIndex = 0
        var outside = 0
        var lastOutside = -1
        for i in output.indices {
            let error = abs(Double(output[i]) - Double(reference[i]) / 2)
            if error > worst { worst = error; worstIndex = i }
            if error > 2 { outside += 1; lastOutside = i }
        }
        XCTAssertLessThanOrEqual(worst, 2, """
            \(outside) samples off by more than 2 LSB, the last at frame \(lastOutside / 2); worst at frame \(worstIndex / 2): \
            got \(output[worstIndex]), reference \(reference[worstIndex]) (ratio \(Double(output[worstIndex]) / Double(reference[worstIndex])))
            """)
        XCTAssertTrue(output != reference, "--volume 50 left the samples unchanged")
        // From 50 ms on, separately, so a failure above shows whether only the start is wrong.
        let steady = (2205 * 2)..<output.count
        let steadyWorst = steady.map { abs(Double(output[$0]) - Double(reference[$0]) / 2) }.max() ?? 0
        XCTAssertLessThanOrEqual(steadyWorst, 2, "after the first 50 ms")
    }
}
