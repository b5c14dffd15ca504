import TonearmControlPlane
import TonearmSQLite

/// A query's filters, ready to match songs of the index's records: patterns compiled once,
/// values folded once.
///
/// The filter says how much of a value it compares (the whole, a part, the beginning, a
/// pattern); the query says whether case counts: not in a search (MPD's `search`), in
/// everything else (`find`), whatever the filter's operator. Without case, values compare
/// lower-cased (Unicode); with it, byte for byte. A tag's values include AlbumArtist taken
/// from Artist for a song without one; `any` compares the values the file has.
struct SongMatcher {
    struct Condition {
        var filter: TagFilter
        var mode: Matching
        /// The value compared with, lower-cased when case does not count (`base`: trimmed).
        var wanted: String
        var pattern: RegularExpression?
    }

    let conditions: [Condition]
    let folds: Bool
    let budget: QueryBudget

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
            if folds { condition.wanted = condition.wanted.lowercased() }
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

    /// Whether `song` (whose tag rows are `rows`, `IndexedTrack.rows`) matches every condition.
    func matches(_ song: LibrarySong, rows: [TagRow]) throws(CommandFailure) -> Bool {
        for condition in conditions where try condition.filter.negated == matchesPositively(condition, song, rows) {
            return false
        }
        return true
    }

    private func matchesPositively(_ condition: Condition, _ song: LibrarySong, _ rows: [TagRow]) throws(CommandFailure) -> Bool {
        switch condition.filter.key {
        case .base:
            return condition.wanted.isEmpty || Self.hasPrefix(song.path, condition.wanted + "/")
        case .file:
            return try compare(condition, song.path)
        case .anyTag:
            for (_, value) in song.tags where try compare(condition, value) { return true }
            return false
        case .tag(let tag):
            for row in rows where row.tag == tag {
                if try compare(condition, row.value) { return true }
            }
            return false
        }
    }

    /// Whether `value` passes `condition`'s comparison (a key's value: `TagIndex`).
    func compare(_ condition: Condition, _ value: String) throws(CommandFailure) -> Bool {
        switch condition.mode {
        case .regularExpression:
            guard let pattern = condition.pattern else { return false }
            guard budget.take(pattern.work(forBytes: value.utf8.count)) else {
                throw CommandFailure(.badArgument, QueryBudget.refusal)
            }
            return pattern.matches(value)
        case .exact:
            return folds ? value.lowercased() == condition.wanted : value.utf8.elementsEqual(condition.wanted.utf8)
        case .substring:
            return Self.contains(folds ? value.lowercased() : value, condition.wanted)
        case .prefix:
            return Self.hasPrefix(folds ? value.lowercased() : value, condition.wanted)
        }
    }

    /// Byte for byte: `String`'s own comparisons take canonically equivalent text as equal.
    static func hasPrefix(_ text: String, _ prefix: String) -> Bool {
        text.utf8.starts(with: prefix.utf8)
    }

    static func contains(_ text: String, _ part: String) -> Bool {
        var text = text, part = part
        return text.withUTF8 { haystack in
            part.withUTF8 { needle in
                guard let first = needle.first else { return true }
                guard needle.count <= haystack.count else { return false }
                var at = 0
                let last = haystack.count - needle.count
                while at <= last {
                    if haystack[at] == first && memcmp(haystack.baseAddress! + at, needle.baseAddress!, needle.count) == 0 { return true }
                    at += 1
                }
                return false
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
