import TonearmAudio
import TonearmControlPlane
import TonearmSQLite

#if canImport(Glibc)
import Glibc
#endif

/// The library's database: its schema, and how it is opened — a file that is not a database of
/// ours (corrupt, foreign, or of another schema) is set aside and a new one begun.
///
/// One row per directory, holding its songs as one record (`ListingRecord`) with their number
/// and play time; one row per tag holding its distinct values and the directories that have
/// each (`TagIndex`); `failures` remembers files that could not be read, so a rescan reads them
/// again only once they change. (Stored playlists are read from their files,
/// `PlaylistDirectory`.) Schema 5 kept a row per track and per tag value of a track, with a
/// search index over the values: 15 MB for 20,000 tracks, where this takes 2.
enum IndexDatabase {
    static let schemaVersion = 6

    static let schema = """
        CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS directories(
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            parent INTEGER,
            modified INTEGER NOT NULL DEFAULT 0,
            mount INTEGER NOT NULL DEFAULT 0,
            available INTEGER NOT NULL DEFAULT 1,
            listing BLOB,
            songs INTEGER NOT NULL DEFAULT 0,
            play_time REAL NOT NULL DEFAULT 0);
        CREATE INDEX IF NOT EXISTS directories_parent ON directories(parent);
        CREATE TABLE IF NOT EXISTS tag_index(tag INTEGER PRIMARY KEY, block BLOB NOT NULL);
        CREATE TABLE IF NOT EXISTS failures(
            path TEXT PRIMARY KEY, size INTEGER NOT NULL, modified_ns INTEGER NOT NULL, reason TEXT NOT NULL);
        """

    /// Schema 5 into 6: each directory's record made again from the tracks' rows (with their
    /// times to the nanosecond, which a rescan compares), the tag index made from the records,
    /// and the rows per track dropped. Inside the caller's transaction.
    static func migrateFromSchema5(_ db: Database) throws(SQLiteError) {
        try db.execute("""
            DROP TRIGGER IF EXISTS tracks_added; DROP TRIGGER IF EXISTS tracks_changed; DROP TRIGGER IF EXISTS tracks_removed;
            DROP INDEX IF EXISTS directories_unlisted;
            ALTER TABLE directories ADD COLUMN songs INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE directories ADD COLUMN play_time REAL NOT NULL DEFAULT 0;
            """)
        let select = try db.prepare("""
            SELECT t.path, t.duration, t.rate, t.bits, t.channels, t.size, t.modified_ns, t.has_picture,
                t.rg_track_gain, t.rg_track_peak, t.rg_album_gain, t.rg_album_peak,
                (SELECT group_concat(g.seq || char(31) || g.tag || char(31) || v.value, char(30))
                 FROM tags g JOIN tag_values v ON v.id = g.value WHERE g.track = t.id AND g.own = 1)
            FROM tracks t WHERE t.directory = ? ORDER BY t.path
            """)
        let update = try db.prepare("UPDATE directories SET listing = ?, songs = ?, play_time = ? WHERE id = ?")
        var ids: [Int] = []
        try db.prepare("SELECT id FROM directories").rows([]) { row in
            ids.append(row.integer(0))
            return true
        }
        for id in ids {
            var entries: [ListingRecord.Entry] = []
            try select.rows([.integer(id)]) { row in
                // "seq␟tag␟value␞…", put in the file's order (`seq`).
                var numbered: [(seq: Int, tag: Tag, value: String)] = []
                for field in (row.text(12) ?? "").utf8.split(separator: 0x1E) {
                    let parts = field.split(separator: 0x1F, maxSplits: 2, omittingEmptySubsequences: false)
                    guard parts.count == 3, let seq = Int(String(decoding: parts[0], as: UTF8.self)),
                          let index = Int(String(decoding: parts[1], as: UTF8.self)), let tag = Tag(index: index) else { continue }
                    numbered.append((seq, tag, String(decoding: parts[2], as: UTF8.self)))
                }
                let tags = numbered.sorted { $0.seq < $1.seq }.map { (tag: $0.tag, value: $0.value) }
                let nanoseconds = row.integer(6)
                let song = LibrarySong(
                    path: row.text(0) ?? "", tags: tags, duration: row.optionalReal(1), sampleRate: row.integer(2),
                    bitsPerSample: row.integer(3), channels: row.integer(4), size: row.integer(5),
                    modified: ListingRecord.seconds(nanoseconds), hasPicture: row.integer(7) != 0,
                    replayGain: ReplayGain(trackGain: row.optionalReal(8), trackPeak: row.optionalReal(9),
                                           albumGain: row.optionalReal(10), albumPeak: row.optionalReal(11)))
                entries.append(ListingRecord.Entry(song: song, modifiedNanoseconds: nanoseconds))
                return true
            }
            try update.run(.blob(ListingRecord.record(entries)), .integer(entries.count),
                           .real(entries.reduce(0) { $0 + ($1.song.duration ?? 0) }), .integer(id))
        }
        try db.execute("""
            DROP TABLE IF EXISTS value_text; DROP VIEW IF EXISTS searched_values;
            DROP TABLE IF EXISTS tags; DROP TABLE IF EXISTS tag_values; DROP TABLE IF EXISTS tracks;
            DROP TABLE IF EXISTS playlists;
            DELETE FROM meta WHERE key = 'value_text_pending';
            \(schema)
            """)
        try TagIndex.rebuild(db)
    }

    /// Opens the database at `path` with the schema in place. A file that cannot be used is
    /// renamed to `path.broken-<time>` (with its -wal and -shm) and a new database begun;
    /// `setAside` says which file, and why.
    static func open(_ path: String, setAside: (String, String) -> Void) throws(SQLiteError) -> Database {
        do {
            return try openChecked(path)
        } catch where error.isCorrupt || error.code == foreignSchemaCode {
            let aside = "\(path).broken-\(time(nil))"
            for suffix in ["", "-wal", "-shm"] { rename(path + suffix, aside + suffix) }
            setAside(aside, error.description)
            return try openChecked(path)
        }
    }

    /// The scanner's page cache: less makes the indexes' pages go out and come back during a
    /// full scan (1 MB doubles its time); the queries' connection does with a quarter.
    static let cacheKilobytes = 2048

    /// The writer copies the log into the database once it holds this many pages (40 MB), not
    /// SQLite's 1,000: a full scan rewrites the same index pages batch after batch, and each
    /// copy costs a read and a write of every page. The log is cut back to 8 MB after a copy.
    static let checkpointPages = 10_000
    static let logLimitBytes = 8 << 20

    /// Another connection to a database `open` made ready: for the queries, or (`small`) for
    /// a scan's walk, which only looks up what a directory had.
    static func reader(_ path: String, small: Bool = false) throws(SQLiteError) -> Database {
        let db = try Database(path: path)
        try db.execute("PRAGMA cache_size=-\(small ? 128 : cacheKilobytes / 4)")
        return db
    }

    /// A database of another schema version or another program.
    static let foreignSchemaCode: Int32 = -1

    private static func openChecked(_ path: String) throws(SQLiteError) -> Database {
        let db = try Database(path: path)
        // A check that reads the header and schema: fails on a file that is not a database.
        _ = try db.integer("PRAGMA schema_version")
        try db.execute("""
            PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-\(cacheKilobytes);
            PRAGMA wal_autocheckpoint=\(checkpointPages)
            """)
        let version = try db.integer("PRAGMA user_version") ?? 0
        let tables = try db.integer("SELECT count(*) FROM sqlite_master") ?? 0
        if version == 0 && tables == 0 {
            try db.transaction { () throws(SQLiteError) in
                try db.execute(schema)
                try db.execute("PRAGMA user_version=\(schemaVersion)")
            }
        } else if version == 5 {
            try db.transaction { () throws(SQLiteError) in
                try migrateFromSchema5(db)
                try db.execute("PRAGMA user_version=\(schemaVersion)")
            }
            // The pages the dropped tables held go back to the file system (the copy VACUUM
            // makes goes through the log: copied in and the log cut, or the card holds both).
            try db.execute("VACUUM")
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        } else if version != schemaVersion {
            // Schemas 1 to 4 (before this one's first release) and other programs' files.
            throw SQLiteError(database: path, statement: nil, code: foreignSchemaCode,
                              message: "not a Tonearm library of schema \(schemaVersion) (user_version \(version), \(tables) tables)")
        }
        // What a scan into an empty library cut short left to its end.
        if try db.integer("SELECT count(*) FROM meta WHERE key = '\(TagIndex.pendingKey)'") == 1 {
            try db.transaction { () throws(SQLiteError) in try TagIndex.rebuild(db) }
        }
        return db
    }
}
