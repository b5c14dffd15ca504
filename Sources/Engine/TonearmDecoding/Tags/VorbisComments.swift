/// The Vorbis comment vocabulary, shared by the formats that carry Vorbis comments (FLAC,
/// Vorbis, Opus): `NAME=value` entries whose names are upper-cased, pictures in
/// METADATA_BLOCK_PICTURE (a FLAC PICTURE block in base64) or the older COVERART (a bare
/// base64 image, its type in COVERARTMIME).
///
/// Every length inside a picture is checked against the bytes that are really there, so an
/// entry that lies about its size is dropped, never read past its end.
public struct VorbisComments: Sendable {
    /// `NAME=value` entries in file order, names upper-cased; pictures are not among them.
    public var comments: [(name: String, value: String)] = []
    public var pictures: [Picture] = []
    /// Picture entries that were not a well-formed picture, and entries with no "=".
    public private(set) var malformedEntries = 0
    /// Whether pictures keep their image bytes.
    public let keepPictureData: Bool

    public init(keepPictureData: Bool) {
        self.keepPictureData = keepPictureData
    }

    /// Adds one entry, as a library hands it over: `NAME=value` in UTF-8, without a terminator.
    public mutating func add(_ entry: UnsafeBufferPointer<UInt8>) {
        guard let eq = entry.firstIndex(of: UInt8(ascii: "=")) else {
            malformedEntries += 1
            return
        }
        // Field names are ASCII (the Vorbis comment rules): upper-cased byte by byte.
        let name = String(unsafeUninitializedCapacity: eq) { out in
            for i in 0..<eq { out[i] = entry[i] >= 0x61 && entry[i] <= 0x7A ? entry[i] - 0x20 : entry[i] }
            return eq
        }
        let value = UnsafeBufferPointer(rebasing: entry[(eq + 1)...])
        switch name {
        case "METADATA_BLOCK_PICTURE":
            if let picture = Self.picture(fromBase64: value, keepData: keepPictureData) {
                pictures.append(picture)
            } else {
                malformedEntries += 1
            }
        case "COVERART":
            if let picture = Self.coverArt(fromBase64: value, keepData: keepPictureData) {
                pictures.append(picture)
            } else {
                malformedEntries += 1
            }
        default:
            comments.append((name, String(decoding: value, as: UTF8.self)))
        }
    }

    /// Adds the entries of a C comment list (libvorbis' `vorbis_comment`, opusfile's `OpusTags`).
    public mutating func add(count: Int, entries: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                             lengths: UnsafeMutablePointer<Int32>?) {
        guard let entries, let lengths else { return }
        for i in 0..<max(0, count) {
            guard let entry = entries[i], lengths[i] >= 0 else { continue }
            add(UnsafeBufferPointer(start: UnsafeRawPointer(entry).assumingMemoryBound(to: UInt8.self), count: Int(lengths[i])))
        }
    }

    /// The first value under `name` (upper case).
    public func value(_ name: String) -> String? { comments.first { $0.name == name }?.value }

    /// Gives the COVERART pictures the MIME type in COVERARTMIME, which may come after them:
    /// called once every entry is added.
    public mutating func finish() {
        if let mime = value("COVERARTMIME") {
            for i in pictures.indices where pictures[i].mimeType.isEmpty { pictures[i].mimeType = mime }
        }
    }

    // MARK: Pictures

    /// A METADATA_BLOCK_PICTURE value: base64 of a FLAC PICTURE block (big-endian type, MIME
    /// length and MIME, description length and UTF-8 description, width, height, depth,
    /// colours, data length and data). Nil when it is not one, or a length lies.
    public static func picture(fromBase64 text: UnsafeBufferPointer<UInt8>, keepData: Bool) -> Picture? {
        // Only the header is decoded unless the data is kept: a cover can be megabytes.
        let available = Base64.decodedLength(text)
        guard available >= 32, let start = Base64.decode(text, limit: 8) else { return nil }
        let mimeLength = Int(start.bigEndian32(at: 4))
        guard mimeLength <= available - 32, let withMIME = Base64.decode(text, limit: 8 + mimeLength + 4) else { return nil }
        let descriptionLength = Int(withMIME.bigEndian32(at: 8 + mimeLength))
        let headerLength = 8 + mimeLength + 4 + descriptionLength + 20
        guard descriptionLength <= available - 32 - mimeLength,
              let header = Base64.decode(text, limit: headerLength) else { return nil }
        let dataLength = Int(header.bigEndian32(at: headerLength - 4))
        guard dataLength <= available - headerLength else { return nil }
        let type = Int(header.bigEndian32(at: 0))
        var data: [UInt8]?
        if keepData {
            guard let all = Base64.decode(text, limit: headerLength + dataLength) else { return nil }
            data = Array(all[headerLength..<(headerLength + dataLength)])
        }
        let textAt = 8 + mimeLength + 4
        return Picture(
            type: type,
            mimeType: String(decoding: header[8..<(8 + mimeLength)], as: UTF8.self),
            description: String(decoding: header[textAt..<(textAt + descriptionLength)], as: UTF8.self),
            width: Int(header.bigEndian32(at: textAt + descriptionLength)),
            height: Int(header.bigEndian32(at: textAt + descriptionLength + 4)),
            byteCount: dataLength, data: data)
    }

    /// A COVERART value: a bare image in base64, taken as the front cover (its MIME type is
    /// COVERARTMIME's, filled in by `finish`).
    static func coverArt(fromBase64 text: UnsafeBufferPointer<UInt8>, keepData: Bool) -> Picture? {
        let count = Base64.decodedLength(text)
        guard count > 0 else { return nil }
        var data: [UInt8]?
        if keepData {
            guard let all = Base64.decode(text, limit: count) else { return nil }
            data = all
        } else {
            guard Base64.decode(text, limit: min(count, 16)) != nil else { return nil }
        }
        return Picture(type: Picture.frontCoverType, mimeType: "", description: "", width: 0, height: 0,
                       byteCount: data?.count ?? count, data: data)
    }
}

/// Base64 (RFC 4648, with or without padding), decoded up to a limit so a picture's header
/// can be read without decoding its image.
enum Base64 {
    /// The decoded length of `text`, counting its padding.
    static func decodedLength(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        var count = text.count
        while count > 0 && text[count - 1] == UInt8(ascii: "=") { count -= 1 }
        return count / 4 * 3 + max(0, count % 4 - 1)
    }

    /// The first `limit` decoded bytes; nil if the text holds fewer, or a character before
    /// them is not base64.
    static func decode(_ text: UnsafeBufferPointer<UInt8>, limit: Int) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(max(0, limit))
        var accumulator: UInt32 = 0
        var bits = 0
        for c in text {
            guard out.count < limit else { break }
            let v: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = UInt32(c - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = UInt32(c - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): v = 62
            case UInt8(ascii: "/"): v = 63
            default: return nil
            }
            accumulator = accumulator << 6 | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return out.count == limit ? out : nil
    }
}

extension [UInt8] {
    /// The big-endian 32-bit value at `at` (the caller has checked that four bytes are there).
    fileprivate func bigEndian32(at: Int) -> UInt32 {
        UInt32(self[at]) << 24 | UInt32(self[at + 1]) << 16 | UInt32(self[at + 2]) << 8 | UInt32(self[at + 3])
    }
}
