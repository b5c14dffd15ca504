/// Standard base64 (RFC 4648), for bytes inside JSON: artwork, and the PCM a client streams
/// into its session.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Each character's 6-bit value; 0xFF for a character that is not in the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = UInt8(index) }
        return table
    }()

    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 2 < bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [alphabet[Int(v >> 18)], alphabet[Int(v >> 12 & 63)], alphabet[Int(v >> 6 & 63)], alphabet[Int(v & 63)]]
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let v = UInt32(bytes[i]) << 16
            out += [alphabet[Int(v >> 18)], alphabet[Int(v >> 12 & 63)], UInt8(ascii: "="), UInt8(ascii: "=")]
        } else if rest == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [alphabet[Int(v >> 18)], alphabet[Int(v >> 12 & 63)], alphabet[Int(v >> 6 & 63)], UInt8(ascii: "=")]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of padded base64 text; nil when it is not (a stray character, a length that
    /// is not a multiple of 4, padding in the middle).
    public static func decode(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 4 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(characters.count / 4 * 3)
        var i = 0
        while i < characters.count {
            let last = i + 4 == characters.count
            let padding = last ? characters[i..<(i + 4)].reversed().prefix { $0 == UInt8(ascii: "=") }.count : 0
            guard padding <= 2 else { return nil }
            var v: UInt32 = 0
            for j in 0..<4 {
                let character = characters[i + j]
                if j >= 4 - padding {
                    v <<= 6
                    continue
                }
                let value = values[Int(character)]
                guard value != 0xFF else { return nil }
                v = v << 6 | UInt32(value)
            }
            out.append(UInt8(v >> 16))
            if padding < 2 { out.append(UInt8(v >> 8 & 0xFF)) }
            if padding < 1 { out.append(UInt8(v & 0xFF)) }
            i += 4
        }
        return out
    }
}
