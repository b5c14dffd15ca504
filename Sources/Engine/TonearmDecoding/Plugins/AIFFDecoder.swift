import TonearmAudio

/// Plays AIFF and AIFF-C files, read directly.
///
/// Integer PCM of 1 to 32 bits (big-endian; AIFF-C 'NONE' and 'twos', or 'sowt' little-endian)
/// and AIFF-C float ('fl32'/'FL32', 'fl64'/'FL64'), which is converted to 24-bit as WAV's float
/// is: ±1.0 is full scale, samples past it clip, NaN is silence. Other AIFF-C compressions
/// (µ-law, A-law, IMA ADPCM, …) are refused with their four-character code.
///
/// `COMM`'s frame count is the length; the `SSND` chunk's offset skips its alignment bytes.
/// A file that ends inside `SSND` plays what it holds, then `nextBlock()` reports the truncation.
///
/// Tags: an `ID3 ` chunk's ID3v2 tag first; NAME → TITLE, AUTH → ARTIST, "(c) " → COPYRIGHT,
/// ANNO → COMMENT fill what it lacks.
public enum AIFFDecoder: PCMFilePlugIn {
    /// mpd plays WAV and AIFF with its "sndfile" plug-in.
    public static let name = "sndfile"
    public static let suffixes = ["aif", "aiff", "aifc"]
    public static let mimeTypes = ["audio/aiff", "audio/x-aiff"]

    public static func recognizes(_ head: FileHead) -> Bool {
        head.starts(with: "FORM") && (head.starts(with: "AIFF", at: 8) || head.starts(with: "AIFC", at: 8))
    }

    /// Walks the chunks: `COMM`, `SSND`, the text chunks and `ID3 `, wherever they are. A
    /// stream that cannot seek is walked only up to `SSND`.
    static func readHeader(_ source: ByteSource) throws(DecodeError) -> PCMFileHeader {
        let path = source.name
        let head = try Decoders.readHead(source)
        guard !head.bytes.isEmpty || head.id3v2Size > 0 else { throw DecodeError(path: path, reason: .empty) }
        guard recognizes(head) else {
            let why = if head.starts(with: "FORM") && head.bytes.count < 12 {
                "not an AIFF file (its FORM header ends after \(head.bytes.count) bytes)"
            } else if head.starts(with: "FORM") {
                "not an AIFF file (an IFF file of type '\(fourCC(head.bytes[8..<12]))')"
            } else {
                "not an AIFF file (no 'FORM'…'AIFF' header)"
            }
            throw DecodeError(path: path, reason: .notFormat(why))
        }
        let isAIFC = head.starts(with: "AIFC", at: 8)
        var walker = ChunkWalker(source: source, byteOrder: .big, start: UInt64(head.offset) + 12)
        var common: (encoding: PCMEncoding, channels: Int, frames: Int, sampleRate: Int, bits: Int)?
        var sound: (chunk: Chunk, offset: Int)?
        var comments: [(name: String, value: String)] = []
        var id3Tag: EmbeddedID3Tag?
        walk: while let chunk = try walker.nextChunk() {
            switch chunk.id {
            case "COMM" where common == nil:
                common = try readCommon(chunk, walker: walker, isAIFC: isAIFC, path: path)
            case "SSND" where sound == nil:
                guard chunk.size >= 8 else {
                    throw DecodeError(path: path, reason: .badMetadata("'SSND' chunk of \(chunk.size) bytes (at least 8)"))
                }
                let b = try walker.body(of: chunk, upTo: 8)
                guard b.count == 8 else {
                    throw DecodeError(path: path, reason: .badMetadata("'SSND' chunk cut short after \(b.count) bytes"))
                }
                sound = (chunk, bigEndian32(b, at: 0))
                if !source.isSeekable { break walk }
            case "NAME", "AUTH", "(c) ", "ANNO":
                let value = tagText(try walker.body(of: chunk, upTo: 1 << 16))
                if !value.isEmpty { comments.append((textNames[chunk.id]!, value)) }
            case "ID3 " where id3Tag == nil, "id3 " where id3Tag == nil:
                id3Tag = EmbeddedID3Tag(offset: chunk.bodyOffset, length: chunk.available)
            default:
                break
            }
        }
        guard let common else { throw DecodeError(path: path, reason: walker.missing("COMM")) }
        guard let sound else { throw DecodeError(path: path, reason: walker.missing("SSND")) }
        guard UInt64(sound.offset) <= sound.chunk.size - 8 else {
            throw DecodeError(path: path, reason: .badMetadata("'SSND' offset \(sound.offset) is past its chunk's \(sound.chunk.size) bytes"))
        }
        if common.frames == 0 { throw DecodeError(path: path, reason: .noAudio) }
        let bytesPerFrame = common.encoding.bytesPerSample * common.channels
        let soundFrames = PCMFileHeader.frames(inBytes: sound.chunk.size - 8 - UInt64(sound.offset), bytesPerFrame: bytesPerFrame)
        let decoded = StreamFormat(sampleRate: common.sampleRate, channels: common.channels, bitsPerSample: common.encoding.decodedBits)
        let info = TrackInfo(path: path, codec: common.encoding.kind == .float ? "PCM float" : "PCM", format: decoded,
                             headerFormat: StreamFormat(sampleRate: common.sampleRate, channels: common.channels, bitsPerSample: common.bits),
                             totalFrames: common.frames, comments: comments)
        return PCMFileHeader(info: info, encoding: common.encoding, dataOffset: sound.chunk.bodyOffset + 8 + UInt64(sound.offset),
                             dataFrames: min(soundFrames, common.frames), expectedFrames: common.frames, id3Tag: id3Tag)
    }

    private static let textNames = ["NAME": "TITLE", "AUTH": "ARTIST", "(c) ": "COPYRIGHT", "ANNO": "COMMENT"]

    /// The `COMM` chunk: channels, frames, sample size and rate, and AIFF-C's compression.
    private static func readCommon(_ chunk: Chunk, walker: ChunkWalker, isAIFC: Bool,
                                   path: String) throws(DecodeError) -> (encoding: PCMEncoding, channels: Int, frames: Int, sampleRate: Int, bits: Int) {
        func bad(_ why: String) -> DecodeError { DecodeError(path: path, reason: .badMetadata(why)) }
        let needed = isAIFC ? 22 : 18
        if chunk.isCut {
            let length = walker.source.length.map { " (\($0) bytes)" } ?? ""
            throw bad("'COMM' chunk claims \(chunk.size) bytes, past the end of the file\(length)")
        }
        guard chunk.size >= needed else { throw bad("'COMM' chunk of \(chunk.size) bytes (at least \(needed))") }
        let b = try walker.body(of: chunk, upTo: needed)
        guard b.count == needed else { throw bad("'COMM' chunk of \(b.count) bytes (at least \(needed))") }
        let channels = bigEndian16(b, at: 0)
        let frames = bigEndian32(b, at: 2)
        let bits = bigEndian16(b, at: 6)
        let rate = extended80(b[8..<18])
        let compression = isAIFC ? fourCC(b[18..<22]) : "NONE"
        guard channels > 0 else { throw bad("'COMM' chunk gives 0 channels") }
        guard channels <= 8 else { throw DecodeError(path: path, reason: .unsupported("\(channels) channels (at most 8)")) }
        guard rate.isFinite, rate >= 0.5, rate < 1e9 else {
            throw bad("'COMM' chunk gives sample rate \(rate.isFinite && abs(rate) < 1e15 ? "\(Int(rate))" : "\(rate)")")
        }
        let encoding: PCMEncoding
        switch compression {
        case "NONE", "twos", "sowt":
            guard (1...32).contains(bits) else {
                throw DecodeError(path: path, reason: bits == 0 ? .badMetadata("'COMM' chunk gives 0 bits a sample")
                                                                : .unsupported("\(bits)-bit AIFF samples"))
            }
            encoding = PCMEncoding(kind: .signed, bytesPerSample: (bits + 7) / 8, validBits: bits, bigEndian: compression != "sowt")
        case "fl32", "FL32":
            encoding = PCMEncoding(kind: .float, bytesPerSample: 4, validBits: 32, bigEndian: true)
        case "fl64", "FL64":
            encoding = PCMEncoding(kind: .float, bytesPerSample: 8, validBits: 64, bigEndian: true)
        default:
            throw DecodeError(path: path, reason: .unsupported("AIFF-C compression '\(compression)'"))
        }
        let headerBits = encoding.kind == .float ? encoding.bytesPerSample * 8 : bits
        return (encoding, channels, frames, Int(rate.rounded()), headerBits)
    }

    /// An 80-bit IEEE 754 extended number (big-endian: sign and 15-bit exponent, then a
    /// 64-bit significand with its integer bit), as AIFF gives the sample rate.
    static func extended80(_ bytes: ArraySlice<UInt8>) -> Double {
        let b = Array(bytes)
        let exponent = (Int(b[0] & 0x7F) << 8) | Int(b[1])
        let significand = b[2..<10].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        if exponent == 0 && significand == 0 { return 0 }
        if exponent == 0x7FFF { return .nan }
        let magnitude = Double(sign: .plus, exponent: exponent - 16383 - 63, significand: Double(significand))
        return b[0] & 0x80 != 0 ? -magnitude : magnitude
    }
}
