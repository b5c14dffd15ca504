import TonearmControlPlane
import TonearmSQLite

#if canImport(Glibc)
import Glibc
#endif

/// A query's filters, ready to match songs of the index's records where they lie
/// (`ListingRecord.SongView`): patterns compiled once, values folded once, nothing made of a
/// song that does not match.
///
/// The filter says how much of a value it compares (the whole, a part, the beginning, a
/// pattern); the query says whether case counts: not in a search (MPD's `search`), in
/// everything else (`find`), whatever the filter's operator. Without case, values compare
/// lower-cased (Unicode, as `String.lowercased`); with it, byte for byte. A tag's values are
/// those `Tag.forEachValue` gives (AlbumArtist's Artist for a song without an AlbumArtist);
/// `any` compares the values the file has. Used by one thread at a time (one query).
final class SongMatcher {
    struct Condition {
        var filter: TagFilter
        var mode: Matching
        /// The value compared with, lower-cased when case does not count (`base`, and a
        /// whole file name: trimmed).
        var wanted: String
        var pattern: RegularExpression?
    }

    let conditions: [Condition]
    let folds: Bool
    let budget: QueryBudget
    /// A value lower-cased, or a pattern's subject ended by a NUL: made here, not allocated
    /// per value.
    private var scratch: [UInt8] = []

    init(_ filters: [TagFilter], _ matching: Matching, budget: QueryBudget) throws(CommandFailure) {
        folds = matching != .exact
        self.budget = budget
        var conditions: [Condition] = []
        for filter in filters {
            let mode = filter.matching ?? matching
            var condition = Condition(filter: filter, mode: mode, wanted: filter.value)
            switch filter.key {
            case .base:
                condition.wanted = IndexCatalog.trimmed(filter.value)
                // Everything is under the music directory.
                if condition.wanted.isEmpty && !filter.negated { continue }
            case .file where mode == .exact:
                condition.wanted = IndexCatalog.trimmed(filter.value)
            default:
                break
            }
            if folds && filter.key != .base { condition.wanted = condition.wanted.lowercased() }
            if mode == .regularExpression && filter.key != .base {
                switch RegularExpression.compile(filter.value, ignoringCase: folds) {
                case .success(let compiled): condition.pattern = compiled
                case .failure(let refusal): throw CommandFailure(.badArgument, "regular expression refused: \(refusal.reason)")
                }
            }
            conditions.append(condition)
        }
        self.conditions = conditions
    }

    /// Whether the song matches every condition.
    func matches(_ song: ListingRecord.SongView) throws(CommandFailure) -> Bool {
        for condition in conditions where try condition.filter.negated == matchesPositively(condition, song) {
            return false
        }
        return true
    }

    private func matchesPositively(_ condition: Condition, _ song: ListingRecord.SongView) throws(CommandFailure) -> Bool {
        switch condition.filter.key {
        case .base:
            return condition.wanted.isEmpty || Self.starts(song.path, with: condition.wanted, then: UInt8(ascii: "/"))
        case .file:
            return try compare(condition, song.path)
        case .anyTag:
            for (_, value) in song.tags where try compare(condition, value) { return true }
            return false
        case .tag(let tag):
            var matched = false
            try tag.forEachValue(in: song.tags, sorted: false) { value, _ throws(CommandFailure) -> Bool in
                matched = try compare(condition, value)
                return !matched
            }
            return matched
        }
    }

    /// Whether `value` passes `condition`'s comparison (a tag index's value: `TagIndex`).
    func compare(_ condition: Condition, _ value: String) throws(CommandFailure) -> Bool {
        var value = value
        var outcome: Result<Bool, CommandFailure> = .success(false)
        value.withUTF8 { bytes in
            do throws(CommandFailure) { outcome = .success(try compare(condition, UnsafeRawBufferPointer(bytes))) } catch { outcome = .failure(error) }
        }
        return try outcome.get()
    }

    func compare(_ condition: Condition, _ value: UnsafeRawBufferPointer) throws(CommandFailure) -> Bool {
        switch condition.mode {
        case .regularExpression:
            guard let pattern = condition.pattern else { return false }
            guard budget.take(pattern.work(forBytes: value.count)) else { throw CommandFailure(.badArgument, QueryBudget.refusal) }
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: value)
            scratch.append(0)
            return scratch.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { pattern.matches($0.baseAddress!, count: value.count) }
            }
        case .exact:
            return folds ? withFolded(value) { Self.equal($0, condition.wanted) } : Self.equal(value, condition.wanted)
        case .substring:
            guard folds else { return Self.contains(value, condition.wanted) }
            if let found = Self.containsIgnoringASCIICase(value, condition.wanted) { return found }
            return withFolded(value) { Self.contains($0, condition.wanted) }
        case .prefix:
            return folds ? withFolded(value) { Self.starts($0, with: condition.wanted) } : Self.starts(value, with: condition.wanted)
        }
    }

    /// `body` given `value` lower-cased as `String.lowercased` does it (ASCII byte by byte;
    /// anything else through `String`), made in `scratch`.
    private func withFolded(_ value: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Bool) -> Bool {
        scratch.removeAll(keepingCapacity: true)
        if value.allSatisfy({ $0 < 0x80 }) {
            for byte in value { scratch.append(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) }
        } else {
            scratch.append(contentsOf: String(decoding: value, as: UTF8.self).lowercased().utf8)
        }
        return scratch.withUnsafeBytes(body)
    }

    static func equal(_ value: UnsafeRawBufferPointer, _ wanted: String) -> Bool {
        var wanted = wanted
        return wanted.withUTF8 { w in
            w.count == value.count && (w.count == 0 || memcmp(value.baseAddress!, w.baseAddress!, w.count) == 0)
        }
    }

    /// Byte for byte: `String`'s own comparisons take canonically equivalent text as equal.
    static func starts(_ value: UnsafeRawBufferPointer, with prefix: String, then next: UInt8? = nil) -> Bool {
        var prefix = prefix
        return prefix.withUTF8 { p in
            let length = p.count + (next == nil ? 0 : 1)
            guard value.count >= length else { return false }
            if p.count > 0 && memcmp(value.baseAddress!, p.baseAddress!, p.count) != 0 { return false }
            return next.map { value[p.count] == $0 } ?? true
        }
    }

    /// Whether `value` sorts after `other`, byte by byte (`String.precedes`).
    static func follows(_ value: UnsafeRawBufferPointer, _ other: String) -> Bool {
        var other = other
        return other.withUTF8 { o in
            let common = min(value.count, o.count)
            let order = common == 0 ? 0 : memcmp(value.baseAddress!, o.baseAddress!, common)
            return order != 0 ? order > 0 : value.count > o.count
        }
    }

    static func hasPrefix(_ text: String, _ prefix: String) -> Bool {
        text.utf8.starts(with: prefix.utf8)
    }

    /// Whether `value` holds `part` (lower case) in any ASCII case, compared in place; nil
    /// when either is not all ASCII (then it is lower-cased whole, `withFolded`). A substring
    /// search asks this of every value of a tag's row and of every song it reads: whether
    /// the value is ASCII is asked eight bytes at a time, then only where the first byte
    /// matches is the rest compared.
    static func containsIgnoringASCIICase(_ value: UnsafeRawBufferPointer, _ part: String) -> Bool? {
        var part = part
        return part.withUTF8 { needle -> Bool? in
            guard isASCII(UnsafeRawBufferPointer(needle)), isASCII(value) else { return nil }
            guard let first = needle.first else { return true }
            let length = needle.count
            guard length <= value.count else { return false }
            var at = 0
            let last = value.count - length
            while at <= last {
                if folded(value[at]) == first {
                    var n = 1
                    while n < length && folded(value[at + n]) == needle[n] { n += 1 }
                    if n == length { return true }
                }
                at += 1
            }
            return false
        }
    }

    /// An ASCII byte in lower case.
    @inline(__always)
    private static func folded(_ byte: UInt8) -> UInt8 {
        byte &- 0x41 < 26 ? byte | 0x20 : byte
    }

    /// Whether every byte is below 0x80.
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var high: UInt64 = 0
        var at = 0
        while at + 8 <= bytes.count {
            high |= bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self)
            at += 8
        }
        while at < bytes.count {
            high |= UInt64(bytes[at])
            at += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }

    static func contains(_ value: UnsafeRawBufferPointer, _ part: String) -> Bool {
        var part = part
        return part.withUTF8 { needle in
            guard let first = needle.first else { return true }
            guard needle.count <= value.count else { return false }
            let base = value.baseAddress!
            var at = 0
            let last = value.count - needle.count
            while at <= last {
                guard let found = memchr(base + at, Int32(first), last - at + 1) else { return false }
                at = base.distance(to: UnsafeRawPointer(found))
                if memcmp(base + at, needle.baseAddress!, needle.count) == 0 { return true }
                at += 1
            }
            return false
        }
    }
}
