import Synchronization
import TonearmAudio
import TonearmControlPlane
import TonearmSQLite

#if canImport(Glibc)
import Glibc
#endif

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
        /// Expands the records and rows this connection reads.
        let inflater = Deflate.Inflater()
        private var kept: [String: Statement] = [:]
        /// What its queries expanded, for the next ones.
        private var blocks = KeptBlocks(budget: expandedKept)
        /// The title search of the bench's 20,000 tracks expands 1 MB: its row (243 KB) and the
        /// records of the 352 directories its 393 songs are in.
        static let expandedKept = 3 << 19

        init(_ db: Database) { self.db = db }

        /// At the start of a query's transaction: the blocks kept are forgotten if the index
        /// has changed since they were read (the scanner, on a connection of its own, wrote).
        /// It is the transaction's first read, which fixes its snapshot.
        func begin() throws(SQLiteError) {
            var now: Int?
            try statement("PRAGMA data_version").rows([]) { row in
                now = row.integer(0)
                return false
            }
            blocks.begin(version: now)
        }

        /// Block `which` expanded: as kept, or as `read` reads and expands it (nil when it is
        /// not a whole block). Within a query that began with `begin()` only.
        func expanded(_ which: KeptBlocks.Block, _ read: () -> [UInt8]?) -> [UInt8]? {
            blocks.expanded(which, read)
        }

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
            if !row.isNull(1) { recorded = row.withBlob(1) { ListingRecord.songs($0, reader.inflater) } }
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
            // byte, as a listing sorts). The first matches are kept whole; past them only
            // where they are, and read again if they are handed out.
            var found: [(path: String, directory: Int, start: Int, song: LibrarySong?)] = []
            // Directories are read in path order, and a song sorts after its directory's
            // path: a match that precedes the next directory's path precedes every song still
            // to be read. Once that many fill the window, nothing more is needed.
            var settled = 0, pending: [Int] = []
            let enough: ((String) -> Bool)? = query.countsAll ? nil : query.window.map { window in
                { next in
                    guard found.count >= window.upperBound else { return false }
                    pending.removeAll { index in
                        guard found[index].path.precedes(next) else { return false }
                        settled += 1
                        return true
                    }
                    return settled >= window.upperBound
                }
            }
            try Self.forEachMatch(matcher, reader, until: enough, after: query.after) { directory, view, raw in
                let song = found.count < Self.songsKept ? ListingRecord.entry(at: view.start, in: raw)?.song : nil
                pending.append(found.count)
                found.append((String(decoding: view.path, as: UTF8.self), directory, view.start, song))
            }
            found.sort { $0.path.precedes($1.path) }
            let window = query.window.map { $0.clamped(to: 0..<found.count) } ?? 0..<found.count
            var held: (directory: Int, record: [UInt8])?
            for place in found[window] {
                var song = place.song
                if song == nil {
                    if held?.directory != place.directory {
                        held = (place.directory, try Self.record(ofDirectory: place.directory, reader) ?? [])
                    }
                    song = held?.record.withUnsafeBytes { ListingRecord.entry(at: place.start, in: $0)?.song }
                }
                if let song, !each(song) { break }
            }
            return found.count
        } matching: { (query.filters, query.matching) }
    }

    /// How many of a query's matches are kept whole as they are found: a few thousand songs
    /// (a few MB at most); a query that matches more reads those it hands out again.
    static let songsKept = 2_000

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
            func add(_ values: [(value: String, sort: String)], _ groupValues: [[(value: String, sort: String)]]) {
                var combinations: [(values: [String], sorts: [String])] = [([], [])]
                for these in groupValues {
                    let these = these.isEmpty ? [("", "")] : these
                    combinations = combinations.flatMap { c in these.map { (c.values + [$0.0], c.sorts + [$0.1]) } }
                }
                for c in combinations {
                    for value in values {
                        let key = c.values + [value.value]
                        let sorts = c.sorts + [value.sort]
                        if let known = rows[key] {
                            rows[key] = zip(known, sorts).map { $0.precedes($1) ? $0 : $1 }
                        } else {
                            rows[key] = sorts
                        }
                    }
                }
            }
            var read: Set<Int>?
            let tags = [tag] + groups
            if filters.isEmpty && !tags.contains(where: TagIndex.hashedTags.contains) {
                // A directory whose songs all have each of its values of these tags gives its
                // combinations from the rows; the others' records are read.
                let unavailable = try Self.unavailableDirectories(reader)
                var byDirectory: [Int: [[(value: String, sort: String, everySong: Bool)]]] = [:]
                for (n, each) in tags.enumerated() {
                    for entry in try Self.entries(of: each, reader) {
                        for directory in entry.directories where n > 0 || !unavailable.contains(directory) {
                            guard n == 0 || byDirectory[directory] != nil else { continue }
                            byDirectory[directory, default: Array(repeating: [], count: tags.count)][n]
                                .append((entry.key.value, entry.key.sort, entry.everySong.contains(directory)))
                        }
                    }
                }
                read = []
                for (directory, lists) in byDirectory {
                    if lists.allSatisfy({ $0.allSatisfy(\.everySong) }) {
                        add(lists[0].map { ($0.value, $0.sort) }, lists.dropFirst().map { $0.map { ($0.value, $0.sort) } })
                    } else {
                        read?.insert(directory)
                    }
                }
            }
            // Songs of one album have the same values one after another: a song whose values
            // are the last one's adds nothing.
            var signature = Signature(tags: tags)
            try Self.forEachMatch(matcher, reader, within: read) { _, view, _ in
                guard signature.changed(view) else { return }
                let values = Self.values(of: tag, view)
                guard !values.isEmpty else { return }
                add(values, groups.map { Self.values(of: $0, view) })
            }
            let ordered = rows.sorted { a, b in
                for n in a.key.indices {
                    if a.value[n] != b.value[n] { return a.value[n].precedes(b.value[n]) }
                    if a.key[n] != b.key[n] { return a.key[n].precedes(b.key[n]) }
                }
                return false
            }
            for row in ordered where !each(row.key) { return }
        } matching: { (filters, .exact) }
    }

    /// The bytes of the values a song's rows of some tags are made of (theirs, their sort
    /// tags', and Artist's with the sort tags AlbumArtist falls back on), to tell whether a
    /// song's rows are the last song's.
    struct Signature {
        private let numbers: Set<Int>
        private var last: [UInt8] = []
        private var current: [UInt8] = []
        private var first = true

        init(tags: [Tag]) {
            var wanted = Set(tags)
            for tag in tags { if let sort = tag.sortTag { wanted.insert(sort) } }
            if wanted.contains(.albumArtist) { wanted.formUnion([.artist, .albumArtistSort, .artistSort]) }
            numbers = Set(wanted.map(\.index))
        }

        /// Whether `view`'s values differ from the last song's (true for the first).
        mutating func changed(_ view: ListingRecord.SongView) -> Bool {
            current.removeAll(keepingCapacity: true)
            for (number, value) in view.tags where numbers.contains(number) {
                ListingRecord.appendVarint(number, to: &current)
                ListingRecord.appendVarint(value.count, to: &current)
                current.append(contentsOf: value)
            }
            defer { swap(&last, &current) }
            if first {
                first = false
                return true
            }
            return current != last
        }
    }

    /// A song's values of `tag`, each with the value that sorts it (`Tag.forEachValue`).
    private static func values(of tag: Tag, _ view: ListingRecord.SongView) -> [(value: String, sort: String)] {
        var values: [(value: String, sort: String)] = []
        tag.forEachValue(in: view.tags) { value, sort in
            let text = String(decoding: value, as: UTF8.self)
            values.append((text, sort.map { String(decoding: $0, as: UTF8.self) } ?? text))
            return true
        }
        return values
    }

    func count(_ filters: [TagFilter], matching: Matching, groupedBy group: Tag?) throws(CommandFailure) -> [SongCount] {
        try reading { reader, matcher throws(CommandFailure) -> [SongCount] in
            // Without filters, each directory's songs and play time are in its row.
            var directories: [(id: Int, songs: Int, playTime: Double)] = []
            if filters.isEmpty {
                try Self.sql { () throws(SQLiteError) in
                    try reader.statement("SELECT id, songs, play_time FROM directories WHERE available = 1 AND songs > 0").rows([]) { row in
                        directories.append((row.integer(0), row.integer(1), row.real(2)))
                        return true
                    }
                }
            }
            guard let group else {
                var total = SongCount(songs: 0, playTime: 0)
                if filters.isEmpty {
                    for directory in directories {
                        total.songs += directory.songs
                        total.playTime += directory.playTime
                    }
                    return [total]
                }
                try Self.forEachMatch(matcher, reader) { _, view, _ in
                    total.songs += 1
                    total.playTime += view.duration ?? 0
                }
                return [total]
            }
            var counts: [String: (sort: String, count: SongCount)] = [:]
            func add(_ value: String, _ sort: String, songs: Int, playTime: Double) {
                var entry = counts[value] ?? (sort, SongCount(group: value, songs: 0, playTime: 0))
                if sort.precedes(entry.sort) { entry.sort = sort }
                entry.count.songs += songs
                entry.count.playTime += playTime
                counts[value] = entry
            }
            var read: Set<Int>?
            if filters.isEmpty && !TagIndex.hashedTags.contains(group) {
                // A directory whose songs all have each of its values of the group counts whole;
                // the others' records are read.
                var byDirectory: [Int: [(value: String, sort: String, everySong: Bool)]] = [:]
                for entry in try Self.entries(of: group, reader) {
                    for directory in entry.directories {
                        byDirectory[directory, default: []].append((entry.key.value, entry.key.sort, entry.everySong.contains(directory)))
                    }
                }
                read = []
                for directory in directories {
                    let values = byDirectory[directory.id] ?? []
                    guard values.allSatisfy(\.everySong) else {
                        read?.insert(directory.id)
                        continue
                    }
                    var sorts: [String: String] = [:]
                    for (value, sort, _) in values where sorts[value].map({ sort.precedes($0) }) ?? true { sorts[value] = sort }
                    if sorts.isEmpty { sorts[""] = "" }
                    for (value, sort) in sorts { add(value, sort, songs: directory.songs, playTime: directory.playTime) }
                }
            }
            var signature = Signature(tags: [group])
            var values: [String: String] = [:]
            try Self.forEachMatch(matcher, reader, within: read) { _, view, _ in
                if signature.changed(view) {
                    values = [:]
                    for (value, sort) in Self.values(of: group, view) {
                        if let known = values[value], !sort.precedes(known) { continue }
                        values[value] = sort
                    }
                    if values.isEmpty { values[""] = "" }
                }
                for (value, sort) in values { add(value, sort, songs: 1, playTime: view.duration ?? 0) }
            }
            return counts.sorted { a, b in
                a.value.sort != b.value.sort ? a.value.sort.precedes(b.value.sort)
                    : a.key.precedes(b.key)
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
            try reader.begin()
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

    /// Directory `id`'s record, expanded.
    private static func record(ofDirectory id: Int, _ reader: Reader) throws(CommandFailure) -> [UInt8]? {
        try sql { () throws(SQLiteError) -> [UInt8]? in
            var record: [UInt8]?
            try reader.statement("SELECT listing FROM directories WHERE id = ? AND listing IS NOT NULL").rows([.integer(id)]) { row in
                record = reader.expanded(.directory(id)) { row.withBlob(0, reader.inflater.expanded) }
                return false
            }
            return record
        }
    }

    /// Every song of an available directory that matches, with its directory and the
    /// expanded record it is read from in place. The directories read are those the tag
    /// index names for the values each filter on a tag takes, and the one holding the file a
    /// filter names exactly (all of them, when no such filter), under `base`'s directory when
    /// there is one; only those `within`, when given. When `until` is given, directories are
    /// read in path order and it is asked before each with its path whether to stop. With
    /// `after`, only songs whose paths follow it, from the directories that can hold them.
    private static func forEachMatch(
        _ matcher: SongMatcher, _ reader: Reader, within: Set<Int>? = nil, until enough: ((String) -> Bool)? = nil, after: String? = nil,
        _ body: (Int, ListingRecord.SongView, UnsafeRawBufferPointer) throws(CommandFailure) -> Void
    ) throws(CommandFailure) {
        var named = within
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
                let hash = TagIndex.hashedTags.contains(tag) ? TagIndex.hashed(condition.wanted) : nil
                let row = try sql { () throws(SQLiteError) -> [UInt8]? in
                    var expanded: [UInt8]? = []
                    try reader.statement(TagIndex.selectSQL).rows([.integer(tag.index)]) { row in
                        expanded = reader.expanded(.row(tag.index)) { row.withBlob(0, reader.inflater.expanded) }
                        return false
                    }
                    return expanded
                }
                var outcome: Result<Bool, CommandFailure> = .success(row != nil)
                row?.withUnsafeBytes { raw in
                    guard !raw.isEmpty else { return }
                    do throws(CommandFailure) {
                        outcome = .success(try TagIndex.forEachEntry(raw, wanted: { value throws(CommandFailure) -> Bool in
                            if let hash { return SongMatcher.equal(value, hash) }
                            return try matcher.compare(condition, value)
                        }, directory: { these.insert($0) }))
                    } catch {
                        outcome = .failure(error)
                    }
                }
                guard try outcome.get() else { throw CommandFailure(.unavailable, "library database \(reader.db.path): the tag index of \(tag.rawValue) is damaged") }
            }
            named = named.map { $0.intersection(these) } ?? these
        }
        let prefix = under.map { $0 + "/" }
        var failure: CommandFailure?
        func take(_ id: Int, _ path: String, _ record: () -> [UInt8]?) throws(CommandFailure) {
            if let under, let prefix, path != under, !SongMatcher.hasPrefix(path, prefix) { return }
            guard !matcher.budget.isSpent else { throw CommandFailure(.badArgument, QueryBudget.refusal) }
            guard let expanded = reader.expanded(.directory(id), record) else { return }
            var failure: CommandFailure?
            expanded.withUnsafeBytes { raw in
                do throws(CommandFailure) {
                    _ = try ListingRecord.forEachSong(raw) { view throws(CommandFailure) -> Bool in
                        if let after, !SongMatcher.follows(view.path, after) { return true }
                        if try matcher.matches(view) { try body(id, view, raw) }
                        return true
                    }
                } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
        }
        try sql { () throws(SQLiteError) in
            func each(_ row: Statement, id: Int, path: String) -> Bool {
                do throws(CommandFailure) {
                    try take(id, path) { row.withBlob(1, reader.inflater.expanded) }
                } catch {
                    failure = error
                }
                return failure == nil
            }
            // In path order where `until` may stop the reading.
            func inOrder(_ row: Statement) -> Bool {
                let path = row.text(2) ?? ""
                if let enough, enough(path) { return false }
                return each(row, id: row.integer(0), path: path)
            }
            // A directory's songs lie before "path0" (below): none follows `after` when that does not.
            func mayFollowAfter(_ path: String) -> Bool {
                after.map { path.isEmpty || $0.precedes(path + "0") } ?? true
            }
            let order = enough == nil ? "" : " ORDER BY path"
            if let named, enough == nil {
                // In any order: each read whole, path and listing in one step.
                let select = try reader.statement("SELECT id, listing, path FROM directories WHERE id = ? AND available = 1 AND listing IS NOT NULL")
                for id in named.sorted() where failure == nil {
                    try select.rows([.integer(id)]) { row in
                        let path = row.text(2) ?? ""
                        if mayFollowAfter(path) { _ = each(row, id: id, path: path) }
                        return false
                    }
                }
                return
            }
            if let named {
                // Their paths first, to read them in path order where `until` may stop.
                var places: [(id: Int, path: String)] = []
                let pathOf = try reader.statement("SELECT path FROM directories WHERE id = ? AND available = 1 AND listing IS NOT NULL")
                for id in named.sorted() {
                    try pathOf.rows([.integer(id)]) { row in
                        let path = row.text(0) ?? ""
                        if mayFollowAfter(path) { places.append((id, path)) }
                        return false
                    }
                }
                if enough != nil { places.sort { $0.path.precedes($1.path) } }
                let select = try reader.statement("SELECT id, listing FROM directories WHERE id = ?")
                for (id, path) in places where failure == nil {
                    if let enough, enough(path) { return }
                    try select.rows([.integer(id)]) { row in
                        _ = each(row, id: id, path: path)
                        return false
                    }
                }
                return
            }
            // After a song, a directory before its own holds songs past it only when its path
            // begins the song's and a byte before "0" follows there: songs of "a" lie between
            // "a/" and "a0", so "a/t" follows "a/sub/y" and "a b/z"; nothing in "a-a" follows
            // "a-b/q". The top directory's songs have no prefix: it is read too.
            var from: [SQLValue] = [], since = ""
            if let after {
                let directory = IndexScan.parent(of: after)
                var ancestors = directory.isEmpty ? [] : [""]
                for (place, byte) in directory.utf8.enumerated() where place > 0 && byte < UInt8(ascii: "0") {
                    ancestors.append(String(decoding: directory.utf8.prefix(place), as: UTF8.self))
                }
                let select = try reader.statement("SELECT id, listing, path FROM directories WHERE path = ? AND available = 1 AND listing IS NOT NULL")
                for ancestor in ancestors where failure == nil {
                    var more = true
                    try select.rows([.text(ancestor)]) { row in
                        more = inOrder(row)
                        return false
                    }
                    guard more else { return }
                }
                from = [.text(directory)]
                since = " AND path >= ?"
            }
            guard failure == nil else { return }
            if let under, !under.isEmpty {
                // The directory and those under it: paths from "base/" up to "base0" ("0"
                // follows "/"), by the paths' index.
                try reader.statement("""
                    SELECT id, listing, path FROM directories
                    WHERE (path = ? OR (path > ? AND path < ?)) AND available = 1 AND listing IS NOT NULL\(since)\(order)
                    """).rows([.text(under), .text(under + "/"), .text(under + "0")] + from, inOrder)
            } else {
                try reader.statement("SELECT id, listing, path FROM directories WHERE available = 1 AND listing IS NOT NULL\(since)\(order)")
                    .rows(from, inOrder)
            }
        }
        if let failure { throw failure }
    }

    /// A path as the index keeps it: no leading, trailing or doubled slashes.
    static func trimmed(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }
}

extension String {
    /// Byte for byte, as SQLite compares text (`<` on `String` compares Unicode scalars' canonical forms).
    func precedes(_ other: String) -> Bool {
        var a = self, b = other
        return a.withUTF8 { x in
            b.withUTF8 { y in
                let common = min(x.count, y.count)
                let order = common == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, common)
                return order != 0 ? order < 0 : x.count < y.count
            }
        }
    }
}
