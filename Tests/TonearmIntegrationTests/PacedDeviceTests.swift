import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A device that keeps real time: a private JACK server on the dummy driver (48 kHz,
/// 256-frame periods) behind alsa-lib's `jack` plugin.
final class PacedDeviceTests: XCTestCase {
    override func setUpWithError() throws {
        guard toolsAvailable("flac", "jackd", "jack_lsp") else {
            throw XCTSkip("jackd or flac is not installed; run ./scripts/setup")
        }
        let libraries = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib")) ?? []
        let plugin = (["/usr/lib"] + libraries.map { "/usr/lib/\($0)" }).map { "\($0)/alsa-lib/libasound_module_pcm_jack.so" }
        guard plugin.contains(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw XCTSkip("the ALSA jack plugin (libasound2-plugins) is not installed; run ./scripts/setup")
        }
    }

    /// 3 s of 44.1 kHz audio through `pacedcapture` takes no less than 3 s, with no underruns:
    /// the device paces the writer. How much longer a busy machine makes it is no fault of the
    /// pacing, and a hang is bounded by the timeout.
    func testRealTimePacing() throws {
        let bench = try Bench(jack: true)
        let flac = try bench.fixture("three.flac", FLACFixture(frames: 3 * 44100, sampleRate: 44100, seed: 81))
        let result = try bench.play([flac], device: "pacedcapture", timeout: 30)
        assertExit(result, 0)
        guard let summary = PlaySummary(stderr: result.stderr) else { return XCTFail("no summary line: \(result)") }
        XCTAssertGreaterThanOrEqual(summary.seconds, 2.85, "playback time: \(result.stderr)")
        XCTAssertEqual(summary.underruns, 0, result.stderr)
        XCTAssertEqual(summary.deviceLosses, 0, result.stderr)
        XCTAssertGreaterThanOrEqual(result.seconds, 2.85, "the process ended before the audio could have played")
        // plug over jackraw offers 48 kHz only: tonearm resampled, so the capture holds 3 s at 48 kHz.
        let capture = try WAVFile(path: bench.alsa.pacedCapturePath)
        XCTAssertEqual(capture.sampleRate, 48000)
        XCTAssertEqual(capture.channels, 2)
        XCTAssertEqual(Double(capture.frames), 3 * 48000, accuracy: 512, "frames at the device")
        let samples = normalised(try capture.samples())
        // The 440 Hz tone of channel 0 at 0.4 of full scale came through.
        XCTAssertEqual(toneAmplitude(samples, channel: 0, channels: 2, sampleRate: 48000, frequency: 440), 0.4, accuracy: 0.04)
    }

    /// SIGINT stops playback at once and exits 130: of the 2.5 s left when it came, at most what
    /// was buffered (the player's and the file plugin's) reaches the device after it.
    func testInterrupt() throws {
        let bench = try Bench(jack: true)
        let flac = try bench.fixture("three.flac", FLACFixture(frames: 3 * 44100, sampleRate: 44100, seed: 82))
        let player = try bench.startPlaying([flac], device: "pacedcapture")
        XCTAssertTrue(waitUntil(timeout: 30) { Self.framesWritten(bench.alsa.pacedCapturePath) >= 24000 },
                      "half a second was not written to the device")
        XCTAssertTrue(player.isRunning, "ended early")
        let signalled = Self.framesWritten(bench.alsa.pacedCapturePath)
        player.send(SIGINT)
        let result = player.wait(timeout: 30)
        assertExit(result, 130)
        let frames = try WAVFile(path: bench.alsa.pacedCapturePath).frames
        XCTAssertLessThan(frames - signalled, 48000,
                          "\(frames - signalled) frames reached the device after SIGINT (\(signalled) before): it played on")
    }

    /// jackd is SIGKILLed once 1.2 s of a 6 s file has been written and restarted 2 s later:
    /// tonearm notices the stall, reopens the device, finishes by itself and exits 0, and
    /// carries on where it stopped: the audio written before and after the loss adds up to the
    /// whole file.
    ///
    /// Played to `pacedsplitcapture` (paced, through a `file` plugin that starts a new file on
    /// every open, so the part before the loss survives the reopen).
    func testDeviceLossAndReturn() throws {
        let bench = try Bench(jack: true)
        let jack = try XCTUnwrap(bench.jack)
        let flac = try bench.fixture("six.flac", FLACFixture(frames: 6 * 44100, sampleRate: 44100, seed: 83))
        let player = try bench.startPlaying([flac], device: "pacedsplitcapture", ["--reopen-interval", "500"])
        // The first part holds more than a second when the server goes, however slowly the
        // player started.
        XCTAssertTrue(waitUntil(timeout: 20) { Self.framesWritten(bench.alsa.pacedSplitCapturePath) >= 57600 },
                      "1.2 s was not written to the device")
        XCTAssertTrue(player.isRunning, "ended early")
        jack.kill()
        sleepSeconds(2)
        try jack.start()
        let result = player.wait(timeout: 30)
        assertExit(result, 0)
        let lines = tonearmLines(result.stderr)
        XCTAssertTrue(lines.contains { $0.contains("stopped responding") }, "no loss reported: \(result.stderr)")
        XCTAssertTrue(lines.contains { $0.contains("is back") }, "no return reported: \(result.stderr)")
        guard let summary = PlaySummary(stderr: result.stderr) else { return XCTFail("no summary line: \(result)") }
        XCTAssertEqual(summary.deviceLosses, 1, result.stderr)
        // 6 s of audio plus the 2 s outage: it waited for the device, it did not skip ahead.
        // How long detection and reopening take on top is a figure, not a fault.
        XCTAssertGreaterThan(summary.seconds, 7.5, result.stderr)

        let parts = try bench.alsa.splitCaptureFiles().map { try WAVFile(path: $0) }
        XCTAssertEqual(parts.count, 2, "one capture before the loss, one after: \(bench.alsa.splitCaptureFiles())")
        let frames = parts.map(\.frames)
        XCTAssertTrue(frames.allSatisfy { $0 > 48000 }, "frames per part: \(frames)")
        // 6 s at 48 kHz; a buffer (1024 frames) lost or repeated at the loss would show.
        XCTAssertEqual(Double(frames.reduce(0, +)), 6 * 48000, accuracy: 300, "frames per part: \(frames)")
    }

    /// The frames a `file` plugin has written so far: its WAV header (44 bytes, the frame's
    /// size at 32) says the frame size, the file's length the rest.
    private static func framesWritten(_ path: String) -> Int {
        guard let handle = FileHandle(forReadingAtPath: path) else { return 0 }
        defer { try? handle.close() }
        guard let header = try? handle.read(upToCount: 44), header.count == 44,
              let size = try? handle.seekToEnd() else { return 0 }
        let frameSize = Int(header[32]) | Int(header[33]) << 8
        return frameSize > 0 ? (Int(size) - 44) / frameSize : 0
    }

    /// The raw `jack` plugin takes 48 kHz, 2 channels, FLOAT_LE only: 44.1 kHz stereo, mono
    /// and 6-channel files are resampled and mapped, in real time, without underruns.
    ///
    /// Each plays alone into `jackrawcapture` (the `file` plugin over `jackraw`, which
    /// passes the jack plugin's constraints through) so the converted audio can be checked:
    /// channel c of a fixture carries 1000 × (1 + 0.25 c) Hz.
    func testConversionToJackFloatDevice() throws {
        let bench = try Bench(jack: true)
        let tone = [Tone(1000, level: 0.3)]
        let cases: [(name: String, channels: Int, bits: Int)] = [("stereo", 2, 16), ("mono", 1, 16), ("surround", 6, 24)]
        var paths: [String] = []
        for (name, channels, bits) in cases {
            let flac = try bench.fixture("\(name).flac", FLACFixture(frames: 44100, sampleRate: 44100, channels: channels,
                                                                     bitsPerSample: bits, tones: tone, noiseLevel: 0.001, seed: 84))
            paths.append(flac)
            let result = try bench.play([flac], device: "jackrawcapture", timeout: 30)
            assertExit(result, 0)
            XCTAssertTrue(result.stderr.contains("→ FLOAT_LE 48000 Hz 2 ch)"), "\(name): \(result.stderr)")
            guard let summary = PlaySummary(stderr: result.stderr) else { XCTFail("no summary line: \(result)"); continue }
            XCTAssertEqual(summary.underruns, 0, "\(name): \(result.stderr)")
            // Paced by the device: no sooner than the music lasts (a busy machine may take longer).
            XCTAssertGreaterThanOrEqual(summary.seconds, 0.9, "\(name): \(result.stderr)")

            let capture = try WAVFile(path: bench.alsa.jackrawCapturePath)
            XCTAssertEqual(capture.sampleRate, 48000, name)
            XCTAssertEqual(capture.channels, 2, name)
            XCTAssertEqual(Double(capture.frames), 48000, accuracy: 256, "\(name): frames at the device")
            let samples = try capture.samplesAsFloat32()
            XCTAssertLessThanOrEqual(samples.map { abs($0) }.max() ?? 0, 1.0, "\(name): beyond full scale")
            func level(_ channel: Int, _ hz: Double) -> Double {
                toneAmplitude(samples, channel: channel, channels: 2, sampleRate: 48000, frequency: hz)
            }
            switch channels {
            case 1:
                // The one channel on both sides.
                XCTAssertGreaterThan(level(0, 1000), 0.15, "mono left")
                XCTAssertEqual(level(0, 1000), level(1, 1000), accuracy: 0.001, "mono: left and right differ")
            default:
                // Left keeps the source's first channel, right its second; neither leaks across.
                // (A 5.1 downmix that cannot clip scales the fronts by about 0.41.)
                XCTAssertGreaterThan(level(0, 1000), 0.1, "\(name): left lost channel 0")
                XCTAssertGreaterThan(level(1, 1250), 0.1, "\(name): right lost channel 1")
                XCTAssertLessThan(level(0, 1250), 0.01, "\(name): channel 1 in the left output")
                XCTAssertLessThan(level(1, 1000), 0.01, "\(name): channel 0 in the right output")
                if channels == 2 {
                    XCTAssertEqual(level(0, 1000), 0.3, accuracy: 0.02, "stereo: level changed")
                    XCTAssertEqual(level(1, 1250), 0.3, accuracy: 0.02, "stereo: level changed")
                }
            }
        }

        // All three in one run on the raw plugin: two reconfigurations, still real time.
        let result = try bench.play(paths, device: "jackraw", timeout: 30)
        assertExit(result, 0)
        guard let summary = PlaySummary(stderr: result.stderr) else { return XCTFail("no summary line: \(result)") }
        XCTAssertEqual(summary.files, 3)
        XCTAssertEqual(summary.underruns, 0, result.stderr)
        // Paced by the device: never faster than the music. A busy machine slows the two
        // reconfigurations; a stall would take far longer.
        XCTAssertGreaterThanOrEqual(summary.seconds, 2.7, result.stderr)
        XCTAssertLessThan(summary.seconds, 10, result.stderr)
    }
}
