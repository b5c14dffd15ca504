import TonearmControlPlane

/// The filters of `find`, `search`, `list`, `count`…: MPD's two forms.
///
/// - Legacy pairs: `TAG VALUE [TAG VALUE…]`, the tag any of MPD's names (any case), `any`,
///   `file` or `base`.
/// - Expressions, one argument each: `(TAG == 'VALUE')`, `(TAG != 'VALUE')`,
///   `(TAG contains 'VALUE')`, `(TAG starts_with 'VALUE')`, `(TAG =~ 'REGEX')`,
///   `(TAG !~ 'REGEX')`, `(base 'DIR')`, `(file == 'PATH')`, `(!EXPR)` and
///   `(EXPR AND EXPR …)`. `==` compares exactly, `contains` ignores case; `starts_with` and the
///   regular expressions (POSIX extended, found anywhere in the value's first 4 KB) ignore case
///   in `search` and not in `find`, as MPD's do. A `!=` or a negation also matches songs
///   without the tag. A pattern longer than 256 bytes, with a count over 100, expanding to more
///   than 256 elements or with a back-reference is refused (error 2), as is a query that takes
///   more than 2 s of its worker's processor time.
enum MPDFilter {
    /// Parses `arguments` into filters, stopping at `sort`, `window` or `group` (returned as
    /// the rest).
    static func parse(_ arguments: [String]) throws(MPDError) -> (filters: [TagFilter], rest: [String]) {
        var filters: [TagFilter] = []
        var index = 0
        while index < arguments.count {
            let word = arguments[index]
            if ["sort", "window", "group", "position"].contains(word.lowercased()) { break }
            if word.hasPrefix("(") {
                var parser = Parser(Array(word.unicodeScalars))
                filters += try parser.expression()
                index += 1
            } else {
                guard let key = FilterKey(named: word) else { throw .argument("Unknown filter type: \(word)") }
                guard index + 1 < arguments.count else { throw .argument("missing value for \(word)") }
                filters.append(TagFilter(key, arguments[index + 1]))
                index += 2
            }
        }
        return (filters, Array(arguments[index...]))
    }

    /// A filter expression's recursive-descent parser.
    struct Parser {
        let text: [Unicode.Scalar]
        var at = 0

        init(_ text: [Unicode.Scalar]) { self.text = text }

        mutating func expression() throws(MPDError) -> [TagFilter] {
            let filters = try group()
            skipBlanks()
            guard at == text.count else { throw .argument("Unparsed garbage after expression") }
            return filters
        }

        /// `( … )`: one comparison, or several joined by AND.
        private mutating func group() throws(MPDError) -> [TagFilter] {
            try expect("(")
            skipBlanks()
            if peek == "(" {
                var filters = try group()
                while true {
                    skipBlanks()
                    if peek == ")" {
                        at += 1
                        return filters
                    }
                    let word = self.word()
                    guard word == "AND" else {
                        throw .argument(word.isEmpty ? "')' expected" : "only AND joins expressions here, not '\(word)'")
                    }
                    skipBlanks()
                    filters += try group()
                }
            }
            if peek == "!" {
                at += 1
                var inner = try group()
                skipBlanks()
                try expect(")")
                guard inner.count == 1 else { throw .argument("negating expressions joined by AND is not supported") }
                inner[0].negated.toggle()
                return inner
            }
            let name = word()
            guard let key = FilterKey(named: name) else { throw .argument("Unknown filter type: \(name)") }
            skipBlanks()
            let filter: TagFilter
            if key == .base {
                filter = TagFilter(.base, try quoted())
            } else {
                let operation = word()
                skipBlanks()
                let value = try quoted()
                switch operation {
                case "==": filter = TagFilter(key, value, matching: .exact)
                case "!=": filter = TagFilter(key, value, matching: .exact, negated: true)
                case "contains": filter = TagFilter(key, value, matching: .substring)
                case "starts_with": filter = TagFilter(key, value, matching: .prefix)
                case "=~": filter = TagFilter(key, value, matching: .regularExpression)
                case "!~": filter = TagFilter(key, value, matching: .regularExpression, negated: true)
                default:
                    throw .argument("Unknown filter operator: \(operation)")
                }
            }
            skipBlanks()
            try expect(")")
            return [filter]
        }

        private var peek: Unicode.Scalar? { at < text.count ? text[at] : nil }

        private mutating func skipBlanks() {
            while let c = peek, c == " " || c == "\t" { at += 1 }
        }

        private mutating func expect(_ c: Unicode.Scalar) throws(MPDError) {
            skipBlanks()
            guard peek == c else { throw .argument("'\(c)' expected") }
            at += 1
        }

        /// Letters, digits and the operator characters, up to a blank, a quote or a bracket.
        private mutating func word() -> String {
            var out = String.UnicodeScalarView()
            while let c = peek, c != " ", c != "\t", c != "'", c != "\"", c != "(", c != ")" {
                out.append(c)
                at += 1
            }
            return String(out)
        }

        /// `'…'` or `"…"`, a backslash taking the next character as it is.
        private mutating func quoted() throws(MPDError) -> String {
            guard let quote = peek, quote == "'" || quote == "\"" else { throw .argument("quoted string expected") }
            at += 1
            var out = String.UnicodeScalarView()
            while let c = peek {
                at += 1
                if c == "\\", let next = peek {
                    out.append(next)
                    at += 1
                } else if c == quote {
                    return String(out)
                } else {
                    out.append(c)
                }
            }
            throw .argument("closing quote expected")
        }
    }

    /// `START:END` (END may be left out: to the end) or a single `POS`.
    static func range(_ text: String) throws(MPDError) -> Range<Int> {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard let start = Int(parts[0]), start >= 0 else { throw .argument("Number expected: \(text)") }
        if parts.count == 1 { return start..<(start + 1) }
        guard parts.count == 2 else { throw .argument("Bad range: \(text)") }
        if parts[1].isEmpty { return start..<Int.max }
        guard let end = Int(parts[1]), end >= start else { throw .argument("Bad range: \(text)") }
        return start..<end
    }
}
