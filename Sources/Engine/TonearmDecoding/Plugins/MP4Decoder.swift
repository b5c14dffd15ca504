import TonearmAudio

/// One codec inside an MP4 track, fed one sample (access unit) at a time.
protocol MP4Codec: AnyObject {
    /// "AAC", "ALAC".
    var codecName: String { get }
    /// The format of the frames it gives.
    var format: StreamFormat { get }
    /// Whether the first unit after opening or `reset` gives no frames (libfaad's start).
    var dropsFirstUnit: Bool { get }
    /// Decodes one unit, which is followed by 8 readable bytes; the frames are valid until the
    /// next call. A corrupt unit throws `.decoder`; a change of format `.formatChange`.
    func decode(_ unit: UnsafeRawBufferPointer) throws(DecodeError) -> UnsafeBufferPointer<Int32>
    /// Forgets all decoded units, before a seek.
    func reset() throws(DecodeError)
}

/// MP4/M4A files: AAC through libfaad (`AACDecoder`) and Apple Lossless (`ALACDecoder`),
/// chosen by the track's sample description, behind one plug-in that owns the demuxer; and
/// raw ADTS `.aac` files (`ADTSFrames`), whose frames make the same sample table. ADTS from a
/// source that cannot seek (internet radio) is decoded frame by frame (`ADTSStreamDecoder`).
///
/// The frames are exactly the music: the encoder's priming and padding are cut by the iTunes
/// gapless tag (iTunSMPB) or, without it, the track's edit list (whose media time is the
/// priming, as ffmpeg and Apple write it), and `totalFrames` is the music's exact length.
/// Seeks are sample-accurate: the unit holding the frame is found from the time-to-sample
/// table, and AAC decodes the unit before it first, for the overlap of its transform.
/// A corrupt unit is played as silence of its length and counted in `errorCounts`.
public final class MP4Decoder: AudioDecoder, DecoderPlugIn {
    /// mpd's name for the decoder of AAC in MP4; Apple Lossless in the same container is
    /// played by the same plug-in.
    public static let name = "faad"
    public static let suffixes = ["m4a", "mp4", "aac"]
    /// A station's ADTS stream is `audio/aac`, `audio/aacp` (HE-AAC) or `audio/x-aac`.
    public static let mimeTypes = ["audio/mp4", "audio/aac", "audio/x-m4a", "audio/aacp", "audio/x-aac"]

    public static func recognizes(_ head: FileHead) -> Bool { head.starts(with: "ftyp", at: 4) || ADTSFrames.starts(head.bytes) }

    /// A source that cannot seek (a station) is ADTS read frame by frame (`ADTSStreamDecoder`).
    public static func open(_ source: ByteSource, keepPictureData: Bool) throws(DecodeError) -> any AudioDecoder {
        guard source.isSeekable else { return try ADTSStreamDecoder(source: source) }
        return try MP4Decoder(source: source, keepPictureData: keepPictureData)
    }

    /// The boxes alone: nothing is decoded. The format is the sample description's, as libfaad
    /// reads it for AAC (the rate it plays at), so a scan and playing say the same.
    public static func metadata(_ source: ByteSource) throws(DecodeError) -> TrackInfo {
        let movie = try parse(source, keepPictureData: false)
        let format: StreamFormat
        let codec: String
        switch movie.entry {
        case .aac(let config, let channels, let rate):
            // The rate libfaad gives, as playing it does: a core rate of 24 kHz or less is
            // doubled, as HE-AAC's SBR may be signalled in the frames alone.
            if let opened = try? AACDecoder(path: source.name, audioSpecificConfig: config) {
                format = opened.format
            } else {
                let asc = AudioSpecificConfig(config)
                format = StreamFormat(sampleRate: asc?.sampleRate ?? rate, channels: asc?.channels ?? channels, bitsPerSample: 16)
            }
            codec = "AAC"
        case .alac(let cookie):
            guard let config = ALACDecoder.Config(cookie: cookie) else {
                throw DecodeError(path: source.name, reason: .badMetadata("ALAC magic cookie of \(cookie.count) bytes"))
            }
            format = StreamFormat(sampleRate: config.sampleRate, channels: config.channels, bitsPerSample: config.bitDepth)
            codec = "ALAC"
        case .other(let what):
            throw DecodeError(path: source.name, reason: .unsupported("\(what) in MP4"))
        }
        let span = MusicSpan(movie, rate: format.sampleRate, dropsFirstUnit: codec == "AAC")
        return TrackInfo(path: source.name, codec: codec, format: format, totalFrames: span.frames,
                         comments: movie.tags.comments, pictures: movie.tags.pictures)
    }

    public let path: String
    public private(set) var info: TrackInfo
    public private(set) var errorCounts = DecodeErrorCounts()

    private let source: ByteSource
    private let codec: any MP4Codec
    private let table: MP4SampleTable
    private let timescale: Int
    private let span: MusicSpan

    /// The sample read buffer: the largest sample and 8 zero bytes.
    private let unit: UnsafeMutableRawBufferPointer
    /// Silence for a unit that does not decode.
    private var silence: [Int32] = []
    /// The next sample to decode, and where it lies when it follows the last one read.
    private var nextSample = 0
    private var nextOffset: UInt64?
    /// Timeline frames before this are not returned (the music's start, or a seek's target).
    private var firstWanted: Int
    /// A block decoded at open, returned by the first `nextBlock`, and its first frame.
    private var pending: UnsafeBufferPointer<Int32>?
    private var pendingStart = 0
    /// The music frame after the last one decoded.
    private var decodedEnd = 0

    /// The frame index of the first frame the next `nextBlock()` returns.
    public var position: Int { pending != nil ? pendingStart : decodedEnd }

    private init(source: ByteSource, keepPictureData: Bool) throws(DecodeError) {
        path = source.name
        self.source = source
        let movie = try Self.parse(source, keepPictureData: keepPictureData)
        switch movie.entry {
        case .aac(let config, _, _): codec = try AACDecoder(path: path, audioSpecificConfig: config)
        case .alac(let cookie): codec = try ALACDecoder(path: path, cookie: cookie)
        case .other(let what): throw DecodeError(path: path, reason: .unsupported("\(what) in MP4"))
        }
        table = movie.table
        timescale = movie.timescale
        span = MusicSpan(movie, rate: codec.format.sampleRate, dropsFirstUnit: codec.dropsFirstUnit)
        firstWanted = span.start
        unit = .allocate(byteCount: table.largestSample + 8, alignment: 8)
        unit.initializeMemory(as: UInt8.self, repeating: 0)
        info = TrackInfo(path: path, codec: codec.codecName, format: codec.format, totalFrames: span.frames,
                         comments: movie.tags.comments, pictures: movie.tags.pictures)
        pending = try decodeNext()
        // The first frames settle the format (libfaad's mono or parametric stereo).
        info.format = codec.format
        if pending == nil, errorCounts.total > 0 { throw DecodeError(path: path, reason: .decodeErrors(errorCounts)) }
        guard pending != nil || span.frames == 0 else { throw DecodeError(path: path, reason: .noAudio) }
    }

    deinit { unit.deallocate() }

    /// Reads the file's boxes, after a quick look that it is MP4 at all.
    static func parse(_ source: ByteSource, keepPictureData: Bool) throws(DecodeError) -> MP4Movie {
        let head = try Decoders.readHead(source)
        guard !head.bytes.isEmpty else { throw DecodeError(path: source.name, reason: .empty) }
        if ADTSFrames.starts(head.bytes) {
            // An `.aac` file's tags are a raw stream's: ID3v2 in front, APE or ID3v1 at the end.
            let layout = try TaggedAudio.read(source, keepPictureData: keepPictureData)
            var movie = try ADTSFrames.scan(source, from: layout.audioStart, to: layout.audioEnd)
            movie.tags.comments = layout.tags.comments
            movie.tags.pictures = layout.tags.pictures
            return movie
        }
        guard recognizes(head) else {
            throw DecodeError(path: source.name, reason: .notFormat("not an MP4 file (no 'ftyp' box)"))
        }
        var demuxer = try MP4Demuxer(source: source, keepPictureData: keepPictureData)
        return try demuxer.parse(from: UInt64(head.offset))
    }

    /// The next decoded frames, interleaved, valid until the next call; nil at the end. At the
    /// end, throws if the file proved truncated or held corrupt units.
    public func nextBlock() throws(DecodeError) -> UnsafeBufferPointer<Int32>? {
        if let block = pending {
            pending = nil
            return block
        }
        if let block = try decodeNext() { return block }
        if errorCounts.total > 0 { throw DecodeError(path: path, reason: .decodeErrors(errorCounts)) }
        return nil
    }

    /// Decodes units until some frames of the music come out; nil at the music's end.
    private func decodeNext() throws(DecodeError) -> UnsafeBufferPointer<Int32>? {
        let channels = codec.format.channels
        while nextSample < table.sampleCount {
            let start = span.timeline(table.tick(of: nextSample), timescale: timescale)
            guard start < span.end else { return nil }
            let frames = try decodeUnit(nextSample)
            nextSample += 1
            let count = frames.count / channels
            let lo = max(start, firstWanted), hi = min(start + count, span.end)
            guard lo < hi else { continue }
            pendingStart = lo - span.start
            decodedEnd = hi - span.start
            return UnsafeBufferPointer(rebasing: frames[((lo - start) * channels)..<((hi - start) * channels)])
        }
        return nil
    }

    /// Reads and decodes sample `index`; a unit that does not decode is silence of its length.
    private func decodeUnit(_ index: Int) throws(DecodeError) -> UnsafeBufferPointer<Int32> {
        let size = table.size(of: index)
        let offset = nextOffset.flatMap { table.startsChunk(index) ? nil : $0 } ?? table.offset(of: index)
        if source.offset != offset { try source.seek(to: offset) }
        var got = 0
        while got < size {
            let n = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: unit[got..<size]))
            if n == 0 { break }
            got += n
        }
        guard got == size else {
            throw DecodeError(path: path, reason: .truncated(decodedFrames: decodedEnd, expectedFrames: span.frames))
        }
        nextOffset = offset + UInt64(size)
        for i in size..<(size + 8) { unit[i] = 0 }
        do {
            return try codec.decode(UnsafeRawBufferPointer(rebasing: unit[min(table.unitHeaderSize, size)..<size]))
        } catch {
            guard case .decoder = error.reason else { throw error }
            errorCounts.unparseable += 1
            let frames = span.timeline(table.tick(of: index + 1), timescale: timescale)
                - span.timeline(table.tick(of: index), timescale: timescale)
            // No codec's unit lasts longer than ALAC's longest frame.
            guard frames <= 65536 else {
                throw DecodeError(path: path, reason: .badMetadata("sample \(index) lasts \(frames) frames"))
            }
            let count = max(0, frames) * codec.format.channels
            if silence.count < count { silence = [Int32](repeating: 0, count: count) }
            return silence.withUnsafeBufferPointer { UnsafeBufferPointer(rebasing: $0[0..<count]) }
        }
    }

    /// Positions the decoder so that the next block starts exactly at `frame`.
    public func seek(toFrame frame: Int) throws(DecodeError) {
        guard frame >= 0, frame <= span.frames else { throw DecodeError(path: path, reason: .seekFailed(frame: frame)) }
        pending = nil
        decodedEnd = frame
        let target = span.start + frame
        firstWanted = target
        nextOffset = nil
        guard frame < span.frames else {
            nextSample = table.sampleCount
            return
        }
        var index = table.sample(containing: rescale(target, from: codec.format.sampleRate, to: timescale))
        while index > 0 && span.timeline(table.tick(of: index), timescale: timescale) > target { index -= 1 }
        while index + 1 < table.sampleCount && span.timeline(table.tick(of: index + 1), timescale: timescale) <= target { index += 1 }
        try codec.reset()
        nextSample = codec.dropsFirstUnit ? max(0, index - 1) : index
    }
}

/// Where the music lies on the track's timeline (frames at the decoded rate from the start
/// of the first unit): after the encoder's priming, before its padding.
struct MusicSpan {
    var start: Int
    var end: Int
    /// Decoded frames per second.
    var rate: Int

    var frames: Int { end - start }

    init(_ movie: MP4Movie, rate: Int, dropsFirstUnit: Bool) {
        self.rate = rate
        let table = movie.table
        let ticks = movie.timescale
        func timeline(_ tick: Int) -> Int { rescale(tick, from: ticks, to: rate) }
        var start = 0
        var end = timeline(table.totalTicks)
        if let gapless = movie.tags.gapless {
            start = gapless.priming
            end = min(end, gapless.priming + gapless.frames)
        } else if let edit = movie.edit {
            start = timeline(min(edit.mediaTime, table.totalTicks))
            if edit.duration > 0, movie.movieTimescale > 0, edit.mediaTime < table.totalTicks {
                // The edit's length is in the movie's ticks, often milliseconds: it shortens
                // the music only where it is exact or clearly shorter than the samples.
                let lasts = rescale(edit.duration, from: movie.movieTimescale, to: ticks)
                let tolerance = movie.movieTimescale == ticks ? 0 : ticks / movie.movieTimescale + 1
                if edit.mediaTime + lasts + tolerance < table.totalTicks {
                    end = min(end, timeline(edit.mediaTime + lasts))
                }
            }
        }
        // libfaad gives nothing for the first unit: the music cannot start before the second.
        if dropsFirstUnit && table.sampleCount > 1 { start = max(start, timeline(table.tick(of: 1))) }
        self.start = start
        self.end = max(end, start)
    }

    func timeline(_ tick: Int, timescale: Int) -> Int { rescale(tick, from: timescale, to: rate) }
}

/// `value` (≥ 0) counted at `from` per second, counted at `to` per second, rounded down; huge
/// values stop at `Int.max / 4` instead of overflowing.
func rescale(_ value: Int, from: Int, to: Int) -> Int {
    guard from != to else { return value }
    guard from > 0, to >= 0, value >= 0 else { return 0 }
    let (high, low) = value.multipliedFullWidth(by: to)
    guard high < from else { return Int.max / 4 }
    return min(from.dividingFullWidth((high, low)).quotient, Int.max / 4)
}

/// The fields of an MPEG-4 AudioSpecificConfig that say the format.
struct AudioSpecificConfig {
    var objectType: Int
    var sampleRate: Int
    var channels: Int

    static let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    init?(_ bytes: [UInt8]) {
        var bits = 0
        func read(_ n: Int) -> Int? {
            var v = 0
            for _ in 0..<n {
                guard bits / 8 < bytes.count else { return nil }
                v = v << 1 | Int(bytes[bits / 8] >> (7 - UInt8(bits % 8)) & 1)
                bits += 1
            }
            return v
        }
        func readRate() -> Int? {
            guard let index = read(4) else { return nil }
            return index == 15 ? read(24) : Self.rates.indices.contains(index) ? Self.rates[index] : nil
        }
        guard var type = read(5) else { return nil }
        if type == 31 { type = 32 + (read(6) ?? 0) }
        guard var rate = readRate(), let channels = read(4) else { return nil }
        // Explicit SBR (5) and PS (29): the output rate follows.
        if type == 5 || type == 29, let extended = readRate() { rate = extended }
        objectType = type
        sampleRate = rate
        self.channels = channels == 7 ? 8 : channels
    }
}
