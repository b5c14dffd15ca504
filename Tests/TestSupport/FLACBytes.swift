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
        let o = Self.streamInfo + 13
        var v = Int(bytes[o] & 0x0F)
        for i in 1...4 { v = v << 8 | Int(bytes[o + i]) }
        return v
    }
}
