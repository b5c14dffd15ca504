import Foundation

/// MP3 fixtures made at test time: a known 16-bit signal written as WAV, encoded by `lame`.
public enum MP3Fixture {
    /// Encodes `samples` with `lame` (`arguments` such as ["-b", "192"] or ["-V", "2"], and
    /// tag options) into `path`, and returns `path`.
    @discardableResult
    public static func encode(_ samples: [Int32], channels: Int, sampleRate: Int, to path: String, arguments: [String]) throws -> String {
        let wav = path + ".in.wav"
        try WAVFile.write(samples, channels: channels, sampleRate: sampleRate, to: wav)
        defer { try? FileManager.default.removeItem(atPath: wav) }
        try runChecked("lame", ["--quiet"] + arguments + [wav, path], timeout: 300)
        return path
    }

    /// The reference decode of the same library's program, `mpg123 -e s24 -w` (signed 24-bit),
    /// left-justified in 32 bits.
    public static func referenceDecode(_ mp3Path: String) throws -> [Int32] {
        let out = NSTemporaryDirectory() + "tonearm-mp3ref-\(getpid())-\(UUID().uuidString).wav"
        defer { try? FileManager.default.removeItem(atPath: out) }
        try runChecked("mpg123", ["-q", "-e", "s24", "-w", out, mp3Path], timeout: 300)
        return try WAVFile(path: out).samples()
    }
}

/// ID3 tags built byte by byte, for tests that need exactly one quirk.
public enum ID3Bytes {
    public static func syncsafe(_ v: Int) -> [UInt8] { [UInt8((v >> 21) & 0x7F), UInt8((v >> 14) & 0x7F), UInt8((v >> 7) & 0x7F), UInt8(v & 0x7F)] }
    public static func bigEndian(_ v: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8((v >> (8 * (count - 1 - $0))) & 0xFF) } }

    /// An encoding byte and `string` in it: 0 ISO-8859-1, 1 UTF-16 with a little-endian BOM,
    /// 2 UTF-16BE, 3 UTF-8; `bigEndianBOM` writes encoding 1 with a big-endian BOM.
    public static func text(_ encoding: UInt8, _ string: String, bigEndianBOM: Bool = false) -> [UInt8] {
        [encoding] + encoded(encoding, string, bigEndianBOM: bigEndianBOM)
    }

    public static func encoded(_ encoding: UInt8, _ string: String, bigEndianBOM: Bool = false) -> [UInt8] {
        switch encoding {
        case 0: return string.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }
        case 1:
            let units = Array(string.utf16)
            return bigEndianBOM ? [0xFE, 0xFF] + units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
                : [0xFF, 0xFE] + units.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        case 2: return Array(string.utf16).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        default: return Array(string.utf8)
        }
    }

    /// The terminator of `encoding`: one NUL, or two for UTF-16.
    public static func nul(_ encoding: UInt8) -> [UInt8] { encoding == 1 || encoding == 2 ? [0, 0] : [0] }

    public static func frame22(_ id: String, _ content: [UInt8]) -> [UInt8] {
        Array(id.utf8) + bigEndian(content.count, 3) + content
    }

    public static func frame23(_ id: String, _ content: [UInt8], flags: UInt8 = 0) -> [UInt8] {
        Array(id.utf8) + bigEndian(content.count, 4) + [0, flags] + content
    }

    public static func frame24(_ id: String, _ content: [UInt8], flags: UInt8 = 0) -> [UInt8] {
        Array(id.utf8) + syncsafe(content.count) + [0, flags] + content
    }

    /// A whole tag; `flags` is the header's flag byte. `padding` zero bytes follow the frames.
    public static func tag(version: UInt8, flags: UInt8 = 0, frames: [[UInt8]], padding: Int = 0) -> [UInt8] {
        body(version: version, flags: flags, frames.flatMap { $0 } + [UInt8](repeating: 0, count: padding))
    }

    public static func body(version: UInt8, flags: UInt8 = 0, _ body: [UInt8]) -> [UInt8] {
        Array("ID3".utf8) + [version, 0, flags] + syncsafe(body.count) + body
    }

    /// Unsynchronisation: a 0x00 after every 0xFF.
    public static func unsynchronised(_ bytes: [UInt8]) -> [UInt8] { bytes.flatMap { $0 == 0xFF ? [0xFF, 0x00] : [$0] } }

    /// An ID3v1.1 tag (track > 0) or v1.0 (track 0).
    public static func v1(title: String, artist: String, album: String = "", year: String = "", comment: String = "",
                          track: UInt8 = 0, genre: UInt8 = 255) -> [UInt8] {
        func field(_ s: String, _ n: Int) -> [UInt8] { Array(encoded(0, s).prefix(n)) + [UInt8](repeating: 0, count: max(0, n - s.count)) }
        let commentField = track > 0 ? field(comment, 28) + [0, track] : field(comment, 30)
        return Array("TAG".utf8) + field(title, 30) + field(artist, 30) + field(album, 30) + field(year, 4) + commentField + [genre]
    }
}

/// APEv2 tags built byte by byte.
public enum APEBytes {
    public static func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xFF) } }

    public static func item(_ key: String, _ value: [UInt8], flags: Int = 0) -> [UInt8] {
        le32(value.count) + le32(flags) + Array(key.utf8) + [0] + value
    }

    /// Text items, then `binary` items (flags 2), with a footer, and a header when asked.
    public static func tag(items: [(String, String)], binary: [(String, [UInt8])] = [], header: Bool) -> [UInt8] {
        let body = items.flatMap { item($0.0, Array($0.1.utf8)) } + binary.flatMap { item($0.0, $0.1, flags: 2) }
        let count = items.count + binary.count
        func block(isHeader: Bool) -> [UInt8] {
            let flags = (header ? 0x8000_0000 : 0) | (isHeader ? 0x2000_0000 : 0)
            return Array("APETAGEX".utf8) + le32(2000) + le32(body.count + 32) + le32(count) + le32(flags) + [UInt8](repeating: 0, count: 8)
        }
        return (header ? block(isHeader: true) : []) + body + block(isHeader: false)
    }
}
