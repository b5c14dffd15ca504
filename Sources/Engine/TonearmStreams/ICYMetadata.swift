/// Shoutcast/Icecast in-band metadata ("ICY"): with `Icy-MetaData: 1` in the request, a server
/// that answers `icy-metaint: N` puts a metadata block after every N bytes of audio. A block is
/// one length byte L, then L × 16 bytes of text padded with NULs:
/// `StreamTitle='Artist - Title';StreamUrl='…';`.
///
/// `ICYDemuxer` takes the bytes as they come, in pieces of any size, hands back the audio
/// alone and each block's title. Pure: no I/O, no clock.
public struct ICYDemuxer: Sendable {
    /// Audio bytes between two blocks (`icy-metaint`).
    public let interval: Int
    private var state: State
    private var block: [UInt8] = []

    private enum State: Sendable {
        /// This many audio bytes before the next length byte.
        case audio(Int)
        case lengthByte
        /// This many metadata bytes still to come.
        case metadata(Int)
    }

    /// `interval` is the server's `icy-metaint`; it must be positive.
    public init(interval: Int) {
        precondition(interval > 0, "icy-metaint must be positive")
        self.interval = interval
        state = .audio(interval)
    }

    /// Splits `bytes`: `audio` is called with each run of audio bytes in order (slices of
    /// `bytes`), `metadata` with each complete metadata block that holds a `StreamTitle`.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, audio: (UnsafeRawBufferPointer) -> Void,
                              metadata: (ICYMetadata) -> Void) {
        var at = 0
        while at < bytes.count {
            switch state {
            case .audio(let left):
                let n = min(left, bytes.count - at)
                audio(UnsafeRawBufferPointer(rebasing: bytes[at..<(at + n)]))
                at += n
                state = n == left ? .lengthByte : .audio(left - n)
            case .lengthByte:
                let length = Int(bytes[at]) * 16
                at += 1
                // A length of 0: no metadata this time.
                state = length == 0 ? .audio(interval) : .metadata(length)
                block.removeAll(keepingCapacity: true)
            case .metadata(let left):
                let n = min(left, bytes.count - at)
                block.append(contentsOf: bytes[at..<(at + n)])
                at += n
                if n == left {
                    state = .audio(interval)
                    if let parsed = ICYMetadata(block: block) { metadata(parsed) }
                } else {
                    state = .metadata(left - n)
                }
            }
        }
    }
}

/// What one ICY metadata block says.
public struct ICYMetadata: Sendable, Equatable {
    /// `StreamTitle`, as the station sends it (often "Artist - Title"); nil when empty.
    public var title: String?

    public init(title: String?) { self.title = title }

    /// Parses a block's text; nil when it has no `StreamTitle` at all (garbage, or only a
    /// `StreamUrl`), which leaves the title as it was.
    public init?(block: [UInt8]) {
        // The padding, and anything after a NUL, is not text.
        let text = block.prefix { $0 != 0 }
        guard let value = Self.value(of: "StreamTitle", in: Array(text)) else { return nil }
        let decoded = Self.decode(value).trimmingSpaces
        title = decoded.isEmpty ? nil : decoded
    }

    /// The bytes of `key='…';` in `text`. A value may hold quotes ("Guns N' Roses"): it ends
    /// at the first `';` that ends the text or is followed by another `Key=`, else at the
    /// last quote.
    static func value(of key: String, in text: [UInt8]) -> ArraySlice<UInt8>? {
        let marker = Array(key.utf8) + [UInt8(ascii: "="), UInt8(ascii: "'")]
        guard let start = firstIndex(of: marker, in: text) else { return nil }
        let from = start + marker.count
        var i = from
        while i < text.count {
            if text[i] == UInt8(ascii: "'") && (i + 1 == text.count || text[i + 1] == UInt8(ascii: ";")) {
                let rest = text[min(text.count, i + 2)...]
                if rest.allSatisfy({ $0 == UInt8(ascii: " ") }) || startsWithKey(rest) { return text[from..<i] }
            }
            i += 1
        }
        if let last = text[from...].lastIndex(of: UInt8(ascii: "'")) { return text[from..<last] }
        return text[from...]
    }

    private static func firstIndex(of marker: [UInt8], in text: [UInt8]) -> Int? {
        guard text.count >= marker.count else { return nil }
        for i in 0...(text.count - marker.count) where text[i..<(i + marker.count)].elementsEqual(marker) {
            // A key starts the text or follows a `;`.
            if i == 0 || text[i - 1] == UInt8(ascii: ";") || text[i - 1] == UInt8(ascii: " ") { return i }
        }
        return nil
    }

    /// Whether `rest` starts with `Name=`.
    private static func startsWithKey(_ rest: ArraySlice<UInt8>) -> Bool {
        var sawLetter = false
        for byte in rest {
            if byte == UInt8(ascii: "=") { return sawLetter }
            let isName = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "_")
            guard isName else { return false }
            sawLetter = true
        }
        return false
    }

    /// UTF-8 when the bytes are valid UTF-8, else Latin-1 (what older stations send).
    static func decode(_ bytes: ArraySlice<UInt8>) -> String {
        var utf8 = String.UnicodeScalarView()
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        loop: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): utf8.append(scalar)
            case .emptyInput: return String(utf8)
            case .error: break loop
            }
        }
        var latin1 = String.UnicodeScalarView()
        for byte in bytes { latin1.append(Unicode.Scalar(byte)) }
        return String(latin1)
    }
}

extension String {
    /// Without leading and trailing spaces (no Foundation here).
    var trimmingSpaces: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != " " }),
              let last = scalars.lastIndex(where: { $0 != " " }) else { return "" }
        return String(scalars[first...last])
    }
}
