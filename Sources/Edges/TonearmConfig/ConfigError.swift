/// Why a board profile (or a command-line override of one) cannot be used. One line:
/// "board.toml:12: unknown key 'periodframes' in [output]" when the file is known,
/// "output.period_frames must be an integer (line 7)" when it is not.
public struct ConfigError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// The file could not be read.
        case unreadable
        /// The file is not TOML (see `toml`).
        case syntax
        /// A key no section knows.
        case unknownKey
        /// A table no section knows.
        case unknownTable
        /// A value of the wrong TOML type, or a string that is not one of the allowed words.
        case wrongType
        /// A number outside its range, or values that do not fit together.
        case outOfRange
        /// A string that cannot be used: empty, with a NUL, a path starting with '~'.
        case invalidValue
    }

    public var kind: Kind
    /// The problem without its place: "unknown key 'periodframes' in [output]".
    public var message: String
    /// The key at fault, dotted from the top ("output.period_frames"), when there is one.
    public var key: String?
    public var fileName: String?
    /// Where in the file; nil for errors found in values that came from elsewhere (overrides).
    public var line: Int?
    public var column: Int?
    /// The parser's error behind `.syntax` and `.unreadable`.
    public var toml: TOMLError?

    public init(kind: Kind, message: String, key: String? = nil, fileName: String? = nil, line: Int? = nil, column: Int? = nil) {
        self.kind = kind
        self.message = message
        self.key = key
        self.fileName = fileName
        self.line = line
        self.column = column
    }

    public init(_ error: TOMLError) {
        let placed = error.line > 0
        self.init(
            kind: error.kind == .unreadableFile ? .unreadable : .syntax, message: error.message,
            fileName: error.fileName, line: placed ? error.line : nil, column: placed ? error.column : nil)
        toml = error
    }

    public var description: String {
        located(message, fileName: fileName, line: line, column: column)
    }
}
