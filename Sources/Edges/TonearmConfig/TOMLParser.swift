extension TOMLTable {
    /// Tables and arrays may nest this deep (counting dotted-key and header parts); the parser
    /// recurses, and no profile comes near it.
    public static let maximumDepth = 64

    /// Parses a TOML 1.0 document, except dates and times, which are refused by name.
    ///
    /// Every key and table keeps the line it was written on. `fileName` only goes into errors.
    public static func parse(_ text: String, fileName: String? = nil) throws(TOMLError) -> TOMLTable {
        try parse(bytes: Array(text.utf8), fileName: fileName)
    }

    static func parse(bytes: [UInt8], fileName: String?) throws(TOMLError) -> TOMLTable {
        var parser = TOMLParser(bytes: bytes, fileName: fileName)
        return try parser.parseDocument()
    }
}

/// A table while the document is being read. TOML lets a table be reached from several
/// places (`[a.b]` makes `a`, a later `[a]` defines it), so tables are built as shared nodes
/// that remember how they were made, and become `TOMLTable` values at the end.
private final class TableNode {
    /// How a table came to exist, which decides who may add to it (TOML 1.0, "Table"):
    /// a header may define a table a longer header made on the way, once; dotted keys may only
    /// add to tables that dotted keys made; headers may go through any table.
    enum Origin { case implicit, header, dotted }

    enum Item {
        case value(TOMLValue)
        case table(TableNode)
        case tables(TableArray)
    }

    struct Slot {
        var item: Item
        var line: Int
    }

    var origin: Origin
    var line: Int
    /// The keys that lead here from the document (or from the inline table it is part of).
    let path: [String]
    /// Nesting from the document, inline tables and arrays included; bounds the recursion.
    let depth: Int
    private(set) var keys: [String] = []
    private(set) var slots: [String: Slot] = [:]

    init(origin: Origin, line: Int, path: [String], depth: Int) {
        self.origin = origin
        self.line = line
        self.path = path
        self.depth = depth
    }

    subscript(key: String) -> Slot? { slots[key] }

    func add(_ key: String, _ item: Item, line: Int) {
        keys.append(key)
        slots[key] = Slot(item: item, line: line)
    }

    /// A table that was made on the way to a longer header is now defined by its own.
    func define(_ key: String, line: Int) {
        slots[key]?.line = line
    }

    func freeze() -> TOMLTable {
        var table = TOMLTable(line: line)
        for key in keys {
            let slot = slots[key]!
            let value: TOMLValue
            switch slot.item {
            case .value(let v): value = v
            case .table(let node): value = .table(node.freeze())
            case .tables(let array): value = .array(array.tables.map { .table($0.freeze()) })
            }
            table.append(key, value, line: slot.line)
        }
        return table
    }
}

/// The elements of an `[[array.of.tables]]`; later headers add to it.
private final class TableArray {
    var tables: [TableNode]
    init(_ first: TableNode) { tables = [first] }
}

/// One part of a dotted key, with where it was written.
private struct KeyPart {
    var name: String
    var offset: Int
}

private enum ASCII {
    static let tab: UInt8 = 0x09
    static let newline: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D
    static let space: UInt8 = 0x20
    static let quote = UInt8(ascii: "\"")
    static let apostrophe = UInt8(ascii: "'")
    static let hash = UInt8(ascii: "#")
    static let comma = UInt8(ascii: ",")
    static let dot = UInt8(ascii: ".")
    static let equals = UInt8(ascii: "=")
    static let backslash = UInt8(ascii: "\\")
    static let openBracket = UInt8(ascii: "[")
    static let closeBracket = UInt8(ascii: "]")
    static let openBrace = UInt8(ascii: "{")
    static let closeBrace = UInt8(ascii: "}")

    static func isLetter(_ c: UInt8) -> Bool { (c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "z") }
    static func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
    static func isBareKey(_ c: UInt8) -> Bool {
        isLetter(c) || isDigit(c) || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
    }
    /// Bytes of an unquoted value: numbers, booleans, inf, nan, and dates (to refuse them).
    static func isValueToken(_ c: UInt8) -> Bool {
        isBareKey(c) || c == UInt8(ascii: "+") || c == dot || c == UInt8(ascii: ":")
    }
    static func isControl(_ c: UInt8) -> Bool { (c < 0x20 && c != tab) || c == 0x7F }
}

/// A recursive-descent parser over UTF-8 bytes. Recursion is bounded by
/// `TOMLTable.maximumDepth`, so garbage cannot exhaust the stack.
private struct TOMLParser {
    let bytes: [UInt8]
    let fileName: String?
    var index = 0
    /// Where each line starts, for turning byte offsets into lines and columns.
    let lineStarts: [Int]
    let root: TableNode
    /// The table the last header opened; key/value lines go into it.
    var current: TableNode

    init(bytes: [UInt8], fileName: String?) {
        self.bytes = bytes
        self.fileName = fileName
        var starts = [0]
        for (offset, byte) in bytes.enumerated() where byte == ASCII.newline { starts.append(offset + 1) }
        lineStarts = starts
        root = TableNode(origin: .header, line: 1, path: [], depth: 0)
        current = root
    }

    // MARK: Document

    mutating func parseDocument() throws(TOMLError) -> TOMLTable {
        try checkEncoding()
        while true {
            skipWhitespace()
            guard let c = peek() else { break }
            switch c {
            case ASCII.hash, ASCII.newline, ASCII.carriageReturn:
                break
            case ASCII.openBracket:
                try parseHeader()
            default:
                try parseKeyValue(into: current)
            }
            try finishLine()
        }
        return root.freeze()
    }

    mutating func checkEncoding() throws(TOMLError) {
        // Editors on other systems sometimes start the file with a byte order mark.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        guard bytes.contains(where: { $0 >= 0x80 }) else { return }
        var iterator = bytes.makeIterator()
        var decoder = UTF8.ForwardParser()
        var offset = 0
        while true {
            switch decoder.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .error: throw error(.invalidUTF8, "the text is not valid UTF-8", at: offset)
            case .emptyInput: return
            }
        }
    }

    /// After a statement: blanks, an optional comment, then a newline or the end.
    mutating func finishLine() throws(TOMLError) {
        skipWhitespace()
        if peek() == ASCII.hash { try skipComment() }
        guard let c = peek() else { return }
        if c == ASCII.newline {
            index += 1
        } else if c == ASCII.carriageReturn && peek(1) == ASCII.newline {
            index += 2
        } else {
            throw error(.syntax, "expected the end of the line, found \(found())")
        }
    }

    // MARK: Tables

    mutating func parseHeader() throws(TOMLError) {
        let line = lineNumber(at: index)
        index += 1
        let isArray = peek() == ASCII.openBracket
        if isArray { index += 1 }
        skipWhitespace()
        let key = try parseKey()
        skipWhitespace()
        let name = render(key.map(\.name))
        guard peek() == ASCII.closeBracket else {
            throw error(.syntax, "expected ']' after the table name '\(name)', found \(found())")
        }
        index += 1
        if isArray {
            guard peek() == ASCII.closeBracket else { throw error(.syntax, "expected ']]' to close [[\(name)]]") }
            index += 1
        }
        var node = root
        for part in key.dropLast() {
            node = try enterForHeader(node, part, line: line)
        }
        current = isArray
            ? try appendTable(in: node, key.last!, name: name, line: line)
            : try defineTable(in: node, key.last!, name: name, line: line)
    }

    /// A header may pass through any table; through an array of tables it means the last
    /// element so far.
    func enterForHeader(_ node: TableNode, _ part: KeyPart, line: Int) throws(TOMLError) -> TableNode {
        guard let slot = node[part.name] else {
            return try addTable(to: node, part, origin: .implicit, line: line)
        }
        switch slot.item {
        case .table(let table): return table
        case .tables(let array): return array.tables[array.tables.count - 1]
        case .value(let value): throw notATable(node.path + [part.name], value, slot, at: part)
        }
    }

    mutating func defineTable(in node: TableNode, _ part: KeyPart, name: String, line: Int) throws(TOMLError) -> TableNode {
        guard let slot = node[part.name] else {
            return try addTable(to: node, part, origin: .header, line: line)
        }
        switch slot.item {
        case .table(let table):
            switch table.origin {
            case .implicit:
                table.origin = .header
                table.line = line
                node.define(part.name, line: line)
                return table
            case .header:
                throw error(.redefinedTable, "table [\(name)] is defined twice (first at line \(table.line))", at: part.offset)
            case .dotted:
                throw error(.redefinedTable, "table [\(name)] is already defined by dotted keys at line \(table.line)", at: part.offset)
            }
        case .tables:
            throw error(.redefinedTable, "table [\(name)] clashes with the array of tables [[\(name)]] at line \(slot.line)", at: part.offset)
        case .value(let value):
            throw notATable(node.path + [part.name], value, slot, at: part)
        }
    }

    mutating func appendTable(in node: TableNode, _ part: KeyPart, name: String, line: Int) throws(TOMLError) -> TableNode {
        guard let slot = node[part.name] else {
            let table = try newTable(under: node, part, origin: .header, line: line)
            node.add(part.name, .tables(TableArray(table)), line: line)
            return table
        }
        switch slot.item {
        case .tables(let array):
            let table = try newTable(under: node, part, origin: .header, line: line)
            array.tables.append(table)
            return table
        case .table(let table):
            throw error(.redefinedTable, "[[\(name)]] clashes with the table [\(name)] defined at line \(table.line)", at: part.offset)
        case .value(.array):
            throw error(.duplicateKey, "[[\(name)]] cannot add to the array '\(name)' written at line \(slot.line); only arrays made by [[\(name)]] grow", at: part.offset)
        case .value(let value):
            throw notATable(node.path + [part.name], value, slot, at: part)
        }
    }

    func addTable(to node: TableNode, _ part: KeyPart, origin: TableNode.Origin, line: Int) throws(TOMLError) -> TableNode {
        let table = try newTable(under: node, part, origin: origin, line: line)
        node.add(part.name, .table(table), line: line)
        return table
    }

    func newTable(under node: TableNode, _ part: KeyPart, origin: TableNode.Origin, line: Int) throws(TOMLError) -> TableNode {
        guard node.depth < TOMLTable.maximumDepth else { throw tooDeep(at: part.offset) }
        return TableNode(origin: origin, line: line, path: node.path + [part.name], depth: node.depth + 1)
    }

    func notATable(_ path: [String], _ value: TOMLValue, _ slot: TableNode.Slot, at part: KeyPart) -> TOMLError {
        let what = value.table != nil ? "an inline table, which cannot be extended" : "\(value.kindDescription), not a table"
        return error(.duplicateKey, "'\(render(path))' was set at line \(slot.line) to \(what)", at: part.offset)
    }

    // MARK: Keys and values

    mutating func parseKeyValue(into node: TableNode) throws(TOMLError) {
        let line = lineNumber(at: index)
        let key = try parseKey()
        skipWhitespace()
        guard peek() == ASCII.equals else {
            throw error(.syntax, "expected '=' after the key '\(render(key.map(\.name)))', found \(found())")
        }
        index += 1
        skipWhitespace()
        let value = try parseValue(depth: node.depth)

        // Dotted keys make tables on the way, and may only add to tables made that way.
        let written = render(key.map(\.name))
        var target = node
        for part in key.dropLast() {
            guard let slot = target[part.name] else {
                target = try addTable(to: target, part, origin: .dotted, line: line)
                continue
            }
            switch slot.item {
            case .table(let table) where table.origin == .dotted:
                target = table
            case .table(let table):
                throw error(.redefinedTable, "the key '\(written)' cannot add to table [\(render(table.path))], which is defined at line \(table.line)", at: part.offset)
            case .tables:
                throw error(.redefinedTable, "the key '\(written)' cannot add to the array of tables [[\(render(target.path + [part.name]))]] of line \(slot.line)", at: part.offset)
            case .value(let existing):
                throw notATable(target.path + [part.name], existing, slot, at: part)
            }
        }
        let last = key[key.count - 1]
        if let slot = target[last.name] {
            throw error(.duplicateKey, "duplicate key '\(written)' (first defined at line \(slot.line))", at: last.offset)
        }
        target.add(last.name, .value(value), line: line)
    }

    /// `a`, `"a b"`, `'a'`, `a . "b" . c`.
    mutating func parseKey() throws(TOMLError) -> [KeyPart] {
        var parts = [try parseSimpleKey()]
        while true {
            let save = index
            skipWhitespace()
            guard peek() == ASCII.dot else {
                index = save
                return parts
            }
            index += 1
            skipWhitespace()
            // A key longer than tables may nest can never be stored; say so before reading on.
            guard parts.count < TOMLTable.maximumDepth else { throw tooDeep(at: index) }
            parts.append(try parseSimpleKey())
        }
    }

    mutating func parseSimpleKey() throws(TOMLError) -> KeyPart {
        let start = index
        guard let c = peek() else { throw error(.syntax, "expected a key, found the end of the text") }
        if c == ASCII.quote || c == ASCII.apostrophe {
            if peek(1) == c && peek(2) == c { throw error(.syntax, "a key cannot be a multi-line string") }
            return KeyPart(name: try parseString(), offset: start)
        }
        while let c = peek(), ASCII.isBareKey(c) { index += 1 }
        guard index > start else { throw error(.syntax, "expected a key, found \(found())") }
        return KeyPart(name: String(decoding: bytes[start..<index], as: UTF8.self), offset: start)
    }

    /// `depth` is the nesting of the table or array the value sits in.
    mutating func parseValue(depth: Int) throws(TOMLError) -> TOMLValue {
        switch peek() {
        case nil:
            throw error(.syntax, "expected a value, found the end of the text")
        case ASCII.quote, ASCII.apostrophe:
            return .string(try parseString())
        case ASCII.openBracket:
            return .array(try parseArray(depth: depth + 1))
        case ASCII.openBrace:
            return .table(try parseInlineTable(depth: depth + 1))
        default:
            return try parseBareValue()
        }
    }

    mutating func parseArray(depth: Int) throws(TOMLError) -> [TOMLValue] {
        let start = index
        guard depth <= TOMLTable.maximumDepth else { throw tooDeep(at: start) }
        index += 1
        var elements: [TOMLValue] = []
        while true {
            try skipBlankLines()
            if peek() == ASCII.closeBracket { break }
            elements.append(try parseValue(depth: depth))
            try skipBlankLines()
            if peek() == ASCII.comma {
                index += 1
                continue
            }
            if peek() == ASCII.closeBracket { break }
            if peek() == nil { throw error(.syntax, "unterminated array (it opens at line \(lineNumber(at: start)))") }
            throw error(.syntax, "expected ',' or ']' in an array, found \(found())")
        }
        index += 1
        return elements
    }

    /// `{ key = value, ... }`: on one line, no trailing comma (TOML 1.0).
    mutating func parseInlineTable(depth: Int) throws(TOMLError) -> TOMLTable {
        let start = index
        guard depth <= TOMLTable.maximumDepth else { throw tooDeep(at: start) }
        let node = TableNode(origin: .header, line: lineNumber(at: start), path: [], depth: depth)
        index += 1
        skipWhitespace()
        if peek() == ASCII.closeBrace {
            index += 1
            return node.freeze()
        }
        while true {
            skipWhitespace()
            if peek() == ASCII.comma || peek() == ASCII.closeBrace {
                throw error(.syntax, "a trailing comma is not allowed in an inline table")
            }
            try checkInlineTableContinues(start)
            try parseKeyValue(into: node)
            skipWhitespace()
            try checkInlineTableContinues(start)
            switch peek() {
            case ASCII.comma:
                index += 1
            case ASCII.closeBrace:
                index += 1
                return node.freeze()
            default:
                throw error(.syntax, "expected ',' or '}' in an inline table, found \(found())")
            }
        }
    }

    func checkInlineTableContinues(_ start: Int) throws(TOMLError) {
        switch peek() {
        case nil:
            throw error(.syntax, "unterminated inline table (it opens at line \(lineNumber(at: start)))")
        case ASCII.newline, ASCII.carriageReturn:
            throw error(.syntax, "an inline table must close on the line it opens; use a [table] for more")
        default:
            return
        }
    }

    /// Booleans, numbers, inf and nan; dates are recognised only to be refused.
    mutating func parseBareValue() throws(TOMLError) -> TOMLValue {
        let start = index
        while let c = peek(), ASCII.isValueToken(c) { index += 1 }
        guard index > start else { throw error(.syntax, "expected a value, found \(found())") }
        let token = String(decoding: bytes[start..<index], as: UTF8.self)
        switch token {
        case "true": return .boolean(true)
        case "false": return .boolean(false)
        default: break
        }
        let text = bytes[start..<index]
        // 1979-05-27..., 07:32:00...
        let isDate = text.count >= 5 && text.prefix(4).allSatisfy(ASCII.isDigit) && text.dropFirst(4).first == UInt8(ascii: "-")
        let isTime = text.count >= 3 && text.prefix(2).allSatisfy(ASCII.isDigit) && text.dropFirst(2).first == UInt8(ascii: ":")
        if isDate || isTime {
            throw error(.unsupportedDate, "dates are not supported; write \(isDate ? "the date" : "the time") as a string", at: start)
        }
        if ASCII.isLetter(bytes[start]) && token != "inf" && token != "nan" {
            throw error(.syntax, "expected a value, found '\(token)' (strings need quotes)", at: start)
        }
        switch TOMLNumber.parse(token) {
        case .success(let value): return value
        case .failure(.invalid(let why)): throw error(.invalidNumber, "invalid number '\(token)': \(why)", at: start)
        case .failure(.outOfRange(let what)): throw error(.numberOutOfRange, "\(what) '\(token)' is out of range", at: start)
        }
    }

    // MARK: Strings

    /// Any of the four kinds; `index` is at the opening quote.
    mutating func parseString() throws(TOMLError) -> String {
        let start = index
        let quote = bytes[index]
        let literal = quote == ASCII.apostrophe
        let multiline = peek(1) == quote && peek(2) == quote
        index += multiline ? 3 : 1
        if multiline {
            // A newline right after the opening delimiter is not part of the string.
            if peek() == ASCII.newline {
                index += 1
            } else if peek() == ASCII.carriageReturn && peek(1) == ASCII.newline {
                index += 2
            }
        }
        var text: [UInt8] = []
        while true {
            guard let c = peek() else {
                throw error(.invalidString, "unterminated \(multiline ? "multi-line " : "")string", at: start)
            }
            switch c {
            case quote:
                guard multiline else {
                    index += 1
                    return String(decoding: text, as: UTF8.self)
                }
                var run = 1
                while peek(run) == quote { run += 1 }
                // Up to two quotes may sit right before the closing three.
                let kept = run >= 3 ? min(run - 3, 2) : run
                text.append(contentsOf: repeatElement(quote, count: kept))
                index += kept
                if run >= 3 {
                    index += 3
                    return String(decoding: text, as: UTF8.self)
                }
            case ASCII.backslash where !literal:
                try parseEscape(into: &text, multiline: multiline)
            case ASCII.newline where multiline:
                text.append(ASCII.newline)
                index += 1
            case ASCII.carriageReturn where multiline && peek(1) == ASCII.newline:
                text.append(ASCII.newline)
                index += 2
            case ASCII.newline where !multiline, ASCII.carriageReturn where !multiline && peek(1) == ASCII.newline:
                throw error(.invalidString, "unterminated string (a string in \(literal ? "'" : "\"") closes on its own line; use \(literal ? "'''" : "\"\"\"") for several lines)", at: start)
            case _ where ASCII.isControl(c):
                let code = hex(UInt32(c), digits: 4)
                throw error(.invalidString, "control character U+\(code) in a string" + (literal ? "" : "; write it as \\u\(code)"))
            default:
                text.append(c)
                index += 1
            }
        }
    }

    /// `index` is at the backslash.
    mutating func parseEscape(into text: inout [UInt8], multiline: Bool) throws(TOMLError) {
        let start = index
        index += 1
        guard let c = peek() else { return }  // the caller reports the unterminated string
        let simple: UInt8? = switch c {
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "t"): ASCII.tab
        case UInt8(ascii: "n"): ASCII.newline
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "r"): ASCII.carriageReturn
        case ASCII.quote: ASCII.quote
        case ASCII.backslash: ASCII.backslash
        default: nil
        }
        if let simple {
            text.append(simple)
            index += 1
            return
        }
        if c == UInt8(ascii: "u") || c == UInt8(ascii: "U") {
            let letter = c == UInt8(ascii: "u") ? "u" : "U"
            let count = letter == "u" ? 4 : 8
            index += 1
            var code: UInt32 = 0
            for _ in 0..<count {
                guard let digit = peek().flatMap(TOMLNumber.digitValue), digit < 16 else {
                    throw error(.invalidString, "\\\(letter) needs \(count) hexadecimal digits", at: start)
                }
                code = code << 4 | UInt32(digit)
                index += 1
            }
            guard let scalar = Unicode.Scalar(code) else {
                throw error(.invalidString, "\\\(letter)\(hex(code, digits: count)) is not a Unicode scalar value", at: start)
            }
            UTF8.encode(scalar) { text.append($0) }
            return
        }
        if multiline {
            // A backslash ending a line joins it to the next non-blank text.
            var end = index
            while end < bytes.count, bytes[end] == ASCII.space || bytes[end] == ASCII.tab { end += 1 }
            if end < bytes.count, bytes[end] == ASCII.newline || (bytes[end] == ASCII.carriageReturn && end + 1 < bytes.count && bytes[end + 1] == ASCII.newline) {
                index = end
                while let c = peek() {
                    if c == ASCII.space || c == ASCII.tab || c == ASCII.newline {
                        index += 1
                    } else if c == ASCII.carriageReturn && peek(1) == ASCII.newline {
                        index += 2
                    } else {
                        break
                    }
                }
                return
            }
        }
        if c <= ASCII.space || c == 0x7F {
            throw error(.invalidString, "invalid escape: a backslash followed by \(found(at: index))", at: start)
        }
        throw error(.invalidString, "invalid escape '\\\(scalarText(at: index))'", at: start)
    }

    // MARK: Scanning

    func peek(_ ahead: Int = 0) -> UInt8? {
        let i = index + ahead
        return i < bytes.count ? bytes[i] : nil
    }

    mutating func skipWhitespace() {
        while let c = peek(), c == ASCII.space || c == ASCII.tab { index += 1 }
    }

    /// Inside an array: blanks, newlines and comments.
    mutating func skipBlankLines() throws(TOMLError) {
        while let c = peek() {
            if c == ASCII.space || c == ASCII.tab || c == ASCII.newline {
                index += 1
            } else if c == ASCII.carriageReturn && peek(1) == ASCII.newline {
                index += 2
            } else if c == ASCII.hash {
                try skipComment()
            } else {
                return
            }
        }
    }

    /// `index` is at '#'; stops at the newline.
    mutating func skipComment() throws(TOMLError) {
        index += 1
        while let c = peek(), c != ASCII.newline {
            if c == ASCII.carriageReturn && peek(1) == ASCII.newline { return }
            if ASCII.isControl(c) {
                throw error(.syntax, "control character U+\(hex(UInt32(c), digits: 4)) in a comment")
            }
            index += 1
        }
    }

    // MARK: Messages

    func lineNumber(at offset: Int) -> Int {
        // The last line start at or before `offset`.
        var low = 0, high = lineStarts.count
        while high - low > 1 {
            let middle = (low + high) / 2
            if lineStarts[middle] <= offset { low = middle } else { high = middle }
        }
        return low + 1
    }

    func error(_ kind: TOMLError.Kind, _ message: String, at offset: Int? = nil) -> TOMLError {
        let offset = min(offset ?? index, bytes.count)
        let line = lineNumber(at: offset)
        // Columns count Unicode scalars: every byte that does not continue a UTF-8 sequence.
        let column = 1 + bytes[lineStarts[line - 1]..<offset].lazy.filter { $0 & 0xC0 != 0x80 }.count
        return TOMLError(kind: kind, message: message, line: line, column: column, fileName: fileName)
    }

    func tooDeep(at offset: Int) -> TOMLError {
        error(.tooDeep, "tables and arrays are nested more than \(TOMLTable.maximumDepth) deep", at: offset)
    }

    /// What is at `offset`, for "expected X, found Y".
    func found(at offset: Int? = nil) -> String {
        let i = offset ?? index
        guard i < bytes.count else { return "the end of the text" }
        let c = bytes[i]
        if c == ASCII.newline || (c == ASCII.carriageReturn && i + 1 < bytes.count && bytes[i + 1] == ASCII.newline) {
            return "a newline"
        }
        if ASCII.isControl(c) { return "control character U+\(hex(UInt32(c), digits: 4))" }
        return "'\(scalarText(at: i))'"
    }

    /// The whole UTF-8 sequence that starts at `offset`.
    func scalarText(at offset: Int) -> String {
        var end = offset + 1
        while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
        return String(decoding: bytes[offset..<end], as: UTF8.self)
    }

    /// A dotted key as a profile would write it: bare where it can be, quoted where not.
    func render(_ names: [String]) -> String {
        names.map { name in
            if !name.isEmpty && name.utf8.allSatisfy(ASCII.isBareKey) { return name }
            var quoted = "\""
            for scalar in name.unicodeScalars {
                switch scalar {
                case "\"": quoted += "\\\""
                case "\\": quoted += "\\\\"
                default: quoted.unicodeScalars.append(scalar)
                }
            }
            return quoted + "\""
        }.joined(separator: ".")
    }
}

private func hex(_ value: UInt32, digits: Int) -> String {
    let text = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, digits - text.count)) + text
}

/// TOML's number grammar, on the text of one unquoted value.
enum TOMLNumber {
    enum Failure: Error {
        case invalid(String)
        case outOfRange(String)
    }

    static func parse(_ token: String) -> Result<TOMLValue, Failure> {
        var body = Substring(token)
        var sign: Character?
        if let first = body.first, first == "+" || first == "-" {
            sign = first
            body = body.dropFirst()
        }
        if body == "inf" { return .success(.float(sign == "-" ? -.infinity : .infinity)) }
        if body == "nan" { return .success(.float(.nan)) }

        let radix: Int? = switch body.prefix(2) {
        case "0x": 16
        case "0o": 8
        case "0b": 2
        default: nil
        }
        if let radix {
            guard sign == nil else { return .failure(.invalid("a sign is not allowed with 0x, 0o or 0b")) }
            return digits(body.dropFirst(2), radix: radix).flatMap { text in
                Int(text, radix: radix).map { .success(.integer($0)) } ?? .failure(.outOfRange("integer"))
            }
        }

        let signText = sign.map(String.init) ?? ""
        guard body.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) else {
            return decimalInteger(body).flatMap { text in
                Int(signText + text).map { .success(.integer($0)) } ?? .failure(.outOfRange("integer"))
            }
        }

        let exponentStart = body.firstIndex { $0 == "e" || $0 == "E" }
        let mantissa = body[..<(exponentStart ?? body.endIndex)]
        let point = mantissa.firstIndex(of: ".")
        let whole = mantissa[..<(point ?? mantissa.endIndex)]
        let fraction = point.map { mantissa[mantissa.index(after: $0)...] }
        if whole.isEmpty || fraction?.isEmpty == true {
            return .failure(.invalid("a decimal point needs digits on both sides"))
        }
        var exponent = exponentStart.map { body[body.index(after: $0)...] }
        var exponentSign = ""
        if let first = exponent?.first, first == "+" || first == "-" {
            exponentSign = String(first)
            exponent = exponent?.dropFirst()
        }
        if exponent?.isEmpty == true { return .failure(.invalid("an exponent needs digits")) }

        var text = signText
        do {
            text += try decimalInteger(whole).get()
            if let fraction { text += try "." + digits(fraction, radix: 10).get() }
            if let exponent { text += try "e" + exponentSign + digits(exponent, radix: 10).get() }
        } catch {
            return .failure(error)
        }
        guard let value = Double(text) else { return .failure(.invalid("not a number")) }
        guard value.isFinite else { return .failure(.outOfRange("float")) }
        return .success(.float(value))
    }

    /// Digits with single underscores between them, underscores removed.
    static func digits(_ text: Substring, radix: Int) -> Result<String, Failure> {
        guard !text.isEmpty else { return .failure(.invalid("digits are missing")) }
        var result = ""
        var previousWasDigit = false
        for c in text.utf8 {
            if c == UInt8(ascii: "_") {
                guard previousWasDigit else { return .failure(.invalid("an underscore must sit between digits")) }
                previousWasDigit = false
                continue
            }
            guard let value = digitValue(c), value < radix else {
                let kind = [2: "binary", 8: "octal", 10: "decimal", 16: "hexadecimal"][radix]!
                return .failure(.invalid("'\(Character(Unicode.Scalar(c)))' is not a \(kind) digit"))
            }
            result.unicodeScalars.append(Unicode.Scalar(c))
            previousWasDigit = true
        }
        guard previousWasDigit else { return .failure(.invalid("an underscore must sit between digits")) }
        return .success(result)
    }

    /// Decimal digits without leading zeros.
    static func decimalInteger(_ text: Substring) -> Result<String, Failure> {
        digits(text, radix: 10).flatMap { digits in
            digits.count > 1 && digits.hasPrefix("0") ? .failure(.invalid("leading zeros are not allowed")) : .success(digits)
        }
    }

    static func digitValue(_ c: UInt8) -> Int? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(c - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): Int(c - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): Int(c - UInt8(ascii: "A")) + 10
        default: nil
        }
    }
}
