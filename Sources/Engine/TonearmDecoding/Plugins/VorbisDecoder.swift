import CVorbisFile
import TonearmAudio

#if canImport(Glibc)
import Glibc
#endif

/// Decodes Ogg Vorbis with libvorbisfile into interleaved, left-justified 24-bit frames.
///
/// Vorbis decodes to floats; they are rounded to 24 bits (`ov_read_float`), not to the 16 bits
/// `oggdec` and `ov_read` give, so volume and ReplayGain work on the decoder's precision. The
/// 16 high bits round to what `oggdec` writes, within 1 LSB.
///
/// libvorbisfile trims the encoder's priming and padding by the granule positions, so the
/// frames are exactly the music and `totalFrames` (a seekable source's `ov_pcm_total`) is
/// exact. A chained stream whose next link has another rate or channel count stops with
/// `DecodeError.Reason.formatChange`; links of one format play on as one track, and `info.comments`
/// become each link's own as it starts (`tagChanges` counts them). Gaps in the
/// data (lost pages) are counted in `errorCounts` and reported at the end.
public final class VorbisDecoder: AudioDecoder, DecoderPlugIn {
    public static let name = "vorbis"
    public static let suffixes = ["ogg", "oga"]
    public static let mimeTypes = ["audio/ogg", "audio/vorbis", "application/ogg"]

    public static func recognizes(_ head: FileHead) -> Bool { head.startsOggStream(with: "\u{1}vorbis") }

    public static func open(_ source: ByteSource, keepPictureData: Bool) throws(DecodeError) -> any AudioDecoder {
        try VorbisDecoder(source: source, keepPictureData: keepPictureData)
    }

    public let path: String
    public private(set) var info: TrackInfo
    public private(set) var position = 0
    public private(set) var errorCounts = DecodeErrorCounts()
    public private(set) var tagChanges = 0
    private let keepPictureData: Bool

    fileprivate let input: OggInput
    private let file: UnsafeMutablePointer<OggVorbis_File>
    private let channelOrder: [Int]
    private let buffer: UnsafeMutablePointer<Int32>
    private static let blockFrames = 4096
    private var failure: DecodeError?
    private var atEnd = false
    /// The link the last frames came from, and whether a hole came after them.
    private var currentLink: Int32 = 0
    private var holePending = false

    /// Opens `path`. `keepPictureData` keeps the image bytes of METADATA_BLOCK_PICTURE.
    public convenience init(path: String, keepPictureData: Bool = false) throws(DecodeError) {
        try self.init(source: try FileSource(path: path), keepPictureData: keepPictureData)
    }

    /// Decodes from `source`, which it owns from here on.
    public init(source: ByteSource, keepPictureData: Bool = false) throws(DecodeError) {
        let path = source.name
        self.path = path
        self.keepPictureData = keepPictureData
        let input = try OggInput(source)
        self.input = input
        let head = input.head
        guard !head.bytes.isEmpty || head.id3v2Size > 0 else { throw DecodeError(path: path, reason: .empty) }
        // A quick look at the first packet, so another Ogg codec (Opus, FLAC) is named at once.
        guard Self.recognizes(head) else {
            let what = head.startsOggStream(with: "OpusHead") ? "an Ogg Opus file" : head.starts(with: "OggS") ? "an Ogg file of another codec" : "not an Ogg file"
            throw DecodeError(path: path, reason: .notFormat("not an Ogg Vorbis file (\(what))"))
        }
        let file = UnsafeMutablePointer<OggVorbis_File>.allocate(capacity: 1)
        self.file = file
        let callbacks = ov_callbacks(read_func: vorbisRead, seek_func: vorbisSeek, close_func: nil, tell_func: vorbisTell)
        let status = input.initialBytes.withUnsafeBufferPointer { initial in
            ov_open_callbacks(Unmanaged.passUnretained(input).toOpaque(), file,
                              initial.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                              initial.count, callbacks)
        }
        guard status == 0, let first = ov_info(file, -1)?.pointee else {
            file.deallocate()
            throw DecodeError(path: path, reason: input.failure?.reason ?? .badMetadata(oggLibraryError(Int(status))))
        }
        let channels = Int(first.channels)
        guard (1...8).contains(channels), first.rate > 0 else {
            ov_clear(file)
            file.deallocate()
            throw DecodeError(path: path, reason: .unsupported("Vorbis stream of \(channels) channels at \(first.rate) Hz"))
        }
        let format = StreamFormat(sampleRate: first.rate, channels: channels, bitsPerSample: 24)
        channelOrder = wavOrder(fromVorbisOrder: channels)
        buffer = .allocate(capacity: Self.blockFrames * channels)

        var tags = VorbisComments(keepPictureData: keepPictureData)
        if let vc = ov_comment(file, -1)?.pointee {
            tags.add(count: Int(vc.comments), entries: vc.user_comments, lengths: vc.comment_lengths)
        }
        tags.finish()
        info = TrackInfo(path: path, codec: "Vorbis", format: format, totalFrames: nil,
                         comments: tags.comments, pictures: tags.pictures)
        if ov_seekable(file) != 0 {
            // The links that play: those of the first link's format (a change stops playing).
            let links = Int(ov_streams(file))
            var total = 0
            for link in 0..<links {
                guard let vi = ov_info(file, Int32(link))?.pointee, vi.rate == first.rate, vi.channels == first.channels else { break }
                total += Int(ov_pcm_total(file, Int32(link)))
            }
            info.totalFrames = total
            // Fully initialised by now: deinit releases the file and the buffer.
            guard total > 0 else { throw DecodeError(path: path, reason: .noAudio) }
        }
    }

    deinit {
        ov_clear(file)
        file.deallocate()
        buffer.deallocate()
    }

    public func nextBlock() throws(DecodeError) -> UnsafeBufferPointer<Int32>? {
        if let failure { throw failure }
        guard !atEnd else { return nil }
        let channels = info.format.channels
        var pcm: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
        var link: Int32 = 0
        while true {
            let n = ov_read_float(file, &pcm, Int32(Self.blockFrames), &link)
            if let error = input.failure { return try fail(error.reason) }
            if n == OV_HOLE {
                holePending = true
                continue
            }
            if n < 0 { return try fail(.decoder(oggLibraryError(Int(n)))) }
            // A source that cannot seek reports a hole where one link ends and the next begins;
            // no frame is lost there. Any other hole is lost data.
            if holePending && (n == 0 || link == currentLink) { errorCounts.lostSync += 1 }
            holePending = false
            let linkStarts = link != currentLink
            currentLink = link
            if n == 0 { return try end() }
            if let vi = ov_info(file, link)?.pointee, vi.rate != info.format.sampleRate || Int(vi.channels) != channels {
                let change = vi.rate != info.format.sampleRate
                    ? "sample rate (\(info.format.sampleRate) Hz → \(vi.rate) Hz at frame \(position))"
                    : "channel count (\(channels) → \(vi.channels) at frame \(position))"
                return try fail(.formatChange(change))
            }
            if linkStarts { takeComments(of: link) }
            guard let pcm else { return try fail(.decoder("no samples")) }
            let frames = Int(n)
            if channels == 2 {
                // Interleaved in one pass, which the compiler vectorises.
                let left = pcm[0]!, right = pcm[1]!
                for i in 0..<frames {
                    buffer[2 * i] = leftJustified24(left[i])
                    buffer[2 * i + 1] = leftJustified24(right[i])
                }
            } else {
                for c in 0..<channels {
                    let source = pcm[channelOrder[c]]!
                    var out = buffer + c
                    for i in 0..<frames {
                        out.pointee = leftJustified24(source[i])
                        out += channels
                    }
                }
            }
            position += frames
            return UnsafeBufferPointer(start: buffer, count: frames * channels)
        }
    }

    /// A new link's tags replace the last one's.
    private func takeComments(of link: Int32) {
        guard let vc = ov_comment(file, link)?.pointee else { return }
        var tags = VorbisComments(keepPictureData: keepPictureData)
        tags.add(count: Int(vc.comments), entries: vc.user_comments, lengths: vc.comment_lengths)
        tags.finish()
        info.comments = tags.comments
        tagChanges += 1
    }

    private func fail(_ reason: DecodeError.Reason) throws(DecodeError) -> UnsafeBufferPointer<Int32>? {
        let error = DecodeError(path: path, reason: reason)
        failure = error
        throw error
    }

    /// The end of the stream: whole, or cut short, or with gaps.
    private func end() throws(DecodeError) -> UnsafeBufferPointer<Int32>? {
        atEnd = true
        if let reason = input.truncation(lastPageEnd: Int64(ov_raw_tell(file)), decoded: position) {
            return try fail(reason)
        }
        if errorCounts.total > 0 { return try fail(.decodeErrors(errorCounts)) }
        return nil
    }

    /// Positions the decoder so that the next block starts exactly at `frame` (libvorbisfile
    /// bisects by granule position and decodes up to the frame).
    public func seek(toFrame frame: Int) throws(DecodeError) {
        guard ov_seekable(file) != 0, let total = info.totalFrames, (0...total).contains(frame) else {
            throw DecodeError(path: path, reason: .seekFailed(frame: frame))
        }
        let status = ov_pcm_seek(file, ogg_int64_t(frame))
        if let error = input.failure { throw error }
        guard status == 0 else { throw DecodeError(path: path, reason: .seekFailed(frame: frame)) }
        position = frame
        failure = nil
        atEnd = false
        holePending = false
        currentLink = file.pointee.current_link
    }
}

private func oggInput(_ datasource: UnsafeMutableRawPointer?) -> OggInput {
    Unmanaged<OggInput>.fromOpaque(datasource!).takeUnretainedValue()
}

// The source's side of libvorbisfile's stream: read, seek and tell, as stdio's.

private let vorbisRead: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int = { buffer, size, count, datasource in
    let n = oggInput(datasource).read(buffer, size * count)
    // libvorbisfile tells an error from the end by errno after a read of 0.
    errno = n < 0 ? EIO : 0
    return max(0, n) / max(1, size)
}

private let vorbisSeek: @convention(c) (UnsafeMutableRawPointer?, ogg_int64_t, Int32) -> Int32 = { datasource, offset, whence in
    oggInput(datasource).seek(offset, whence: whence) ? 0 : -1
}

private let vorbisTell: @convention(c) (UnsafeMutableRawPointer?) -> Int = { datasource in
    Int(oggInput(datasource).tell)
}
