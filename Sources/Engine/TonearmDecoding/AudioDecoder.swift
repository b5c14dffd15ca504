import TonearmAudio

/// One source being decoded, whatever its format: interleaved, left-justified `Int32` frames in
/// `info.format`, exactly the music (a format's priming and padding already removed), so
/// playback, seeking, gapless joins and ReplayGain never need to know the format.
public protocol AudioDecoder: AnyObject {
    /// What the source says about itself; `info.format` is what the frames really are.
    var info: TrackInfo { get }
    /// The next decoded frames, valid until the next call; nil at the end. At the end it
    /// throws if the source proved truncated or corrupt.
    func nextBlock() throws(DecodeError) -> UnsafeBufferPointer<Int32>?
    /// The frame index of the first frame the next `nextBlock()` returns.
    var position: Int { get }
    /// Positions the decoder so that the next block starts exactly at `frame`.
    func seek(toFrame frame: Int) throws(DecodeError)
    /// Counts the changes of `info.comments` while playing: a chained Ogg stream's next link
    /// brings its own tags (a station's next song). 0 for a decoder whose tags never change.
    var tagChanges: Int { get }
}

extension AudioDecoder {
    public var tagChanges: Int { 0 }
}

/// One format: how it is recognised, opened for playing, and read for its tags alone. Each is
/// one file under `Plugins/`, listed in `Decoders.all`.
public protocol DecoderPlugIn {
    /// The name mpd's `decoders` gives the same library ("flac", "mpg123", "vorbis", …).
    static var name: String { get }
    /// File name suffixes, lower case, without the dot.
    static var suffixes: [String] { get }
    static var mimeTypes: [String] { get }
    /// Whether `head` (the source's first bytes, after any ID3v2 tag) starts this format.
    static func recognizes(_ head: FileHead) -> Bool
    /// Opens `source` (which it owns from here on) for playing. `keepPictureData` keeps the
    /// bytes of embedded pictures.
    static func open(_ source: ByteSource, keepPictureData: Bool) throws(DecodeError) -> any AudioDecoder
    /// What `source` says about itself from its metadata alone, for indexing a library: the
    /// format may be the header's claim, and picture bytes are not kept.
    static func metadata(_ source: ByteSource) throws(DecodeError) -> TrackInfo
}

extension DecoderPlugIn {
    /// By default the tags are those of an opened decoder: formats whose header says all.
    public static func metadata(_ source: ByteSource) throws(DecodeError) -> TrackInfo {
        try open(source, keepPictureData: false).info
    }
}

/// The first bytes of a source, and where they were found (after an ID3v2 tag, when the
/// source starts with one).
public struct FileHead: Sendable {
    public var bytes: [UInt8]
    /// The offset of `bytes[0]` in the source.
    public var offset: Int
    /// The whole ID3v2 tag in front of the audio, when there is one.
    public var id3v2Size: Int

    public init(bytes: [UInt8], offset: Int = 0, id3v2Size: Int = 0) {
        self.bytes = bytes
        self.offset = offset
        self.id3v2Size = id3v2Size
    }

    /// Whether the bytes at `at` are `marker` (ASCII).
    public func starts(with marker: String, at: Int = 0) -> Bool {
        let m = Array(marker.utf8)
        guard at >= 0, bytes.count >= at + m.count else { return false }
        return bytes[at..<(at + m.count)].elementsEqual(m)
    }
}
