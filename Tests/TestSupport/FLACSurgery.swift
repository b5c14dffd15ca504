/// Byte-level edits of FLAC files, for fixtures no encoder writes: lying STREAMINFO blocks,
/// renumbered frames, variable block-size streams. Frame headers get fresh CRCs.
public enum FLACSurgery {
    /// Offset of the first audio frame (after "fLaC" and every metadata block).
    public static func audioOffset(_ bytes: [UInt8]) -> Int {
        var offset = 4
        while true {
            let last = bytes[offset] & 0x80 != 0
            let length = Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            offset += 4 + length
            if last { return offset }
        }
    }

    /// Rewrites fields of STREAMINFO (the first block); the MD5 is cleared (unknown).
    public static func patchStreamInfo(
        _ bytes: [UInt8], minBlock: Int? = nil, maxBlock: Int? = nil, totalSamples: Int? = nil,
        channels: Int? = nil, bitsPerSample: Int? = nil
    ) -> [UInt8] {
        var b = bytes
        let si = 8
        if let minBlock { b[si] = UInt8(minBlock >> 8); b[si + 1] = UInt8(minBlock & 0xFF) }
        if let maxBlock { b[si + 2] = UInt8(maxBlock >> 8); b[si + 3] = UInt8(maxBlock & 0xFF) }
        var packed = b[(si + 10)..<(si + 18)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        if let channels { packed = packed & ~(UInt64(0x7) << 41) | UInt64(channels - 1) << 41 }
        if let bitsPerSample { packed = packed & ~(UInt64(0x1F) << 36) | UInt64(bitsPerSample - 1) << 36 }
        if let totalSamples { packed = packed & ~UInt64(0xF_FFFF_FFFF) | UInt64(totalSamples) }
        for i in 0..<8 { b[si + 10 + i] = UInt8(truncatingIfNeeded: packed >> (56 - 8 * UInt64(i))) }
        for i in (si + 18)..<(si + 34) { b[i] = 0 }
        return b
    }

    /// One frame (all of `frame`), re-headed with the variable block-size strategy and the
    /// sample number of its first sample.
    public static func variableBlockSizeFrame(_ frame: [UInt8], firstSample: Int) -> [UInt8] {
        rebuild(frame, strategyBit: 1, number: firstSample)
    }

    /// One frame, re-headed (fixed strategy) with another frame number.
    public static func renumberFixedFrame(_ frame: [UInt8], frameNumber: Int) -> [UInt8] {
        rebuild(frame, strategyBit: 0, number: frameNumber)
    }

    private static func rebuild(_ frame: [UInt8], strategyBit: UInt8, number: Int) -> [UInt8] {
        precondition(frame[0] == 0xFF && frame[1] & 0xFE == 0xF8, "not a frame header")
        // Length of the old coded number: the leading ones of its first byte.
        let lead = frame[4]
        let numberLength = lead < 0x80 ? 1 : lead.leadingZeroBitCount == 0 ? (~lead).leadingZeroBitCount : 1
        var extra = 0
        switch frame[2] >> 4 {
        case 6: extra += 1
        case 7: extra += 2
        default: break
        }
        switch frame[2] & 0x0F {
        case 12: extra += 1
        case 13, 14: extra += 2
        default: break
        }
        let oldHeaderEnd = 4 + numberLength + extra  // CRC-8 sits here
        var header = [frame[0], 0xF8 | strategyBit, frame[2], frame[3]]
        header += utf8Coded(number)
        header += frame[(4 + numberLength)..<oldHeaderEnd]
        header.append(crc8(header))
        let body = frame[(oldHeaderEnd + 1)..<(frame.count - 2)]
        var out = header + body
        let crc = crc16(out)
        out += [UInt8(crc >> 8), UInt8(crc & 0xFF)]
        return out
    }

    /// FLAC's "UTF-8" coding of frame and sample numbers (up to 36 bits).
    static func utf8Coded(_ value: Int) -> [UInt8] {
        let v = UInt64(value)
        if v < 0x80 { return [UInt8(v)] }
        let (count, mark): (Int, UInt8) = v < 0x800 ? (2, 0xC0) : v < 0x10000 ? (3, 0xE0) : v < 0x20_0000 ? (4, 0xF0)
            : v < 0x400_0000 ? (5, 0xF8) : v < 0x8000_0000 ? (6, 0xFC) : (7, 0xFE)
        var bytes = [UInt8](repeating: 0, count: count)
        var rest = v
        for i in stride(from: count - 1, to: 0, by: -1) {
            bytes[i] = 0x80 | UInt8(rest & 0x3F)
            rest >>= 6
        }
        bytes[0] = mark | UInt8(rest)
        return bytes
    }

    static func crc8(_ bytes: [UInt8]) -> UInt8 {
        var crc: UInt8 = 0
        for byte in bytes {
            crc ^= byte
            for _ in 0..<8 { crc = crc & 0x80 != 0 ? (crc << 1) ^ 0x07 : crc << 1 }
        }
        return crc
    }

    static func crc16(_ bytes: [UInt8]) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x8005 : crc << 1 }
        }
        return crc
    }
}
