#if canImport(Glibc)
import Glibc
#endif

/// A POSIX extended regular expression, found anywhere in a value: the one matcher behind the
/// index's `regexp` and the MPD queue's `playlistsearch`.
///
/// A pattern is checked before `regcomp` sees it: glibc expands bounded repetitions into copies
/// of what they repeat, so 45 bytes (`((a{1,100}){1,100}){1,100}`) made a million nodes, took
/// seconds and a gigabyte. What passes the check compiles small; matching looks at a value's
/// first `matchedBytes`, and a query's time on its worker is bounded (`QueryBudget`).
public final class RegularExpression: @unchecked Sendable {
    /// The longest pattern taken, in bytes.
    public static let maximumLength = 256
    /// The largest count in a `{m,n}`.
    public static let maximumCount = 100
    /// The most elements a pattern may expand to once its repetitions are written out (their
    /// nested counts multiplied). glibc's matcher caches states of these elements as it goes:
    /// 250 of them cost a megabyte or two over a long value, 1,000 of them 12 to 18 MB.
    public static let maximumWeight = 256

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

    /// The bytes of a value a pattern is matched against: its beginning. glibc's matcher walks
    /// up to `weight` states per byte and keeps state per byte, so a 250 KB comment took
    /// seconds and megabytes for one match; 4 KB is more than any title or name.
    public static let matchedBytes = 4096

    /// Whether the pattern is found in the first `matchedBytes` of `value`.
    public func matches(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { matches($0.baseAddress!, count: $0.count) }
        }
    }

    /// Whether the pattern is found in the first `matchedBytes` of the `count` bytes at `value`
    /// (which is NUL-terminated).
    public func matches(_ value: UnsafePointer<CChar>, count: Int) -> Bool {
        var range = regmatch_t(rm_so: 0, rm_eo: regoff_t(min(count, Self.matchedBytes)))
        return regexec(compiled, value, 1, &range, REG_STARTEND) == 0
    }

    /// The work of matching a value of `count` bytes: bytes looked at times the states walked.
    public func work(forBytes count: Int) -> Int { (min(count, Self.matchedBytes) + 1) * weight }

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

/// The time a query may take of its thread, in CPU seconds: a statement that has taken them is
/// interrupted (`Database.withBudget`), a queue search stops. The clock is read every so much
/// work, not at every row.
public final class QueryBudget {
    /// What one query may take: a long listing on a Pi takes a fraction of it.
    public static let seconds = 2.0
    /// What a client is told when its query ran out of time.
    public static let refusal = "the query took more than its \(Int(seconds)) s of processor time: narrow it"

    private var deadline = Double.infinity
    private var work = 0
    /// Work (as `RegularExpression.work` counts it) between two readings of the clock: a few
    /// milliseconds of matching.
    private static let workPerReading = 1 << 20

    public init() {}

    /// Starts counting `seconds` of this thread's CPU time from now.
    public func start(_ seconds: Double = QueryBudget.seconds) {
        deadline = Self.threadSeconds() + seconds
        work = 0
    }

    public func stop() { deadline = .infinity }

    /// Whether the time is up.
    public var isSpent: Bool { Self.threadSeconds() > deadline }

    /// Counts `amount` of work; false once the time is up (read every `workPerReading`).
    public func take(_ amount: Int) -> Bool {
        work += amount
        guard work >= Self.workPerReading else { return true }
        work = 0
        return !isSpent
    }

    private static func threadSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
