import CFLAC
import TonearmAudio

/// Decodes one FLAC file with libFLAC into interleaved, left-justified `Int32` frames.
///
/// Opening reads all metadata and decodes the first audio frame, so `info.format` is what the
/// frames really are, whatever STREAMINFO claims. Buffers are sized from each decoded frame.
/// A change of sample rate or channel count mid-stream, or a rise in bit depth, stops decoding
/// with `DecodeError.Reason.formatChange`; a drop in bit depth is exact and plays.
/// libFLAC's error callbacks (lost sync, bad header, CRC mismatch) are counted in
/// `errorCounts`; libFLAC replaces a frame with a bad CRC by silence and carries on.
public final class FLACDecoder: AudioDecoder, DecoderPlugIn {
    public static let name = "flac"
    public static let suffixes = ["flac"]
    public static let mimeTypes = ["audio/flac", "audio/x-flac"]

    public static func recognizes(_ head: FileHead) -> Bool { head.starts(with: "fLaC") }

    public static func open(_ source: ByteSource, keepPictureData: Bool) throws(DecodeError) -> any AudioDecoder {
        try FLACDecoder(source: source, keepPictureData: keepPictureData, metadataOnly: false)
    }

    /// STREAMINFO, comments and pictures (no audio is decoded: the format is STREAMINFO's).
    public static func metadata(_ source: ByteSource) throws(DecodeError) -> TrackInfo {
        try FLACDecoder(source: source, keepPictureData: false, metadataOnly: true).info
    }

    public let path: String
    public private(set) var info: TrackInfo
    /// STREAMINFO's smallest and largest block, in frames.
    public private(set) var minBlockSize = 0
    public private(set) var maxBlockSize = 0

    private let decoder: UnsafeMutablePointer<FLAC__StreamDecoder>
    private var keepPictureData: Bool

    /// The file, read through libFLAC's stream callbacks.
    fileprivate let source: ByteSource

    // Filled by the callbacks.
    private var streamInfo: (format: StreamFormat, total: Int?, minBlock: Int, maxBlock: Int)?
    private var comments: [(name: String, value: String)] = []
    private var pictures: [Picture] = []
    private var establishedFormat: StreamFormat?
    private var firstBlockSize: Int?
    private var failure: DecodeError.Reason?
    public private(set) var errorCounts = DecodeErrorCounts()

    // Decoded, not yet taken frames.
    private var buffer: UnsafeMutablePointer<Int32>
    private var bufferCapacity: Int
    private var bufferedFrames = 0
    /// Index of the first frame in `buffer` (after a seek, the frame sought to).
    private var bufferStartFrame = 0
    /// Index of the next frame libFLAC will deliver.
    private var nextFrame = 0
    private var reachedEnd = false

    /// Opens `path`. `keepPictureData` keeps the image bytes of PICTURE blocks.
    public convenience init(path: String, keepPictureData: Bool = false) throws(DecodeError) {
        try self.init(source: try FileSource(path: path), keepPictureData: keepPictureData, metadataOnly: false)
    }

    /// Decodes from `source`, which it owns from here on.
    private init(source: ByteSource, keepPictureData: Bool, metadataOnly: Bool) throws(DecodeError) {
        path = source.name
        self.keepPictureData = keepPictureData
        self.source = source
        let head = try Decoders.readHead(source)
        guard !head.bytes.isEmpty || head.id3v2Size > 0 else { throw DecodeError(path: path, reason: .empty) }
        // A quick look at the first bytes, so a non-FLAC file fails at once instead of libFLAC
        // searching all of it for a frame sync. libFLAC skips an ID3v2 tag in front itself.
        guard Self.recognizes(head) else {
            throw DecodeError(path: path, reason: .notFormat("not a FLAC file (no 'fLaC' stream marker)"))
        }
        guard let d = FLAC__stream_decoder_new() else {
            throw DecodeError(path: path, reason: .decoder("cannot allocate a decoder"))
        }
        decoder = d
        // Grown to each frame's size as frames come; none come when only metadata is read.
        bufferCapacity = metadataOnly ? 0 : 4096 * 2
        buffer = .allocate(capacity: bufferCapacity)
        let unknown = StreamFormat(sampleRate: 0, channels: 0, bitsPerSample: 0)
        info = TrackInfo(path: path, codec: "FLAC", format: unknown, totalFrames: nil)

        FLAC__stream_decoder_set_metadata_respond(d, FLAC__METADATA_TYPE_VORBIS_COMMENT)
        FLAC__stream_decoder_set_metadata_respond(d, FLAC__METADATA_TYPE_PICTURE)
        let status = FLAC__stream_decoder_init_stream(d, flacRead, flacSeek, flacTell, flacLength, flacEOF,
                                                      flacWrite, flacMetadata, flacError,
                                                      Unmanaged.passUnretained(self).toOpaque())
        guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else {
            // Fully initialised by now: deinit releases the decoder and the buffer.
            throw DecodeError(path: path, reason: .decoder("initialisation failed (status \(status.rawValue))"))
        }
        try openStream(metadataOnly: metadataOnly)
    }

    deinit {
        FLAC__stream_decoder_finish(decoder)
        FLAC__stream_decoder_delete(decoder)
        buffer.deallocate()
    }

    /// Reads metadata and the first frame (or only the metadata).
    private func openStream(metadataOnly: Bool) throws(DecodeError) {
        guard FLAC__stream_decoder_process_until_end_of_metadata(decoder) != 0, let streamInfo else {
            throw DecodeError(path: path, reason: failure ?? .badMetadata("no STREAMINFO block"))
        }
        info.headerFormat = streamInfo.format
        info.totalFrames = streamInfo.total
        minBlockSize = streamInfo.minBlock
        maxBlockSize = streamInfo.maxBlock
        info.comments = comments
        info.pictures = pictures
        if metadataOnly {
            guard streamInfo.format.sampleRate > 0, streamInfo.format.channels > 0 else {
                throw DecodeError(path: path, reason: .badMetadata("STREAMINFO gives no sample rate or channels"))
            }
            info.format = streamInfo.format
            return
        }
        try fill()
        guard let establishedFormat else {
            if let failure { throw DecodeError(path: path, reason: failure) }
            if errorCounts.total > 0 { throw DecodeError(path: path, reason: .decodeErrors(errorCounts)) }
            throw DecodeError(path: path, reason: .noAudio)
        }
        info.format = establishedFormat
        // A STREAMINFO whose rate disagrees with the frames would make the duration wrong.
        if streamInfo.format.sampleRate != establishedFormat.sampleRate { info.totalFrames = nil }
    }

    /// Decodes until at least one frame is buffered, the stream ends, or decoding fails.
    private func fill() throws(DecodeError) {
        while bufferedFrames == 0 && !reachedEnd {
            let ok = FLAC__stream_decoder_process_single(decoder) != 0
            if let failure { throw DecodeError(path: path, reason: failure) }
            let state = FLAC__stream_decoder_get_state(decoder)
            if state == FLAC__STREAM_DECODER_END_OF_STREAM {
                reachedEnd = true
            } else if !ok {
                throw DecodeError(path: path, reason: .decoder(Self.describe(state)))
            }
        }
    }

    /// The next decoded frames, interleaved, valid until the next call; nil at the end.
    /// At the end, throws if the file proved truncated or corrupt.
    public func nextBlock() throws(DecodeError) -> UnsafeBufferPointer<Int32>? {
        try fill()
        guard bufferedFrames > 0, let format = establishedFormat else {
            if let total = info.totalFrames, nextFrame < total {
                throw DecodeError(path: path, reason: .truncated(decodedFrames: nextFrame, expectedFrames: total))
            }
            if errorCounts.total > 0 { throw DecodeError(path: path, reason: .decodeErrors(errorCounts)) }
            return nil
        }
        let block = UnsafeBufferPointer(start: buffer, count: bufferedFrames * format.channels)
        bufferedFrames = 0
        return block
    }

    /// Frame index of the first frame the next `nextBlock()` returns.
    public var position: Int { bufferedFrames > 0 ? bufferStartFrame : nextFrame }

    /// Positions the decoder so that the next block starts exactly at `frame`. Works without a
    /// seek table (libFLAC bisects the file).
    public func seek(toFrame frame: Int) throws(DecodeError) {
        if let total = info.totalFrames, frame > total {
            throw DecodeError(path: path, reason: .seekFailed(frame: frame))
        }
        bufferedFrames = 0
        reachedEnd = false
        if let total = info.totalFrames, frame == total {
            nextFrame = frame
            reachedEnd = true
            return
        }
        guard FLAC__stream_decoder_seek_absolute(decoder, FLAC__uint64(frame)) != 0 else {
            if FLAC__stream_decoder_get_state(decoder) == FLAC__STREAM_DECODER_SEEK_ERROR {
                FLAC__stream_decoder_flush(decoder)
            }
            throw DecodeError(path: path, reason: failure ?? .seekFailed(frame: frame))
        }
        // libFLAC delivers the frame containing `frame`, trimmed to start at it, from the
        // seek call itself; `frameDecoded` has buffered it at `bufferStartFrame == frame`.
        if bufferedFrames > 0 { bufferStartFrame = frame }
        nextFrame = frame + bufferedFrames
    }

    static func describe(_ state: FLAC__StreamDecoderState) -> String {
        switch state {
        case FLAC__STREAM_DECODER_SEEK_ERROR: "seek error"
        case FLAC__STREAM_DECODER_ABORTED: "aborted"
        case FLAC__STREAM_DECODER_MEMORY_ALLOCATION_ERROR: "out of memory"
        case FLAC__STREAM_DECODER_OGG_ERROR: "Ogg error"
        default: "decoder state \(state.rawValue)"
        }
    }

    // MARK: Callbacks

    fileprivate func frameDecoded(_ frame: UnsafePointer<FLAC__Frame>, _ channelData: UnsafePointer<UnsafePointer<FLAC__int32>?>) -> Bool {
        let header = frame.pointee.header
        let format = StreamFormat(sampleRate: Int(header.sample_rate), channels: Int(header.channels),
                                  bitsPerSample: Int(header.bits_per_sample))
        if let established = establishedFormat {
            if format.sampleRate != established.sampleRate {
                failure = .formatChange("sample rate (\(established.sampleRate) Hz → \(format.sampleRate) Hz at frame \(nextFrame))")
                return false
            }
            if format.channels != established.channels {
                failure = .formatChange("channel count (\(established.channels) → \(format.channels) at frame \(nextFrame))")
                return false
            }
            if format.bitsPerSample > established.bitsPerSample {
                failure = .formatChange("bit depth (\(established.bitsPerSample) → \(format.bitsPerSample) bits at frame \(nextFrame))")
                return false
            }
            // libFLAC numbers the frames by STREAMINFO's block size when it gives only one, and
            // fills a gap in the numbering with up to 50 frames of silence: blocks claimed larger
            // than the first frame's (not the last, as this second frame shows) would put that
            // silence after every frame, many times the music.
            if let streamInfo, streamInfo.minBlock == streamInfo.maxBlock, let first = firstBlockSize, first < streamInfo.maxBlock {
                failure = .badMetadata("STREAMINFO gives blocks of \(streamInfo.maxBlock) frames, the first frame holds \(first)")
                return false
            }
        } else {
            guard (1...8).contains(format.channels), (4...32).contains(format.bitsPerSample), format.sampleRate > 0 else {
                failure = .decoder("unsupported frame format \(format)")
                return false
            }
            establishedFormat = format
            firstBlockSize = Int(header.blocksize)
        }
        let frames = Int(header.blocksize)
        let channels = format.channels
        let needed = (bufferedFrames + frames) * channels
        if needed > bufferCapacity {
            let grown = UnsafeMutablePointer<Int32>.allocate(capacity: needed)
            grown.update(from: buffer, count: bufferedFrames * channels)
            buffer.deallocate()
            buffer = grown
            bufferCapacity = needed
        }
        if bufferedFrames == 0 { bufferStartFrame = nextFrame }
        let shift = Int32(32 - format.bitsPerSample)
        let out = buffer + bufferedFrames * channels
        for c in 0..<channels {
            let source = channelData[c]!
            var o = out + c
            for i in 0..<frames {
                o.pointee = source[i] &<< shift
                o += channels
            }
        }
        bufferedFrames += frames
        nextFrame += frames
        return true
    }

    fileprivate func metadataReceived(_ block: UnsafePointer<FLAC__StreamMetadata>) {
        switch block.pointee.type {
        case FLAC__METADATA_TYPE_STREAMINFO:
            let si = block.pointee.data.stream_info
            streamInfo = (
                StreamFormat(sampleRate: Int(si.sample_rate), channels: Int(si.channels), bitsPerSample: Int(si.bits_per_sample)),
                si.total_samples == 0 ? nil : Int(si.total_samples),
                Int(si.min_blocksize), Int(si.max_blocksize)
            )
        case FLAC__METADATA_TYPE_VORBIS_COMMENT:
            // Read as in Ogg: a METADATA_BLOCK_PICTURE or COVERART entry is a picture.
            let vc = block.pointee.data.vorbis_comment
            var tags = VorbisComments(keepPictureData: keepPictureData)
            for i in 0..<Int(vc.num_comments) {
                let entry = vc.comments[i]
                guard let bytes = entry.entry else { continue }
                tags.add(UnsafeBufferPointer(start: bytes, count: Int(entry.length)))
            }
            tags.finish()
            comments += tags.comments
            pictures += tags.pictures
        case FLAC__METADATA_TYPE_PICTURE:
            let p = block.pointee.data.picture
            let count = Int(p.data_length)
            pictures.append(Picture(
                type: Int(p.type.rawValue),
                mimeType: p.mime_type.map { String(cString: $0) } ?? "",
                description: p.description.map { String(cString: $0) } ?? "",
                width: Int(p.width), height: Int(p.height), byteCount: count,
                data: keepPictureData && p.data != nil ? Array(UnsafeBufferPointer(start: p.data, count: count)) : nil
            ))
        default:
            break
        }
    }

    fileprivate func errorReported(_ status: FLAC__StreamDecoderErrorStatus) {
        switch status {
        case FLAC__STREAM_DECODER_ERROR_STATUS_LOST_SYNC: errorCounts.lostSync += 1
        case FLAC__STREAM_DECODER_ERROR_STATUS_BAD_HEADER: errorCounts.badHeader += 1
        case FLAC__STREAM_DECODER_ERROR_STATUS_FRAME_CRC_MISMATCH: errorCounts.crcMismatch += 1
        case FLAC__STREAM_DECODER_ERROR_STATUS_UNPARSEABLE_STREAM: errorCounts.unparseable += 1
        default: errorCounts.badMetadata += 1
        }
    }
}

private func decoderObject(_ clientData: UnsafeMutableRawPointer?) -> FLACDecoder {
    Unmanaged<FLACDecoder>.fromOpaque(clientData!).takeUnretainedValue()
}

// The source's side of libFLAC's stream: read, seek, tell, length and end of file.

private let flacRead: FLAC__StreamDecoderReadCallback = { _, buffer, bytes, clientData in
    let source = decoderObject(clientData).source
    guard let n = try? source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: bytes!.pointee)) else {
        bytes!.pointee = 0
        return FLAC__STREAM_DECODER_READ_STATUS_ABORT
    }
    bytes!.pointee = n
    return n == 0 ? FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM : FLAC__STREAM_DECODER_READ_STATUS_CONTINUE
}

private let flacSeek: FLAC__StreamDecoderSeekCallback = { _, offset, clientData in
    let source = decoderObject(clientData).source
    guard source.isSeekable else { return FLAC__STREAM_DECODER_SEEK_STATUS_UNSUPPORTED }
    return (try? source.seek(to: offset)) != nil ? FLAC__STREAM_DECODER_SEEK_STATUS_OK : FLAC__STREAM_DECODER_SEEK_STATUS_ERROR
}

private let flacTell: FLAC__StreamDecoderTellCallback = { _, offset, clientData in
    offset!.pointee = decoderObject(clientData).source.offset
    return FLAC__STREAM_DECODER_TELL_STATUS_OK
}

private let flacLength: FLAC__StreamDecoderLengthCallback = { _, length, clientData in
    guard let known = decoderObject(clientData).source.length else { return FLAC__STREAM_DECODER_LENGTH_STATUS_UNSUPPORTED }
    length!.pointee = known
    return FLAC__STREAM_DECODER_LENGTH_STATUS_OK
}

private let flacEOF: FLAC__StreamDecoderEofCallback = { _, clientData in
    decoderObject(clientData).source.atEnd ? 1 : 0
}

private let flacWrite: FLAC__StreamDecoderWriteCallback = { _, frame, buffer, clientData in
    decoderObject(clientData).frameDecoded(frame!, buffer!)
        ? FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE : FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
}

private let flacMetadata: FLAC__StreamDecoderMetadataCallback = { _, block, clientData in
    decoderObject(clientData).metadataReceived(block!)
}

private let flacError: FLAC__StreamDecoderErrorCallback = { _, status, clientData in
    decoderObject(clientData).errorReported(status)
}
