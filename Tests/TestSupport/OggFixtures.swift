import Foundation

/// Ogg Vorbis and Ogg Opus fixtures: a signal written as a WAV, encoded by `oggenc` or
/// `opusenc`, and decoded by the reference decoders (`oggdec`, `opusdec --float`).
public enum OggFixtures {
    /// Encodes `samples` (right-justified 16-bit) with `oggenc` and returns `path`.
    @discardableResult
    public static func vorbis(_ samples: [Int32], channels: Int, sampleRate: Int, to path: String,
                              arguments: [String] = ["-q", "4"]) throws -> String {
        let wav = path + ".in.wav"
        try WAVFile.write(samples, channels: channels, sampleRate: sampleRate, to: wav)
        defer { try? FileManager.default.removeItem(atPath: wav) }
        try runChecked("oggenc", ["--quiet"] + arguments + ["-o", path, wav])
        return path
    }

    /// Encodes `samples` (right-justified 16-bit) with `opusenc` and returns `path`.
    @discardableResult
    public static func opus(_ samples: [Int32], channels: Int, sampleRate: Int, to path: String,
                            arguments: [String] = ["--bitrate", "128"]) throws -> String {
        let wav = path + ".in.wav"
        try WAVFile.write(samples, channels: channels, sampleRate: sampleRate, to: wav)
        defer { try? FileManager.default.removeItem(atPath: wav) }
        try runChecked("opusenc", ["--quiet"] + arguments + [wav, path])
        return path
    }

    /// `oggdec`'s 16-bit decode of `path`, left-justified (v << 16).
    public static func oggdec(_ path: String) throws -> WAVFile {
        let out = NSTemporaryDirectory() + "tonearm-oggdec-\(getpid())-\(UUID().uuidString).wav"
        defer { try? FileManager.default.removeItem(atPath: out) }
        try runChecked("oggdec", ["--quiet", "-o", out, path])
        return try WAVFile(path: out)
    }

    /// `opusdec --float`'s decode of `path` at 48 kHz (opusdec otherwise resamples to the
    /// rate the encoder was given).
    public static func opusdec(_ path: String) throws -> [Float] {
        let out = NSTemporaryDirectory() + "tonearm-opusdec-\(getpid())-\(UUID().uuidString).wav"
        defer { try? FileManager.default.removeItem(atPath: out) }
        try runChecked("opusdec", ["--quiet", "--float", "--rate", "48000", path, out])
        return try WAVFile(path: out).samplesAsFloat32()
    }

    /// A FLAC PICTURE block (the body of METADATA_BLOCK_PICTURE before base64).
    public static func pictureBlock(type: Int, mimeType: String, description: String, width: Int, height: Int,
                                    depth: Int = 24, colours: Int = 0, data: [UInt8]) -> [UInt8] {
        func be32(_ v: Int) -> [UInt8] { [UInt8((v >> 24) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        let mime = Array(mimeType.utf8), text = Array(description.utf8)
        return be32(type) + be32(mime.count) + mime + be32(text.count) + text + be32(width) + be32(height)
            + be32(depth) + be32(colours) + be32(data.count) + data
    }
}

/// The pages of an Ogg stream, to damage one and give it a valid checksum again.
public struct OggPages: Sendable {
    public struct Page: Sendable {
        /// The whole page: header, lacing values and body.
        public var bytes: [UInt8]
        public var headerLength: Int { 27 + Int(bytes[26]) }
        public var granulePosition: Int64 {
            Int64(bitPattern: (6..<14).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[$1]) })
        }
        public var serialNumber: UInt32 { (14..<18).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[$1]) } }

        /// Recomputes the CRC (Ogg's: polynomial 0x04C11DB7, not reflected, over the page with
        /// the CRC field zero).
        public mutating func updateChecksum() {
            for i in 22..<26 { bytes[i] = 0 }
            var crc: UInt32 = 0
            for byte in bytes {
                crc ^= UInt32(byte) << 24
                for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
            }
            for i in 0..<4 { bytes[22 + i] = UInt8((crc >> (8 * UInt32(i))) & 0xFF) }
        }
    }

    public var pages: [Page]

    public init(path: String) throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var pages: [Page] = []
        var at = 0
        while at + 27 <= bytes.count {
            guard bytes[at..<(at + 4)].elementsEqual(Array("OggS".utf8)) else { throw TestSupportError("\(path): no Ogg page at \(at)") }
            let segments = Int(bytes[at + 26])
            guard at + 27 + segments <= bytes.count else { break }
            let body = bytes[(at + 27)..<(at + 27 + segments)].reduce(0) { $0 + Int($1) }
            let end = at + 27 + segments + body
            guard end <= bytes.count else { break }
            pages.append(Page(bytes: Array(bytes[at..<end])))
            at = end
        }
        self.pages = pages
    }

    public var bytes: [UInt8] { pages.flatMap(\.bytes) }

    public func write(to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}
