import COpusFile
import TonearmAudio

/// Decodes Ogg Opus with libopusfile into interleaved, left-justified 24-bit frames, always
/// at 48 kHz (Opus' own rate, whatever rate the encoder was given).
///
/// Opus decodes to floats (`op_read_float`, as `opusdec --float` writes them); they are
/// rounded to 24 bits, within 1 LSB of that float output. libopusfile removes the pre-skip and
/// the end padding by the granule positions (so `totalFrames`, `op_pcm_total`, is exact) and
/// applies the header's output gain.
///
/// A link that is one mono or stereo stream (nearly every file) is decoded with that stream's
/// own decoder (`opus_decode_float`) rather than through the multistream layer, which gives
/// the same samples: Debian's libopus looks up the CPU's features (`cpuid`, slow in a virtual
/// machine) several times in every multistream call.
///
/// R128_TRACK_GAIN and R128_ALBUM_GAIN (Q7.8 dB, relative to −23 LUFS and to the output gain
/// already applied) become REPLAYGAIN_TRACK_GAIN and REPLAYGAIN_ALBUM_GAIN by adding 5 dB
/// (ReplayGain's reference is −18 LUFS), as mpd does, unless the file has those already.
/// A chained stream whose next link has another channel count stops with
/// `DecodeError.Reason.formatChange`; links of one format play on as one track, and
/// `info.comments` become each link's own as it starts (`tagChanges` counts them).
public final class OpusDecoder: AudioDecoder, DecoderPlugIn {
    public static let name = "opus"
    public static let suffixes = ["opus"]
    public static let mimeTypes = ["audio/ogg", "audio/opus"]

    public static func recognizes(_ head: FileHead) -> Bool { head.startsOggStream(with: "OpusHead") }

    public static func open(_ source: ByteSource, keepPictureData: Bool) throws(DecodeError) -> any AudioDecoder {
        try OpusDecoder(source: source, keepPictureData: keepPictureData)
    }

    public static let sampleRate = 48000
    /// The largest Opus packet: 120 ms at 48 kHz.
    private static let blockFrames = 5760

    public let path: String
    public private(set) var info: TrackInfo
    public private(set) var position = 0
    public private(set) var errorCounts = DecodeErrorCounts()
    public private(set) var tagChanges = 0
    private let keepPictureData: Bool

    private let input: OggInput
    private let file: OpaquePointer
    private let channelOrder: [Int]
    private let samples: UnsafeMutablePointer<Float>
    private let buffer: UnsafeMutablePointer<Int32>
    private var failure: DecodeError?
    private var atEnd = false
    /// The link the last frames came from, and whether a hole came after them.
    private var currentLink: Int32 = 0
    private var holePending = false
    /// Frames still to decode and drop before `position` after a seek.
    private var skipFrames = 0
    /// How far before a seek's frame decoding starts, beyond libopusfile's own 80 ms, so the
    /// decoder's state has converged to what playing through gives (within about −70 dB).
    private static let seekPreRoll = 9600
    /// The stream decoder inside libopusfile's multistream decoder for a single-stream link,
    /// found once per decoder and link (`singleStream`).
    private var streamDecoder: OpaquePointer?
    private var streamDecoderOwner: (decoder: OpaquePointer, link: Int32)?

    /// Opens `path`. `keepPictureData` keeps the image bytes of METADATA_BLOCK_PICTURE.
    public convenience init(path: String, keepPictureData: Bool = false) throws(DecodeError) {
        try self.init(source: try FileSource(path: path), keepPictureData: keepPictureData)
    }

    /// Decodes from `source`, which it owns from here on.
    public init(source: ByteSource, keepPictureData: Bool = false) throws(DecodeError) {
        let path = source.name
        self.path = path
        let input = try OggInput(source)
        self.input = input
        let head = input.head
        guard !head.bytes.isEmpty || head.id3v2Size > 0 else { throw DecodeError(path: path, reason: .empty) }
        guard Self.recognizes(head) else {
            let what = head.startsOggStream(with: "\u{1}vorbis") ? "an Ogg Vorbis file" : head.starts(with: "OggS") ? "an Ogg file of another codec" : "not an Ogg file"
            throw DecodeError(path: path, reason: .notFormat("not an Ogg Opus file (\(what))"))
        }
        var callbacks = OpusFileCallbacks(read: opusRead, seek: opusSeek, tell: opusTell, close: nil)
        var status: Int32 = 0
        let opened = input.initialBytes.withUnsafeBufferPointer { initial in
            op_open_callbacks(Unmanaged.passUnretained(input).toOpaque(), &callbacks, initial.baseAddress, initial.count, &status)
        }
        guard let opened else {
            throw DecodeError(path: path, reason: input.failure?.reason ?? .badMetadata(oggLibraryError(Int(status))))
        }
        let channels = Int(op_channel_count(opened, -1))
        guard (1...8).contains(channels) else {
            op_free(opened)
            throw DecodeError(path: path, reason: .unsupported("Opus stream of \(channels) channels"))
        }
        var total: Int?
        if op_seekable(opened) != 0 {
            // The links that play: those of the first link's channel count (a change stops playing).
            var frames = 0
            for link in 0..<op_link_count(opened) {
                guard op_channel_count(opened, link) == Int32(channels) else { break }
                frames += Int(op_pcm_total(opened, link))
            }
            guard frames > 0 else {
                op_free(opened)
                throw DecodeError(path: path, reason: .noAudio)
            }
            total = frames
        }
        file = opened
        channelOrder = wavOrder(fromVorbisOrder: channels)
        samples = .allocate(capacity: Self.blockFrames * channels)
        buffer = .allocate(capacity: Self.blockFrames * channels)

        self.keepPictureData = keepPictureData
        let tags = Self.comments(of: opened, link: -1, keepPictureData: keepPictureData)
        let format = StreamFormat(sampleRate: Self.sampleRate, channels: channels, bitsPerSample: 24)
        info = TrackInfo(path: path, codec: "Opus", format: format, totalFrames: total, comments: tags.comments,
                         pictures: tags.pictures)
        // `self` outlives the file: deinit frees it.
        op_set_decode_callback(opened, opusDecode, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        op_free(file)
        samples.deallocate()
        buffer.deallocate()
    }

    /// The tags of `link` (-1: the current one), R128 gains as ReplayGain.
    private static func comments(of file: OpaquePointer, link: Int32, keepPictureData: Bool) -> VorbisComments {
        var tags = VorbisComments(keepPictureData: keepPictureData)
        if let t = op_tags(file, link)?.pointee {
            tags.add(count: Int(t.comments), entries: t.user_comments, lengths: t.comment_lengths)
        }
        tags.finish()
        addReplayGain(from: &tags)
        return tags
    }

    /// R128_TRACK_GAIN / R128_ALBUM_GAIN as REPLAYGAIN_TRACK_GAIN / REPLAYGAIN_ALBUM_GAIN,
    /// where the file has no ReplayGain of its own.
    static func addReplayGain(from tags: inout VorbisComments) {
        for (r128, replayGain) in [("R128_TRACK_GAIN", "REPLAYGAIN_TRACK_GAIN"), ("R128_ALBUM_GAIN", "REPLAYGAIN_ALBUM_GAIN")] {
            guard tags.value(replayGain) == nil, let text = tags.value(r128), let q78 = Int16(text) else { continue }
            tags.comments.append((replayGain, decibels(Double(q78) / 256 + 5)))
        }
    }

    /// "-6.50 dB": ReplayGain's way of writing a gain.
    static func decibels(_ gain: Double) -> String {
        let hundredths = Int((abs(gain) * 100).rounded())
        let fraction = hundredths % 100
        return "\(gain < 0 && hundredths > 0 ? "-" : "")\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction) dB"
    }

    /// The decoder of the only stream of `link` when the link is one mono or stereo stream with
    /// its channels in order, else nil (libopusfile then decodes the packet itself).
    fileprivate func singleStream(of decoder: OpaquePointer, link: Int32) -> OpaquePointer? {
        if let owner = streamDecoderOwner, owner.decoder == decoder, owner.link == link { return streamDecoder }
        streamDecoderOwner = (decoder, link)
        streamDecoder = nil
        guard let head = op_head(file, link)?.pointee, head.stream_count == 1,
              head.channel_count == 1 + head.coupled_count,
              withUnsafeBytes(of: head.mapping, { $0.prefix(Int(head.channel_count)).elementsEqual(0..<UInt8(head.channel_count)) })
        else { return nil }
        streamDecoder = copusfile_stream_decoder(decoder, 0)
        return streamDecoder
    }

    public func nextBlock() throws(DecodeError) -> UnsafeBufferPointer<Int32>? {
        if let failure { throw failure }
        guard !atEnd else { return nil }
        let channels = info.format.channels
        var link: Int32 = 0
        while true {
            let n = op_read_float(file, samples, Int32(Self.blockFrames * channels), &link)
            if let error = input.failure { return try fail(error.reason) }
            if n == OP_HOLE {
                holePending = true
                continue
            }
            if n < 0 { return try fail(.decoder(oggLibraryError(Int(n)))) }
            // A source that cannot seek may report a hole where one link ends and the next
            // begins; no frame is lost there. Any other hole is lost data.
            if holePending && (n == 0 || link == currentLink) { errorCounts.lostSync += 1 }
            holePending = false
            let linkStarts = link != currentLink
            currentLink = link
            if n == 0 { return try end() }
            let linkChannels = Int(op_channel_count(file, link))
            if linkChannels != channels {
                return try fail(.formatChange("channel count (\(channels) → \(linkChannels) at frame \(position))"))
            }
            if linkStarts {
                // A new link's tags replace the last one's.
                let tags = Self.comments(of: file, link: link, keepPictureData: keepPictureData)
                info.comments = tags.comments
                info.pictures = tags.pictures
                tagChanges += 1
            }
            if skipFrames >= Int(n) {
                skipFrames -= Int(n)
                continue
            }
            let skipped = skipFrames
            skipFrames = 0
            let frames = Int(n) - skipped
            if channels <= 2 {
                // Already in order: one pass over the samples, which the compiler vectorises.
                let from = samples + skipped * channels
                for i in 0..<(frames * channels) { buffer[i] = leftJustified24(from[i]) }
            } else {
                for c in 0..<channels {
                    var from = samples + skipped * channels + channelOrder[c]
                    var out = buffer + c
                    for _ in 0..<frames {
                        out.pointee = leftJustified24(from.pointee)
                        out += channels
                        from += channels
                    }
                }
            }
            position += frames
            return UnsafeBufferPointer(start: buffer, count: frames * channels)
        }
    }

    private func fail(_ reason: DecodeError.Reason) throws(DecodeError) -> UnsafeBufferPointer<Int32>? {
        let error = DecodeError(path: path, reason: reason)
        failure = error
        throw error
    }

    /// The end of the stream: whole, or cut short, or with gaps.
    private func end() throws(DecodeError) -> UnsafeBufferPointer<Int32>? {
        atEnd = true
        if let reason = input.truncation(lastPageEnd: op_raw_tell(file), decoded: position) {
            return try fail(reason)
        }
        if errorCounts.total > 0 { return try fail(.decodeErrors(errorCounts)) }
        return nil
    }

    /// Positions the decoder so that the next block starts exactly at `frame`. libopusfile
    /// bisects by granule position and starts decoding 80 ms before where it is asked to; it is
    /// asked to go `seekPreRoll` frames earlier still, and those frames are dropped.
    public func seek(toFrame frame: Int) throws(DecodeError) {
        guard op_seekable(file) != 0, let total = info.totalFrames, (0...total).contains(frame) else {
            throw DecodeError(path: path, reason: .seekFailed(frame: frame))
        }
        let start = frame == total ? frame : max(0, frame - Self.seekPreRoll)
        let status = frame == total ? 0 : op_pcm_seek(file, ogg_int64_t(start))
        if let error = input.failure { throw error }
        guard status == 0 else { throw DecodeError(path: path, reason: .seekFailed(frame: frame)) }
        position = frame
        skipFrames = frame - start
        failure = nil
        atEnd = frame == total
        holePending = false
        currentLink = op_current_link(file)
    }
}

private func oggInput(_ stream: UnsafeMutableRawPointer?) -> OggInput {
    Unmanaged<OggInput>.fromOpaque(stream!).takeUnretainedValue()
}

// The source's side of libopusfile's stream: read, seek and tell.

private let opusRead: op_read_func = { stream, buffer, count in
    Int32(oggInput(stream).read(buffer, Int(count)))
}

private let opusSeek: op_seek_func = { stream, offset, whence in
    oggInput(stream).seek(offset, whence: whence) ? 0 : -1
}

private let opusTell: op_tell_func = { stream in
    oggInput(stream).tell
}

/// libopusfile's decode step for one packet: through the stream's own decoder when the link
/// is a single stream, else left to libopusfile. 0 once all `frames` are decoded.
private let opusDecode: op_decode_cb_func = { context, decoder, pcm, packet, frames, channels, format, link in
    guard let context, let decoder, let pcm, let packet, format == OP_DEC_FORMAT_FLOAT,
          let stream = Unmanaged<OpusDecoder>.fromOpaque(context).takeUnretainedValue().singleStream(of: decoder, link: link)
    else { return OP_DEC_USE_DEFAULT }
    let decoded = opus_decode_float(stream, packet.pointee.packet, opus_int32(packet.pointee.bytes),
                                    pcm.assumingMemoryBound(to: Float.self), frames, 0)
    return decoded < 0 ? decoded : decoded == frames ? 0 : OPUS_INTERNAL_ERROR
}
