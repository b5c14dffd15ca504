/// File names are bytes; Tonearm's paths are `String`s. A name that is not UTF-8 (a stick
/// written on an old Windows in Latin-1, say) is carried with each byte that is not part of a
/// valid UTF-8 sequence as the code point U+10FF00 + byte (the end of plane 16, private use),
/// and turned back into the same bytes whenever the path reaches the kernel — so such a file is
/// listed, indexed, queued and played like any other. (A name that really holds U+10FF80…
/// U+10FFFF cannot be told apart; none is known to.)
public enum FileName {
    static let base: UInt32 = 0x10FF00

    /// The path for the bytes `raw` (no NUL).
    public static func string<Bytes: Collection>(_ raw: Bytes) -> String where Bytes.Element == UInt8 {
        if let text = String(validating: raw, as: UTF8.self) { return text }
        var scalars = String.UnicodeScalarView()
        var bytes = Array(raw)[...]
        while !bytes.isEmpty {
            // The longest valid UTF-8 sequence at the start, else one byte escaped.
            var decoded = false
            for length in stride(from: min(4, bytes.count), through: 1, by: -1) {
                if let text = String(validating: bytes.prefix(length), as: UTF8.self), text.unicodeScalars.count == 1 {
                    scalars.append(contentsOf: text.unicodeScalars)
                    bytes = bytes.dropFirst(length)
                    decoded = true
                    break
                }
            }
            if !decoded {
                scalars.append(Unicode.Scalar(base + UInt32(bytes.first!))!)
                bytes = bytes.dropFirst()
            }
        }
        return String(scalars)
    }

    /// The bytes the kernel knows `path` by.
    public static func bytes(_ path: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(path.utf8.count)
        for scalar in path.unicodeScalars {
            if scalar.value >= base + 0x80 && scalar.value <= base + 0xFF {
                out.append(UInt8(scalar.value - base))
            } else {
                out.append(contentsOf: String(scalar).utf8)
            }
        }
        return out
    }

    /// Calls `body` with `path` as the NUL-terminated bytes the kernel knows it by.
    public static func withPath<R>(_ path: String, _ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        // Most paths hold no escaped byte: their UTF-8 is their name.
        guard path.unicodeScalars.contains(where: { $0.value >= base + 0x80 && $0.value <= base + 0xFF }) else {
            return try path.withCString(body)
        }
        let raw = bytes(path).map { CChar(bitPattern: $0) } + [0]
        return try raw.withUnsafeBufferPointer { try body($0.baseAddress!) }
    }
}
