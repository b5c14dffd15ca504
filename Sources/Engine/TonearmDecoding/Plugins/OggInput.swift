#if canImport(Glibc)
import Glibc
#endif

/// What the two Ogg plug-ins (Vorbis, Opus) share: how a source's first Ogg packet is
/// recognised, and the source as libvorbisfile and libopusfile read it through their callbacks.
///
/// The libraries see the Ogg stream alone: their offsets start at its first page (after an
/// ID3v2 tag some taggers put in front), and a source that cannot seek (a radio stream) is
/// reported as such, so they neither seek nor scan for the length.
final class OggInput {
    let source: ByteSource
    /// The source's offset of the stream's first byte.
    let base: UInt64
    /// The first bytes of the stream, for recognising it.
    let head: FileHead
    /// Bytes already taken from a source that cannot seek back: the library's initial data.
    let initialBytes: [UInt8]
    /// The source's error, when a read or seek failed: the library only sees a failure code.
    private(set) var failure: DecodeError?

    init(_ source: ByteSource) throws(DecodeError) {
        self.source = source
        if source.isSeekable {
            let start = source.offset
            head = try Decoders.readHead(source)
            base = start + UInt64(head.offset)
            try source.seek(to: base)
            initialBytes = []
        } else {
            base = source.offset
            initialBytes = try source.readUpTo(64)
            head = FileHead(bytes: initialBytes)
        }
    }

    var isSeekable: Bool { source.isSeekable }

    /// The stream's length in bytes, when known.
    var length: Int64? {
        guard source.isSeekable, let total = source.length, total >= base else { return nil }
        return Int64(total - base)
    }

    /// Reads up to `count` bytes into `buffer`: the count, 0 at the end, −1 on an error.
    func read(_ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        guard count > 0 else { return 0 }
        do {
            return try source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: count))
        } catch {
            failure = error
            return -1
        }
    }

    /// Seeks as `fseek` does; false when the source cannot.
    func seek(_ offset: Int64, whence: Int32) -> Bool {
        guard source.isSeekable else { return false }
        let target: Int64
        switch whence {
        case SEEK_SET: target = offset
        case SEEK_CUR: target = tell + offset
        case SEEK_END:
            guard let length else { return false }
            target = length + offset
        default: return false
        }
        guard target >= 0 else { return false }
        do {
            try source.seek(to: base + UInt64(target))
            return true
        } catch {
            failure = error
            return false
        }
    }

    var tell: Int64 { Int64(source.offset) - Int64(base) }

    /// Whether the stream ends inside a page (a file cut short), and if so how many frames the
    /// cut page would have added, by its granule position and that of the whole page before it
    /// (nil when the cut left too little of it). `lastPageEnd` is the library's offset after
    /// the last whole page. Not cut when the bytes after it are not the start of a page
    /// (trailing tags, or nothing), or the source cannot tell.
    func cutPage(after lastPageEnd: Int64) -> CutPage? {
        guard let length, lastPageEnd < length,
              let cut = try? source.peek(27, at: base + UInt64(lastPageEnd)),
              cut.starts(with: Self.capturePattern) else { return nil }
        guard cut.count >= 14, let cutGranule = Self.granule(cut), let previous = lastPageGranule(endingAt: lastPageEnd),
              cutGranule > previous else {
            return CutPage(missingFrames: nil)
        }
        return CutPage(missingFrames: Int(cutGranule - previous))
    }

    struct CutPage {
        var missingFrames: Int?
    }

    /// Why a stream that ended after `decoded` frames, its last whole page ending at
    /// `lastPageEnd`, is not whole: nil when it is.
    func truncation(lastPageEnd: Int64, decoded: Int) -> DecodeError.Reason? {
        guard let cut = cutPage(after: lastPageEnd) else { return nil }
        guard let missing = cut.missingFrames else { return .decoder("the last Ogg page is cut short after frame \(decoded)") }
        return .truncated(decodedFrames: decoded, expectedFrames: decoded + missing)
    }

    /// The granule position of the whole page that ends at `end`, found by looking back for
    /// a page header whose length reaches exactly there.
    private func lastPageGranule(endingAt end: Int64) -> Int64? {
        let window = Int(min(end, Self.maxPageSize))
        guard window >= 27, let bytes = try? source.peek(window, at: base + UInt64(end) - UInt64(window)),
              bytes.count == window else { return nil }
        var at = window - 27
        while at >= 0 {
            if bytes[at] == 0x4F, bytes[at + 1] == 0x67, bytes[at + 2] == 0x67, bytes[at + 3] == 0x53 {
                let segments = Int(bytes[at + 26])
                if at + 27 + segments <= window {
                    let body = bytes[(at + 27)..<(at + 27 + segments)].reduce(0) { $0 + Int($1) }
                    if at + 27 + segments + body == window { return Self.granule(Array(bytes[at..<(at + 14)])) }
                }
            }
            at -= 1
        }
        return nil
    }

    /// A page header's granule position; nil when no packet ends on the page (−1).
    private static func granule(_ header: [UInt8]) -> Int64? {
        let value = (6..<14).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64(header[$1]) }
        return value == UInt64.max ? nil : Int64(bitPattern: value)
    }

    static let capturePattern: [UInt8] = Array("OggS".utf8)
    /// A page header (27 bytes), 255 lacing values and 255 segments of 255 bytes.
    static let maxPageSize: Int64 = 27 + 255 + 255 * 255
}

extension FileHead {
    /// Whether the bytes are an Ogg page whose first packet starts with `marker`:
    /// "\u{1}vorbis" for Vorbis, "OpusHead" for Opus (Ogg FLAC's is "\u{7F}FLAC").
    func startsOggStream(with marker: String) -> Bool {
        guard starts(with: "OggS"), bytes.count >= 27 else { return false }
        return starts(with: marker, at: 27 + Int(bytes[26]))
    }
}

/// The source channel of each output channel: Vorbis and Opus order their 3 to 8 channels
/// the Vorbis way (L C R …, LFE last), Tonearm the WAV and FLAC way (L R C LFE …).
func wavOrder(fromVorbisOrder channels: Int) -> [Int] {
    switch channels {
    case 3: [0, 2, 1]
    case 5: [0, 2, 1, 3, 4]
    case 6: [0, 2, 1, 5, 3, 4]
    case 7: [0, 2, 1, 6, 5, 3, 4]
    case 8: [0, 2, 1, 7, 5, 6, 3, 4]
    default: Array(0..<channels)
    }
}

/// A float sample (full scale ±1.0) as a left-justified 24-bit sample: rounded to nearest
/// (ties to even), clipped; NaN is silence.
///
/// Written without branches or library calls so that the compiler can vectorise the loops
/// that call it: the bounds are whole numbers, so clipping before rounding gives what
/// clipping after does, and adding 1.5 × 2⁵² to a Double of magnitude below 2⁵¹ leaves the
/// value rounded to nearest-even as the low bits of its mantissa (the same as `rintf`).
@inline(__always)
func leftJustified24(_ x: Float) -> Int32 {
    let scaled = x * 8_388_608
    let low: Float = scaled > -8_388_608 ? scaled : -8_388_608
    let clipped: Float = low < 8_388_607 ? low : 8_388_607
    let rounded = Double(clipped) + 6_755_399_441_055_744
    let sample = Int32(truncatingIfNeeded: Int64(bitPattern: rounded.bitPattern)) << 8
    return scaled == scaled ? sample : 0
}

/// libvorbisfile's and libopusfile's error codes (the same numbers in both), in words.
func oggLibraryError(_ code: Int) -> String {
    switch code {
    case -2: "end of stream"
    case -3: "a gap in the data"
    case -128: "read error"
    case -129: "internal error"
    case -130: "a feature the library does not implement"
    case -131: "invalid argument or corrupt headers"
    case -132: "not this codec's stream"
    case -133: "corrupt header"
    case -134: "unsupported codec version"
    case -135: "not an audio packet"
    case -136: "corrupt packet"
    case -137: "corrupt link in a chained stream"
    case -138: "the stream cannot seek"
    case -139: "invalid timestamps"
    default: "error \(code)"
    }
}
