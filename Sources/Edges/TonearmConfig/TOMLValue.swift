/// One value of a TOML document.
///
/// Dates and times are not among them: no board profile needs one, so the parser refuses them
/// by name rather than carrying a calendar type around.
public enum TOMLValue: Sendable, Equatable {
    case string(String)
    case integer(Int)
    case float(Double)
    case boolean(Bool)
    case array([TOMLValue])
    case table(TOMLTable)

    public var string: String? { if case .string(let value) = self { value } else { nil } }
    public var integer: Int? { if case .integer(let value) = self { value } else { nil } }
    public var float: Double? { if case .float(let value) = self { value } else { nil } }
    public var boolean: Bool? { if case .boolean(let value) = self { value } else { nil } }
    public var array: [TOMLValue]? { if case .array(let value) = self { value } else { nil } }
    public var table: TOMLTable? { if case .table(let value) = self { value } else { nil } }

    /// The value under `key` when this is a table.
    public subscript(key: String) -> TOMLValue? { table?[key] }

    /// "a string", "an integer", ...: what a message says the value is.
    var kindDescription: String {
        switch self {
        case .string: "a string"
        case .integer: "an integer"
        case .float: "a float"
        case .boolean: "a boolean"
        case .array: "an array"
        case .table: "a table"
        }
    }
}

/// A TOML table: keys in the order the document wrote them, each with the line it was written
/// on, so that a reader of the table can say "unknown key at line 12".
///
/// Two tables are equal when they hold the same keys with equal values; order and source lines
/// are not compared (TOML tables are unordered).
public struct TOMLTable: Sendable, Equatable {
    private struct Entry: Sendable {
        var key: String
        var value: TOMLValue
        var line: Int
    }

    private var entries: [Entry] = []
    private var positions: [String: Int] = [:]

    /// The line the table starts on: its `[header]` or `[[header]]`, the `{` of an inline table,
    /// or the first dotted key that made it; 1 for the document itself, 0 for a table built in
    /// code.
    public internal(set) var line: Int

    public init() { line = 0 }

    init(line: Int) { self.line = line }

    /// The keys in document order.
    public var keys: [String] { entries.map(\.key) }
    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }

    public subscript(key: String) -> TOMLValue? {
        positions[key].map { entries[$0].value }
    }

    /// The line `key` was written on (for a table made by a header, the header's line).
    public func line(of key: String) -> Int? {
        positions[key].map { entries[$0].line }
    }

    /// Adds a key the table does not have yet.
    mutating func append(_ key: String, _ value: TOMLValue, line: Int) {
        precondition(positions[key] == nil, "duplicate key '\(key)'")
        positions[key] = entries.count
        entries.append(Entry(key: key, value: value, line: line))
    }

    public static func == (lhs: TOMLTable, rhs: TOMLTable) -> Bool {
        lhs.entries.count == rhs.entries.count && lhs.entries.allSatisfy { rhs[$0.key] == $0.value }
    }
}

// Literals keep tables written in code (tests, built-in profiles) readable.

extension TOMLTable: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, TOMLValue)...) {
        self.init()
        for (key, value) in elements { append(key, value, line: 0) }
    }
}

extension TOMLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .float(value) }
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
    public init(arrayLiteral elements: TOMLValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, TOMLValue)...) {
        var table = TOMLTable()
        for (key, value) in elements { table.append(key, value, line: 0) }
        self = .table(table)
    }
}
