import CMPG123
import TonearmAudio

#if canImport(Glibc)
import Glibc
#endif

/// Decodes MPEG audio (Layer III, and Layer I/II) with libmpg123 into interleaved,
/// left-justified `Int32` frames, 24 bits real.
///
/// Output is signed 24-bit, as mpd's MP3 decoder (libmad) gives it and `mpg123 -e s24 -w`
/// writes: libmpg123 decodes in 32 bits and drops the lowest byte, here as in its own s24
/// output, so the program's decode is the reference a test can compare sample for sample. On
/// this machine libmpg123 takes the same CPU for s16, s32 and float output; 16 bits would
/// throw away the decoder's precision below the 16th bit.
///
/// libmpg123 reads through the `ByteSource` (a file or a stream) and sees only the audio: the
/// ID3v2 tag in front and the APE/ID3v1 tags at the end are read here (`TaggedAudio`) and
/// hidden from it. Gapless playback comes from the LAME/Xing header (MPG123_GAPLESS): the
/// encoder's delay and padding are cut, and `totalFrames` is exact when a Xing/Info or VBRI
/// header gives the frame count. Without one, playing a seekable file scans its frame headers
/// for the exact length; a library scan (`metadata`) takes libmpg123's estimate from the
/// file's size and does not read the audio.
public final class MP3Decoder: AudioDecoder, DecoderPlugIn {
    public static let name = "mpg123"
    public static let suffixes = ["mp3", "mp2"]
    public static let mimeTypes = ["audio/mpeg"]

    /// An MPEG audio frame header at the head, and a second one where the first frame ends
    /// when the head reaches that far.
    public static func recognizes(_ head: FileHead) -> Bool {
        guard let first = MPEGFrameHeader(head.bytes, at: 0) else { return false }
        guard first.length + 4 <= head.bytes.count else { return true }
        return MPEGFrameHeader(head.bytes, at: first.length).map { first.isSameStream(as: $0) } ?? false
    }

    public static func open(_ source: ByteSource, keepPictureData: Bool) throws(DecodeError) -> any AudioDecoder {
        try MP3Decoder(source: source, keepPictureData: keepPictureData, metadataOnly: false)
    }

    /// Tags and the first frame's format; the length from the Xing/Info header, else
    /// libmpg123's estimate from the file's size. No audio is decoded or scanned.
    public static func metadata(_ source: ByteSource) throws(DecodeError) -> TrackInfo {
        try MP3Decoder(source: source, keepPictureData: false, metadataOnly: true).info
    }

    public let path: String
    public private(set) var info: TrackInfo
    /// Whether `info.totalFrames` is the file's own count (Xing/Info/VBRI, or a scan of every
    /// frame), so that an earlier end means the file is truncated.
    public private(set) var lengthIsExact = false

    private let handle: OpaquePointer
    fileprivate let source: ByteSource
    /// Where the audio lies in the source; libmpg123 sees offset 0 at `audioStart`.
    fileprivate let audioStart: UInt64
    fileprivate let audioEnd: UInt64?
    /// Bytes already taken from a stream that cannot seek back, handed to libmpg123 first.
    fileprivate var pending: [UInt8]
    /// The offset libmpg123 believes it is at.
    fileprivate var streamOffset: UInt64 = 0

    private var output: UnsafeMutablePointer<Int32>
    private let capacity: Int
    private var nextFrame = 0
    private var reachedEnd = false

    public convenience init(path: String, keepPictureData: Bool = false) throws(DecodeError) {
        try self.init(source: try FileSource(path: path), keepPictureData: keepPictureData, metadataOnly: false)
    }

    private init(source: ByteSource, keepPictureData: Bool, metadataOnly: Bool) throws(DecodeError) {
        path = source.name
        self.source = source
        let found = try Self.findAudio(in: source, keepPictureData: keepPictureData)
        let head = found.head
        guard !head.isEmpty else { throw DecodeError(path: path, reason: .noAudio) }
        let headIsAll = found.end.map { $0 - found.start <= UInt64(head.count) } ?? source.atEnd
        guard let sync = MPEGFrameHeader.findStream(in: head, endsAtHeadEnd: headIsAll) else {
            throw DecodeError(path: path, reason: .notFormat("not an MP3 file (no MPEG audio frame)"))
        }
        // libmpg123 starts at the first frame: junk before it (a RIFF header around an MP3)
        // could exceed its resync limit.
        audioStart = found.start + UInt64(sync.offset)
        audioEnd = found.end
        pending = source.isSeekable ? [] : Array(head[sync.offset...])
        lengthIsExact = sync.header.hasFrameCount(in: head, at: sync.offset)

        Self.initialiseLibrary
        var status: Int32 = 0
        guard let h = mpg123_new(nil, &status) else {
            throw DecodeError(path: path, reason: .decoder("cannot create a decoder: \(Self.describe(status))"))
        }
        handle = h
        capacity = 1152 * 2 * 8
        output = .allocate(capacity: capacity)
        let unknown = StreamFormat(sampleRate: 0, channels: 0, bitsPerSample: 0)
        info = TrackInfo(path: path, codec: "MP\(sync.header.layer)",
                         format: unknown, totalFrames: nil, comments: found.tags.comments, pictures: found.tags.pictures)
        try openStream(metadataOnly: metadataOnly)
    }

    /// The tags, and where the audio starts and ends (unknown in a stream) with its first
    /// bytes. A stream's bytes are read once: its head is handed to libmpg123 later.
    private static func findAudio(in source: ByteSource, keepPictureData: Bool) throws(DecodeError)
        -> (tags: EmbeddedTags, start: UInt64, end: UInt64?, head: [UInt8]) {
        if source.isSeekable {
            guard source.length != 0 else { throw DecodeError(path: source.name, reason: .empty) }
            let layout = try TaggedAudio.read(source, keepPictureData: keepPictureData)
            let head = try source.peek(Int(min(UInt64(headLength), layout.audioEnd - layout.audioStart)), at: layout.audioStart)
            return (layout.tags, layout.audioStart, layout.audioEnd, head)
        }
        var first = try source.readUpTo(ID3v2.headerSize)
        guard !first.isEmpty else { throw DecodeError(path: source.name, reason: .empty) }
        var tags = EmbeddedTags()
        if ID3v2.tagSize(header: first) != nil {
            tags = try ID3v2.read(header: first, restOf: source, keepPictureData: keepPictureData).tags
            first = []
        }
        return (tags, 0, nil, first + (try source.readUpTo(headLength - first.count)))
    }

    /// Sets libmpg123 up for signed 32-bit output at the stream's own rate, opens it on the
    /// source and reads the first frame; then the length.
    private func openStream(metadataOnly: Bool) throws(DecodeError) {
        // A file is one stream: it ends where its Xing header says, and its format cannot
        // change. A station may relay file after file, each with its own header.
        var flags = MPG123_GAPLESS.rawValue | MPG123_QUIET.rawValue | MPG123_SKIP_ID3V2.rawValue
        if source.isSeekable { flags |= MPG123_NO_FRANKENSTEIN.rawValue }
        mpg123_param2(handle, Int32(MPG123_FLAGS.rawValue), Int(flags), 0)
        mpg123_param2(handle, Int32(MPG123_REMOVE_FLAGS.rawValue), Int(MPG123_AUTO_RESAMPLE.rawValue), 0)
        mpg123_format_none(handle)
        var rates: UnsafePointer<Int>?
        var rateCount = 0
        mpg123_rates(&rates, &rateCount)
        for i in 0..<rateCount {
            mpg123_format(handle, rates![i], Int32(MPG123_MONO.rawValue | MPG123_STEREO.rawValue), Int32(MPG123_ENC_SIGNED_32.rawValue))
        }
        guard mpg123_replace_reader_handle(handle, mp3Read, mp3Seek, nil) == MPG123_OK.rawValue,
              mpg123_open_handle(handle, Unmanaged.passUnretained(self).toOpaque()) == MPG123_OK.rawValue else {
            throw DecodeError(path: path, reason: .decoder(Self.describe(mpg123_errcode(handle))))
        }
        var rate = 0
        var channels: Int32 = 0
        var encoding: Int32 = 0
        guard mpg123_getformat(handle, &rate, &channels, &encoding) == MPG123_OK.rawValue else {
            throw DecodeError(path: path, reason: openFailure())
        }
        info.format = StreamFormat(sampleRate: rate, channels: Int(channels), bitsPerSample: 24)
        info.headerFormat = info.format
        if !lengthIsExact && !metadataOnly && source.isSeekable {
            // Reads every frame header (not the audio): 0.04 s for 10 minutes from the page cache.
            guard mpg123_scan(handle) == MPG123_OK.rawValue else { throw DecodeError(path: path, reason: openFailure()) }
            lengthIsExact = true
        }
        // A stream's length is unknown: a Xing header may count only the first of many files.
        let length = source.isSeekable ? mpg123_length(handle) : -1
        info.totalFrames = length >= 0 ? length : nil
        if info.totalFrames == nil { lengthIsExact = false }
    }

    deinit {
        mpg123_close(handle)
        mpg123_delete(handle)
        output.deallocate()
    }

    /// Enough for the longest frame (2880 bytes: Layer II, 160 kbit/s at 8 kHz) and the next
    /// header after it, with room for junk before the first.
    private static let headLength = 8192

    private static let initialiseLibrary: Void = { _ = mpg123_init() }()

    /// Why libmpg123 could not read the first frame.
    private func openFailure() -> DecodeError.Reason {
        let code = mpg123_errcode(handle)
        if code == MPG123_DONE.rawValue || code == MPG123_OK.rawValue { return .noAudio }
        return .decoder(Self.describe(code))
    }

    /// libmpg123's message for `code`, as the middle of a sentence.
    private static func describe(_ code: Int32) -> String {
        var text = String(cString: mpg123_plain_strerror(code))
        if let open = text.lastIndex(of: "("), text[open...].hasPrefix("(code ") { text = String(text[..<open]).trimmingSpaces }
        if text.hasSuffix(".") { text.removeLast() }
        guard let first = text.first else { return "error \(code)" }
        return first.lowercased() + text.dropFirst()
    }

    public func nextBlock() throws(DecodeError) -> UnsafeBufferPointer<Int32>? {
        guard !reachedEnd else { return try finish() }
        let channels = info.format.channels
        while true {
            var done = 0
            let status = mpg123_read(handle, output, capacity * 4, &done)
            let count = done / 4
            if status == MPG123_NEW_FORMAT.rawValue {
                var rate = 0, ch: Int32 = 0, enc: Int32 = 0
                mpg123_getformat(handle, &rate, &ch, &enc)
                if rate != info.format.sampleRate || Int(ch) != channels {
                    throw DecodeError(path: path, reason: .formatChange(
                        "format (\(info.format.sampleRate) Hz \(channels) ch → \(rate) Hz \(ch) ch at frame \(nextFrame))"))
                }
                if count == 0 { continue }
            } else if status == MPG123_DONE.rawValue {
                reachedEnd = true
                if count == 0 { return try finish() }
            } else if status != MPG123_OK.rawValue {
                throw DecodeError(path: path, reason: .decoder("\(Self.describe(mpg123_errcode(handle))) at frame \(nextFrame)"))
            } else if count == 0 {
                continue
            }
            for i in 0..<count { output[i] &= ~0xFF }
            nextFrame += count / channels
            return UnsafeBufferPointer(start: output, count: count - count % channels)
        }
    }

    /// The end: a file that ends before the frames its header counts is truncated.
    private func finish() throws(DecodeError) -> UnsafeBufferPointer<Int32>? {
        if lengthIsExact, let total = info.totalFrames, nextFrame < total {
            throw DecodeError(path: path, reason: .truncated(decodedFrames: nextFrame, expectedFrames: total))
        }
        return nil
    }

    public var position: Int { nextFrame }

    /// libmpg123 seeks to the MPEG frame before `frame` and decodes up to it, so the next block
    /// starts exactly there, with the gapless offsets applied.
    public func seek(toFrame frame: Int) throws(DecodeError) {
        guard frame >= 0, info.totalFrames.map({ frame <= $0 }) ?? true else {
            throw DecodeError(path: path, reason: .seekFailed(frame: frame))
        }
        let reached = mpg123_seek(handle, frame, SEEK_SET)
        guard reached == frame else {
            throw DecodeError(path: path, reason: .seekFailed(frame: frame))
        }
        nextFrame = frame
        reachedEnd = false
    }

    // MARK: The source as libmpg123's file

    fileprivate func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        var wanted = count
        if let audioEnd {
            wanted = Int(min(UInt64(count), audioEnd - min(audioEnd, audioStart + streamOffset)))
        }
        guard wanted > 0 else { return 0 }
        if !pending.isEmpty {
            let n = min(wanted, pending.count)
            pending.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: n) }
            pending.removeFirst(n)
            streamOffset += UInt64(n)
            return n
        }
        guard let n = try? source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: wanted)) else {
            errno = EIO
            return -1
        }
        streamOffset += UInt64(n)
        return n
    }

    fileprivate func seek(offset: Int, whence: Int32) -> Int {
        let target: Int
        switch whence {
        case SEEK_SET: target = offset
        case SEEK_CUR: target = Int(streamOffset) + offset
        case SEEK_END:
            guard let audioEnd else { errno = ESPIPE; return -1 }
            target = Int(audioEnd - audioStart) + offset
        default:
            errno = EINVAL
            return -1
        }
        if target == Int(streamOffset) { return target }
        guard source.isSeekable, target >= 0 else { errno = source.isSeekable ? EINVAL : ESPIPE; return -1 }
        guard (try? source.seek(to: audioStart + UInt64(target))) != nil else { errno = EIO; return -1 }
        streamOffset = UInt64(target)
        return target
    }
}

private func decoderObject(_ handle: UnsafeMutableRawPointer?) -> MP3Decoder {
    Unmanaged<MP3Decoder>.fromOpaque(handle!).takeUnretainedValue()
}

private let mp3Read: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int) -> Int = { handle, buffer, count in
    decoderObject(handle).read(into: buffer!, count: count)
}

private let mp3Seek: @convention(c) (UnsafeMutableRawPointer?, Int, Int32) -> Int = { handle, offset, whence in
    decoderObject(handle).seek(offset: offset, whence: whence)
}

/// One MPEG audio frame header: 11 sync bits, then version, layer, bit rate, sample rate,
/// padding and channel mode. Reserved or free-format values make no header, so random bytes
/// are rarely taken for one, and two in a row practically never.
struct MPEGFrameHeader: Equatable {
    /// 1, 2, or 25 for MPEG 2.5.
    var version: Int
    var layer: Int
    var bitRate: Int
    var sampleRate: Int
    var channels: Int
    /// Bytes, header included.
    var length: Int

    init?(_ b: [UInt8], at i: Int) {
        guard i >= 0, i + 4 <= b.count, b[i] == 0xFF, b[i + 1] & 0xE0 == 0xE0 else { return nil }
        let versionBits = Int(b[i + 1] >> 3) & 3
        let layerBits = Int(b[i + 1] >> 1) & 3
        let rateIndex = Int(b[i + 2] >> 4)
        let sampleIndex = Int(b[i + 2] >> 2) & 3
        guard versionBits != 1, layerBits != 0, rateIndex != 0, rateIndex != 15, sampleIndex != 3, b[i + 3] & 3 != 2 else {
            return nil
        }
        version = [25, 0, 2, 1][versionBits]
        layer = 4 - layerBits
        let rates: [Int]
        switch (version == 1, layer) {
        case (true, 1): rates = [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448]
        case (true, 2): rates = [32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384]
        case (true, _): rates = [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
        case (false, 1): rates = [32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256]
        case (false, _): rates = [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
        }
        bitRate = rates[rateIndex - 1] * 1000
        sampleRate = [44100, 48000, 32000][sampleIndex] / (version == 1 ? 1 : version == 2 ? 2 : 4)
        channels = b[i + 3] >> 6 == 3 ? 1 : 2
        let padding = Int(b[i + 2] >> 1) & 1
        switch layer {
        case 1: length = (12 * bitRate / sampleRate + padding) * 4
        case 2: length = 144 * bitRate / sampleRate + padding
        default: length = (version == 1 ? 144 : 72) * bitRate / sampleRate + padding
        }
    }

    func isSameStream(as other: MPEGFrameHeader) -> Bool {
        version == other.version && layer == other.layer && sampleRate == other.sampleRate
    }

    /// The first offset in `head` where a frame header is followed by another of the same
    /// stream where its length says, or whose frame ends exactly at the end of the audio.
    static func findStream(in head: [UInt8], endsAtHeadEnd: Bool) -> (offset: Int, header: MPEGFrameHeader)? {
        var i = 0
        while i + 4 <= head.count {
            if let first = MPEGFrameHeader(head, at: i) {
                let next = i + first.length
                if let second = MPEGFrameHeader(head, at: next), first.isSameStream(as: second) { return (i, first) }
                if next == head.count && endsAtHeadEnd { return (i, first) }
            }
            i += 1
        }
        return nil
    }

    /// Whether the frame at `offset` is a Xing/Info header with a frame count, or a VBRI header
    /// (which always has one): then libmpg123's length is exact.
    func hasFrameCount(in head: [UInt8], at offset: Int) -> Bool {
        guard layer == 3 else { return false }
        let sideInfo = version == 1 ? (channels == 1 ? 17 : 32) : (channels == 1 ? 9 : 17)
        let xing = offset + 4 + sideInfo
        if xing + 8 <= head.count, head[xing..<(xing + 4)].elementsEqual("Xing".utf8) || head[xing..<(xing + 4)].elementsEqual("Info".utf8) {
            return head[xing + 7] & 1 != 0
        }
        let vbri = offset + 36
        return vbri + 4 <= head.count && head[vbri..<(vbri + 4)].elementsEqual("VBRI".utf8)
    }
}
