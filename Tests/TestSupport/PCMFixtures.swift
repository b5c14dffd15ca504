import Foundation

/// WAV and AIFF fixtures: files made by sox and ffmpeg from samples a test knows, the
/// reference decode by sox, and chunks built by hand for what no tool writes.
public enum PCMFixtures {
    /// Tones plus seeded noise, right-justified in `bits` (see `FLACFixture.samples`).
    public static func signal(frames: Int, channels: Int, bits: Int, sampleRate: Int = 44100, seed: UInt64 = 1) -> [Int32] {
        FLACFixture(frames: frames, sampleRate: sampleRate, channels: channels, bitsPerSample: bits, seed: seed).samples()
    }

    /// Writes `samples` (right-justified, 8/16/24/32 bits) as raw little-endian PCM and has
    /// sox convert it to `path`, whose suffix (or `type`, e.g. "wavpcm") picks the format;
    /// `extra` goes before `path` (e.g. ["-b", "24"]).
    public static func sox(_ samples: [Int32], bits: Int, channels: Int, sampleRate: Int, to path: String,
                           type: String? = nil, extra: [String] = []) throws {
        let raw = path + ".raw"
        try Data(packLittleEndian(samples, bytesPerSample: bits / 8, shift: 0)).write(to: URL(fileURLWithPath: raw))
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let input = ["-t", "raw", "-r", "\(sampleRate)", "-e", "signed-integer", "-b", "\(bits)", "-c", "\(channels)", "-L", raw]
        try runChecked(try which("sox"), ["-D"] + input + extra + (type.map { ["-t", $0] } ?? []) + [path])
    }

    /// Has ffmpeg convert `input` to `output` with `arguments` between them.
    public static func ffmpeg(_ input: String, _ arguments: [String], to output: String) throws {
        try runChecked(try which("ffmpeg"), ["-nostdin", "-loglevel", "error", "-y", "-i", input] + arguments + [output])
    }

    /// sox's decode of `path`: 32-bit signed samples, interleaved, left-justified, as
    /// Tonearm's decoders give them (sox keeps samples left-justified in 32 bits).
    public static func soxReference(_ path: String) throws -> [Int32] {
        let out = path + ".ref.raw"
        defer { try? FileManager.default.removeItem(atPath: out) }
        try runChecked(try which("sox"), ["-D", path, "-t", "raw", "-e", "signed-integer", "-b", "32", "-L", out])
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: out)))
        return stride(from: 0, to: bytes.count - 3, by: 4).map { (at: Int) -> Int32 in
            let low = UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8
            return Int32(bitPattern: low | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24)
        }
    }

    // MARK: Chunks by hand

    public static func le16(_ v: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
    public static func le32(_ v: Int) -> [UInt8] { le16(v) + le16(v >> 16) }
    public static func be16(_ v: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)] }
    public static func be32(_ v: Int) -> [UInt8] { be16(v >> 16) + be16(v) }

    /// A RIFF chunk: id, little-endian size (`size` when given, else the body's), body, pad byte.
    public static func riffChunk(_ id: String, _ body: [UInt8], size: Int? = nil) -> [UInt8] {
        Array(id.utf8) + le32(size ?? body.count) + body + (body.count % 2 == 1 ? [0] : [])
    }

    /// An IFF (AIFF) chunk: id, big-endian size, body, pad byte.
    public static func iffChunk(_ id: String, _ body: [UInt8], size: Int? = nil) -> [UInt8] {
        Array(id.latin1Bytes) + be32(size ?? body.count) + body + (body.count % 2 == 1 ? [0] : [])
    }

    /// "RIFF", size, "WAVE", then `chunks`.
    public static func wav(_ chunks: [UInt8]...) -> [UInt8] {
        let body = chunks.flatMap { $0 }
        return Array("RIFF".utf8) + le32(4 + body.count) + Array("WAVE".utf8) + body
    }

    /// A plain `fmt ` chunk.
    public static func fmt(tag: Int = 1, channels: Int, sampleRate: Int, bits: Int, blockAlign: Int? = nil) -> [UInt8] {
        let align = blockAlign ?? channels * ((bits + 7) / 8)
        return riffChunk("fmt ", le16(tag) + le16(channels) + le32(sampleRate) + le32(sampleRate * align) + le16(align) + le16(bits))
    }

    /// "FORM", size, `type` ("AIFF" or "AIFC"), then `chunks`.
    public static func aiff(type: String = "AIFF", _ chunks: [UInt8]...) -> [UInt8] {
        let body = chunks.flatMap { $0 }
        return Array("FORM".utf8) + be32(4 + body.count) + Array(type.utf8) + body
    }

    /// A `COMM` chunk; `compression` makes it AIFF-C's.
    public static func comm(channels: Int, frames: Int, bits: Int, sampleRate: Double, compression: String? = nil) -> [UInt8] {
        var body = be16(channels) + be32(frames) + be16(bits) + extended80(sampleRate)
        if let compression { body += Array(compression.utf8) + [0] }
        return iffChunk("COMM", body)
    }

    /// An `SSND` chunk holding `data` after `offset` bytes of alignment.
    public static func ssnd(_ data: [UInt8], offset: Int = 0, size: Int? = nil) -> [UInt8] {
        iffChunk("SSND", be32(offset) + be32(0) + [UInt8](repeating: 0xEE, count: offset) + data, size: size)
    }

    /// `value` as an 80-bit IEEE 754 extended number, big-endian.
    public static func extended80(_ value: Double) -> [UInt8] {
        guard value != 0 else { return [UInt8](repeating: 0, count: 10) }
        let exponent = value.exponent
        let significand = UInt64(value.significand * Double(1 << 52)) << 11
        return be16(Int(exponent) + 16383) + (0..<8).map { UInt8(truncatingIfNeeded: significand >> (56 - 8 * UInt64($0))) }
    }

    /// Big-endian samples, `bytesPerSample` each.
    public static func packBigEndian(_ samples: [Int32], bytesPerSample: Int) -> [UInt8] {
        samples.flatMap { s in (0..<bytesPerSample).map { UInt8(truncatingIfNeeded: s >> Int32(8 * (bytesPerSample - 1 - $0))) } }
    }

    public static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}

extension String {
    /// The characters as ISO-8859-1 bytes (those past U+00FF as "?").
    public var latin1Bytes: [UInt8] { unicodeScalars.map { $0.value < 256 ? UInt8($0.value) : 0x3F } }
}
