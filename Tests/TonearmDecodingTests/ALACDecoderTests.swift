import Foundation
import TestSupport
import TonearmAudio
import TonearmDecoding
import XCTest

final class ALACDecoderTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        try XCTSkipUnless(toolsAvailable("ffmpeg"), "ffmpeg makes the ALAC fixtures")
        directory = try TemporaryDirectory(prefix: "tonearm-alac")
    }

    override func tearDown() { directory = nil }

    private func decodeAll(_ decoder: any AudioDecoder) throws -> [Int32] {
        var out: [Int32] = []
        while let block = try decoder.nextBlock() { out.append(contentsOf: block) }
        return out
    }

    private func leftJustified(_ samples: [Int32], bits: Int) -> [Int32] { samples.map { $0 << Int32(32 - bits) } }

    func testSixteenAndTwentyFourBitStreamsDecodeExactly() throws {
        // Odd lengths: the last ALAC frame is a partial one.
        for (bits, channels, rate, frames) in [(16, 2, 44100, 44100 + 777), (16, 1, 48000, 20001), (24, 2, 96000, 30011), (24, 1, 44100, 4096 * 3),
                                               (16, 6, 48000, 10001), (24, 3, 44100, 5000), (16, 7, 44100, 5000)] {
            let samples = MP4Fixtures.signal(frames: frames, channels: channels, bits: bits, sampleRate: rate)
            let file = try MP4Fixtures.encode(samples, to: directory.file("\(bits)-\(channels).m4a"), codec: "alac",
                                              sampleRate: rate, channels: channels, bits: bits)
            let decoder = try Decoders.open(path: file)
            XCTAssertEqual(decoder.info.codec, "ALAC")
            XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: rate, channels: channels, bitsPerSample: bits))
            XCTAssertEqual(decoder.info.totalFrames, frames)
            XCTAssertEqual(decoder.position, 0)
            let decoded = try decodeAll(decoder)
            XCTAssertEqual(decoded.count, samples.count, "\(bits)-bit \(channels) ch")
            XCTAssertTrue(decoded == leftJustified(samples, bits: bits), "\(bits)-bit \(channels) ch is bit-exact")
            XCTAssertEqual(decoder.position, frames)
        }
    }

    /// The predictor has loops of its own for some orders: every order the encoder can choose
    /// is decoded exactly, in both channels of a pair and at both depths.
    func testEveryPredictionOrderDecodesExactly() throws {
        for (bits, order) in [(16, 1), (16, 2), (16, 4), (16, 5), (16, 6), (16, 8), (16, 12), (16, 30), (24, 4), (24, 8), (24, 17)] {
            let samples = MP4Fixtures.signal(frames: 9000, channels: 2, bits: bits, sampleRate: 44100, seed: UInt64(order))
            let file = try MP4Fixtures.encode(samples, to: directory.file("order-\(bits)-\(order).m4a"), codec: "alac", bits: bits,
                                              arguments: ["-min_prediction_order", "\(order)", "-max_prediction_order", "\(order)"])
            XCTAssertTrue(try decodeAll(try Decoders.open(path: file)) == leftJustified(samples, bits: bits), "order \(order), \(bits) bits")
        }
    }

    /// Silence and full-scale square waves take the encoder's other paths: zero runs and
    /// uncompressed (escaped) frames.
    func testSilenceAndFullScaleSignalsDecodeExactly() throws {
        var samples = [Int32](repeating: 0, count: 2 * 10000)
        for i in 10000..<20000 { samples[i] = (i / 7) % 2 == 0 ? 32767 : -32768 }
        var random = SeededRandom(seed: 5)
        samples += (0..<(2 * 9000)).map { _ in Int32(truncatingIfNeeded: random.next() >> 48) }
        let file = try MP4Fixtures.encode(samples, to: directory.file("edges.m4a"), codec: "alac")
        XCTAssertTrue(try decodeAll(Decoders.open(path: file)) == leftJustified(samples, bits: 16))
    }

    func testSeeksAreSampleAccurate() throws {
        let frames = 3 * 44100 + 123
        let samples = MP4Fixtures.signal(frames: frames, channels: 2, bits: 24)
        let file = try MP4Fixtures.encode(samples, to: directory.file("seek.m4a"), codec: "alac", bits: 24)
        let decoder = try Decoders.open(path: file)
        let expected = leftJustified(samples, bits: 24)
        for target in [66150, 0, 1, 4095, 4096, 4097, frames - 1, 12345, 0] {
            try decoder.seek(toFrame: target)
            XCTAssertEqual(decoder.position, target)
            let block = try XCTUnwrap(try decoder.nextBlock(), "a block after seeking to \(target)")
            XCTAssertTrue(Array(block) == Array(expected[(target * 2)..<min(expected.count, target * 2 + block.count)]), "seek to \(target)")
            XCTAssertEqual(decoder.position, target + block.count / 2)
        }
        try decoder.seek(toFrame: frames)
        XCTAssertNil(try decoder.nextBlock(), "seeking to the end leaves nothing")
        XCTAssertThrowsError(try decoder.seek(toFrame: frames + 1))
    }
}

extension ALACDecoderTests {
    /// ffmpeg writes ALAC at 16 and 24 bits only; 20- and 32-bit streams are built here from
    /// uncompressed frames, in a file whose sizes are in 'stz2' and chunk offsets in 'co64'.
    func testTwentyAndThirtyTwoBitStreamsDecodeExactly() throws {
        for (bits, channels) in [(20, 2), (32, 2), (20, 1), (32, 1)] {
            let frames = 10000, frameLength = 4096
            let samples = MP4Fixtures.signal(frames: frames, channels: channels, bits: bits, sampleRate: 48000)
            var units: [[UInt8]] = []
            var durations: [Int] = []
            for start in stride(from: 0, to: frames, by: frameLength) {
                let end = min(frames, start + frameLength)
                units.append(MP4Bytes.uncompressedALACFrame(samples[(start * channels)..<(end * channels)], channels: channels,
                                                             bits: bits, frameLength: frameLength))
                durations.append(end - start)
            }
            let movie = MP4Bytes.movie(sampleEntry: MP4Bytes.alacEntry(bits: bits, channels: channels, sampleRate: 48000, frameLength: frameLength),
                                       samples: units, durations: durations, timescale: 48000, samplesPerChunk: 2,
                                       wideOffsets: true, compactSizes: true)
            let file = directory.file("\(bits)-\(channels).m4a")
            try MP4Bytes(bytes: movie).write(to: file)
            let decoder = try Decoders.open(path: file)
            XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: 48000, channels: channels, bitsPerSample: bits))
            XCTAssertEqual(decoder.info.totalFrames, frames)
            XCTAssertTrue(try decodeAll(decoder) == leftJustified(samples, bits: bits), "\(bits)-bit \(channels) ch")
            try decoder.seek(toFrame: 8191)
            XCTAssertEqual(try XCTUnwrap(decoder.nextBlock()).first, leftJustified(samples, bits: bits)[8191 * channels])
        }
    }
}

extension ALACDecoderTests {
    /// A track whose media ticks are not frames (here two frames a tick): lengths, the decode
    /// and seeks still count frames.
    func testATimescaleOtherThanTheSampleRateCountsFrames() throws {
        let frames = 9000, frameLength = 4096
        let samples = MP4Fixtures.signal(frames: frames, channels: 2, bits: 20, sampleRate: 48000)
        var units: [[UInt8]] = []
        var ticks: [Int] = []
        for start in stride(from: 0, to: frames, by: frameLength) {
            let end = min(frames, start + frameLength)
            units.append(MP4Bytes.uncompressedALACFrame(samples[(start * 2)..<(end * 2)], channels: 2, bits: 20, frameLength: frameLength))
            ticks.append((end - start) / 2)
        }
        let file = directory.file("ticks.m4a")
        try MP4Bytes(bytes: MP4Bytes.movie(sampleEntry: MP4Bytes.alacEntry(bits: 20, channels: 2, sampleRate: 48000, frameLength: frameLength),
                                           samples: units, durations: ticks, timescale: 24000)).write(to: file)
        let decoder = try Decoders.open(path: file)
        XCTAssertEqual(decoder.info.totalFrames, frames)
        let expected = leftJustified(samples, bits: 20)
        XCTAssertTrue(try decodeAll(decoder) == expected)
        for target in [5000, 4096, 4095, 0] {
            try decoder.seek(toFrame: target)
            let block = try XCTUnwrap(try decoder.nextBlock())
            XCTAssertTrue(Array(block) == Array(expected[(target * 2)..<(target * 2 + block.count)]), "seek to \(target)")
        }
    }
}
