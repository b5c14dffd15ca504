// How a profile becomes typed settings. Each table is one `ConfigSection` type that reads its
// keys through a `ConfigTableReader`; the reader remembers what was read, so whatever is left
// is reported as unknown. A misspelt key must fail loudly, not fall back to a default.

/// The settings of one profile table, such as `[output]`.
protocol ConfigSection {
    /// The table's name in a profile: "output" for `[output]`.
    static var tableName: String { get }
    /// The defaults.
    init()
    /// Reads the keys the section knows; absent keys keep their defaults.
    mutating func read(from table: inout ConfigTableReader) throws(ConfigError)
    /// Ranges and consistency, checked after reading a profile and again after overrides.
    func validate(_ check: ConfigCheck) throws(ConfigError)
}

/// A Swift type a profile value can be read as.
protocol ConfigValue {
    init?(toml: TOMLValue)
    /// What a profile must write, for messages: "an integer", "'paused' or 'playing'".
    static var expectation: String { get }
    /// Why `value` cannot be read: "must be an integer".
    static func problem(with value: TOMLValue) -> String
}

extension ConfigValue {
    static func problem(with value: TOMLValue) -> String { "must be \(expectation)" }
}

/// A closed set of words, such as `Resume`; messages list them.
protocol ConfigChoice: ConfigValue, RawRepresentable, CaseIterable where RawValue == String {}

/// Reads one table, remembering which keys it was asked for.
struct ConfigTableReader {
    let table: TOMLTable
    /// Keys are named from the top: "output" for `[output]`, "button[2]" for the second
    /// `[[button]]`, "" for the document itself.
    let name: String
    /// How messages refer to the table: "[output]", "[[button]]".
    let heading: String
    let fileName: String?
    private var consumed: Set<String> = []

    init(document: TOMLTable, fileName: String?) {
        self.init(table: document, name: "", heading: "", fileName: fileName)
    }

    private init(table: TOMLTable, name: String, heading: String, fileName: String?) {
        self.table = table
        self.name = name
        self.heading = heading
        self.fileName = fileName
    }

    var check: ConfigCheck { ConfigCheck(name: name, source: table, fileName: fileName) }

    /// Sets `target` from `key` when the table has it.
    mutating func read<Value: ConfigValue>(_ key: String, into target: inout Value) throws(ConfigError) {
        consumed.insert(key)
        guard let value = table[key] else { return }
        guard let typed = Value(toml: value) else {
            throw check.failure(.wrongType, key, Value.problem(with: value))
        }
        target = typed
    }

    /// The section under `S.tableName`, read, checked for unknown keys and validated; the
    /// defaults when the profile has no such table.
    mutating func section<S: ConfigSection>(_: S.Type) throws(ConfigError) -> S {
        let key = S.tableName
        consumed.insert(key)
        guard let value = table[key] else { return S() }
        guard let sectionTable = value.table else {
            throw check.failure(.wrongType, key, "must be a table ([\(qualified(key))])")
        }
        let reader = ConfigTableReader(table: sectionTable, name: qualified(key), heading: "[\(qualified(key))]", fileName: fileName)
        return try Self.read(S.self, from: reader)
    }

    /// The elements of `[[S.tableName]]` (or of an array of inline tables), each read like a
    /// section; none when the profile has none.
    mutating func sections<S: ConfigSection>(_: S.Type) throws(ConfigError) -> [S] {
        let key = S.tableName
        consumed.insert(key)
        guard let value = table[key] else { return [] }
        let tables = value.array?.compactMap(\.table)
        guard let tables, tables.count == value.array?.count else {
            throw check.failure(.wrongType, key, "must be an array of tables ([[\(qualified(key))]])")
        }
        var result: [S] = []
        for (position, table) in tables.enumerated() {
            // Numbered from 1, as a person counts the headers in the file.
            let element = ConfigTableReader(
                table: table, name: "\(qualified(key))[\(position + 1)]", heading: "[[\(qualified(key))]]", fileName: fileName)
            result.append(try Self.read(S.self, from: element))
        }
        return result
    }

    private static func read<S: ConfigSection>(_: S.Type, from reader: ConfigTableReader) throws(ConfigError) -> S {
        var reader = reader
        var section = S()
        try section.read(from: &reader)
        try reader.rejectUnknownKeys()
        try section.validate(reader.check)
        return section
    }

    /// Fails on the first key nobody asked for.
    func rejectUnknownKeys() throws(ConfigError) {
        guard let key = table.keys.first(where: { !consumed.contains($0) }) else { return }
        let value = table[key]!
        let kind: ConfigError.Kind
        let message: String
        if value.table != nil {
            (kind, message) = (.unknownTable, "unknown table [\(qualified(key))]")
        } else if let array = value.array, !array.isEmpty, array.allSatisfy({ $0.table != nil }) {
            (kind, message) = (.unknownTable, "unknown table [[\(qualified(key))]]")
        } else {
            (kind, message) = (.unknownKey, "unknown key '\(key)'" + (heading.isEmpty ? "" : " in \(heading)"))
        }
        throw ConfigError(kind: kind, message: message, key: qualified(key), fileName: fileName, line: table.line(of: key))
    }

    func qualified(_ key: String) -> String { check.qualified(key) }
}

/// The rules one section's values must keep. Errors carry the key's line when the values came
/// from a profile (`source`), and no line when they came from elsewhere.
struct ConfigCheck {
    let name: String
    var source: TOMLTable?
    var fileName: String?

    /// "output.period_frames" for "period_frames" in `[output]`.
    func qualified(_ key: String) -> String { name.isEmpty ? key : "\(name).\(key)" }

    func failure(_ kind: ConfigError.Kind, _ key: String, _ problem: String) -> ConfigError {
        // A rule broken by a default (buffer_frames against a larger period_frames) points at
        // the table.
        // "map.KEY_F1" was written as a key of `map`: point at that.
        let line = source.map { $0.line(of: key) ?? $0.line(of: String(key.prefix { $0 != "." })) ?? $0.line }
        return ConfigError(kind: kind, message: "\(qualified(key)) \(problem)", key: qualified(key), fileName: fileName, line: line)
    }

    func range<T: Comparable>(_ key: String, _ value: T, _ bounds: ClosedRange<T>) throws(ConfigError) {
        guard bounds.contains(value) else {
            throw failure(.outOfRange, key, "must be between \(show(bounds.lowerBound)) and \(show(bounds.upperBound)), not \(show(value))")
        }
    }

    func atLeast<T: Comparable>(_ key: String, _ value: T, _ minimum: T) throws(ConfigError) {
        guard value >= minimum else { throw failure(.outOfRange, key, "must be at least \(show(minimum)), not \(show(value))") }
    }

    func positive(_ key: String, _ value: Double) throws(ConfigError) {
        guard value > 0 && value.isFinite else { throw failure(.outOfRange, key, "must be a number above 0, not \(show(value))") }
    }

    func require(_ condition: Bool, _ key: String, _ problem: String) throws(ConfigError) {
        guard condition else { throw failure(.outOfRange, key, problem) }
    }

    /// Numbers as a profile writes them: "60", not "60.0".
    private func show<T>(_ value: T) -> String {
        if let number = value as? Double, number.rounded() == number, abs(number) < 1e15 { return String(Int(number)) }
        return "\(value)"
    }

    /// A device or control name handed to C: not empty, no NUL.
    func name(_ key: String, _ value: String?) throws(ConfigError) {
        guard let value else { return }
        if value.isEmpty { throw failure(.invalidValue, key, "must not be empty") }
        if value.utf8.contains(0) { throw failure(.invalidValue, key, "must not contain a NUL character") }
    }

    /// A file system path: a name, and no '~', which nothing here would expand.
    func path(_ key: String, _ value: String?) throws(ConfigError) {
        try name(key, value)
        if let value, value.hasPrefix("~") {
            throw failure(.invalidValue, key, "starts with '~', which is not expanded; write the full path")
        }
    }
}

extension String: ConfigValue {
    init?(toml: TOMLValue) {
        guard let value = toml.string else { return nil }
        self = value
    }
    static var expectation: String { "a string" }
}

extension Int: ConfigValue {
    init?(toml: TOMLValue) {
        guard let value = toml.integer else { return nil }
        self = value
    }
    static var expectation: String { "an integer" }
}

/// Seconds and other measures: `2` reads as well as `2.0`.
extension Double: ConfigValue {
    init?(toml: TOMLValue) {
        guard let value = toml.float ?? toml.integer.map(Double.init) else { return nil }
        self = value
    }
    static var expectation: String { "a number" }
}

extension Bool: ConfigValue {
    init?(toml: TOMLValue) {
        guard let value = toml.boolean else { return nil }
        self = value
    }
    static var expectation: String { "true or false" }
}

/// TOML has no null: an optional setting is one the profile may leave out.
extension Optional: ConfigValue where Wrapped: ConfigValue {
    init?(toml: TOMLValue) {
        guard let value = Wrapped(toml: toml) else { return nil }
        self = value
    }
    static var expectation: String { Wrapped.expectation }
    static func problem(with value: TOMLValue) -> String { Wrapped.problem(with: value) }
}

/// A list of values of one kind: `options = ["mixWithOthers"]`.
extension Array: ConfigValue where Element: ConfigValue {
    init?(toml: TOMLValue) {
        guard case .array(let values) = toml else { return nil }
        var elements: [Element] = []
        for value in values {
            guard let element = Element(toml: value) else { return nil }
            elements.append(element)
        }
        self = elements
    }
    static var expectation: String { "an array, each element \(Element.expectation)" }
}

extension ConfigChoice {
    init?(toml: TOMLValue) {
        guard let word = toml.string, let value = Self(rawValue: word) else { return nil }
        self = value
    }

    static var expectation: String {
        let words = allCases.map { "'\($0.rawValue)'" }
        return words.count == 2 ? "\(words[0]) or \(words[1])" : "one of \(words.joined(separator: ", "))"
    }

    /// Names the word that was written, which is usually a near miss ("Playback").
    static func problem(with value: TOMLValue) -> String {
        "must be \(expectation)" + (value.string.map { ", not '\($0)'" } ?? "")
    }
}
