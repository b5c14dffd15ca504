#if canImport(Glibc)
import Glibc
#endif

/// A POSIX extended regular expression, found anywhere in a value: the one matcher behind the
/// index's `regexp` and the MPD queue's `playlistsearch`.
///
/// A pattern is checked before `regcomp` sees it: glibc expands bounded repetitions into copies
/// of what they repeat, so 45 bytes (`((a{1,100}){1,100}){1,100}`) made a million nodes, took
/// seconds and a gigabyte. What passes the check compiles small, and matching a value costs
/// about its bytes times the pattern's `weight`: a query counts that against its budget.
public final class RegularExpression: @unchecked Sendable {
    /// The longest pattern taken, in bytes.
    public static let maximumLength = 256
    /// The largest count in a `{m,n}`.
    public static let maximumCount = 100
    /// The most elements a pattern may expand to once its repetitions are written out (their
    /// nested counts multiplied).
    public static let maximumWeight = 1000

    public let pattern: String
    /// Elements once the repetitions are written out: what one byte of a value costs to match.
    public let weight: Int
    // regexec takes the pattern's own lock: one compiled pattern serves any thread.
    private let compiled: UnsafeMutablePointer<regex_t>

    /// Compiles `pattern`, or says in one sentence why it is refused.
    public static func compile(_ pattern: String, ignoringCase: Bool = false) -> Result<RegularExpression, Refusal> {
        let weight: Int
        switch Self.weight(of: pattern) {
        case .success(let w): weight = w
        case .failure(let refusal): return .failure(refusal)
        }
        let compiled = UnsafeMutablePointer<regex_t>.allocate(capacity: 1)
        let status = regcomp(compiled, pattern, REG_EXTENDED | REG_NOSUB | (ignoringCase ? REG_ICASE : 0))
        guard status == 0 else {
            var message = [CChar](repeating: 0, count: 256)
            regerror(status, compiled, &message, message.count)
            compiled.deallocate()
            return .failure(Refusal(String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
        }
        return .success(RegularExpression(pattern: pattern, weight: weight, compiled: compiled))
    }

    private init(pattern: String, weight: Int, compiled: UnsafeMutablePointer<regex_t>) {
        self.pattern = pattern
        self.weight = weight
        self.compiled = compiled
    }

    deinit {
        regfree(compiled)
        compiled.deallocate()
    }

    /// Whether the pattern is found in `value`.
    public func matches(_ value: String) -> Bool {
        regexec(compiled, value, 0, nil, 0) == 0
    }

    /// Whether the pattern is found in the C string `value`.
    public func matches(_ value: UnsafePointer<CChar>) -> Bool {
        regexec(compiled, value, 0, nil, 0) == 0
    }

    /// What matching a value of `bytes` bytes counts against a query's budget, in the steps of
    /// `Database.withBudget`: glibc matches about 32 bytes × elements in the time SQLite runs one
    /// of its instructions.
    public func steps(forBytes bytes: Int) -> Int { (bytes + 1) * weight / 32 + 1 }

    /// Why a pattern is refused: one sentence, for an error line.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public let reason: String
        init(_ reason: String) { self.reason = reason }
        public var description: String { reason }
    }

    // MARK: The check

    /// The pattern's weight, or why it is refused: too long, a back-reference, a count over
    /// `maximumCount`, or repetitions that write it out to more than `maximumWeight` elements.
    /// Syntax errors are left to `regcomp`, which words them.
    static func weight(of pattern: String) -> Result<Int, Refusal> {
        let bytes = Array(pattern.utf8)
        guard bytes.count <= maximumLength else {
            return .failure(Refusal("the pattern is \(bytes.count) bytes long, more than \(maximumLength)"))
        }
        var scanner = Scanner(bytes: bytes)
        do throws(Refusal) {
            let weight = try scanner.alternation()
            guard weight <= maximumWeight else {
                throw Refusal("its repetitions expand it to \(weight) elements, more than \(maximumWeight)")
            }
            return .success(max(1, weight))
        } catch {
            return .failure(error)
        }
    }

    /// Walks ERE syntax far enough to weigh it: groups, alternatives, bracket expressions,
    /// escapes and repetitions.
    private struct Scanner {
        let bytes: [UInt8]
        var at = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        private var peek: UInt8? { at < bytes.count ? bytes[at] : nil }

        /// `A|B|…`: the alternatives' weights added.
        mutating func alternation() throws(Refusal) -> Int {
            var total = try sequence()
            while peek == UInt8(ascii: "|") {
                at += 1
                total = Self.add(total, try sequence())
            }
            return total
        }

        /// Pieces one after another, up to `|`, `)` or the end.
        private mutating func sequence() throws(Refusal) -> Int {
            var total = 0
            while let c = peek, c != UInt8(ascii: "|"), c != UInt8(ascii: ")") {
                total = Self.add(total, try piece())
            }
            return total
        }

        /// An atom and the repetitions after it.
        private mutating func piece() throws(Refusal) -> Int {
            var weight = try atom()
            while let c = peek {
                switch c {
                case UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "?"):
                    at += 1
                case UInt8(ascii: "{"):
                    guard let copies = try interval() else { return weight }
                    weight = Self.multiply(weight, copies)
                default:
                    return weight
                }
            }
            return weight
        }

        private mutating func atom() throws(Refusal) -> Int {
            guard let c = peek else { return 0 }
            at += 1
            switch c {
            case UInt8(ascii: "("):
                let inner = try alternation()
                if peek == UInt8(ascii: ")") { at += 1 }
                return max(1, inner)
            case UInt8(ascii: "["):
                bracket()
                return 1
            case UInt8(ascii: "\\"):
                guard let next = peek else { return 1 }
                at += 1
                if next >= UInt8(ascii: "1") && next <= UInt8(ascii: "9") {
                    throw Refusal("back-references (\\\(Character(Unicode.Scalar(next)))) are not supported")
                }
                return 1
            default:
                return 1
            }
        }

        /// Past a bracket expression, `[` already taken: `]` first is a member, and `[:…:]`,
        /// `[.….]`, `[=…=]` hold brackets of their own.
        private mutating func bracket() {
            if peek == UInt8(ascii: "^") { at += 1 }
            if peek == UInt8(ascii: "]") { at += 1 }
            while let c = peek {
                at += 1
                if c == UInt8(ascii: "]") { return }
                if c == UInt8(ascii: "["), let kind = peek, kind == UInt8(ascii: ":") || kind == UInt8(ascii: ".") || kind == UInt8(ascii: "=") {
                    at += 1
                    while at + 1 < bytes.count, !(bytes[at] == kind && bytes[at + 1] == UInt8(ascii: "]")) { at += 1 }
                    at = min(bytes.count, at + 2)
                }
            }
        }

        /// `{m}`, `{m,}`, `{,n}` or `{m,n}` at `{`: the copies glibc writes out (n, or m + 1
        /// when unbounded). Nil, and nothing taken, when it is no interval (then a literal).
        private mutating func interval() throws(Refusal) -> Int? {
            var index = at + 1
            /// The digits at `index`, as written and as a number (saturated: only its size matters).
            func number() -> (text: String, value: Int)? {
                let start = index
                var value = 0
                while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                    value = min(1_000_000, value * 10 + Int(bytes[index] - UInt8(ascii: "0")))
                    index += 1
                }
                return index > start ? (String(decoding: bytes[start..<index], as: UTF8.self), value) : nil
            }
            let low = number()
            var high = low
            var bounded = true
            if index < bytes.count, bytes[index] == UInt8(ascii: ",") {
                index += 1
                high = number()
                bounded = high != nil
            }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "}"), low != nil || high != nil else { return nil }
            at = index + 1
            for count in [low, high].compactMap({ $0 }) where count.value > maximumCount {
                throw Refusal("the repetition count \(count.text) is more than \(maximumCount)")
            }
            return bounded ? max(1, high?.value ?? 0) : (low?.value ?? 0) + 1
        }

        private static func add(_ a: Int, _ b: Int) -> Int {
            let (sum, overflow) = a.addingReportingOverflow(b)
            return overflow ? Int.max : sum
        }

        private static func multiply(_ a: Int, _ b: Int) -> Int {
            let (product, overflow) = a.multipliedReportingOverflow(by: b)
            return overflow ? Int.max : product
        }
    }
}
