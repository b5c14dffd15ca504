import Foundation
import TestSupport
import TonearmAudio
@testable import TonearmPlayback
import XCTest

/// Raw PCM streams fed by the control plane, and streams held for an interruption, on the
/// `null` device (unpaced). The slot's ring counts what the mixer has read: what was fed, once
/// converted, must all be read, and nothing may be read while a stream is held.
final class PCMStreamTests: XCTestCase {
    private let stereo48k = StreamFormat(sampleRate: 48000, channels: 2, bitsPerSample: 16)

    /// A sine at half scale, 16-bit, left-justified as `feedStream` takes it.
    private func tone(frames: Int, channels: Int, sampleRate: Int, frequency: Double = 440) -> [Int32] {
        var samples = [Int32](repeating: 0, count: frames * channels)
        for frame in 0..<frames {
            let value = Int32(16384 * sin(2 * Double.pi * frequency * Double(frame) / Double(sampleRate))) << 16
            for channel in 0..<channels { samples[frame * channels + channel] = value }
        }
        return samples
    }

    private func ring(_ engine: PlaybackEngine, _ handle: StreamHandle) -> SPSCRing {
        engine.streamSlots[handle.slot - 1].ring
    }

    func testFedPCMPlaysOutOnceEnded() throws {
        let engine = nullDeviceEngine()
        let handle = try engine.startStream(format: stereo48k)
        let samples = tone(frames: 48000, channels: 2, sampleRate: 48000)
        for start in stride(from: 0, to: samples.count, by: 9600) {
            XCTAssertTrue(engine.feedStream(handle, samples: Array(samples[start..<start + 9600])))
        }
        XCTAssertTrue(waitUntil(5) { engine.streamBacklogFrames(handle) == 0 }, "the producer never took what was fed")
        XCTAssertTrue(waitUntil(5) { ring(engine, handle).samplesRead >= samples.count - 2 * 256 })
        usleep(20_000)
        XCTAssertFalse(engine.streamFinished(handle), "a stream whose client is slow must not end")

        engine.endStream(handle)
        XCTAssertFalse(engine.feedStream(handle, samples: [0, 0]), "fed after endStream")
        XCTAssertTrue(waitUntil(5) { engine.streamFinished(handle) }, "the ended stream never finished")
        XCTAssertEqual(ring(engine, handle).samplesRead, samples.count, "samples read ≠ samples fed")
        XCTAssertGreaterThanOrEqual(engine.writtenFrames, 48000)
        XCTAssertEqual(engine.deviceStatus.format?.sampleRate, 48000, "the device opens at the stream's format")
        XCTAssertEqual(engine.deviceStatus.format?.channels, 2)
    }

    func testFeedingBeyondTheBacklogIsRefusedUntilItDrains() throws {
        let engine = nullDeviceEngine()
        let handle = try engine.startStream(format: stereo48k)
        // Held, so that the null device, which does not pace, cannot drain it meanwhile.
        engine.holdStream(handle)
        XCTAssertTrue(waitUntil(5) { engine.isStreamHeld(handle) }, "not held")
        // Accepted while less than 2 s waits, however large; then refused, taking nothing.
        let big = tone(frames: 48000 * 20, channels: 2, sampleRate: 48000)
        let small = tone(frames: 4800, channels: 2, sampleRate: 48000)
        XCTAssertTrue(engine.feedStream(handle, samples: big))
        XCTAssertFalse(engine.feedStream(handle, samples: small), "fed beyond 2 s of backlog")
        XCTAssertGreaterThan(engine.streamBacklogFrames(handle), 2 * 48000)

        engine.releaseStream(handle)
        XCTAssertTrue(waitUntil(5) { engine.streamBacklogFrames(handle) < 2 * 48000 }, "the backlog never drained")
        XCTAssertTrue(engine.feedStream(handle, samples: small), "refused once the backlog had drained")
        engine.endStream(handle)
        XCTAssertTrue(waitUntil(5) { engine.streamFinished(handle) }, "the ended stream never finished")
        XCTAssertEqual(ring(engine, handle).samplesRead, big.count + small.count, "what was refused was taken, or some was lost")
        XCTAssertEqual(engine.streamBacklogFrames(handle), 0)
    }

    func testPCMIsResampledAndSpreadToTheDevice() throws {
        let directory = try TemporaryDirectory()
        let chime = try FLACFixture(frames: 4410, sampleRate: 44100, channels: 2, tones: [Tone(440, level: 0.5)])
            .write(to: directory.file("chime.flac"))
        let engine = nullDeviceEngine()
        // The device opens at the file's 44.1 kHz stereo and stays so.
        let first = try engine.startStream(path: chime)
        XCTAssertTrue(waitUntil(5) { engine.streamFinished(first) })

        let handle = try engine.startStream(format: StreamFormat(sampleRate: 22050, channels: 1, bitsPerSample: 16))
        let before = ring(engine, handle).samplesRead
        let samples = tone(frames: 22050, channels: 1, sampleRate: 22050, frequency: 1000)
        for start in stride(from: 0, to: samples.count, by: 2205) {
            XCTAssertTrue(engine.feedStream(handle, samples: Array(samples[start..<start + 2205])))
        }
        engine.endStream(handle)
        XCTAssertTrue(waitUntil(5) { engine.streamFinished(handle) }, "the resampled stream never finished")
        XCTAssertEqual(engine.deviceStatus.format?.sampleRate, 44100)
        XCTAssertEqual(engine.deviceStatus.format?.channels, 2)
        // 1 s at 22.05 kHz mono is 1 s at 44.1 kHz stereo (to within the resampler's edges).
        let frames = (ring(engine, handle).samplesRead - before) / 2
        XCTAssertEqual(Double(frames), 44100, accuracy: 64, "\(frames) frames reached the device, not 44100")
    }

    func testUnsupportedFormatsAreClearErrors() throws {
        let engine = nullDeviceEngine(slots: 1)
        let cases: [(StreamFormat, String)] = [
            (StreamFormat(sampleRate: 4000, channels: 2, bitsPerSample: 16), "the sample rate must be 8000 to 384000 Hz"),
            (StreamFormat(sampleRate: 768_000, channels: 2, bitsPerSample: 16), "the sample rate must be 8000 to 384000 Hz"),
            (StreamFormat(sampleRate: 48000, channels: 0, bitsPerSample: 16), "there must be 1 to 8 channels"),
            (StreamFormat(sampleRate: 48000, channels: 9, bitsPerSample: 16), "there must be 1 to 8 channels"),
            (StreamFormat(sampleRate: 48000, channels: 2, bitsPerSample: 12), "samples must be 8, 16, 24 or 32 bits"),
        ]
        for (format, problem) in cases {
            XCTAssertThrowsError(try engine.startStream(format: format)) { error in
                XCTAssertEqual("\(error)", "cannot play raw PCM in \(format): \(problem)")
            }
        }
        // None of them took the slot; a second stream finds none free.
        _ = try engine.startStream(format: stereo48k)
        XCTAssertThrowsError(try engine.startStream(format: stereo48k)) { error in
            XCTAssertEqual("\(error)", "cannot play raw PCM in 16-bit 48000 Hz 2 ch: all 1 stream slots are in use")
        }
    }

    func testHeldStreamKeepsItsAudioUntilReleased() throws {
        let engine = nullDeviceEngine()
        let handle = try engine.startStream(format: stereo48k)
        let samples = tone(frames: 48000 * 10, channels: 2, sampleRate: 48000)
        // The null device does not pace: the first second is played at once, and the stream,
        // not ended, waits for more while it is held; the rest comes after the hold.
        let first = 48000 * 2
        XCTAssertTrue(engine.feedStream(handle, samples: Array(samples[..<first])))
        let slotRing = ring(engine, handle)
        XCTAssertTrue(waitUntil(5) { slotRing.samplesRead > 0 }, "the stream never played")

        engine.holdStream(handle)
        // A fade asked for meanwhile (a session unmuted, say) does not undo the hold.
        engine.setStream(handle, duck: nil, fade: 1)
        XCTAssertEqual(engine.streamSlots[handle.slot - 1].input.fade, 0, "setStream undid the hold's fade-out")
        XCTAssertTrue(waitUntil(5) { engine.isStreamHeld(handle) }, "not held")
        XCTAssertTrue(engine.feedStream(handle, samples: Array(samples[first...])))
        engine.endStream(handle)
        XCTAssertLessThan(slotRing.samplesRead, samples.count, "the stream had ended before the hold")
        // Not read while held, though its ring fills: the audio is kept.
        let heldAt = slotRing.samplesRead
        XCTAssertTrue(waitUntil(1) { slotRing.readableSamples > 0 }, "the held stream's ring stays empty")
        usleep(50_000)
        XCTAssertEqual(slotRing.samplesRead, heldAt, "the mixer read a held stream")
        XCTAssertTrue(engine.isStreamHeld(handle))
        XCTAssertFalse(engine.streamFinished(handle), "a held stream finished")

        engine.releaseStream(handle)
        XCTAssertFalse(engine.isStreamHeld(handle))
        XCTAssertTrue(waitUntil(1) { slotRing.samplesRead > heldAt }, "the released stream was not read again")
        XCTAssertTrue(waitUntil(5) { engine.streamFinished(handle) }, "the released stream never finished")
        XCTAssertEqual(slotRing.samplesRead, samples.count, "some of the held stream's audio was lost")
        XCTAssertEqual(engine.appliedGain(handle), 1, accuracy: 0.0001, "not faded back in")
    }

    func testStreamHeldFromItsStartPlaysNothingUntilReleased() throws {
        let engine = nullDeviceEngine()
        let handle = try engine.startStream(format: stereo48k)
        engine.holdStream(handle)
        let samples = tone(frames: 24000, channels: 2, sampleRate: 48000)
        XCTAssertTrue(engine.feedStream(handle, samples: samples))
        engine.endStream(handle)
        XCTAssertTrue(waitUntil(1) { engine.isStreamHeld(handle) }, "never held")
        XCTAssertTrue(waitUntil(1) { engine.streamBacklogFrames(handle) == 0 }, "the producer did not fill the held ring")
        usleep(30_000)
        XCTAssertEqual(ring(engine, handle).samplesRead, 0, "the mixer read a held stream")
        XCTAssertFalse(engine.streamFinished(handle))

        engine.releaseStream(handle)
        XCTAssertTrue(waitUntil(5) { engine.streamFinished(handle) }, "the released stream never finished")
        XCTAssertEqual(ring(engine, handle).samplesRead, samples.count)
    }

    func testStoppingAHeldStreamFreesItsSlotAtOnce() throws {
        let engine = nullDeviceEngine(slots: 1)
        let handle = try engine.startStream(format: stereo48k)
        XCTAssertTrue(engine.feedStream(handle, samples: tone(frames: 48000 * 10, channels: 2, sampleRate: 48000)))
        XCTAssertTrue(waitUntil(5) { ring(engine, handle).samplesRead > 0 }, "the stream never played")
        engine.holdStream(handle)
        XCTAssertTrue(waitUntil(30) { engine.isStreamHeld(handle) }, "never held")
        let readWhenHeld = ring(engine, handle).samplesRead

        engine.stopStream(handle)
        XCTAssertFalse(engine.feedStream(handle, samples: [0, 0]), "fed after stopStream")
        XCTAssertTrue(waitUntil(30) { engine.streamFinished(handle) }, "the stopped held stream never finished")
        XCTAssertEqual(ring(engine, handle).samplesRead, readWhenHeld, "a held stream's stop played a fade from its ring")
        XCTAssertFalse(engine.isStreamHeld(handle))
        XCTAssertNoThrow(try engine.startStream(format: stereo48k), "the slot was not freed")
    }
}
