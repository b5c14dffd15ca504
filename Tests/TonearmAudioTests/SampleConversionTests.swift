import TonearmAudio
import XCTest

final class SampleConversionTests: XCTestCase {
    private func pack(_ samples: [Int32], _ format: DeviceSampleFormat) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: samples.count * format.bytesPerSample)
        samples.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBytes { SampleConversion.pack(src.baseAddress!, count: samples.count, into: $0.baseAddress!, format: format) }
        }
        return out
    }

    func testPackingIsExactForEveryContainerThatHoldsTheSource() {
        // 16-bit values, left-justified.
        let values: [Int32] = [0, 1, -1, 32767, -32768, 1234, -4321]
        let lj = values.map { $0 << 16 }
        let s16 = pack(lj, .s16LE)
        for (i, v) in values.enumerated() {
            XCTAssertEqual(Int16(bitPattern: UInt16(s16[2 * i]) | UInt16(s16[2 * i + 1]) << 8), Int16(v))
        }
        let s24 = pack(lj, .s24_3LE)
        for (i, v) in values.enumerated() {
            let raw = Int32(s24[3 * i]) | Int32(s24[3 * i + 1]) << 8 | Int32(s24[3 * i + 2]) << 16
            XCTAssertEqual((raw << 8) >> 8, v << 8, "S24_3LE holds the 16-bit value shifted by 8")
        }
        let s32 = pack(lj, .s32LE)
        for (i, v) in lj.enumerated() {
            XCTAssertEqual(s32[(4 * i)..<(4 * i + 4)].withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }, v)
        }
        let s24in32 = pack(lj, .s24LE)
        for (i, v) in values.enumerated() {
            XCTAssertEqual(s24in32[(4 * i)..<(4 * i + 4)].withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }, v << 8)
        }
    }

    func testFloatPackingClipsAndDithersOnlyAtSixteenBits() {
        var dither = TPDFDither(seed: 7)
        var scratch = [Int32](repeating: 0, count: 4)
        let input: [Float] = [2.0, -2.0, 0.5, 0]
        var s16 = [Int16](repeating: 0, count: 4)
        input.withUnsafeBufferPointer { src in
            s16.withUnsafeMutableBytes { dst in
                scratch.withUnsafeMutableBufferPointer {
                    SampleConversion.pack(src.baseAddress!, count: 4, into: dst.baseAddress!, format: .s16LE, dither: &dither, scratch: $0.baseAddress!)
                }
            }
        }
        XCTAssertEqual(s16[0], 32767)
        XCTAssertEqual(s16[1], -32768)
        XCTAssertLessThanOrEqual(abs(Int(s16[2]) - 16384), 1)
        XCTAssertLessThanOrEqual(abs(Int(s16[3])), 1)

        var s32 = [Int32](repeating: 0, count: 4)
        input.withUnsafeBufferPointer { src in
            s32.withUnsafeMutableBytes { dst in
                scratch.withUnsafeMutableBufferPointer {
                    SampleConversion.pack(src.baseAddress!, count: 4, into: dst.baseAddress!, format: .s32LE, dither: &dither, scratch: $0.baseAddress!)
                }
            }
        }
        XCTAssertEqual(s32, [.max, .min, 1 << 30, 0], "no dither above 16 bits")
    }

    func testDitherIsTriangularAndCentred() {
        var dither = TPDFDither(seed: 1)
        var sum: Double = 0
        var histogram = [Int](repeating: 0, count: 4)
        let n = 200_000
        for _ in 0..<n {
            let d = dither.next()
            XCTAssert(d > -1 && d < 1)
            sum += Double(d)
            histogram[min(3, Int((d + 1) * 2))] += 1
        }
        XCTAssertLessThan(abs(sum / Double(n)), 0.01)
        // Triangular: the two inner quarters hold 3/4 of the mass, the outer ones 1/4.
        let inner = Double(histogram[1] + histogram[2]) / Double(n)
        XCTAssertEqual(inner, 0.75, accuracy: 0.01)
    }

    func testPreferenceOrderKeepsEverySourceBit() {
        XCTAssertEqual(DeviceSampleFormat.preferenceOrder(forBits: 8).first, .s16LE)
        XCTAssertEqual(DeviceSampleFormat.preferenceOrder(forBits: 12).first, .s16LE)
        XCTAssertEqual(DeviceSampleFormat.preferenceOrder(forBits: 16).first, .s16LE)
        XCTAssertEqual(DeviceSampleFormat.preferenceOrder(forBits: 20).first, .s24_3LE)
        XCTAssertEqual(DeviceSampleFormat.preferenceOrder(forBits: 24), [.s24_3LE, .s24LE, .s32LE, .floatLE, .s16LE])
        XCTAssertEqual(DeviceSampleFormat.preferenceOrder(forBits: 32).first, .s32LE)
        for bits in 4...32 {
            let order = DeviceSampleFormat.preferenceOrder(forBits: bits)
            XCTAssertEqual(Set(order), Set(DeviceSampleFormat.allCases), "every format is a fallback for \(bits) bits")
            XCTAssertGreaterThanOrEqual(order[0].significantBits, bits)
        }
    }

    /// Every 16-bit value, and 24- and 32-bit values across their range and at their edges,
    /// come back from `unpack` exactly as `pack` wrote them, in every integer format that holds
    /// them; S24_LE ignores the top byte, and floats come back to within their precision.
    func testUnpackingInvertsPackingExactly() {
        func roundTrip(_ samples: [Int32], _ format: DeviceSampleFormat) -> [Int32] {
            var bytes = [UInt8](repeating: 0, count: samples.count * format.bytesPerSample + 1)
            var out = [Int32](repeating: 7, count: samples.count)
            bytes.withUnsafeMutableBytes { raw in
                // Offset by one byte: programs' buffers need not be aligned.
                let start = raw.baseAddress! + 1
                SampleConversion.pack(samples, count: samples.count, into: start, format: format)
                SampleConversion.unpack(UnsafeRawPointer(start), count: samples.count, format: format, into: &out)
            }
            return out
        }
        let all16 = (Int32(Int16.min)...Int32(Int16.max)).map { $0 << 16 }
        for format in [DeviceSampleFormat.s16LE, .s24_3LE, .s24LE, .s32LE] {
            XCTAssertEqual(roundTrip(all16, format), all16, "16-bit values through \(format)")
        }
        var random = UInt64(0x9E37_79B9_7F4A_7C15)
        func next() -> UInt32 {
            random ^= random << 13; random ^= random >> 7; random ^= random << 17
            return UInt32(truncatingIfNeeded: random)
        }
        let edges24: [Int32] = [-8_388_608, -8_388_607, -1, 0, 1, 8_388_606, 8_388_607]
        let all24 = (edges24 + (0..<100_000).map { _ in Int32(bitPattern: next()) >> 8 }).map { $0 << 8 }
        for format in [DeviceSampleFormat.s24_3LE, .s24LE, .s32LE] {
            XCTAssertEqual(roundTrip(all24, format), all24, "24-bit values through \(format)")
        }
        let all32 = [Int32.min, -1, 0, 1, Int32.max] + (0..<100_000).map { _ in Int32(bitPattern: next()) }
        XCTAssertEqual(roundTrip(all32, .s32LE), all32)
        // S24_LE: whatever a program leaves in the top byte is not part of the sample.
        let words: [UInt32] = [0xFF80_0000, 0x007F_FFFF, 0xAB00_0001, 0x1234_5678]
        var unpacked = [Int32](repeating: 0, count: words.count)
        words.map(\.littleEndian).withUnsafeBytes { SampleConversion.unpack($0.baseAddress!, count: words.count, format: .s24LE, into: &unpacked) }
        XCTAssertEqual(unpacked, [Int32(-8_388_608) << 8, 8_388_607 << 8, 1 << 8, 0x34_5678 << 8])
        // Floats: ±1 is full scale, beyond it clips, NaN is silence.
        let floats: [Float] = [0, 0.5, -0.5, 1, -1, 2, -2, .nan, .infinity, -.infinity]
        floats.map(\.bitPattern.littleEndian).withUnsafeBytes { raw in
            var out = [Int32](repeating: 7, count: floats.count)
            SampleConversion.unpack(raw.baseAddress!, count: floats.count, format: .floatLE, into: &out)
            XCTAssertEqual(out, [0, 1 << 30, -(1 << 30), .max, .min, .max, .min, 0, .max, .min])
        }
        let viaFloat = roundTrip(all24, .floatLE)
        for (a, b) in zip(all24, viaFloat) where abs(Int64(a) - Int64(b)) > 256 {
            XCTFail("float round trip of \(a) gave \(b)")
            break
        }
    }
}
