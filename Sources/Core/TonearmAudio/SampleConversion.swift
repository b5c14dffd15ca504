/// Conversions between Tonearm's left-justified `Int32` samples, floats and device formats.
/// All of them work in place on caller-provided memory and are safe in the render path.
public enum SampleConversion {
    public static let int32Scale: Float = 1.0 / 2_147_483_648.0

    /// Packs left-justified samples into `format`. Exact (bit-perfect) whenever the source's
    /// bit depth fits the format: the dropped low bits are zero.
    @inline(__always)
    public static func pack(
        _ source: UnsafePointer<Int32>, count: Int,
        into destination: UnsafeMutableRawPointer, format: DeviceSampleFormat
    ) {
        switch format {
        case .s16LE:
            let out = destination.assumingMemoryBound(to: Int16.self)
            for i in 0..<count { out[i] = Int16(truncatingIfNeeded: source[i] >> 16).littleEndian }
        case .s24_3LE:
            let out = destination.assumingMemoryBound(to: UInt8.self)
            for i in 0..<count {
                let v = UInt32(bitPattern: source[i]) >> 8
                out[3 * i] = UInt8(truncatingIfNeeded: v)
                out[3 * i + 1] = UInt8(truncatingIfNeeded: v >> 8)
                out[3 * i + 2] = UInt8(truncatingIfNeeded: v >> 16)
            }
        case .s24LE:
            let out = destination.assumingMemoryBound(to: Int32.self)
            for i in 0..<count { out[i] = (source[i] >> 8).littleEndian }
        case .s32LE:
            let out = destination.assumingMemoryBound(to: Int32.self)
            for i in 0..<count { out[i] = source[i].littleEndian }
        case .floatLE:
            let out = destination.assumingMemoryBound(to: Float.self)
            for i in 0..<count { out[i] = Float(source[i]) * int32Scale }
        }
    }

    /// Packs float samples (full scale ±1.0) into `format`, clipping. Reductions to 16 bits get
    /// TPDF dither; wider integer formats go through `scratch` (room for `count` samples), since
    /// their rounding error lies below any DAC's noise floor.
    @inline(__always)
    public static func pack(
        _ source: UnsafePointer<Float>, count: Int,
        into destination: UnsafeMutableRawPointer, format: DeviceSampleFormat,
        dither: inout TPDFDither, scratch: UnsafeMutablePointer<Int32>
    ) {
        switch format {
        case .s16LE:
            let out = destination.assumingMemoryBound(to: Int16.self)
            for i in 0..<count {
                let v = (source[i] * 32768.0 + dither.next()).rounded()
                out[i] = Int16(max(-32768, min(32767, v))).littleEndian
            }
        case .floatLE:
            let out = destination.assumingMemoryBound(to: Float.self)
            for i in 0..<count { out[i] = max(-1, min(1, source[i])) }
        case .s24_3LE, .s24LE, .s32LE:
            for i in 0..<count { scratch[i] = floatToLeftJustified(source[i]) }
            pack(UnsafePointer(scratch), count: count, into: destination, format: format)
        }
    }

    /// Unpacks `count` samples in `format` (as a program writes them) into left-justified
    /// samples: the inverse of `pack`, exact for every integer format. S24_LE takes the low 24
    /// bits of each 32-bit word and ignores the top byte, as sound cards do; a float NaN is 0.
    @inline(__always)
    public static func unpack(
        _ source: UnsafeRawPointer, count: Int, format: DeviceSampleFormat,
        into destination: UnsafeMutablePointer<Int32>
    ) {
        switch format {
        case .s16LE:
            for i in 0..<count {
                destination[i] = Int32(Int16(littleEndian: source.loadUnaligned(fromByteOffset: 2 * i, as: Int16.self))) << 16
            }
        case .s24_3LE:
            let bytes = source.assumingMemoryBound(to: UInt8.self)
            for i in 0..<count {
                let v = UInt32(bytes[3 * i]) << 8 | UInt32(bytes[3 * i + 1]) << 16 | UInt32(bytes[3 * i + 2]) << 24
                destination[i] = Int32(bitPattern: v)
            }
        case .s24LE:
            for i in 0..<count {
                destination[i] = Int32(littleEndian: source.loadUnaligned(fromByteOffset: 4 * i, as: Int32.self)) << 8
            }
        case .s32LE:
            for i in 0..<count {
                destination[i] = Int32(littleEndian: source.loadUnaligned(fromByteOffset: 4 * i, as: Int32.self))
            }
        case .floatLE:
            for i in 0..<count {
                let bits = UInt32(littleEndian: source.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self))
                let x = Float(bitPattern: bits)
                destination[i] = x.isNaN ? 0 : floatToLeftJustified(x)
            }
        }
    }

    /// Float (±1.0) to a left-justified Int32, clipping.
    @inline(__always)
    public static func floatToLeftJustified(_ x: Float) -> Int32 {
        let v = (Double(x) * 2_147_483_648.0).rounded()
        if v >= 2_147_483_647 { return .max }
        if v <= -2_147_483_648 { return .min }
        return Int32(v)
    }
}

/// Triangular-PDF dither of ±1 LSB (at 16 bits) from a xorshift generator: no allocation, no
/// system call, deterministic for a given seed.
public struct TPDFDither: Sendable {
    private var state: UInt32

    public init(seed: UInt32 = 0x9E37_79B9) { state = seed == 0 ? 1 : seed }

    @inline(__always)
    mutating func uniform() -> Float {
        state ^= state << 13
        state ^= state >> 17
        state ^= state << 5
        return Float(state) * (1.0 / 4_294_967_296.0)
    }

    /// One dither value in LSBs, in (-1, 1).
    @inline(__always)
    public mutating func next() -> Float { uniform() - uniform() }
}
