/// Text for displays whose character sets are small: the HD44780's ROM and a Nextion font
/// generated for ISO-8859-1. Titles come in any script; what a display cannot draw is
/// transliterated when a plain-ASCII spelling is obvious (é → e, ß → ss, “ → ", … → ...) and
/// replaced by `?` otherwise. Control characters become spaces; combining marks and
/// zero-width characters are dropped.
enum DisplayText {
    /// The bytes of `text` an HD44780 with the common A00 ROM draws as ASCII: 0x20–0x7D,
    /// except 0x5C (the ROM has ¥ there; `\` becomes `/`) and 0x7C (`|`, which a SerLCD
    /// backpack takes as its settings prefix; it becomes `!`). `~` (0x7E is → in the ROM)
    /// becomes `-`.
    static func lcdBytes(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if scalar.value < 0x80 {
                bytes.append(lcdByte(UInt8(scalar.value)))
            } else if let ascii = ascii(for: scalar) {
                for byte in ascii.utf8 { bytes.append(lcdByte(byte)) }
            } else {
                bytes.append(UInt8(ascii: "?"))
            }
        }
        return bytes
    }

    private static func lcdByte(_ byte: UInt8) -> UInt8 {
        switch byte {
        case UInt8(ascii: "\\"): UInt8(ascii: "/")
        case UInt8(ascii: "|"): UInt8(ascii: "!")
        case UInt8(ascii: "~"): UInt8(ascii: "-")
        case 0x20...0x7D: byte
        default: UInt8(ascii: " ")  // control characters
        }
    }

    /// `text` in ISO-8859-1, the Nextion Editor's default character encoding. ÿ (0xFF)
    /// becomes `y`: three of them in a row would end a Nextion instruction.
    static func latin1Bytes(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x20...0x7E, 0xA0...0xFE: bytes.append(UInt8(scalar.value))
            case 0xFF: bytes.append(UInt8(ascii: "y"))
            case 0..<0x20, 0x7F...0x9F: bytes.append(UInt8(ascii: " "))
            default:
                if let ascii = ascii(for: scalar) {
                    bytes.append(contentsOf: ascii.utf8)
                } else {
                    bytes.append(UInt8(ascii: "?"))
                }
            }
        }
        return bytes
    }

    /// `text` in UTF-8 with control characters as spaces.
    static func utf8Bytes(_ text: String) -> [UInt8] {
        text.utf8.map { $0 < 0x20 || $0 == 0x7F ? UInt8(ascii: " ") : $0 }
    }

    /// A plain-ASCII spelling of a scalar above 0x7F, or nil when there is none.
    static func ascii(for scalar: Unicode.Scalar) -> String? {
        let value = scalar.value
        switch value {
        case 0x80...0x9F: return " "
        case 0xA0...0xBF: return latin1Symbols[Int(value - 0xA0)]
        case 0xC0...0xFF: return latin1Letters[Int(value - 0xC0)]
        case 0x100...0x17F: return latinExtendedA[Int(value - 0x100)]
        case 0x300...0x36F, 0x200B...0x200F, 0xFE00...0xFE0F, 0xFEFF: return ""
        case 0x2000...0x200A, 0x202F, 0x205F, 0x3000: return " "
        case 0x2010...0x2015, 0x2212: return "-"
        case 0x2018...0x201B, 0x2032: return "'"
        case 0x201C...0x201F, 0x2033: return "\""
        case 0x2022, 0x2027: return "*"
        case 0x2026: return "..."
        case 0x2039: return "<"
        case 0x203A: return ">"
        case 0x20AC: return "EUR"
        case 0x2122: return "TM"
        default: return nil
        }
    }

    private static let latin1Symbols: [String] = [
        " ", "!", "c", "L", "?", "Y", "|", "S", "\"", "(c)", "a", "<<", "-", "", "(R)", "-",
        "o", "+-", "2", "3", "'", "u", "P", ".", ",", "1", "o", ">>", "1/4", "1/2", "3/4", "?",
    ]

    private static let latin1Letters: [String] = [
        "A", "A", "A", "A", "A", "A", "AE", "C", "E", "E", "E", "E", "I", "I", "I", "I",
        "D", "N", "O", "O", "O", "O", "O", "x", "O", "U", "U", "U", "U", "Y", "Th", "ss",
        "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",
        "d", "n", "o", "o", "o", "o", "o", "/", "o", "u", "u", "u", "u", "y", "th", "y",
    ]

    /// U+0100…U+017F: Ā ā Ă ă Ą ą Ć ć … Ž ž ſ.
    private static let latinExtendedA: [String] = [
        "A", "a", "A", "a", "A", "a", "C", "c", "C", "c", "C", "c", "C", "c", "D", "d",
        "D", "d", "E", "e", "E", "e", "E", "e", "E", "e", "E", "e", "G", "g", "G", "g",
        "G", "g", "G", "g", "H", "h", "H", "h", "I", "i", "I", "i", "I", "i", "I", "i",
        "I", "i", "IJ", "ij", "J", "j", "K", "k", "k", "L", "l", "L", "l", "L", "l", "L",
        "l", "L", "l", "N", "n", "N", "n", "N", "n", "'n", "N", "n", "O", "o", "O", "o",
        "O", "o", "OE", "oe", "R", "r", "R", "r", "R", "r", "S", "s", "S", "s", "S", "s",
        "S", "s", "T", "t", "T", "t", "T", "t", "U", "u", "U", "u", "U", "u", "U", "u",
        "U", "u", "U", "u", "W", "w", "Y", "y", "Y", "Z", "z", "Z", "z", "Z", "z", "s",
    ]
}
