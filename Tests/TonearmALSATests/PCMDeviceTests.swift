import CAllocationCounter
import TonearmALSA
import TonearmAudio
import XCTest

final class PCMDeviceTests: XCTestCase {
    func testNegotiatesTheSourceFormatOnADeviceThatTakesAnything() throws {
        for (bits, expected) in [(16, DeviceSampleFormat.s16LE), (12, .s16LE), (20, .s24_3LE), (24, .s24_3LE), (32, .s32LE)] {
            let request = OutputRequest(stream: StreamFormat(sampleRate: 96000, channels: 6, bitsPerSample: bits), periodFrames: 256, bufferFrames: 1024)
            let device = try PCMDevice(name: "null", request: request)
            XCTAssertEqual(device.format.sampleFormat, expected, "\(bits)-bit source")
            XCTAssertEqual(device.format.sampleRate, 96000)
            XCTAssertEqual(device.format.channels, 6)
            XCTAssertEqual(device.format.periodFrames, 256)
            XCTAssertEqual(device.format.bufferFrames, 1024)
        }
    }

    func testAnUnknownDeviceIsNamedInTheError() {
        let request = OutputRequest(stream: StreamFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16), periodFrames: 256, bufferFrames: 1024)
        XCTAssertThrowsError(try PCMDevice(name: "no-such-pcm", request: request)) { error in
            XCTAssertTrue("\(error)".hasPrefix("cannot open ALSA PCM 'no-such-pcm': "), "\(error)")
        }
    }

    /// The whole render path — waiting for room, mixer, conversion and the write into
    /// alsa-lib — allocates nothing per period.
    func testRenderingAndWritingPeriodsAllocatesNothing() throws {
        let request = OutputRequest(stream: StreamFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16), periodFrames: 256, bufferFrames: 1024)
        let device = try PCMDevice(name: "null", request: request)
        let periods = 400
        let ring = SPSCRing(capacity: 256 * 2 * periods)
        let samples = (0..<(256 * 2 * periods)).map { Int32(truncatingIfNeeded: $0 &* 2654435761) }
        _ = samples.withUnsafeBufferPointer { ring.write($0) }
        let mixer = Mixer(inputs: [MixerInput(ring: ring)], format: device.format, maxFrames: 256)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 256 * device.format.bytesPerFrame, alignment: 16)
        defer { buffer.deallocate() }

        var written = 0
        allocation_counter_start()
        var waits = 0
        for _ in 0..<periods {
            // As the output thread does: wait for room, then render and write.
            if device.waitForRoom(256, timeoutMilliseconds: 1000) == nil { waits += 1 }
            let frames = mixer.render(into: buffer, frames: 256)
            var offset = 0
            while offset < frames {
                if case .wrote(let n) = device.write(buffer + offset * 4, count: frames - offset, timeoutMilliseconds: 1000) {
                    offset += n
                }
            }
            written += frames
        }
        let allocations = allocation_counter_stop()
        XCTAssertEqual(written, 256 * periods)
        XCTAssertEqual(waits, periods, "room for every period")
        XCTAssertEqual(allocations, 0, "allocations in \(periods) periods")
    }
}
