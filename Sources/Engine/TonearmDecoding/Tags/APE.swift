/// APEv2 tags (and APEv1, which has no header and no binary items): a 32-byte footer
/// "APETAGEX" at the end of the file or before an ID3v1 tag, items of key, flags and UTF-8
/// value. mp3gain keeps its ReplayGain here; Monkey's Audio and WavPack use them as their tags.
public enum APEv2 {
    public static let footerSize = 32

    /// Keys (upper-cased) whose Vorbis comment name differs.
    private static let names: [String: String] = [
        "YEAR": "DATE", "TRACK": "TRACKNUMBER", "DISC": "DISCNUMBER", "ALBUM ARTIST": "ALBUMARTIST",
        "ORIGINAL YEAR": "ORIGINALDATE", "MEDIA": "MEDIA", "CATALOG": "CATALOGNUMBER",
    ]

    /// The whole tag's size (header when flagged, items, footer) from its footer; nil when the
    /// bytes are not an APE footer.
    public static func tagSize(footer: [UInt8]) -> Int? {
        guard footer.count == footerSize, footer.starts(with: Array("APETAGEX".utf8)) else { return nil }
        let size = littleEndian(footer, 12)
        let hasHeader = littleEndian(footer, 20) & 0x8000_0000 != 0
        return size + (hasHeader ? footerSize : 0)
    }

    /// Parses a whole tag: `bytes` ends with the footer (and starts with the header when there
    /// is one). An item that runs past the items ends the walk, keeping those before it.
    public static func read(_ bytes: [UInt8], name: String = "APE tag", keepPictureData: Bool) throws(DecodeError) -> EmbeddedTags {
        guard bytes.count >= footerSize, let size = tagSize(footer: Array(bytes.suffix(footerSize))) else {
            throw DecodeError(path: name, reason: .badMetadata("no APE tag footer"))
        }
        guard size <= bytes.count, size >= footerSize else {
            throw DecodeError(path: name, reason: .badMetadata("APE tag claims \(size) bytes, only \(bytes.count) there"))
        }
        let footer = Array(bytes.suffix(footerSize))
        let itemCount = littleEndian(footer, 16)
        let hasHeader = littleEndian(footer, 20) & 0x8000_0000 != 0
        var pos = bytes.count - size + (hasHeader ? footerSize : 0)
        let end = bytes.count - footerSize
        var tags = EmbeddedTags()
        var count = 0
        while count < itemCount, pos + 8 < end {
            count += 1
            let valueSize = littleEndian(bytes, pos)
            let flags = littleEndian(bytes, pos + 4)
            guard let keyEnd = bytes[(pos + 8)..<end].firstIndex(of: 0) else { break }
            let key = String(decoding: bytes[(pos + 8)..<keyEnd], as: UTF8.self)
            let valueStart = keyEnd + 1
            guard valueSize <= end - valueStart else { break }
            let value = bytes[valueStart..<(valueStart + valueSize)]
            pos = valueStart + valueSize
            let upper = key.uppercased()
            switch (flags >> 1) & 3 {
            case 0:  // UTF-8 text; NUL separates multiple values
                let field = names[upper] ?? upper
                for part in value.split(separator: 0) {
                    let text = String(decoding: part, as: UTF8.self)
                    if !text.isEmpty { tags.comments.append((field, text)) }
                }
            case 1 where upper.hasPrefix("COVER ART"):
                // A file name, NUL, then the image.
                let dataStart = (value.firstIndex(of: 0) ?? (value.startIndex - 1)) + 1
                let data = value[dataStart...]
                let description = String(decoding: value[value.startIndex..<max(value.startIndex, dataStart - 1)], as: UTF8.self)
                let image = ImageHeader.parse(data)
                tags.pictures.append(Picture(type: upper.contains("BACK") ? 4 : upper.contains("FRONT") ? 3 : 0,
                                             mimeType: image?.mimeType ?? "", description: description,
                                             width: image?.width ?? 0, height: image?.height ?? 0, byteCount: data.count,
                                             data: keepPictureData ? Array(data) : nil))
            default:
                break
            }
        }
        return tags
    }

    /// The tag whose footer ends at `end` in `source`, and where it starts; nil when there is
    /// none or it claims to begin before `notBefore` (then it is not trusted, and the audio
    /// keeps those bytes).
    public static func read(endingAt end: UInt64, in source: ByteSource, notBefore: UInt64, keepPictureData: Bool) throws(DecodeError) -> (tags: EmbeddedTags, start: UInt64)? {
        guard end >= UInt64(footerSize) + notBefore else { return nil }
        let footer = try source.peek(footerSize, at: end - UInt64(footerSize))
        guard let size = tagSize(footer: footer), size >= footerSize, UInt64(size) <= end - notBefore else { return nil }
        let start = end - UInt64(size)
        let bytes = try source.peek(size, at: start)
        guard bytes.count == size else { return nil }
        return (try read(bytes, name: source.name, keepPictureData: keepPictureData), start)
    }

    static func littleEndian(_ b: [UInt8], _ at: Int) -> Int {
        Int(b[at]) | Int(b[at + 1]) << 8 | Int(b[at + 2]) << 16 | Int(b[at + 3]) << 24
    }
}
