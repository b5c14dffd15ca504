/// Why a text is not a TOML document (of the subset Tonearm reads), and where.
///
/// `description` reads "board.toml:7:18: invalid escape '\q'" when the file is known, and
/// "invalid escape '\q' (line 7, column 18)" when it is not.
public struct TOMLError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Text that does not fit the grammar: a missing '=', a stray character, an unclosed
        /// bracket.
        case syntax
        /// A string with an unknown escape, a raw control character or no closing quote.
        case invalidString
        /// A number that breaks TOML's rules (leading zeros, misplaced underscores, "1.").
        case invalidNumber
        /// An integer beyond 64 bits or a float beyond `Double`.
        case numberOutOfRange
        /// A key given a value twice, or a value where a table is needed (and the reverse).
        case duplicateKey
        /// A table defined twice, or extended from a place TOML does not allow.
        case redefinedTable
        /// An offset date-time, local date-time, local date or local time.
        case unsupportedDate
        /// Bytes that are not UTF-8.
        case invalidUTF8
        /// Tables and arrays nested deeper than `TOMLTable.maximumDepth`.
        case tooDeep
        /// The file could not be read; `line` and `column` are 0.
        case unreadableFile
    }

    public var kind: Kind
    public var message: String
    /// 1-based; 0 when the error is not about a place in the text.
    public var line: Int
    /// 1-based, in Unicode scalars from the start of the line.
    public var column: Int
    public var fileName: String?

    public init(kind: Kind, message: String, line: Int, column: Int, fileName: String? = nil) {
        self.kind = kind
        self.message = message
        self.line = line
        self.column = column
        self.fileName = fileName
    }

    public var description: String {
        located(message, fileName: fileName, line: line > 0 ? line : nil, column: column > 0 ? column : nil)
    }
}

/// "FILE:LINE[:COL]: message" when the file is known, "message (line L[, column C])" when it
/// is not, the message alone when there is no place. Shared by `TOMLError` and `ConfigError`.
func located(_ message: String, fileName: String?, line: Int?, column: Int?) -> String {
    guard let line else { return message }
    if let fileName {
        return "\(fileName):\(line)\(column.map { ":\($0)" } ?? ""): \(message)"
    }
    return "\(message) (line \(line)\(column.map { ", column \($0)" } ?? ""))"
}
