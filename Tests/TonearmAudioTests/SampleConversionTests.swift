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
}
