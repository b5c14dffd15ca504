import Foundation

/// Byte-level surgery on FLAC files, for making broken ones on purpose.
public struct FLACBytes: Sendable {
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }

    public init(path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else { throw TestSupportError("cannot read \(path)") }
        bytes = [UInt8](data)
    }

    public func write(to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// A metadata block: its type (0 STREAMINFO, 3 SEEKTABLE, 4 VORBIS_COMMENT, 6 PICTURE…),
    /// where its header starts and how long its body is.
    public struct Block: Sendable {
        public var type: Int
        public var headerOffset: Int
        public var length: Int
        public var isLast: Bool
        public var bodyOffset: Int { headerOffset + 4 }
    }

    /// The metadata blocks, found by walking the block headers after "fLaC".
    public func metadataBlocks() throws -> [Block] {
        guard bytes.count >= 8, bytes[0..<4] == [0x66, 0x4C, 0x61, 0x43] else {
            throw TestSupportError("no 'fLaC' marker")
        }
        var blocks: [Block] = []
        var offset = 4
        while true {
            guard offset + 4 <= bytes.count else { throw TestSupportError("metadata runs past the end") }
            let header = bytes[offset]
            let length = Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let block = Block(type: Int(header & 0x7F), headerOffset: offset, length: length, isLast: header & 0x80 != 0)
            blocks.append(block)
            offset += 4 + length
            if block.isLast { break }
        }
        return blocks
    }

    /// Where the first audio frame starts (just past the last metadata block).
    public func audioOffset() throws -> Int {
        let last = try metadataBlocks().last!
        return last.bodyOffset + last.length
    }

    /// The audio frames alone (everything after the metadata).
    public func audioFrames() throws -> [UInt8] { Array(bytes[try audioOffset()...]) }

    // STREAMINFO (body at offset 8): min block 16 bits, max block 16, min frame 24,
    // max frame 24, then rate 20, channels−1 3, bits−1 5, total samples 36, MD5 128.
    private static let streamInfo = 8

    public var minBlockSize: Int {
        get { Int(bytes[Self.streamInfo]) << 8 | Int(bytes[Self.streamInfo + 1]) }
        set { bytes[Self.streamInfo] = UInt8(newValue >> 8); bytes[Self.streamInfo + 1] = UInt8(newValue & 0xFF) }
    }

    public var maxBlockSize: Int {
        get { Int(bytes[Self.streamInfo + 2]) << 8 | Int(bytes[Self.streamInfo + 3]) }
        set { bytes[Self.streamInfo + 2] = UInt8(newValue >> 8); bytes[Self.streamInfo + 3] = UInt8(newValue & 0xFF) }
    }

    public var sampleRate: Int {
        get {
            let o = Self.streamInfo + 10
            return Int(bytes[o]) << 12 | Int(bytes[o + 1]) << 4 | Int(bytes[o + 2]) >> 4
        }
        set {
            let o = Self.streamInfo + 10
            bytes[o] = UInt8((newValue >> 12) & 0xFF)
            bytes[o + 1] = UInt8((newValue >> 4) & 0xFF)
            bytes[o + 2] = (bytes[o + 2] & 0x0F) | UInt8((newValue & 0xF) << 4)
        }
    }

    public var channels: Int {
        get { Int((bytes[Self.streamInfo + 12] >> 1) & 0x7) + 1 }
        set {
            let o = Self.streamInfo + 12
            bytes[o] = (bytes[o] & 0xF1) | UInt8(((newValue - 1) & 0x7) << 1)
        }
    }

    public var bitsPerSample: Int {
        get {
            let o = Self.streamInfo + 12
            return (Int(bytes[o] & 1) << 4 | Int(bytes[o + 1] >> 4)) + 1
        }
        set {
            let o = Self.streamInfo + 12
            let v = UInt8((newValue - 1) & 0x1F)
            bytes[o] = (bytes[o] & 0xFE) | (v >> 4)
            bytes[o + 1] = (bytes[o + 1] & 0x0F) | ((v & 0xF) << 4)
        }
    }

    public var totalSamples: Int {
        get {
            let o = Self.streamInfo + 13
            var v = Int(bytes[o] & 0x0F)
            for i in 1...4 { v = v << 8 | Int(bytes[o + i]) }
            return v
        }
        set {
            let o = Self.streamInfo + 13
            bytes[o] = (bytes[o] & 0xF0) | UInt8((newValue >> 32) & 0x0F)
            for i in 1...4 { bytes[o + i] = UInt8(truncatingIfNeeded: newValue >> (8 * (4 - i))) }
        }
    }

    /// Marks the MD5 signature unknown (all zero), as after editing the audio.
    public mutating func clearMD5() {
        for i in (Self.streamInfo + 18)..<(Self.streamInfo + 34) { bytes[i] = 0 }
    }
}

// MARK: Frames

extension FLACBytes {
    /// One frame (all of `frame`), re-headed with the variable block-size strategy and the
    /// sample number of its first sample, as some encoders write streams.
    public static func variableBlockSizeFrame(_ frame: [UInt8], firstSample: Int) -> [UInt8] {
        reheaded(frame, strategyBit: 1, number: firstSample)
    }

    /// One frame, re-headed (fixed block-size strategy) with another frame number.
    public static func renumberedFrame(_ frame: [UInt8], frameNumber: Int) -> [UInt8] {
        reheaded(frame, strategyBit: 0, number: frameNumber)
    }

    /// The frame with a new number and strategy bit, and fresh CRC-8 and CRC-16.
    private static func reheaded(_ frame: [UInt8], strategyBit: UInt8, number: Int) -> [UInt8] {
        precondition(frame[0] == 0xFF && frame[1] & 0xFE == 0xF8, "not a frame header")
        let lead = frame[4]
        let numberLength = lead < 0x80 ? 1 : (~lead).leadingZeroBitCount  // its leading ones
        var extra = 0  // block size and sample rate bytes that follow the number
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
        let crc8Offset = 4 + numberLength + extra
        var header = [frame[0], 0xF8 | strategyBit, frame[2], frame[3]]
        header += codedNumber(number)
        header += frame[(4 + numberLength)..<crc8Offset]
        header.append(crc8(header))
        var out = header + frame[(crc8Offset + 1)..<(frame.count - 2)]
        let crc = crc16(out)
        out += [UInt8(crc >> 8), UInt8(crc & 0xFF)]
        return out
    }

    /// FLAC's "UTF-8" coding of frame and sample numbers (up to 36 bits).
    static func codedNumber(_ value: Int) -> [UInt8] {
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
