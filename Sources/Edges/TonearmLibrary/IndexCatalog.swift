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
        if let recorded {
            listing.songs = recorded
        } else {
            // Its record is being made again (a scan has not committed yet), or unreadable.
            try reader.statement(ListingRecord.songsOfDirectory).rows([.integer(id)]) { row in
                listing.songs.append(Self.song(row))
                return true
            }
        }
        return listing
    }

    @discardableResult
    func songs(_ query: SongQuery, _ each: (LibrarySong) -> Bool) throws(CommandFailure) -> Int {
        let (condition, values) = try Self.condition(query.filters, query.matching)
        return try self.query { reader throws(SQLiteError) -> Int in
            let db = reader.db
            var sql = Self.songSelect + " WHERE \(condition) ORDER BY t.path"
            let window = query.window ?? 0..<Int.max
            if query.window != nil { sql += " LIMIT \(window.count) OFFSET \(window.lowerBound)" }
            var read = 0, stopped = false
            try db.prepare(sql).rows(values) { row in
                read += 1
                stopped = !each(Self.song(row))
                return !stopped
            }
            // The list was read to its end: where it ended is how many there are. Otherwise
            // (a full page, nothing past the offset, or `each` stopped) they are counted.
            if !stopped && read < window.count && (read > 0 || window.lowerBound == 0) { return window.lowerBound + read }
            return try db.integer("SELECT count(*) FROM tracks t WHERE \(condition)", values) ?? 0
        }
    }

    func values(of tag: Tag, filters: [TagFilter], groupedBy groups: [Tag], _ each: ([String]) -> Bool) throws(CommandFailure) {
        let (condition, values) = try Self.condition(filters, .exact)
        var select: [String] = []
        var joins: [String] = []
        var order: [String] = []
        for (n, group) in groups.enumerated() {
            joins.append("""
                LEFT JOIN tags g\(n) ON g\(n).track = v.track AND g\(n).tag = \(group.index)
                LEFT JOIN tag_values gv\(n) ON gv\(n).id = g\(n).value
                """)
            select.append("coalesce(gv\(n).value, '')")
            order += ["min(coalesce(g\(n).sort, gv\(n).value, ''))", "coalesce(gv\(n).value, '')"]
        }
        select.append("vv.value")
        order += ["min(coalesce(v.sort, vv.value))", "vv.value"]
        // Unfiltered, a value's tracks are checked against the few unavailable ones (an index
        // of them alone), not each looked up in `tracks`.
        let restriction = filters.isEmpty
            ? "AND v.track NOT IN (SELECT id FROM tracks WHERE available = 0)"
            : "AND v.track IN (SELECT t.id FROM tracks t WHERE \(condition))"
        let sql = """
            SELECT \(select.joined(separator: ", ")) FROM tag_values vv JOIN tags v ON v.value = vv.id
            \(joins.joined(separator: " "))
            WHERE vv.tag = \(tag.index) \(restriction)
            GROUP BY \(select.joined(separator: ", ")) ORDER BY \(order.joined(separator: ", "))
            """
        try query { reader throws(SQLiteError) in
            let db = reader.db
            let columns = Int32(groups.count + 1)
            try db.prepare(sql).rows(values) { row in
                each((0..<columns).map { row.text($0) ?? "" })
            }
        }
    }

    func count(_ filters: [TagFilter], matching: Matching, groupedBy group: Tag?) throws(CommandFailure) -> [SongCount] {
        let (condition, values) = try Self.condition(filters, matching)
        return try query { reader throws(SQLiteError) -> [SongCount] in
            let db = reader.db
            var counts: [SongCount] = []
            if let group {
                try db.prepare("""
                    SELECT coalesce(gv.value, ''), count(DISTINCT t.id), total(t.duration) FROM tracks t
                    LEFT JOIN tags g ON g.track = t.id AND g.tag = \(group.index)
                    LEFT JOIN tag_values gv ON gv.id = g.value
                    WHERE \(condition) GROUP BY 1 ORDER BY min(coalesce(g.sort, gv.value, '')), 1
                    """).rows(values) { row in
                    counts.append(SongCount(group: row.text(0) ?? "", songs: row.integer(1), playTime: row.real(2)))
                    return true
                }
            } else {
                let statement = try db.prepare("SELECT count(*), total(duration) FROM tracks t WHERE \(condition)")
                try statement.bind(values)
                if try statement.step() { counts.append(SongCount(songs: statement.integer(0), playTime: statement.real(1))) }
            }
            return counts
        }
    }

    func totals() throws(CommandFailure) -> LibraryTotals {
        try query { reader throws(SQLiteError) -> LibraryTotals in
            let db = reader.db
            func distinct(_ tag: Tag) throws(SQLiteError) -> Int {
                try db.integer("""
                    SELECT count(DISTINCT value) FROM tags WHERE tag = \(tag.index) AND own = 1
                    AND track IN (SELECT id FROM tracks WHERE available = 1)
                    """) ?? 0
            }
            var totals = LibraryTotals(artists: try distinct(.artist), albums: try distinct(.album))
            let statement = try db.prepare("SELECT count(*), total(duration) FROM tracks WHERE available = 1")
            if try statement.step() {
                totals.songs = statement.integer(0)
                totals.playTime = statement.real(1)
            }
            totals.lastUpdate = try db.integer("SELECT value FROM meta WHERE key = 'last_update'") ?? 0
            return totals
        }
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

    /// The columns a `LibrarySong` is made of; `t` is the track.
    static let songSelect = """
        SELECT t.path, t.duration, t.rate, t.bits, t.channels, t.size, t.modified, t.has_picture, t.available,
            t.rg_track_gain, t.rg_track_peak, t.rg_album_gain, t.rg_album_peak,
            (SELECT group_concat(g.seq || char(31) || g.tag || char(31) || v.value, char(30))
             FROM tags g JOIN tag_values v ON v.id = g.value WHERE g.track = t.id AND g.own = 1)
        FROM tracks t
        """

    static func song(_ row: Statement) -> LibrarySong {
        // "seq␟tag␟value␞seq␟tag␟value…", taken apart as bytes (0x1E and 0x1F are never inside
        // a character of UTF-8), then put in the file's order (`seq`): in SQL that order would
        // be a sort for each song.
        let numbered = row.withText(13) { text -> [(seq: Int, tag: Tag, value: String)] in
            var numbered: [(seq: Int, tag: Tag, value: String)] = []
            var start = 0
            while start < text.count {
                let end = text[start...].firstIndex(of: 0x1E) ?? text.count
                defer { start = end + 1 }
                var field = text[start..<end]
                guard let seq = Self.number(&field), let index = Self.number(&field), let tag = Tag(index: index) else { continue }
                numbered.append((seq, tag, String(decoding: UnsafeBufferPointer(rebasing: field), as: UTF8.self)))
            }
            return numbered
        }
        let tags = numbered.sorted { $0.seq < $1.seq }.map { (tag: $0.tag, value: $0.value) }
        return LibrarySong(
            path: row.text(0) ?? "", tags: tags, duration: row.optionalReal(1), sampleRate: row.integer(2),
            bitsPerSample: row.integer(3), channels: row.integer(4), size: row.integer(5), modified: row.integer(6),
            hasPicture: row.integer(7) != 0, isAvailable: row.integer(8) != 0,
            replayGain: ReplayGain(trackGain: row.optionalReal(9), trackPeak: row.optionalReal(10),
                                          albumGain: row.optionalReal(11), albumPeak: row.optionalReal(12)))
    }

    /// The decimal number `field` starts with, up to a 0x1F, which is taken off with it; nil
    /// when there is none.
    private static func number(_ field: inout Slice<UnsafeBufferPointer<UInt8>>) -> Int? {
        guard let cut = field.firstIndex(of: 0x1F), cut > field.startIndex, cut - field.startIndex <= 9 else { return nil }
        var number = 0
        for digit in field[..<cut] {
            guard (0x30...0x39).contains(digit) else { return nil }
            number = number * 10 + Int(digit - 0x30)
        }
        field = field[(cut + 1)...]
        return number
    }

    /// The WHERE clause over `tracks t` for `filters`, with its values.
    static func condition(_ filters: [TagFilter], _ matching: Matching) throws(CommandFailure) -> (String, [SQLValue]) {
        var clauses = ["t.available = 1"]
        var values: [SQLValue] = []
        // The filter says how much of a value it compares (the whole, a part, the beginning, a
        // pattern); the query says whether case counts: not in a search (MPD's `search`), in
        // everything else (`find`), whatever the filter's operator.
        let folds = matching != .exact
        for filter in filters {
            let before = clauses.count
            defer {
                // A negated filter: every song the clause it added leaves out.
                if filter.negated, clauses.count == before + 1 { clauses[before] = "NOT (\(clauses[before]))" }
            }
            switch (filter.key, filter.matching ?? matching) {
            case (.base, _):
                let base = trimmed(filter.value)
                guard !base.isEmpty else { continue }
                clauses.append("(t.path LIKE ? ESCAPE '\\')")
                values.append(.text(likeEscaped(base) + "/%"))
            case (.file, .exact):
                clauses.append(folds ? "t.path = ? COLLATE NOCASE" : "t.path = ?")
                values.append(.text(trimmed(filter.value)))
            case (.file, .substring) where !folds:
                clauses.append("instr(t.path, ?) > 0")
                values.append(.text(filter.value))
            case (.file, .substring):
                clauses.append("t.path LIKE ? ESCAPE '\\'")
                values.append(.text("%" + likeEscaped(filter.value) + "%"))
            case (.tag, .exact), (.anyTag, .exact):
                clauses.append(tracks(filter.key, "value = ?\(folds ? " COLLATE NOCASE" : "")"))
                values.append(.text(filter.value))
            case (.tag, .substring) where !folds, (.anyTag, .substring) where !folds:
                // Case counts (MPD's find with contains): no index to help, but a find seldom asks.
                clauses.append(tracks(filter.key, "instr(value, ?) > 0"))
                values.append(.text(filter.value))
            case (.tag(let tag), .substring):
                if filter.value.unicodeScalars.count >= 3, IndexDatabase.searchedTags.contains(tag) {
                    // The trigram index: substrings of three characters or more, case folded.
                    clauses.append(tracks(filter.key, "id IN (SELECT rowid FROM value_text WHERE value_text MATCH ?)", byID: true))
                    values.append(.text("value : \(phrase(filter.value))"))
                } else {
                    clauses.append(tracks(filter.key, "value LIKE ? ESCAPE '\\'"))
                    values.append(.text("%" + likeEscaped(filter.value) + "%"))
                }
            case (.anyTag, .substring):
                clauses.append(tracks(filter.key, "value LIKE ? ESCAPE '\\'"))
                values.append(.text("%" + likeEscaped(filter.value) + "%"))
            case (.file, .prefix):
                // substr counts characters (code points), as SQLite does.
                clauses.append(folds ? "t.path LIKE ? ESCAPE '\\'" : "substr(t.path, 1, \(filter.value.unicodeScalars.count)) = ?")
                values.append(.text(folds ? likeEscaped(filter.value) + "%" : filter.value))
            case (.tag, .prefix), (.anyTag, .prefix):
                let comparison = folds ? "value LIKE ? ESCAPE '\\'" : "substr(value, 1, \(filter.value.unicodeScalars.count)) = ?"
                clauses.append(tracks(filter.key, comparison))
                values.append(.text(folds ? likeEscaped(filter.value) + "%" : filter.value))
            case (_, .regularExpression) where Database.regularExpressionProblem(filter.value, ignoringCase: folds) != nil:
                let problem = Database.regularExpressionProblem(filter.value, ignoringCase: folds) ?? ""
                throw CommandFailure(.badArgument, "regular expression refused: \(problem)")
            case (.file, .regularExpression):
                clauses.append("\(folds ? "regexp_i" : "regexp")(?, t.path)")
                values.append(.text(filter.value))
            case (.tag, .regularExpression), (.anyTag, .regularExpression):
                clauses.append(tracks(filter.key, "\(folds ? "regexp_i" : "regexp")(?, value)"))
                values.append(.text(filter.value))
            }
        }
        return (clauses.joined(separator: " AND "), values)
    }

    /// The clause taking the tracks that have a value of `key` for which `comparison` (over
    /// `tag_values.value`) holds: one of the tag's values, or (any tag) one the file has itself.
    /// `byID`: `comparison` names the values' ids (the search index's), which are looked up
    /// one by one and their tag checked, not found among every value of the tag (SQLite takes
    /// the tag's index otherwise: a search for a title went through all 11,000 of them).
    static func tracks(_ key: FilterKey, _ comparison: String, byID: Bool = false) -> String {
        if case .tag(let tag) = key {
            return "t.id IN (SELECT track FROM tags WHERE value IN (SELECT id FROM tag_values WHERE \(byID ? "+" : "")tag = \(tag.index) AND \(comparison)))"
        }
        return "t.id IN (SELECT track FROM tags WHERE own = 1 AND value IN (SELECT id FROM tag_values WHERE \(comparison)))"
    }

    /// An FTS5 phrase: the text in double quotes, its own double quotes doubled.
    static func phrase(_ text: String) -> String {
        "\"" + text.replacingQuotes() + "\""
    }

    /// A path as the index keeps it: no leading, trailing or doubled slashes.
    static func trimmed(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }
}

private extension String {
    func replacingQuotes() -> String {
        var out = ""
        for c in self {
            if c == "\"" { out.append("\"") }
            out.append(c)
        }
        return out
    }
}
