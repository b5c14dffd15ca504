/// ADTS AAC from a source that cannot seek (an internet radio station's `audio/aac` or
/// `audio/aacp`): the frames are read one at a time as they come and fed to the same libfaad
/// wrapper a file's units go to (`AACDecoder`), so a stream decodes to exactly what the file
/// of the same bytes gives.
///
/// - There is no length and no seeking: `totalFrames` is nil, and a seek anywhere but the
///   current position throws `.seekFailed`, as the other decoders of a stream do.
/// - The stream may start anywhere (a reconnection mid-frame, an ID3 tag in front): the first
///   frame is the first header that the next frame's header confirms. A header that is not
///   where the last frame ends (a lost frame, garbage) is resynchronised the same way and
///   counted as lost sync; the count is thrown at the end, as a file's corrupt units are.
///   65536 bytes without a frame fail the stream.
/// - The format is libfaad's: HE-AAC signals its SBR only in the frames, and libfaad doubles a
///   core rate of 24 kHz or less from the start (as it does for a file), so `info.format` is
///   the rate the frames come out at, settled by the first frames decoded at open.
/// - A frame of another rate, channel configuration or profile, confirmed by the frame after
///   it, throws `.formatChange`.
/// - A frame libfaad cannot decode plays as silence of a frame's length and is counted.
final class ADTSStreamDecoder: AudioDecoder {
    let path: String
    private(set) var info: TrackInfo
    private(set) var errorCounts = DecodeErrorCounts()

    private let reader: ADTSFrameReader
    private let codec: AACDecoder
    /// The stream's format, from its first frame.
    private let established: ADTSHeader
    /// One access unit, followed by 8 zero bytes as libfaad may read past it.
    private let unit: UnsafeMutableRawBufferPointer
    /// Silence for a frame that does not decode.
    private var silence: [Int32] = []
    /// Frames one access unit gives, once one has.
    private var unitFrames = 0
    /// The block decoded at open, returned by the first `nextBlock`.
    private var pending: UnsafeBufferPointer<Int32>?
    private var framesGiven = 0

    var position: Int { framesGiven }

    init(source: ByteSource) throws(DecodeError) {
        path = source.name
        reader = ADTSFrameReader(source)
        guard try reader.fill(8) || reader.available > 0 else { throw DecodeError(path: path, reason: .empty) }
        if reader.available >= 8, reader.view[4..<8].elementsEqual("ftyp".utf8) {
            throw DecodeError(path: path, reason: .unsupported("MP4 from a source that cannot seek"))
        }
        guard let first = try reader.sync() else {
            throw DecodeError(path: path, reason: .notFormat("not an ADTS AAC stream (no whole frame)"))
        }
        try first.checkPlayable(path)
        established = first
        codec = try AACDecoder(path: path, audioSpecificConfig: first.audioSpecificConfig)
        unit = .allocate(byteCount: ADTSFrameReader.longestFrame + 8, alignment: 8)
        unit.initializeMemory(as: UInt8.self, repeating: 0)
        info = TrackInfo(path: path, codec: codec.codecName, format: codec.format, totalFrames: nil)
        pending = try decodeNext()
        // The first frames settle the format (libfaad's mono or parametric stereo).
        info.format = codec.format
        if pending == nil {
            throw DecodeError(path: path, reason: errorCounts.total > 0 ? .decodeErrors(errorCounts) : .noAudio)
        }
    }

    deinit { unit.deallocate() }

    func nextBlock() throws(DecodeError) -> UnsafeBufferPointer<Int32>? {
        if let block = pending {
            pending = nil
            framesGiven += block.count / info.format.channels
            return block
        }
        guard let block = try decodeNext() else {
            if errorCounts.total > 0 { throw DecodeError(path: path, reason: .decodeErrors(errorCounts)) }
            return nil
        }
        framesGiven += block.count / info.format.channels
        return block
    }

    func seek(toFrame frame: Int) throws(DecodeError) {
        guard frame == position else { throw DecodeError(path: path, reason: .seekFailed(frame: frame)) }
    }

    /// Decodes frames until some audio comes out; nil at the stream's end (a frame cut short
    /// there is dropped).
    private func decodeNext() throws(DecodeError) -> UnsafeBufferPointer<Int32>? {
        while let header = try nextFrame() {
            let body = header.frameLength - header.headerSize
            unit.copyMemory(from: UnsafeRawBufferPointer(rebasing: reader.view[header.headerSize..<header.frameLength]))
            for i in body..<(body + 8) { unit[i] = 0 }
            reader.skip(header.frameLength)
            let frames: UnsafeBufferPointer<Int32>
            do {
                frames = try codec.decode(UnsafeRawBufferPointer(rebasing: unit[0..<body]))
            } catch {
                guard case .decoder = error.reason else { throw error }
                errorCounts.unparseable += 1
                let count = unitFrames * codec.format.channels
                guard count > 0 else { continue }
                if silence.count < count { silence = [Int32](repeating: 0, count: count) }
                return silence.withUnsafeBufferPointer { UnsafeBufferPointer(rebasing: $0[0..<count]) }
            }
            guard frames.count > 0 else { continue }
            unitFrames = frames.count / codec.format.channels
            return frames
        }
        return nil
    }

    /// The header of the next whole frame, at the reader's start, after resynchronising if
    /// none is there; nil at the stream's end.
    private func nextFrame() throws(DecodeError) -> ADTSHeader? {
        guard try reader.fill(7) else { return nil }
        let header: ADTSHeader
        if let here = ADTSHeader(reader.view, at: 0), here.isPlausible, here.isSameStream(as: established) {
            header = here
        } else {
            let skippedBefore = reader.skipped
            guard let found = try reader.sync() else { return nil }
            if reader.skipped != skippedBefore { errorCounts.lostSync += 1 }
            header = found
        }
        guard header.isSameStream(as: established) else {
            throw DecodeError(path: path, reason: .formatChange(
                "format (\(describe(established)) → \(describe(header)) at frame \(framesGiven))"))
        }
        guard header.blocks == 0 else {
            throw DecodeError(path: path, reason: .unsupported("ADTS frames of several access units"))
        }
        guard try reader.fill(header.frameLength) else { return nil }
        return header
    }

    private func describe(_ header: ADTSHeader) -> String {
        "\(header.sampleRate) Hz \(header.channels) ch, profile \(header.profile)"
    }
}

/// A stream's bytes as they come, kept until its frames are taken: enough for the longest
/// frame and the header after it, and for a resynchronisation's look ahead.
final class ADTSFrameReader {
    /// Bytes skipped while looking for a frame before the stream is given up.
    static let syncLimit = 65536
    /// The longest frame the 13-bit length allows.
    static let longestFrame = 8191

    private let source: ByteSource
    /// Bytes read and not yet taken: `bytes[start..<end]`.
    private let bytes: UnsafeMutableRawBufferPointer
    private var start = 0
    private var end = 0
    private var sourceEnded = false
    /// Bytes passed over by `sync`, in all.
    private(set) var skipped = 0

    init(_ source: ByteSource) {
        self.source = source
        bytes = .allocate(byteCount: 4 * (Self.longestFrame + 9), alignment: 8)
    }

    deinit { bytes.deallocate() }

    /// The bytes read and not yet taken.
    var view: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[start..<end]) }
    var available: Int { end - start }

    func skip(_ count: Int) { start += min(count, end - start) }

    /// Reads until `count` bytes (at most a frame and a header) are here; false when the
    /// stream ends first.
    func fill(_ count: Int) throws(DecodeError) -> Bool {
        while end - start < count {
            if sourceEnded { return false }
            if start > 0 && bytes.count - start < count + 4096 {
                // What is left moves to the front: the buffer holds several frames.
                let left = end - start
                if left > 0 { bytes.baseAddress!.copyMemory(from: bytes.baseAddress! + start, byteCount: left) }
                start = 0
                end = left
            }
            let n = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: bytes[end...]))
            if n == 0 { sourceEnded = true }
            end += n
        }
        return true
    }

    /// Moves to the first header that the next frame's header confirms (or whose frame ends
    /// where the stream does); nil at the stream's end.
    func sync() throws(DecodeError) -> ADTSHeader? {
        var passed = 0
        while try fill(7) {
            if let header = ADTSHeader(view, at: 0), header.isPlausible {
                if try fill(header.frameLength + 7) {
                    if let next = ADTSHeader(view, at: header.frameLength), next.isPlausible, next.isSameStream(as: header) {
                        return header
                    }
                } else if available >= header.frameLength {
                    return header
                }
            }
            start += 1
            skipped += 1
            passed += 1
            if passed > Self.syncLimit {
                throw DecodeError(path: source.name, reason: .notFormat("not an ADTS AAC stream (no frame in \(Self.syncLimit) bytes)"))
            }
        }
        return nil
    }
}
