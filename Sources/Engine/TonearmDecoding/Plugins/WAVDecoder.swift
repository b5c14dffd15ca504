import TonearmAudio

/// Plays WAV files (RIFF/WAVE, and RF64 for files past 4 GB), read directly.
///
/// Integer PCM of 8 (unsigned), 16, 24 and 32 bits, plain or WAVE_FORMAT_EXTENSIBLE; an
/// extensible file's valid bits (24 in a 32-bit container, 20 in 24) are `format.bitsPerSample`.
/// IEEE float of 32 or 64 bits is converted to 24-bit: ±1.0 is full scale, samples past it
/// clip (a float file may hold them, a fixed-point device cannot) and NaN is silence.
/// `headerFormat` keeps the float's own width.
///
/// The `data` chunk need not be the last. Its size 0 or 0xFFFFFFFF (a WAV written to a pipe
/// or never finished) means "up to the end of the file". A file that ends inside `data` plays
/// what it holds, then `nextBlock()` reports the truncation.
///
/// Tags come from the `LIST`/`INFO` chunk: INAM → TITLE, IART → ARTIST, IPRD → ALBUM,
/// ICRD → DATE, IGNR → GENRE, ITRK or IPRT → TRACKNUMBER, ICMT → COMMENT, ICOP → COPYRIGHT,
/// ISFT → ENCODER. An `id3 ` chunk's ID3v2 tag comes first, the INFO tags fill what it lacks.
public enum WAVDecoder: PCMFilePlugIn {
    /// mpd plays WAV and AIFF with its "sndfile" plug-in.
    public static let name = "sndfile"
    public static let suffixes = ["wav", "wave"]
    public static let mimeTypes = ["audio/wav", "audio/x-wav", "audio/wave"]

    public static func recognizes(_ head: FileHead) -> Bool {
        (head.starts(with: "RIFF") || head.starts(with: "RF64")) && head.starts(with: "WAVE", at: 8)
    }

    /// Walks the chunks: `fmt `, `data`, `LIST`/`INFO` and `id3 `, wherever they are. A stream
    /// that cannot seek is walked only up to `data`.
    static func readHeader(_ source: ByteSource) throws(DecodeError) -> PCMFileHeader {
        let path = source.name
        let head = try Decoders.readHead(source)
        guard !head.bytes.isEmpty || head.id3v2Size > 0 else { throw DecodeError(path: path, reason: .empty) }
        guard recognizes(head) else {
            let riff = head.starts(with: "RIFF") || head.starts(with: "RF64")
            let why = if riff && head.bytes.count < 12 {
                "not a WAV file (its RIFF header ends after \(head.bytes.count) bytes)"
            } else if riff {
                "not a WAV file (a RIFF file of type '\(fourCC(head.bytes[8..<12]))')"
            } else {
                "not a WAV file (no 'RIFF'…'WAVE' header)"
            }
            throw DecodeError(path: path, reason: .notFormat(why))
        }
        let isRF64 = head.starts(with: "RF64")
        var walker = ChunkWalker(source: source, byteOrder: .little, start: UInt64(head.offset) + 12)
        var format: (encoding: PCMEncoding, channels: Int, sampleRate: Int, bits: Int)?
        var data: Chunk?
        var dataSizeIsKnown = true
        var comments: [(name: String, value: String)] = []
        var id3Tag: EmbeddedID3Tag?
        walk: while let chunk = try walker.nextChunk() {
            switch chunk.id {
            case "ds64" where isRF64 && walker.count == 1:
                try readDS64(chunk, into: &walker, path: path)
            case "fmt " where format == nil:
                format = try readFormat(chunk, walker: walker, path: path)
            case "data" where data == nil:
                data = chunk
                dataSizeIsKnown = chunk.size != 0 && chunk.size != 0xFFFF_FFFF
                // Nothing after an unsized data chunk is a chunk; a stream cannot come back.
                if !dataSizeIsKnown || !source.isSeekable { break walk }
            case "LIST" where chunk.size >= 4:
                let body = try walker.body(of: chunk, upTo: 1 << 20)
                if body.count >= 4 && fourCC(body[0..<4]) == "INFO" { infoTags(body.dropFirst(4), into: &comments) }
            case "id3 " where id3Tag == nil, "ID3 " where id3Tag == nil:
                id3Tag = EmbeddedID3Tag(offset: chunk.bodyOffset, length: chunk.available)
            default:
                break
            }
        }
        guard let format else { throw DecodeError(path: path, reason: walker.missing("fmt ")) }
        guard let data else { throw DecodeError(path: path, reason: walker.missing("data")) }

        let bytesPerFrame = format.encoding.bytesPerSample * format.channels
        let dataBytes: UInt64? = dataSizeIsKnown ? data.size : source.length.map { $0 - min($0, data.bodyOffset) }
        let frames = dataBytes.map { PCMFileHeader.frames(inBytes: $0, bytesPerFrame: bytesPerFrame) }
        if frames == 0 { throw DecodeError(path: path, reason: .noAudio) }
        let decoded = StreamFormat(sampleRate: format.sampleRate, channels: format.channels, bitsPerSample: format.encoding.decodedBits)
        let info = TrackInfo(path: path, codec: format.encoding.kind == .float ? "PCM float" : "PCM", format: decoded,
                             headerFormat: StreamFormat(sampleRate: format.sampleRate, channels: format.channels, bitsPerSample: format.bits),
                             totalFrames: frames, comments: comments)
        return PCMFileHeader(info: info, encoding: format.encoding, dataOffset: data.bodyOffset, dataFrames: frames,
                             expectedFrames: frames, id3Tag: id3Tag)
    }

    /// RF64's sizes past 4 GB: the data chunk's, and any other chunk's in its table.
    private static func readDS64(_ chunk: Chunk, into walker: inout ChunkWalker, path: String) throws(DecodeError) {
        let body = try walker.body(of: chunk, upTo: 28 + 12 * 64)
        guard body.count >= 28 else {
            throw DecodeError(path: path, reason: .badMetadata("'ds64' chunk of \(body.count) bytes (at least 28)"))
        }
        walker.largeSizes["data"] = littleEndian64(body, at: 8)
        let entries = min(littleEndian32(body, at: 24), (body.count - 28) / 12)
        for i in 0..<entries {
            let at = 28 + 12 * i
            walker.largeSizes[fourCC(body[at..<(at + 4)])] = littleEndian64(body, at: at + 4)
        }
    }

    /// The `fmt ` chunk: what the samples are, refused with the reason when Tonearm does not
    /// play them.
    private static func readFormat(_ chunk: Chunk, walker: ChunkWalker,
                                   path: String) throws(DecodeError) -> (encoding: PCMEncoding, channels: Int, sampleRate: Int, bits: Int) {
        func bad(_ why: String) -> DecodeError { DecodeError(path: path, reason: .badMetadata(why)) }
        func unsupported(_ what: String) -> DecodeError { DecodeError(path: path, reason: .unsupported(what)) }
        if chunk.isCut {
            let length = walker.source.length.map { " (\($0) bytes)" } ?? ""
            throw bad("'fmt ' chunk claims \(chunk.size) bytes, past the end of the file\(length)")
        }
        guard chunk.size >= 16 else { throw bad("'fmt ' chunk of \(chunk.size) bytes (at least 16)") }
        let b = try walker.body(of: chunk, upTo: 40)
        guard b.count >= 16 else { throw bad("'fmt ' chunk of \(b.count) bytes (at least 16)") }
        let tag = littleEndian16(b, at: 0)
        let channels = littleEndian16(b, at: 2)
        let sampleRate = littleEndian32(b, at: 4)
        let blockAlign = littleEndian16(b, at: 12)
        let bits = littleEndian16(b, at: 14)
        var sampleTag = tag
        var validBits = bits
        if tag == 0xFFFE {
            guard b.count >= 40 else { throw bad("WAVE_FORMAT_EXTENSIBLE 'fmt ' chunk of \(b.count) bytes (40 needed)") }
            if littleEndian16(b, at: 18) != 0 { validBits = littleEndian16(b, at: 18) }
            // KSDATAFORMAT_SUBTYPE_PCM and _IEEE_FLOAT: the format tag, then a fixed GUID tail.
            let guidTail: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
            guard b[26..<40].elementsEqual(guidTail) else {
                throw unsupported("WAV extensible sub-format \(b[24..<40].map { hex($0) }.joined())")
            }
            sampleTag = littleEndian16(b, at: 24)
        }
        guard sampleTag == 1 || sampleTag == 3 else {
            let known = formatNames[sampleTag].map { " (\($0))" } ?? ""
            throw unsupported("WAV format \(sampleTag)\(known)")
        }
        guard channels > 0 else { throw bad("'fmt ' chunk gives 0 channels") }
        guard channels <= 8 else { throw unsupported("\(channels) channels (at most 8)") }
        guard sampleRate > 0 else { throw bad("'fmt ' chunk gives sample rate 0") }
        let width = blockAlign / channels
        guard bits > 0, blockAlign % channels == 0, width * 8 >= bits, validBits <= bits else {
            throw bad("'fmt ' chunk: block align \(blockAlign) does not hold \(channels) channels of \(bits) bits (\(validBits) valid)")
        }
        let encoding: PCMEncoding
        if sampleTag == 3 {
            guard width == 4 || width == 8 else { throw unsupported("\(width * 8)-bit float samples") }
            encoding = PCMEncoding(kind: .float, bytesPerSample: width, validBits: width * 8, bigEndian: false)
        } else {
            guard (1...4).contains(width) else { throw unsupported("\(width * 8)-bit integer samples") }
            encoding = PCMEncoding(kind: width == 1 ? .unsigned : .signed, bytesPerSample: width, validBits: validBits, bigEndian: false)
        }
        return (encoding, channels, sampleRate, sampleTag == 3 ? width * 8 : bits)
    }

    /// Names of formats a WAV may hold that are not PCM, for the reason it does not play.
    private static let formatNames: [Int: String] = [
        0x0002: "ADPCM", 0x0006: "A-law", 0x0007: "µ-law", 0x0011: "IMA ADPCM", 0x0031: "GSM 6.10",
        0x0050: "MPEG", 0x0055: "MP3", 0x0160: "WMA", 0x0161: "WMA", 0x0162: "WMA Pro", 0x0092: "AC-3",
        0x2000: "AC-3", 0x00FF: "AAC", 0x1610: "AAC", 0xF1AC: "FLAC",
    ]

    /// The INFO list's tags, under Vorbis comment names. ITRK and IPRT give one TRACKNUMBER.
    /// They come in mpd's order, whatever the file's: its sndfile plug-in asks libsndfile for
    /// title, artist, comment, date, album, track and genre in turn; the rest follow.
    static func infoTags(_ list: ArraySlice<UInt8>, into comments: inout [(name: String, value: String)]) {
        let bytes = Array(list)
        var found: [(name: String, value: String)] = []
        var at = 0
        while bytes.count - at >= 8 {
            let id = fourCC(bytes[at..<(at + 4)])
            let size = littleEndian32(bytes, at: at + 4)
            let start = at + 8
            let end = min(bytes.count, start + size)
            if let name = infoNames[id],
               !(name == "TRACKNUMBER" && (comments.contains { $0.name == name } || found.contains { $0.name == name })) {
                let value = tagText(bytes[start..<end])
                if !value.isEmpty { found.append((name, value)) }
            }
            at = start + size + (size & 1)
        }
        let rank = { (name: String) in infoOrder.firstIndex(of: name) ?? infoOrder.count }
        comments += found.enumerated().sorted { a, b in
            (rank(a.element.name), a.offset) < (rank(b.element.name), b.offset)
        }.map(\.element)
    }

    private static let infoOrder = ["TITLE", "ARTIST", "COMMENT", "DATE", "ALBUM", "TRACKNUMBER", "GENRE"]

    private static let infoNames = [
        "INAM": "TITLE", "IART": "ARTIST", "IPRD": "ALBUM", "ICRD": "DATE", "IGNR": "GENRE",
        "ITRK": "TRACKNUMBER", "IPRT": "TRACKNUMBER", "ICMT": "COMMENT", "ICOP": "COPYRIGHT", "ISFT": "ENCODER",
    ]

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
    }
}
