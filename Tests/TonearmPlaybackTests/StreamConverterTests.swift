import Foundation
import Synchronization
import TestSupport
import TonearmAudio
import TonearmSystem
@testable import TonearmPlayback
import XCTest

/// The converter between the decoder and the ring: libsoxr at each quality keeps the rate
/// ratio, the tone and its level; a run converts the same however its blocks are cut; a stream
/// the device takes as it is passes through untouched.
final class StreamConverterTests: XCTestCase {
    /// 1 s and an odd tail, so no rate divides it.
    private static let sourceFrames = 44100 + 777
    private static let conversions = [(44100, 48000), (48000, 44100)]

    func testQualitiesAreNamedAsInConfigFiles() {
        XCTAssertEqual(ResampleQuality.allCases.map(\.rawValue), ["quick", "low", "medium", "high", "very_high"])
        XCTAssertEqual(ResampleQuality(rawValue: "very_high"), .veryHigh)
        XCTAssertNil(ResampleQuality(rawValue: "veryHigh"))
    }

    func testEveryQualityGivesTheFramesTheRatioAsks() throws {
        // 8 kHz to 192 kHz: a filter that holds far more than a block (up to 22 000 frames),
        // all of which the flush must hand over.
        for quality in ResampleQuality.allCases {
            for (from, to) in Self.conversions + [(8000, 192_000), (192_000, 44100)] {
                let converter = try StreamConverter(source: format(from), deviceRate: to, deviceChannels: 2, quality: quality)
                let out = run(converter, sine(frames: Self.sourceFrames, rate: from))
                let expected = Double(Self.sourceFrames) * Double(to) / Double(from)
                // The whole run, flush included: the ratio's frames, rounded, within one.
                XCTAssertEqual(Double(out.count / 2), expected, accuracy: 1, "\(quality), \(from) → \(to) Hz")
            }
        }
    }

    func testASineStaysASineAtItsFrequencyAndLevel() throws {
        for quality in ResampleQuality.allCases {
            for (from, to) in Self.conversions {
                let converter = try StreamConverter(source: format(from), deviceRate: to, deviceChannels: 2, quality: quality)
                let out = run(converter, sine(frames: Self.sourceFrames, rate: from))
                let what = "\(quality), \(from) → \(to) Hz"
                // Away from the ends, where the filter rings at the signal's start and stop.
                let middle = Array(out[(2 * 2000)..<(out.count - 2 * 2000)])
                let left = channel(middle, 0), right = channel(middle, 1)
                XCTAssertEqual(rms(left), 0.5 / 2.0.squareRoot(), accuracy: 0.002, "left level, \(what)")
                XCTAssertEqual(rms(right), 0.25 / 2.0.squareRoot(), accuracy: 0.001, "right level, \(what)")
                XCTAssertEqual(frequency(left, rate: to), 1000, accuracy: 0.5, "left frequency, \(what)")
                XCTAssertEqual(frequency(right, rate: to), 3000, accuracy: 1.5, "right frequency, \(what)")
            }
        }
    }

    func testEachQualityHasItsOwnFilter() throws {
        // 48 → 44.1 kHz. 18 kHz lies in the passband of medium, high and very high (to 0.91 of
        // 22.05 kHz), past low's (0.68), and where quick's cubic droops. 23 kHz lies above the
        // new Nyquist frequency: each filter's stopband (its precision) says how little of it
        // folds back; quick has none to speak of.
        func decibels(_ quality: ResampleQuality, _ hz: Double) throws -> Double {
            let converter = try StreamConverter(source: format(48000), deviceRate: 44100, deviceChannels: 2, quality: quality)
            let out = run(converter, sine(frames: Self.sourceFrames, rate: 48000, left: hz, right: hz, bits: 32))
            let level = rms(channel(Array(out[(2 * 2000)..<(out.count - 2 * 2000)]), 0))
            return 20 * log10(level / (0.5 / 2.0.squareRoot()))
        }
        for quality in [ResampleQuality.medium, .high, .veryHigh] {
            XCTAssertGreaterThan(try decibels(quality, 18000), -0.35, "18 kHz, \(quality)")
        }
        XCTAssertLessThan(try decibels(.low, 18000), -3, "18 kHz, low")
        XCTAssertLessThan(try decibels(.quick, 18000), -2, "18 kHz, quick")

        let folded = try ResampleQuality.allCases.map { try decibels($0, 23000) }
        XCTAssertGreaterThan(folded[0], -10, "23 kHz, quick: folds back")
        XCTAssertLessThan(folded[1], -100, "23 kHz, low")
        XCTAssertEqual(folded[2], -115, accuracy: 8, "23 kHz, medium: 16 bits")
        XCTAssertEqual(folded[3], -135, accuracy: 8, "23 kHz, high: 20 bits")
        XCTAssertLessThan(folded[4], -147, "23 kHz, very high: 28 bits")
    }

    func testFlushReturnsWhatTheFilterHeld() throws {
        for quality in ResampleQuality.allCases {
            let converter = try StreamConverter(source: format(44100), deviceRate: 48000, deviceChannels: 2, quality: quality)
            let input = sine(frames: Self.sourceFrames, rate: 44100)
            var before: [Int32] = []
            input.withUnsafeBufferPointer { before += converter.convert($0) }
            let tail = Array(converter.flush())
            let expected = (Double(Self.sourceFrames) * 48000 / 44100).rounded()
            XCTAssertEqual(Double((before.count + tail.count) / 2), expected, accuracy: 1, "\(quality)")
            if quality != .quick {
                // The filters hold hundreds of frames; the tail is the sine's last of them.
                XCTAssertGreaterThan(tail.count / 2, 20, "\(quality)")
                XCTAssertEqual(rms(channel(Array(tail.prefix(2 * 20)), 0)), 0.5 / 2.0.squareRoot(), accuracy: 0.1, "\(quality)")
            }
            XCTAssertEqual(converter.flush().count, 0, "\(quality): nothing after the tail")
        }
    }

    func testASourceTheDeviceTakesPassesThroughUntouched() throws {
        let converter = try StreamConverter(source: format(44100), deviceRate: 44100, deviceChannels: 2)
        XCTAssertTrue(converter.isPassThrough)
        let input = sine(frames: 4096, rate: 44100)
        input.withUnsafeBufferPointer { block in
            let out = converter.convert(block)
            XCTAssertEqual(out.baseAddress, block.baseAddress, "the very block, not a copy")
            XCTAssertEqual(out.count, block.count)
        }
        XCTAssertEqual(converter.flush().count, 0)
    }

    /// Bit-identical, not merely within 1 LSB: libsoxr gathers its input in FIFOs and runs each
    /// filter stage on blocks of its own size whatever the calls bring, so every output sample
    /// is the same arithmetic on the same samples; with Int32 out there is no dither.
    func testARunConvertsTheSameHoweverItsBlocksAreCut() throws {
        for quality in ResampleQuality.allCases {
            for (from, to) in Self.conversions {
                let input = sine(frames: Self.sourceFrames, rate: from)
                let whole = run(try StreamConverter(source: format(from), deviceRate: to, deviceChannels: 2, quality: quality),
                                input, block: input.count / 2)
                for cut in [1, 4096, 12345] {
                    let converter = try StreamConverter(source: format(from), deviceRate: to, deviceChannels: 2, quality: quality)
                    var pieces: [Int32] = []
                    input.withUnsafeBufferPointer { all in
                        pieces += converter.convert(UnsafeBufferPointer(rebasing: all[..<(2 * cut)]))
                        pieces += converter.convert(UnsafeBufferPointer(rebasing: all[(2 * cut)...]))
                    }
                    pieces += converter.flush()
                    XCTAssertNil(sampleMismatch(pieces, whole, channels: 2), "\(quality), \(from) → \(to) Hz, cut at frame \(cut)")
                }
                let blocks = run(try StreamConverter(source: format(from), deviceRate: to, deviceChannels: 2, quality: quality),
                                 input, block: 4096)
                XCTAssertNil(sampleMismatch(blocks, whole, channels: 2), "\(quality), \(from) → \(to) Hz, in blocks of 4096")
            }
        }
    }

    /// libsoxr runs on the decoder thread alone: no OpenMP team (which would spin beside it).
    /// The conversions run on a thread of their own name; a thread it started would carry that
    /// name too (Linux gives a new thread its creator's), so only the threads of that name are
    /// counted, not those other tests leave winding down.
    func testResamplingStartsNoThread() throws {
        guard getenv("SOXR_NUM_THREADS") == nil else { throw XCTSkip("SOXR_NUM_THREADS overrides the converter's one thread") }
        let name = "soxr-probe"
        let named = Mutex<Int?>(nil)
        let failure = Mutex<String?>(nil)
        let source = format(44100), input = sine(frames: Self.sourceFrames, rate: 44100)
        let probe = NamedThread(name: name) {
            do {
                for quality in ResampleQuality.allCases {
                    let converter = try StreamConverter(source: source, deviceRate: 48000, deviceChannels: 2, quality: quality)
                    _ = input.withUnsafeBufferPointer { converter.convert($0) }
                    _ = converter.flush()
                }
                let count = threadNames().filter { $0 == name }.count
                named.withLock { $0 = count }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        probe.join()
        XCTAssertNil(failure.withLock { $0 })
        XCTAssertEqual(named.withLock { $0 }, 1, "threads named \(name): the converting thread and any it started")
    }

    func testMonoIsSpreadThenResampled() throws {
        let converter = try StreamConverter(source: StreamFormat(sampleRate: 44100, channels: 1, bitsPerSample: 16),
                                            deviceRate: 48000, deviceChannels: 2)
        let mono = channel(sine(frames: Self.sourceFrames, rate: 44100), 0).map { Int32(($0 * 2_147_483_648).rounded()) }
        let out = run(converter, mono, channels: 1)
        XCTAssertEqual(Double(out.count / 2), Double(Self.sourceFrames) * 48000 / 44100, accuracy: 1)
        let middle = Array(out[(2 * 2000)..<(out.count - 2 * 2000)])
        XCTAssertEqual(channel(middle, 0), channel(middle, 1), "both sides the same")
        XCTAssertEqual(rms(channel(middle, 0)), 0.5 / 2.0.squareRoot(), accuracy: 0.002)
    }

    // MARK: Signals

    private func format(_ rate: Int) -> StreamFormat {
        StreamFormat(sampleRate: rate, channels: 2, bitsPerSample: 16)
    }

    /// Stereo samples of `bits` bits, left-justified: `left` Hz at half scale, `right` Hz at a
    /// quarter.
    private func sine(frames: Int, rate: Int, left: Double = 1000, right: Double = 3000, bits: Int = 16) -> [Int32] {
        let scale = Double(Int64(1) << (bits - 1)), shift = Int32(32 - bits)
        var samples = [Int32](repeating: 0, count: frames * 2)
        for n in 0..<frames {
            let t = Double(n) / Double(rate)
            samples[2 * n] = Int32((0.5 * sin(2 * .pi * left * t) * scale).rounded()) << shift
            samples[2 * n + 1] = Int32((0.25 * sin(2 * .pi * right * t) * scale).rounded()) << shift
        }
        return samples
    }

    /// The whole of `samples` through `converter` in blocks of `block` frames, then the flush.
    private func run(_ converter: StreamConverter, _ samples: [Int32], channels: Int = 2, block: Int = 4096) -> [Int32] {
        var out: [Int32] = []
        samples.withUnsafeBufferPointer { all in
            var start = 0
            while start < all.count {
                let end = min(all.count, start + block * channels)
                out += converter.convert(UnsafeBufferPointer(rebasing: all[start..<end]))
                start = end
            }
        }
        out += converter.flush()
        return out
    }

    private func channel(_ samples: [Int32], _ index: Int) -> [Double] {
        stride(from: index, to: samples.count, by: 2).map { Double(samples[$0]) / 2_147_483_648 }
    }

    private func rms(_ x: [Double]) -> Double {
        (x.reduce(0) { $0 + $1 * $1 } / Double(max(1, x.count))).squareRoot()
    }

    /// From the rising zero crossings: cycles between the first and the last, over the time
    /// between them (each crossing placed by linear interpolation).
    private func frequency(_ x: [Double], rate: Int) -> Double {
        var crossings: [Double] = []
        for n in 1..<x.count where x[n - 1] < 0 && x[n] >= 0 {
            crossings.append(Double(n - 1) + x[n - 1] / (x[n - 1] - x[n]))
        }
        guard let first = crossings.first, let last = crossings.last, last > first else { return 0 }
        return Double(crossings.count - 1) / ((last - first) / Double(rate))
    }
}
