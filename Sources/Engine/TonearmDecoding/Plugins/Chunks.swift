import TonearmAudio

// What WAV (RIFF) and AIFF (IFF) files share: chunks to walk, tag text, and a data chunk of
// plain PCM samples to play.

/// One chunk of a RIFF or IFF file: a four-character id, a size, and a body padded to an even
/// length.
struct Chunk {
    /// The id as written: "fmt ", "data", "COMM", "(c) ", …
    var id: String
    /// The offset of the chunk's 8-byte header in the source.
    var offset: UInt64
    /// The body's size as its header declares it (for RF64, as `ds64` gives it).
    var size: UInt64
    /// How much of the body the source holds: `size`, or less when the chunk runs past the end.
    var available: UInt64

    var bodyOffset: UInt64 { offset + 8 }
    var isCut: Bool { available < size }
}

/// Walks a RIFF or IFF file's chunks in order, bounded by the source: a chunk that runs past
/// the source's end is returned with what there is of it and ends the walk; every step moves
/// at least 8 bytes on, and at most `maximumChunks` are walked, so any file ends the walk.
struct ChunkWalker {
    enum ByteOrder { case little, big }

    static let maximumChunks = 100_000

    let source: ByteSource
    let byteOrder: ByteOrder
    /// Where the next chunk's header starts.
    private(set) var next: UInt64
    /// Sizes for chunks whose header says 0xFFFFFFFF: those RF64's `ds64` chunk gives.
    var largeSizes: [String: UInt64] = [:]
    /// The chunk that ran past the source's end, when one did.
    private(set) var cutChunk: Chunk?
    /// Whether the walk stopped at `maximumChunks`.
    private(set) var gaveUp = false
    private(set) var count = 0

    /// Walks the chunks from `start`, the first chunk header after the file's own.
    init(source: ByteSource, byteOrder: ByteOrder, start: UInt64) {
        self.source = source
        self.byteOrder = byteOrder
        next = start
    }

    /// The next chunk; nil at the end of the source, after a cut chunk, or at `maximumChunks`.
    mutating func nextChunk() throws(DecodeError) -> Chunk? {
        guard cutChunk == nil else { return nil }
        guard count < Self.maximumChunks else {
            gaveUp = true
            return nil
        }
        let length = source.length
        if let length, next > length || length - next < 8 { return nil }
        try source.move(to: next)
        let header = try source.readUpTo(8)
        guard header.count == 8 else { return nil }
        count += 1
        let id = fourCC(header[0..<4])
        var size = UInt64(byteOrder == .little ? littleEndian32(header, at: 4) : bigEndian32(header, at: 4))
        if size == 0xFFFF_FFFF, let large = largeSizes[id] { size = large }
        let body = next + 8
        let available = length.map { min(size, $0 - body) } ?? size
        let chunk = Chunk(id: id, offset: next, size: size, available: available)
        let (end, overflow) = body.addingReportingOverflow(size)
        if chunk.isCut || overflow {
            cutChunk = chunk
        } else {
            next = end + (size & 1)
        }
        return chunk
    }

    /// Up to `limit` bytes of `chunk`'s body (fewer when the source holds fewer).
    func body(of chunk: Chunk, upTo limit: Int) throws(DecodeError) -> [UInt8] {
        try source.move(to: chunk.bodyOffset)
        return try source.readUpTo(Int(min(UInt64(limit), chunk.available)))
    }

    /// What to say when the chunk `id` was not found: the chunk that ran past the end instead,
    /// or that the walk gave up, or that there is none.
    func missing(_ id: String) -> DecodeError.Reason {
        if let cut = cutChunk {
            let length = source.length.map { " (\($0) bytes)" } ?? ""
            return .badMetadata("'\(cut.id)' chunk at byte \(cut.offset) claims \(cut.size) bytes, past the end of the file\(length)")
        }
        if gaveUp { return .badMetadata("no '\(id)' chunk in the first \(Self.maximumChunks) chunks") }
        return .badMetadata("no '\(id)' chunk")
    }
}

extension ByteSource {
    /// Positions the source at `target`: by seeking, or on a stream by reading forward.
    func move(to target: UInt64) throws(DecodeError) {
        if target == offset { return }
        if isSeekable { return try seek(to: target) }
        guard target > offset else {
            throw DecodeError(path: name, reason: .decoder("cannot go back to byte \(target) of a stream"))
        }
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 1)
        defer { scratch.deallocate() }
        while offset < target {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: scratch[..<Int(min(65536, target - offset))]))
            if n == 0 { return }
        }
    }
}

/// Four bytes as a chunk id; bytes outside printable ASCII show as "?".
func fourCC(_ bytes: ArraySlice<UInt8>) -> String {
    String(decoding: bytes.map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
}

func littleEndian16(_ b: [UInt8], at i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 }
func littleEndian32(_ b: [UInt8], at i: Int) -> Int { littleEndian16(b, at: i) | littleEndian16(b, at: i + 2) << 16 }
func littleEndian64(_ b: [UInt8], at i: Int) -> UInt64 { UInt64(littleEndian32(b, at: i)) | UInt64(littleEndian32(b, at: i + 4)) << 32 }
func bigEndian16(_ b: [UInt8], at i: Int) -> Int { Int(b[i]) << 8 | Int(b[i + 1]) }
func bigEndian32(_ b: [UInt8], at i: Int) -> Int { bigEndian16(b, at: i) << 16 | bigEndian16(b, at: i + 2) }

/// A tag's text: UTF-8 when the bytes are valid UTF-8, else ISO-8859-1; it ends at the first NUL.
func tagText<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
    let text = bytes.prefix { $0 != 0 }
    if let utf8 = String(validating: text, as: UTF8.self) { return utf8 }
    return String(String.UnicodeScalarView(text.map { Unicode.Scalar($0) }))
}

/// An ID3v2 tag kept in a WAV `id3 ` or AIFF `ID3 ` chunk: where its bytes are in the source.
struct EmbeddedID3Tag: Equatable, Sendable {
    var offset: UInt64
    var length: UInt64
}

/// How a data chunk stores its samples.
struct PCMEncoding: Equatable {
    enum Kind { case signed, unsigned, float }

    var kind: Kind
    var bytesPerSample: Int
    /// Integer samples' bits that carry music, the high ones of the container; the low bits
    /// are padding and are cleared.
    var validBits: Int
    var bigEndian: Bool

    /// Bits of the decoded frames: an integer format's valid bits, 24 for float.
    var decodedBits: Int { kind == .float ? 24 : validBits }

    /// Converts `count` samples at `bytes` to left-justified `Int32`. Floats are scaled so that
    /// ±1.0 is 24-bit full scale and rounded; louder samples clip, NaN is silence.
    func decode(_ bytes: UnsafeRawPointer, into out: UnsafeMutablePointer<Int32>, count: Int) {
        let p = bytes.assumingMemoryBound(to: UInt8.self)
        switch (kind, bytesPerSample, bigEndian) {
        case (.unsigned, 1, _):
            for n in 0..<count { out[n] = Int32(bitPattern: UInt32(p[n] ^ 0x80) << 24) }
        case (.signed, 1, _):
            for n in 0..<count { out[n] = Int32(bitPattern: UInt32(p[n]) << 24) }
        case (.signed, 2, false):
            for n in 0..<count { out[n] = Int32(bitPattern: UInt32(p[2 * n]) << 16 | UInt32(p[2 * n + 1]) << 24) }
        case (.signed, 2, true):
            for n in 0..<count { out[n] = Int32(bitPattern: UInt32(p[2 * n]) << 24 | UInt32(p[2 * n + 1]) << 16) }
        case (.signed, 3, false):
            for n in 0..<count {
                let i = 3 * n
                out[n] = Int32(bitPattern: UInt32(p[i]) << 8 | UInt32(p[i + 1]) << 16 | UInt32(p[i + 2]) << 24)
            }
        case (.signed, 3, true):
            for n in 0..<count {
                let i = 3 * n
                out[n] = Int32(bitPattern: UInt32(p[i]) << 24 | UInt32(p[i + 1]) << 16 | UInt32(p[i + 2]) << 8)
            }
        case (.signed, 4, let big):
            for n in 0..<count {
                let v = bytes.loadUnaligned(fromByteOffset: 4 * n, as: UInt32.self)
                out[n] = Int32(bitPattern: big ? UInt32(bigEndian: v) : UInt32(littleEndian: v))
            }
        case (.float, 4, let big):
            for n in 0..<count {
                let v = bytes.loadUnaligned(fromByteOffset: 4 * n, as: UInt32.self)
                out[n] = Self.float24(Double(Float(bitPattern: big ? UInt32(bigEndian: v) : UInt32(littleEndian: v))))
            }
        case (.float, 8, let big):
            for n in 0..<count {
                let v = bytes.loadUnaligned(fromByteOffset: 8 * n, as: UInt64.self)
                out[n] = Self.float24(Double(bitPattern: big ? UInt64(bigEndian: v) : UInt64(littleEndian: v)))
            }
        default:
            // The headers' readers make no other encoding.
            out.update(repeating: 0, count: count)
        }
        if kind != .float && validBits < 8 * bytesPerSample {
            let mask = Int32(bitPattern: UInt32.max << UInt32(32 - validBits))
            for n in 0..<count { out[n] &= mask }
        }
    }

    @inline(__always)
    static func float24(_ x: Double) -> Int32 {
        let scaled = (x * 8_388_608).rounded()
        guard scaled > -8_388_608 else { return scaled.isNaN ? 0 : Int32.min }
        guard scaled < 8_388_607 else { return 8_388_607 << 8 }
        return Int32(scaled) << 8
    }
}

/// What a WAV or AIFF header says: the track, and where and how its samples are stored.
struct PCMFileHeader {
    var info: TrackInfo
    var encoding: PCMEncoding
    /// The offset of the first sample.
    var dataOffset: UInt64
    /// The frames the data chunk holds by its size (read no further); nil: up to the end.
    var dataFrames: Int?
    /// The frames the header promises; fewer in the file is a truncated file.
    var expectedFrames: Int?
    var id3Tag: EmbeddedID3Tag?

    var channels: Int { info.format.channels }
    var bytesPerFrame: Int { encoding.bytesPerSample * channels }

    /// The frames `bytes` of data hold, bounded so that any frame's offset fits an `Int`.
    static func frames(inBytes bytes: UInt64, bytesPerFrame: Int) -> Int {
        Int(min(bytes, 1 << 56) / UInt64(bytesPerFrame))
    }
}

/// WAV and AIFF: a header of chunks, then samples a `PCMFileDecoder` plays.
protocol PCMFilePlugIn: DecoderPlugIn {
    /// Walks the chunks up to what the file says about itself and where its samples are.
    static func readHeader(_ source: ByteSource) throws(DecodeError) -> PCMFileHeader
}

extension PCMFilePlugIn {
    public static func open(_ source: ByteSource, keepPictureData: Bool) throws(DecodeError) -> any AudioDecoder {
        var header = try readHeader(source)
        try header.readID3Tag(from: source, keepPictureData: keepPictureData)
        return try PCMFileDecoder(source: source, header: header)
    }

    public static func metadata(_ source: ByteSource) throws(DecodeError) -> TrackInfo {
        var header = try readHeader(source)
        try header.readID3Tag(from: source, keepPictureData: false)
        return header.info
    }
}

extension PCMFileHeader {
    /// The file's ID3v2 chunk read into `info`: its tags first, the text chunks' filling what it
    /// lacks. A tag that cannot be read leaves the text chunks' tags: the audio is not at stake.
    /// A stream that cannot seek has passed the chunk already.
    mutating func readID3Tag(from source: ByteSource, keepPictureData: Bool) throws(DecodeError) {
        guard let tag = id3Tag, source.isSeekable else { return }
        try source.seek(to: tag.offset)
        let header = try source.readUpTo(ID3v2.headerSize)
        guard ID3v2.tagSize(header: header) != nil,
              let read = try? ID3v2.read(header: header, restOf: source, keepPictureData: keepPictureData) else { return }
        var tags = read.tags
        tags.fill(from: EmbeddedTags(comments: info.comments, pictures: info.pictures))
        info.comments = tags.comments
        info.pictures = tags.pictures
    }
}

/// Plays a WAV or AIFF file's data chunk: blocks of up to 4096 frames are read into a buffer
/// allocated once and converted to interleaved, left-justified `Int32`. A seek is a byte
/// offset; a file that ends before the header's count of frames plays what it holds and then
/// reports the truncation.
final class PCMFileDecoder: AudioDecoder {
    static let blockFrames = 4096

    private(set) var info: TrackInfo
    /// The ID3v2 tag chunk, when the file has one.
    let id3Tag: EmbeddedID3Tag?
    private let source: ByteSource
    private let header: PCMFileHeader
    private let bytesPerFrame: Int
    private let raw: UnsafeMutableRawBufferPointer
    private let samples: UnsafeMutablePointer<Int32>
    private(set) var position = 0
    private var sourceEnded = false

    init(source: ByteSource, header: PCMFileHeader) throws(DecodeError) {
        self.source = source
        self.header = header
        info = header.info
        id3Tag = header.id3Tag
        bytesPerFrame = header.bytesPerFrame
        try source.move(to: header.dataOffset)
        raw = .allocate(byteCount: Self.blockFrames * bytesPerFrame, alignment: 16)
        samples = .allocate(capacity: Self.blockFrames * header.channels)
    }

    deinit {
        raw.deallocate()
        samples.deallocate()
    }

    func nextBlock() throws(DecodeError) -> UnsafeBufferPointer<Int32>? {
        let wanted = min(Self.blockFrames, (header.dataFrames ?? Int.max) - position)
        if wanted > 0 && !sourceEnded {
            let byteCount = wanted * bytesPerFrame
            var got = 0
            while got < byteCount {
                let n = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[got..<byteCount]))
                if n == 0 {
                    sourceEnded = true
                    break
                }
                got += n
            }
            let frames = got / bytesPerFrame
            if frames > 0 {
                let count = frames * header.channels
                header.encoding.decode(raw.baseAddress!, into: samples, count: count)
                position += frames
                return UnsafeBufferPointer(start: samples, count: count)
            }
        }
        if let expected = header.expectedFrames, position < expected {
            throw DecodeError(path: info.path, reason: .truncated(decodedFrames: position, expectedFrames: expected))
        }
        return nil
    }

    func seek(toFrame frame: Int) throws(DecodeError) {
        guard frame >= 0, frame <= (header.expectedFrames ?? Int.max) else {
            throw DecodeError(path: info.path, reason: .seekFailed(frame: frame))
        }
        guard source.isSeekable else {
            if frame == position { return }
            throw DecodeError(path: info.path, reason: .seekFailed(frame: frame))
        }
        try source.seek(to: header.dataOffset + UInt64(frame) * UInt64(bytesPerFrame))
        position = frame
        sourceEnded = false
    }
}
