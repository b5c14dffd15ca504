import Synchronization
import TonearmAudio
import TonearmControlPlane
import TonearmSQLite

/// The library's queries, on a connection of their own (WAL: they read while the scanner
/// writes). Songs on a medium that is not mounted are left out.
final class IndexCatalog: LibraryCatalog, @unchecked Sendable {
    /// One connection per worker of the pool that asks (`WorkerPool.library`): a query that
    /// takes its whole budget holds one of them, not every client's.
    private let connections: [Connection]
    private let path: String
    private let playlists: PlaylistDirectory?

    init(_ connections: [Database], playlists: PlaylistDirectory? = nil) {
        path = connections[0].path
        self.connections = connections.map(Connection.init)
        self.playlists = playlists
    }

    private final class Connection: Sendable {
        let reader: Mutex<Reader>
        init(_ db: Database) { reader = Mutex(Reader(db)) }
    }

    /// A connection, with the statements of the queries asked again and again prepared once
    /// (a directory's listing: once per directory of a whole library's `listallinfo`).
    /// Used under its connection's lock only.
    private final class Reader: @unchecked Sendable {
        let db: Database
        private var kept: [String: Statement] = [:]

        init(_ db: Database) { self.db = db }

        /// The statement for `sql`, kept for the next time; `sql` must be one of a few fixed
        /// texts, never one made of a request's values. Run it with `rows`, which resets it.
        func statement(_ sql: String) throws(SQLiteError) -> Statement {
            if let statement = kept[sql] { return statement }
            let statement = try db.prepare(sql)
            kept[sql] = statement
            return statement
        }
    }

    // MARK: LibraryCatalog

    func listDirectory(_ directory: String) throws(CommandFailure) -> DirectoryListing {
        let directory = Self.trimmed(directory)
        guard let found = try query({ reader throws(SQLiteError) in try Self.listing(directory, reader) }) else {
            throw Self.noDirectory(directory)
        }
        return found
    }

    func readingDirectories<T>(
        _ body: (_ listDirectory: (String) throws(CommandFailure) -> DirectoryListing) throws(CommandFailure) -> T
    ) throws(CommandFailure) -> T {
        var outcome: Result<T, CommandFailure>?
        try query { reader throws(SQLiteError) in
            try reader.db.execute("BEGIN")
            defer { try? reader.db.execute("COMMIT") }
            do throws(CommandFailure) {
                outcome = .success(try body { directory throws(CommandFailure) -> DirectoryListing in
                    let directory = Self.trimmed(directory)
                    let found: DirectoryListing?
                    do throws(SQLiteError) { found = try Self.listing(directory, reader) } catch { throw Self.failure(error) }
                    guard let found else { throw Self.noDirectory(directory) }
                    return found
                })
            } catch {
                outcome = .failure(error)
            }
        }
        guard let outcome else { throw CommandFailure(.unavailable, "library database: no connection answered") }
        return try outcome.get()
    }

    private static func noDirectory(_ directory: String) -> CommandFailure {
        CommandFailure(.notFound, "no directory '\(directory)' in the library")
    }

    /// The listing of `directory` (trimmed), nil when there is no such directory.
    private static func listing(_ directory: String, _ reader: Reader) throws(SQLiteError) -> DirectoryListing? {
        var found: Int?
        var recorded: [LibrarySong]?
        try reader.statement("SELECT id, listing FROM directories WHERE path = ? AND available = 1").rows([.text(directory)]) { row in
            found = row.integer(0)
            if !row.isNull(1) { recorded = row.withBlob(1, ListingRecord.songs) }
            return false
        }
        guard let id = found else { return nil }
        var listing = DirectoryListing()
        try reader.statement("SELECT path, modified FROM directories WHERE parent = ? AND available = 1 ORDER BY path")
            .rows([.integer(id)]) { row in
                listing.directories.append(.init(path: row.text(0) ?? "", modified: row.integer(1)))
                return true
            }
        listing.songs = recorded ?? []
        return listing
    }

    @discardableResult
    func songs(_ query: SongQuery, _ each: (LibrarySong) -> Bool) throws(CommandFailure) -> Int {
        try reading { reader, matcher throws(CommandFailure) -> Int in
            // Found directory by directory, handed out in the order of their paths (byte by
            // byte, as a listing sorts): the matches are kept as places, their songs read again.
            var found: [(path: String, directory: Int, index: Int)] = []
            try Self.forEachMatch(matcher, reader) { directory, index, song, _ in
                found.append((song.path, directory, index))
            }
            found.sort { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
            let window = query.window.map { $0.clamped(to: 0..<found.count) } ?? 0..<found.count
            var held: (directory: Int, songs: [LibrarySong])?
            for place in found[window] {
                if held?.directory != place.directory {
                    held = (place.directory, try Self.songs(ofDirectory: place.directory, reader))
                }
                guard let songs = held?.songs, songs.indices.contains(place.index) else { continue }
                if !each(songs[place.index]) { break }
            }
            return found.count
        } matching: { (query.filters, query.matching) }
    }

    func values(of tag: Tag, filters: [TagFilter], groupedBy groups: [Tag], _ each: ([String]) -> Bool) throws(CommandFailure) {
        try reading { reader, matcher throws(CommandFailure) in
            if filters.isEmpty && groups.isEmpty && !TagIndex.hashedTags.contains(tag) {
                // The tag's row alone, in its order: a value sorted two ways comes first where
                // it sorts first.
                let unavailable = try Self.unavailableDirectories(reader)
                var given = Set<String>()
                for entry in try Self.entries(of: tag, reader) {
                    guard unavailable.isEmpty || entry.directories.contains(where: { !unavailable.contains($0) }),
                          given.insert(entry.key.value).inserted else { continue }
                    if !each([entry.key.value]) { return }
                }
                return
            }
            // Each combination of the groups' values and the tag's, in the order of what
            // sorts them (the least of a value's sorts), group by group.
            var rows: [[String]: [String]] = [:]
            try Self.forEachMatch(matcher, reader) { _, _, _, tagRows in
                let values = tagRows.filter { $0.tag == tag }
                guard !values.isEmpty else { return }
                var combinations: [(values: [String], sorts: [String])] = [([], [])]
                for group in groups {
                    var these = tagRows.filter { $0.tag == group }.map { ($0.value, $0.sort) }
                    if these.isEmpty { these = [("", "")] }
                    combinations = combinations.flatMap { c in these.map { (c.values + [$0.0], c.sorts + [$0.1]) } }
                }
                for c in combinations {
                    for value in values {
                        let key = c.values + [value.value]
                        let sorts = c.sorts + [value.sort]
                        if let known = rows[key] {
                            rows[key] = zip(known, sorts).map { $0.utf8.lexicographicallyPrecedes($1.utf8) ? $0 : $1 }
                        } else {
                            rows[key] = sorts
                        }
                    }
                }
            }
            let ordered = rows.sorted { a, b in
                for n in a.key.indices {
                    if a.value[n] != b.value[n] { return a.value[n].utf8.lexicographicallyPrecedes(b.value[n].utf8) }
                    if a.key[n] != b.key[n] { return a.key[n].utf8.lexicographicallyPrecedes(b.key[n].utf8) }
                }
                return false
            }
            for row in ordered where !each(row.key) { return }
        } matching: { (filters, .exact) }
    }

    func count(_ filters: [TagFilter], matching: Matching, groupedBy group: Tag?) throws(CommandFailure) -> [SongCount] {
        try reading { reader, matcher throws(CommandFailure) -> [SongCount] in
            guard let group else {
                var total = SongCount(songs: 0, playTime: 0)
                try Self.forEachMatch(matcher, reader) { _, _, song, _ in
                    total.songs += 1
                    total.playTime += song.duration ?? 0
                }
                return [total]
            }
            var counts: [String: (sort: String, count: SongCount)] = [:]
            try Self.forEachMatch(matcher, reader) { _, _, song, tagRows in
                var values: [String: String] = [:]
                for row in tagRows where row.tag == group {
                    if let sort = values[row.value], !row.sort.utf8.lexicographicallyPrecedes(sort.utf8) { continue }
                    values[row.value] = row.sort
                }
                if values.isEmpty { values[""] = "" }
                for (value, sort) in values {
                    var entry = counts[value] ?? (sort, SongCount(group: value, songs: 0, playTime: 0))
                    if sort.utf8.lexicographicallyPrecedes(entry.sort.utf8) { entry.sort = sort }
                    entry.count.songs += 1
                    entry.count.playTime += song.duration ?? 0
                    counts[value] = entry
                }
            }
            return counts.sorted { a, b in
                a.value.sort != b.value.sort ? a.value.sort.utf8.lexicographicallyPrecedes(b.value.sort.utf8)
                    : a.key.utf8.lexicographicallyPrecedes(b.key.utf8)
            }.map(\.value.count)
        } matching: { (filters, matching) }
    }

    func totals() throws(CommandFailure) -> LibraryTotals {
        try reading { reader, _ throws(CommandFailure) -> LibraryTotals in
            let unavailable = try Self.unavailableDirectories(reader)
            func distinct(_ tag: Tag) throws(CommandFailure) -> Int {
                var values = Set<String>()
                for entry in try Self.entries(of: tag, reader)
                where unavailable.isEmpty || entry.directories.contains(where: { !unavailable.contains($0) }) {
                    values.insert(entry.key.value)
                }
                return values.count
            }
            var totals = LibraryTotals(artists: try distinct(.artist), albums: try distinct(.album))
            try Self.sql { () throws(SQLiteError) in
                let statement = try reader.statement("SELECT total(songs), total(play_time) FROM directories WHERE available = 1")
                try statement.rows([]) { row in
                    totals.songs = Int(row.real(0))
                    totals.playTime = row.real(1)
                    return false
                }
                totals.lastUpdate = try reader.db.integer("SELECT value FROM meta WHERE key = 'last_update'") ?? 0
            }
            return totals
        } matching: { ([], .exact) }
    }

    func storedPlaylists() throws(CommandFailure) -> [StoredPlaylist] {
        guard let playlists else { return [] }
        do throws(LibraryError) {
            return try playlists.all()
        } catch {
            throw CommandFailure(.unavailable, error.description)
        }
    }

    func failures(_ each: (String, String) -> Bool) throws(CommandFailure) {
        try query { reader throws(SQLiteError) in
            try reader.statement("SELECT path, reason FROM failures ORDER BY path").rows([]) { row in
                each(row.text(0) ?? "", row.text(1) ?? "")
            }
        }
    }

    // MARK: SQL

    /// Runs `body` on a connection within a query's time (`QueryBudget`); a failure becomes
    /// what `failure` makes of it.
    private func query<T: Sendable>(_ body: (Reader) throws(SQLiteError) -> T) throws(CommandFailure) -> T {
        do throws(SQLiteError) {
            // A free connection, else the first.
            for connection in connections.dropFirst() {
                let result = try connection.reader.withLockIfAvailable { reader throws(SQLiteError) -> T in
                    let result: T = try reader.db.withBudget { () throws(SQLiteError) -> T in try body(reader) }
                    return result
                }
                if let result { return result }
            }
            return try connections[0].reader.withLock { reader throws(SQLiteError) -> T in
                let result: T = try reader.db.withBudget { () throws(SQLiteError) -> T in try body(reader) }
                return result
            }
        } catch {
            throw Self.failure(error)
        }
    }

    /// A query over its time is refused as a bad argument; any other SQLite failure becomes
    /// `unavailable`, naming the database.
    private static func failure(_ error: SQLiteError) -> CommandFailure {
        error.isOverBudget ? CommandFailure(.badArgument, QueryBudget.refusal) : CommandFailure(.unavailable, "library database \(error)")
    }

    // MARK: Reading

    /// Runs `body` on a connection, in one snapshot of the index, with the query's filters
    /// made into a matcher whose time (its patterns') counts against a query's budget.
    private func reading<T: Sendable>(
        _ body: (Reader, SongMatcher) throws(CommandFailure) -> T, matching filters: () -> ([TagFilter], Matching)
    ) throws(CommandFailure) -> T {
        let budget = QueryBudget()
        let (given, matching) = filters()
        let matcher = try SongMatcher(given, matching, budget: budget)
        var outcome: Result<T, CommandFailure>?
        try query { reader throws(SQLiteError) in
            try reader.db.execute("BEGIN")
            defer { try? reader.db.execute("COMMIT") }
            budget.start()
            defer { budget.stop() }
            do throws(CommandFailure) {
                outcome = .success(try body(reader, matcher))
            } catch {
                outcome = .failure(error)
            }
        }
        guard let outcome else { throw CommandFailure(.unavailable, "library database: no connection answered") }
        return try outcome.get()
    }

    /// `body` with SQLite's failures made `CommandFailure`s.
    private static func sql<T>(_ body: () throws(SQLiteError) -> T) throws(CommandFailure) -> T {
        do throws(SQLiteError) { return try body() } catch { throw failure(error) }
    }

    private static func entries(of tag: Tag, _ reader: Reader) throws(CommandFailure) -> [TagIndex.Entry] {
        try sql { () throws(SQLiteError) -> [TagIndex.Entry] in
            try TagIndex.read(tag, reader.statement(TagIndex.selectSQL), database: reader.db.path)
        }
    }

    private static func unavailableDirectories(_ reader: Reader) throws(CommandFailure) -> Set<Int> {
        try sql { () throws(SQLiteError) -> Set<Int> in
            var ids = Set<Int>()
            try reader.statement("SELECT id FROM directories WHERE available = 0").rows([]) { row in
                ids.insert(row.integer(0))
                return true
            }
            return ids
        }
    }

    private static func songs(ofDirectory id: Int, _ reader: Reader) throws(CommandFailure) -> [LibrarySong] {
        try sql { () throws(SQLiteError) -> [LibrarySong] in
            var songs: [LibrarySong] = []
            try reader.statement("SELECT listing FROM directories WHERE id = ? AND listing IS NOT NULL").rows([.integer(id)]) { row in
                songs = row.withBlob(0, ListingRecord.songs) ?? []
                return false
            }
            return songs
        }
    }

    /// Every song of an available directory that matches, with its directory, its place in
    /// the directory's record and its tag rows. The directories read are those the tag index
    /// names for the values each filter on a tag takes, and the one holding the file a filter
    /// names exactly (all of them, when no such filter), under `base`'s directory when there
    /// is one.
    private static func forEachMatch(
        _ matcher: SongMatcher, _ reader: Reader, _ body: (Int, Int, LibrarySong, [TagRow]) throws(CommandFailure) -> Void
    ) throws(CommandFailure) {
        var named: Set<Int>?
        var under: String?
        for condition in matcher.conditions where !condition.filter.negated {
            let tags: [Tag]
            // A hashed tag's row answers only whether a value is there exactly (`TagIndex`).
            let exact = condition.mode == .exact && !matcher.folds
            switch condition.filter.key {
            case .tag(let tag):
                if TagIndex.hashedTags.contains(tag) && !exact { continue }
                tags = [tag]
            case .anyTag:
                if !exact { continue }
                tags = Tag.ordered
            case .base:
                under = condition.wanted
                continue
            case .file:
                guard condition.mode == .exact, !matcher.folds else { continue }
                let parent = IndexScan.parent(of: condition.wanted)
                var these = Set<Int>()
                try sql { () throws(SQLiteError) in
                    try reader.statement("SELECT id FROM directories WHERE path = ?").rows([.text(parent)]) { row in
                        these.insert(row.integer(0))
                        return false
                    }
                }
                named = named.map { $0.intersection(these) } ?? these
                continue
            }
            var these = Set<Int>()
            for tag in tags {
                if TagIndex.hashedTags.contains(tag) {
                    let hash = TagIndex.hashed(condition.wanted)
                    for entry in try entries(of: tag, reader) where entry.key.value == hash { these.formUnion(entry.directories) }
                    continue
                }
                for entry in try entries(of: tag, reader) where try matcher.compare(condition, entry.key.value) {
                    these.formUnion(entry.directories)
                }
            }
            named = named.map { $0.intersection(these) } ?? these
        }
        let prefix = under.map { $0 + "/" }
        func take(_ id: Int, _ path: String, _ record: UnsafeRawBufferPointer) throws(CommandFailure) {
            if let under, let prefix, path != under, !SongMatcher.hasPrefix(path, prefix) { return }
            guard !matcher.budget.isSpent else { throw CommandFailure(.badArgument, QueryBudget.refusal) }
            guard let songs = ListingRecord.songs(record) else { return }
            for (index, song) in songs.enumerated() {
                let rows = IndexedTrack.rows(song.tags)
                if try matcher.matches(song, rows: rows) { try body(id, index, song, rows) }
            }
        }
        var failure: CommandFailure?
        try sql { () throws(SQLiteError) in
            func each(_ row: Statement, id: Int, path: String) -> Bool {
                row.withBlob(1) { record in
                    do throws(CommandFailure) { try take(id, path, record) } catch { failure = error }
                }
                return failure == nil
            }
            if let named {
                let select = try reader.statement("SELECT path, listing FROM directories WHERE id = ? AND available = 1 AND listing IS NOT NULL")
                for id in named.sorted() where failure == nil {
                    try select.rows([.integer(id)]) { row in each(row, id: id, path: row.text(0) ?? "") }
                }
            } else if let under, !under.isEmpty {
                // The directory and those under it: paths from "base/" up to "base0" ("0"
                // follows "/"), by the paths' index.
                try reader.statement("""
                    SELECT id, listing, path FROM directories
                    WHERE (path = ? OR (path > ? AND path < ?)) AND available = 1 AND listing IS NOT NULL
                    """).rows([.text(under), .text(under + "/"), .text(under + "0")]) { row in
                    each(row, id: row.integer(0), path: row.text(2) ?? "")
                }
            } else {
                try reader.statement("SELECT id, listing, path FROM directories WHERE available = 1 AND listing IS NOT NULL")
                    .rows([]) { row in each(row, id: row.integer(0), path: row.text(2) ?? "") }
            }
        }
        if let failure { throw failure }
    }

    /// A path as the index keeps it: no leading, trailing or doubled slashes.
    static func trimmed(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }
}
