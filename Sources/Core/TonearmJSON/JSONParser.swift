/// Why a text is not JSON, and where: `description` reads "expected ',' or '}' at byte 17,
/// found ']'".
public struct JSONParseError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// The text ended inside a value (or was empty).
        case unexpectedEnd
        /// A character that cannot start or continue what came before.
        case unexpectedCharacter
        /// A number that breaks the RFC 8259 grammar (leading zero, "1.", "-", "1e").
        case invalidNumber
        /// A number too large for a `Double`.
        case numberOutOfRange
        /// A backslash escape that JSON does not have, or `\u` without four hex digits.
        case invalidEscape
        /// A `\uD800`-`\uDFFF` escape that is not half of a surrogate pair.
        case unpairedSurrogate
        /// A raw control character (below U+0020) inside a string.
        case controlCharacter
        /// Bytes that are not UTF-8.
        case invalidUTF8
        /// Arrays and objects nested deeper than the limit.
        case tooDeep
        /// The same key twice in one object.
        case duplicateKey
        /// Something other than whitespace after the value.
        case trailingCharacters
    }

    public let kind: Kind
    /// Where the problem is, in bytes of UTF-8 from the start of the text.
    public let offset: Int
    public let description: String

    init(_ kind: Kind, _ what: String, at offset: Int, found: String? = nil) {
        self.kind = kind
        self.offset = offset
        description = "\(what) at byte \(offset)" + (found.map { ", found \($0)" } ?? "")
    }
}

extension JSONValue {
    /// Nesting deeper than this is refused by default: the parser recurses, and no request or
    /// state file of ours comes near it.
    public static let defaultMaxDepth = 64

    /// Parses RFC 8259 JSON strictly: no comments, trailing commas, NaN or single quotes;
    /// duplicate keys are refused. Integers that fit `Int` become `.int`, other numbers
    /// `.double`.
    public static func parse(_ text: String, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        var text = text
        // `withUTF8` and `withUnsafeBufferPointer` rethrow untyped errors (Swift 6.0), so the
        // typed one travels in a `Result`.
        let result = text.withUTF8 { buffer in
            Result { () throws(JSONParseError) in try parse(buffer, maxDepth: maxDepth) }
        }
        return try result.get()
    }

    /// Parses UTF-8 bytes; bytes that are not UTF-8 are an error.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        let result = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONParseError) in try parse(buffer, maxDepth: maxDepth) }
        }
        return try result.get()
    }

    /// Parses UTF-8 bytes in place (a line in a socket buffer, say).
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
        return try parser.parseDocument()
    }
}

/// A recursive-descent parser over a byte buffer; depth is bounded, so recursion is too.
private struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var index = 0
    var depth = 0
    /// Unescaped string bytes, reused from string to string.
    var scratch: [UInt8] = []

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        let value = try parseValue()
        skipWhitespace()
        if index < bytes.count {
            throw JSONParseError(.trailingCharacters, "unexpected \(describe(bytes[index])) after the JSON value", at: index)
        }
        return value
    }

    // MARK: Values

    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw endOfInput(expecting: "expected a value") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw unexpected(expecting: "expected a value")
        }
    }

    mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enterContainer()
        index += 1
        var members: [(String, JSONValue)] = []
        // Small objects (every request) check duplicates by scanning; large ones by a set.
        var keys: Set<String>? = nil
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw endOfInput(expecting: "expected a string key") }
            guard bytes[index] == UInt8(ascii: "\"") else { throw unexpected(expecting: "expected a string key") }
            let keyOffset = index
            let key = try parseString()
            if members.count < 16 {
                if members.contains(where: { $0.0 == key }) { throw duplicate(key, at: keyOffset) }
            } else {
                if keys == nil { keys = Set(members.map(\.0)) }
                if !keys!.insert(key).inserted { throw duplicate(key, at: keyOffset) }
            }
            skipWhitespace()
            guard index < bytes.count else { throw endOfInput(expecting: "expected ':'") }
            guard bytes[index] == UInt8(ascii: ":") else { throw unexpected(expecting: "expected ':'") }
            index += 1
            members.append((key, try parseValue()))
            skipWhitespace()
            guard index < bytes.count else { throw endOfInput(expecting: "expected ',' or '}'") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return .object(members)
            default: throw unexpected(expecting: "expected ',' or '}'")
            }
        }
    }

    mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enterContainer()
        index += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(items)
        }
        while true {
            items.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw endOfInput(expecting: "expected ',' or ']'") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return .array(items)
            default: throw unexpected(expecting: "expected ',' or ']'")
            }
        }
    }

    mutating func enterContainer() throws(JSONParseError) {
        depth += 1
        if depth > maxDepth {
            throw JSONParseError(.tooDeep, "arrays and objects nested deeper than \(maxDepth)", at: index)
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let start = index
        let count = literal.utf8CodeUnitCount
        for i in 0..<count {
            let expected = literal.utf8Start[i]
            guard start + i < bytes.count else { throw endOfInput(expecting: "expected '\(literal)'", at: start) }
            guard bytes[start + i] == expected else {
                index = start + i
                throw JSONParseError(.unexpectedCharacter, "expected '\(literal)'", at: start, found: describe(bytes[start + i]))
            }
        }
        index = start + count
    }

    // MARK: Numbers

    /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < bytes.count else { throw endOfInput(expecting: "expected a digit after '-'") }
        var integer = 0
        var overflowed = false
        switch bytes[index] {
        case UInt8(ascii: "0"):
            index += 1
            if index < bytes.count, isDigit(bytes[index]) {
                throw JSONParseError(.invalidNumber, "a number must not have a leading zero", at: start)
            }
        case UInt8(ascii: "1")...UInt8(ascii: "9"):
            // Accumulated towards the sign, so Int.min fits.
            while index < bytes.count, isDigit(bytes[index]) {
                let digit = Int(bytes[index] &- UInt8(ascii: "0"))
                if !overflowed {
                    let (times10, o1) = integer.multipliedReportingOverflow(by: 10)
                    let (next, o2) = negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
                    if o1 || o2 { overflowed = true } else { integer = next }
                }
                index += 1
            }
        default:
            throw JSONParseError(.invalidNumber, "expected a digit after '-'", at: index, found: describe(bytes[index]))
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            try expectDigits(after: "'.'")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            try expectDigits(after: "the exponent")
        }
        if isInteger && !overflowed { return .int(integer) }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONParseError(.numberOutOfRange, "number \(text) is out of range", at: start)
        }
        return .double(value)
    }

    mutating func expectDigits(after what: String) throws(JSONParseError) {
        guard index < bytes.count else { throw endOfInput(expecting: "expected a digit after \(what)") }
        guard isDigit(bytes[index]) else {
            throw JSONParseError(.invalidNumber, "expected a digit after \(what)", at: index, found: describe(bytes[index]))
        }
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    // MARK: Strings

    /// Parses a string starting at its opening quote. Strings without escapes are decoded
    /// straight from the buffer; escapes go through `scratch`.
    mutating func parseString() throws(JSONParseError) -> String {
        let open = index
        index += 1
        var segmentStart = index
        var escaped = false
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                let segment = UnsafeBufferPointer(rebasing: bytes[segmentStart..<index])
                index += 1
                if !escaped { return String(decoding: segment, as: UTF8.self) }
                scratch.append(contentsOf: segment)
                return String(decoding: scratch, as: UTF8.self)
            case UInt8(ascii: "\\"):
                if !escaped {
                    scratch.removeAll(keepingCapacity: true)
                    escaped = true
                }
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[segmentStart..<index]))
                try parseEscape()
                segmentStart = index
            case 0..<0x20:
                let name = byte == 0x0A ? " (escape it as \\n)" : ""
                throw JSONParseError(
                    .controlCharacter, "control character \(hex(byte)) in a string\(name)", at: index)
            case 0x20..<0x80:
                index += 1
            default:
                index += try utf8SequenceLength(at: index)
            }
        }
        throw endOfInput(expecting: "unterminated string (opened at byte \(open))")
    }

    /// Decodes the escape at `index` (a backslash) into `scratch`.
    mutating func parseEscape() throws(JSONParseError) {
        let start = index
        index += 1
        guard index < bytes.count else { throw endOfInput(expecting: "expected an escape after '\\'") }
        let letter = bytes[index]
        index += 1
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(letter)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            let unit = try hexQuad(escapeAt: start)
            var scalarValue = UInt32(unit)
            if (0xD800...0xDBFF).contains(unit) {
                // A high surrogate must be followed at once by a low one.
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw unpaired(unit, at: start)
                }
                let lowStart = index
                index += 2
                let low = try hexQuad(escapeAt: lowStart)
                guard (0xDC00...0xDFFF).contains(low) else { throw unpaired(unit, at: start) }
                scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(unit) {
                throw unpaired(unit, at: start)
            }
            scratch.append(contentsOf: UTF8.encode(Unicode.Scalar(scalarValue)!)!)
        default:
            throw JSONParseError(.invalidEscape, "invalid escape '\\\(describeRaw(letter))' in a string", at: start)
        }
    }

    /// Four hex digits after `\u`; `index` is just past the `u`.
    mutating func hexQuad(escapeAt start: Int) throws(JSONParseError) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard index < bytes.count else { throw endOfInput(expecting: "expected 4 hex digits after '\\u'") }
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default:
                throw JSONParseError(.invalidEscape, "expected 4 hex digits after '\\u'", at: start, found: describe(byte))
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    /// The length of the well-formed UTF-8 sequence at `offset` (Unicode table 3-7: no
    /// overlong forms, no surrogates, nothing above U+10FFFF).
    func utf8SequenceLength(at offset: Int) throws(JSONParseError) -> Int {
        let lead = bytes[offset]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: throw JSONParseError(.invalidUTF8, "invalid UTF-8 (byte \(hex(lead)))", at: offset)
        }
        guard offset + length <= bytes.count else {
            throw JSONParseError(.invalidUTF8, "invalid UTF-8 (truncated sequence)", at: offset)
        }
        let second = bytes[offset + 1]
        guard second >= low && second <= high else {
            throw JSONParseError(.invalidUTF8, "invalid UTF-8 (byte \(hex(lead)) then \(hex(second)))", at: offset)
        }
        for i in 2..<max(length, 2) where bytes[offset + i] & 0xC0 != 0x80 {
            throw JSONParseError(.invalidUTF8, "invalid UTF-8 (byte \(hex(bytes[offset + i])) in a sequence)", at: offset)
        }
        return length
    }

    // MARK: Whitespace and errors

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    func endOfInput(expecting what: String, at offset: Int? = nil) -> JSONParseError {
        JSONParseError(.unexpectedEnd, what, at: offset ?? bytes.count, found: "end of input")
    }

    func unexpected(expecting what: String) -> JSONParseError {
        let byte = bytes[index]
        if byte >= 0x80, (try? utf8SequenceLength(at: index)) == nil {
            return JSONParseError(.invalidUTF8, "invalid UTF-8 (byte \(hex(byte)))", at: index)
        }
        return JSONParseError(.unexpectedCharacter, what, at: index, found: describe(byte))
    }

    func duplicate(_ key: String, at offset: Int) -> JSONParseError {
        JSONParseError(.duplicateKey, "duplicate key \(JSONValue.string(key).serialized)", at: offset)
    }

    func unpaired(_ unit: UInt16, at offset: Int) -> JSONParseError {
        JSONParseError(.unpairedSurrogate, "unpaired surrogate \\u\(String(unit, radix: 16, uppercase: true))", at: offset)
    }

    /// `'x'` for printable ASCII, `byte 0x07` otherwise.
    func describe(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? "'\(describeRaw(byte))'" : "byte \(hex(byte))"
    }

    func describeRaw(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? String(UnicodeScalar(byte)) : hex(byte)
    }

    func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return "0x" + (digits.count == 1 ? "0" : "") + digits
    }
}
