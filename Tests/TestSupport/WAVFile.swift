import Foundation

/// A RIFF/WAVE file: integer PCM, plain (format tag 1) or WAVE_FORMAT_EXTENSIBLE.
///
/// Tolerates what alsa-lib's `file` plugin leaves behind when it was not closed cleanly: a
/// data size of 0 or 0xFFFFFFFF, or one past the end of the file, means "the rest of the file"
/// (cut to whole frames).
public struct WAVFile: Sendable {
    /// 1 (PCM), 3 (IEEE float) or 0xFFFE (extensible).
    public var formatTag: Int
    /// For extensible files, the sub-format's tag (1 PCM, 3 float); otherwise `formatTag`.
    public var sampleFormatTag: Int
    public var channels: Int
    public var sampleRate: Int
    public var blockAlign: Int
    /// The header's wBitsPerSample.
    public var bitsPerSample: Int
    /// wValidBitsPerSample of an extensible header; `bitsPerSample` otherwise.
    public var validBitsPerSample: Int
    /// The data chunk's bytes, exactly as stored.
    public var data: [UInt8]
    /// True when the data size in the header could not be trusted.
    public var dataSizeRepaired: Bool

    /// Bits of the sample container (`blockAlign / channels * 8`).
    public var containerBits: Int { blockAlign / max(1, channels) * 8 }
    public var frames: Int { blockAlign > 0 ? data.count / blockAlign : 0 }

    /// The ALSA sample format that this header describes, as alsa-lib names it (for the
    /// formats the tests use): S16_LE, S24_3LE, S32_LE, U8.
    public var alsaFormatName: String {
        switch containerBits {
        case 8: return "U8"
        case 16: return "S16_LE"
        case 24: return "S24_3LE"
        case 32: return bitsPerSample == 24 ? "S24_LE" : "S32_LE"
        default: return "\(containerBits)-bit"
        }
    }

    public init(path: String) throws {
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw TestSupportError("cannot read \(path)")
        }
        try self.init(bytes: [UInt8](contents), name: path)
    }

    public init(bytes: [UInt8], name: String = "WAV data") throws {
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
        guard bytes.count >= 12, bytes[0..<4] == [0x52, 0x49, 0x46, 0x46], bytes[8..<12] == [0x57, 0x41, 0x56, 0x45] else {
            throw TestSupportError("\(name): not a RIFF/WAVE file (\(bytes.count) bytes)")
        }
        var fmt: (tag: Int, sub: Int, channels: Int, rate: Int, align: Int, bits: Int, valid: Int)?
        var offset = 12
        while offset + 8 <= bytes.count {
            let id = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            let size = u32(offset + 4)
            let body = offset + 8
            if id == "fmt " {
                guard size >= 16, body + 16 <= bytes.count else { throw TestSupportError("\(name): short fmt chunk") }
                let tag = u16(body)
                let bits = u16(body + 14)
                var valid = bits
                var sub = tag
                if tag == 0xFFFE {
                    guard size >= 40, body + 40 <= bytes.count else { throw TestSupportError("\(name): short extensible fmt chunk") }
                    valid = u16(body + 18)
                    sub = u16(body + 24)
                }
                fmt = (tag, sub, u16(body + 2), u32(body + 4), u16(body + 12), bits, valid)
            } else if id == "data" {
                guard let f = fmt else { throw TestSupportError("\(name): data chunk before fmt chunk") }
                let rest = bytes.count - body
                var length = size
                var repaired = false
                if size == 0 || size == 0xFFFF_FFFF || size > rest {
                    length = rest - rest % max(1, f.align)
                    repaired = true
                }
                formatTag = f.tag
                sampleFormatTag = f.sub
                channels = f.channels
                sampleRate = f.rate
                blockAlign = f.align
                bitsPerSample = f.bits
                validBitsPerSample = f.valid
                data = Array(bytes[body..<body + length])
                dataSizeRepaired = repaired
                guard channels > 0, blockAlign > 0, blockAlign % channels == 0 else {
                    throw TestSupportError("\(name): nonsense fmt (channels \(channels), block align \(blockAlign))")
                }
                return
            }
            offset = body + size + (size & 1)
        }
        throw TestSupportError("\(name): no data chunk")
    }

    /// The samples, interleaved, left-justified in 32 bits: a sample in a c-bit container
    /// becomes sample << (32 − c). 8-bit WAV data (unsigned by convention) is made signed.
    /// Comparable across containers: a 16-bit v and a 24-bit (v << 8) give the same value.
    public func samples() throws -> [Int32] {
        guard sampleFormatTag == 1 else {
            throw TestSupportError("WAV sample format \(sampleFormatTag) is not integer PCM")
        }
        let width = containerBits / 8
        guard (1...4).contains(width) else { throw TestSupportError("unsupported container of \(containerBits) bits") }
        let count = frames * channels
        var out = [Int32](repeating: 0, count: count)
        data.withUnsafeBufferPointer { bytes in
            out.withUnsafeMutableBufferPointer { samples in
                var i = 0
                for n in 0..<count {
                    var v: UInt32 = 0
                    for b in 0..<width {
                        v |= UInt32(bytes[i + b]) << UInt32(8 * (4 - width + b))
                    }
                    if width == 1 { v ^= 0x8000_0000 }
                    samples[n] = Int32(bitPattern: v)
                    i += width
                }
            }
        }
        return out
    }

    /// The data read as 32-bit IEEE floats, whatever the header says. alsa-lib's `file`
    /// plugin labels FLOAT_LE captures as 32-bit integer PCM (format tag 1), so a test that
    /// knows the device took FLOAT_LE reads them with this.
    public func samplesAsFloat32() throws -> [Float] {
        guard containerBits == 32 else { throw TestSupportError("not a 32-bit container") }
        let count = frames * channels
        var out = [Float](repeating: 0, count: count)
        data.withUnsafeBufferPointer { bytes in
            for n in 0..<count {
                let i = n * 4
                let v = UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24
                out[n] = Float(bitPattern: v)
            }
        }
        return out
    }

    /// Writes interleaved, right-justified `samples` of `bits` (16 or 24) as a plain PCM WAV:
    /// what the encoders of the format tests read.
    public static func write(_ samples: [Int32], channels: Int, sampleRate: Int, bits: Int = 16, to path: String) throws {
        let body = packLittleEndian(samples, bytesPerSample: bits / 8, shift: 0)
        let header = header(channels: channels, sampleRate: sampleRate, containerBits: bits, validBits: bits, dataBytes: body.count)
        try Data(header + body).write(to: URL(fileURLWithPath: path))
    }

    /// A WAVE_FORMAT_EXTENSIBLE header for integer PCM (`validBits` of `containerBits`).
    public static func header(channels: Int, sampleRate: Int, containerBits: Int, validBits: Int, dataBytes: Int) -> [UInt8] {
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
        func le32(_ v: Int) -> [UInt8] { le16(v & 0xFFFF) + le16((v >> 16) & 0xFFFF) }
        let align = channels * containerBits / 8
        let masks = [1: 0x4, 2: 0x3, 3: 0x7, 4: 0x33, 5: 0x37, 6: 0x3F, 7: 0x13F, 8: 0x63F]
        var fmt = le16(0xFFFE) + le16(channels) + le32(sampleRate) + le32(sampleRate * align) + le16(align) + le16(containerBits)
        fmt += le16(22) + le16(validBits) + le32(masks[channels] ?? 0)
        fmt += [0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
        let riffSize = 4 + 8 + fmt.count + 8 + dataBytes
        return Array("RIFF".utf8) + le32(riffSize) + Array("WAVE".utf8) + Array("fmt ".utf8) + le32(fmt.count) + fmt
            + Array("data".utf8) + le32(dataBytes)
    }
}

/// Decodes `flacPath` with the reference decoder (`flac -d`) and returns its samples,
/// interleaved and left-justified in 32 bits (see `WAVFile.samples`).
///
/// flac -d writes 12- and 20-bit streams as WAVE_FORMAT_EXTENSIBLE with the samples
/// left-justified in 16/24-bit containers (wValidBitsPerSample 12/20) and 8-bit streams as
/// unsigned 8-bit, so a 12-bit sample v comes out here as v << 20, as it does from a capture
/// of tonearm's S16_LE (v << 4) output.
public func referenceDecode(_ flacPath: String) throws -> [Int32] {
    try referenceDecodeWAV(flacPath).samples()
}

/// The reference decoder's WAV output for `flacPath`, parsed.
public func referenceDecodeWAV(_ flacPath: String) throws -> WAVFile {
    let out = NSTemporaryDirectory() + "tonearm-ref-\(getpid())-\(UUID().uuidString).wav"
    defer { try? FileManager.default.removeItem(atPath: out) }
    try runChecked("flac", ["--silent", "--force", "--decode", "-o", out, flacPath])
    return try WAVFile(path: out)
}
