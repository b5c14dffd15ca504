/// Every format Tonearm plays, and the one way to open a source: by what its first bytes are,
/// else by its name's suffix (whose plug-in then says why the bytes are not its format).
public enum Decoders {
    /// The plug-ins, in the order a source's first bytes are tried against them: formats with a
    /// marker of their own first, MP3 (known by its frame headers alone) after them.
    // A constant list of types: nothing in it is ever mutated.
    nonisolated(unsafe) public static let all: [any DecoderPlugIn.Type] = [
        FLACDecoder.self, VorbisDecoder.self, OpusDecoder.self, MP4Decoder.self, WAVDecoder.self, AIFFDecoder.self,
        MP3Decoder.self,
    ]

    /// The plug-in for a file name's suffix, in any case.
    public static func plugIn(forName name: String) -> (any DecoderPlugIn.Type)? {
        guard let suffix = suffix(of: name) else { return nil }
        return all.first { $0.suffixes.contains(suffix) }
    }

    /// Whether a file with this name is one Tonearm plays, by its suffix: what a library scan
    /// looks at before opening anything.
    public static func isAudioName(_ name: String) -> Bool { plugIn(forName: name) != nil }

    /// Every suffix, for help texts and the README.
    public static var suffixes: [String] { all.flatMap { $0.suffixes } }

    /// Opens `path` for playing.
    public static func open(path: String, keepPictureData: Bool = false) throws(DecodeError) -> any AudioDecoder {
        let source = try FileSource(path: path)
        return try plugIn(for: source).open(source, keepPictureData: keepPictureData)
    }

    /// Opens `source` for playing.
    public static func open(_ source: ByteSource, keepPictureData: Bool = false) throws(DecodeError) -> any AudioDecoder {
        try plugIn(for: source).open(source, keepPictureData: keepPictureData)
    }

    /// What the file open as `fd` (at its start; closed whatever happens) says about itself,
    /// from its metadata alone: for indexing a library.
    public static func metadata(fd: Int32, path: String) throws(DecodeError) -> TrackInfo {
        let source = FileSource(fd: fd, name: path)
        return try plugIn(for: source).metadata(source)
    }

    /// The plug-in for `source`'s first bytes, else for the media type its server gave (a
    /// station's connection may start in the middle of a frame), else for its name. The source
    /// is left at its start.
    public static func plugIn(for source: ByteSource) throws(DecodeError) -> any DecoderPlugIn.Type {
        let head = try readHead(source)
        if let found = all.first(where: { $0.recognizes(head) }) { return found }
        if let type = source.mimeType.map(mediaType), let typed = all.first(where: { $0.mimeTypes.contains(type) }) {
            return typed
        }
        if let named = plugIn(forName: source.name) { return named }
        if head.bytes.isEmpty { throw DecodeError(path: source.name, reason: .empty) }
        throw DecodeError(path: source.name, reason: .unrecognised)
    }

    /// The bytes a plug-in recognises its format by: the first 64, or the 64 after an ID3v2
    /// tag in front. The source is read from its start and left there.
    static func readHead(_ source: ByteSource) throws(DecodeError) -> FileHead {
        let start = source.offset
        defer { try? source.seek(to: start) }
        var bytes = try source.readUpTo(64)
        guard bytes.count >= 10, bytes[0] == 0x49, bytes[1] == 0x44, bytes[2] == 0x33 else {
            return FileHead(bytes: bytes)
        }
        // ID3v2: a 10-byte header, a syncsafe size, and a 10-byte footer when flagged.
        let size = bytes[6...9].reduce(0) { ($0 << 7) | Int($1 & 0x7F) } + 10 + (bytes[5] & 0x10 != 0 ? 10 : 0)
        guard source.isSeekable else { return FileHead(bytes: bytes) }
        if let length = source.length, UInt64(size) >= length { return FileHead(bytes: [], offset: size, id3v2Size: size) }
        try source.seek(to: start + UInt64(size))
        bytes = try source.readUpTo(64)
        return FileHead(bytes: bytes, offset: size, id3v2Size: size)
    }

    /// `audio/AACP; charset=x` → `audio/aacp`.
    static func mediaType(_ contentType: String) -> String {
        var type = contentType.prefix { $0 != ";" }
        while type.first == " " { type = type.dropFirst() }
        while type.last == " " { type = type.dropLast() }
        return type.lowercased()
    }

    static func suffix(of name: String) -> String? {
        guard let dot = name.lastIndex(of: "."), !name[dot...].contains("/") else { return nil }
        return name[name.index(after: dot)...].lowercased()
    }
}
