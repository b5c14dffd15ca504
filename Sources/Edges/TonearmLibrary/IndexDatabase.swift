import TonearmControlPlane
import TonearmSQLite

#if canImport(Glibc)
import Glibc
#endif

/// The library's database: its schema, and how it is opened — a file that is not a database of
/// ours (corrupt, foreign, or of another schema) is set aside and a new one begun.
///
/// One row per directory and per track. Each distinct tag value is stored once, in
/// `tag_values` (an album's name once, not once per track); every tag value of a track is a row
/// of `tags` naming it by id, numbered in the file's order by `seq` (a tag may have several
/// values), with the value that sorts it when that is another (`sort`). `value_text` is the FTS5
/// trigram index that substring search uses for the tags people type (artist, album, title…),
/// over their rows of `tag_values` (external content, `searched_values`: the text is not stored
/// twice); `directories.listing` holds each directory's songs as one record (`ListingRecord`),
/// which a listing reads instead of the tables; `failures`
/// remembers files that could not be read, so a rescan reads them again only once they change.
/// (Stored playlists are read from their files, `PlaylistDirectory`; the table that once copied
/// them is dropped.)
enum IndexDatabase {
    static let schemaVersion = 5

    static let schema = """
        CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS directories(
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            parent INTEGER,
            modified INTEGER NOT NULL DEFAULT 0,
            mount INTEGER NOT NULL DEFAULT 0,
            available INTEGER NOT NULL DEFAULT 1,
            listing BLOB);
        CREATE INDEX IF NOT EXISTS directories_parent ON directories(parent);
        CREATE TABLE IF NOT EXISTS tracks(
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            directory INTEGER NOT NULL,
            size INTEGER NOT NULL,
            modified INTEGER NOT NULL,
            modified_ns INTEGER NOT NULL,
            rate INTEGER NOT NULL,
            bits INTEGER NOT NULL,
            channels INTEGER NOT NULL,
            duration REAL,
            track_total INTEGER,
            disc_total INTEGER,
            rg_track_gain REAL, rg_track_peak REAL, rg_album_gain REAL, rg_album_peak REAL,
            has_picture INTEGER NOT NULL,
            available INTEGER NOT NULL DEFAULT 1);
        CREATE INDEX IF NOT EXISTS tracks_directory ON tracks(directory);
        \(unavailableIndex);
        \(listingTriggers)
        \(tagTables)
        CREATE TABLE IF NOT EXISTS failures(
            path TEXT PRIMARY KEY, size INTEGER NOT NULL, modified_ns INTEGER NOT NULL, reason TEXT NOT NULL);
        DROP TABLE IF EXISTS playlists;
        """

    /// A directory's record of its songs (`ListingRecord`) is emptied when a track enters it,
    /// changes or leaves it, and made again before the writer commits; the index finds the
    /// directories whose record is to be made.
    static let listingTriggers = """
        CREATE INDEX IF NOT EXISTS directories_unlisted ON directories(id) WHERE listing IS NULL;
        CREATE TRIGGER IF NOT EXISTS tracks_added AFTER INSERT ON tracks BEGIN
            UPDATE directories SET listing = NULL WHERE id = NEW.directory AND listing IS NOT NULL; END;
        CREATE TRIGGER IF NOT EXISTS tracks_changed AFTER UPDATE ON tracks BEGIN
            UPDATE directories SET listing = NULL WHERE id IN (OLD.directory, NEW.directory) AND listing IS NOT NULL; END;
        CREATE TRIGGER IF NOT EXISTS tracks_removed AFTER DELETE ON tracks BEGIN
            UPDATE directories SET listing = NULL WHERE id = OLD.directory AND listing IS NOT NULL; END;
        """

    /// The tracks on a medium that is not mounted, usually none: a list of values checks its
    /// tracks against this (`open` makes it in a database made without it).
    static let unavailableIndex = "CREATE INDEX IF NOT EXISTS tracks_unavailable ON tracks(id) WHERE available = 0"

    /// The tag values and the search index over them (schema 4).
    static let tagTables = """
        CREATE TABLE IF NOT EXISTS tag_values(id INTEGER PRIMARY KEY, tag INTEGER NOT NULL, value TEXT NOT NULL);
        CREATE UNIQUE INDEX IF NOT EXISTS tag_values_key ON tag_values(tag, value);
        CREATE TABLE IF NOT EXISTS tags(
            track INTEGER NOT NULL,
            tag INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            value INTEGER NOT NULL,
            sort TEXT,
            own INTEGER NOT NULL,
            PRIMARY KEY(track, tag, seq)) WITHOUT ROWID;
        CREATE VIEW IF NOT EXISTS searched_values AS SELECT id, value FROM tag_values WHERE tag IN (\(searchedList));
        CREATE VIRTUAL TABLE IF NOT EXISTS value_text USING fts5(
            value, content = 'searched_values', content_rowid = 'id', columnsize = 0, tokenize = 'trigram');
        """

    /// The index that finds tracks by tag value, with the value's sort beside it so that a
    /// list of values reads nothing else. A scan into an empty library drops it and makes it
    /// again at the end (one sort instead of 200,000 inserts in random places); `open` makes
    /// it when a scan was stopped before.
    static let valueIndex = "CREATE INDEX IF NOT EXISTS tags_value ON tags(value, sort)"

    /// The tags people type a few letters of, whose values `value_text` indexes. Other tags
    /// are searched without it (LIKE over their values).
    static let searchedTags: Set<Tag> = [.artist, .album, .albumArtist, .title, .composer, .performer]

    private static var searchedList: String { searchedTags.map { String($0.index) }.sorted().joined(separator: ", ") }

    /// Fills `value_text` from `tag_values` at once: after a scan into an empty library, which
    /// leaves it for the end (`pendingSearchKey` says so until then, in case the scan is cut).
    static func fillSearchIndex(_ db: Database) throws(SQLiteError) {
        try db.transaction { () throws(SQLiteError) in
            try db.execute("""
                INSERT INTO value_text(value_text) VALUES('delete-all');
                INSERT INTO value_text(rowid, value) SELECT id, value FROM searched_values;
                DELETE FROM meta WHERE key = '\(pendingSearchKey)'
                """)
        }
    }

    static let pendingSearchKey = "value_text_pending"

    /// Takes out of `tag_values`, and of `value_text`, the values no track has any more.
    static func sweepSearchIndex(_ db: Database) throws(SQLiteError) {
        // In one transaction: `value_text` must lose exactly what `tag_values` loses.
        try db.transaction { () throws(SQLiteError) in
            try db.execute("""
                CREATE TEMP TABLE IF NOT EXISTS unused_values(id INTEGER PRIMARY KEY, tag INTEGER, value TEXT);
                DELETE FROM temp.unused_values;
                INSERT INTO temp.unused_values SELECT id, tag, value FROM tag_values v WHERE NOT EXISTS (SELECT 1 FROM tags WHERE value = v.id);
                INSERT INTO value_text(value_text, rowid, value) SELECT 'delete', id, value FROM temp.unused_values WHERE tag IN (\(searchedList));
                DELETE FROM tag_values WHERE id IN (SELECT id FROM temp.unused_values);
                DELETE FROM temp.unused_values
                """)
        }
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
        } else if (1..<schemaVersion).contains(version) {
            try db.transaction { () throws(SQLiteError) in
                if version == 1 {
                    // Schema 1 indexed every track's text; 2 indexes each distinct value once.
                    try db.execute("DROP TABLE IF EXISTS track_text")
                }
                if version <= 2 {
                    // Schema 3 keeps Track and Disc without their totals ("3/12" → "3").
                    try db.execute("""
                        UPDATE tags SET value = replace(substr(value, 1, instr(value, '/') - 1), ' ', ''), sort = NULL
                        WHERE tag IN (\(Tag.track.index), \(Tag.disc.index)) AND instr(value, '/') > 0
                        """)
                    try db.execute("DELETE FROM tags WHERE tag IN (\(Tag.track.index), \(Tag.disc.index)) AND value = ''")
                }
                if version == 4 {
                    // Schema 5 keeps each directory's songs as one record, made below.
                    try db.execute("ALTER TABLE directories ADD COLUMN listing BLOB; \(schema); PRAGMA user_version=\(schemaVersion)")
                    return
                }
                // Schema 4 keeps each distinct value once, in `tag_values`; the search index is
                // made again over it.
                try db.execute("""
                    DROP TABLE IF EXISTS value_text;
                    DROP INDEX IF EXISTS tags_value;
                    ALTER TABLE tags RENAME TO tags_3;
                    \(tagTables)
                    INSERT INTO tag_values(tag, value) SELECT DISTINCT tag, value FROM tags_3;
                    INSERT INTO tags(track, tag, seq, value, sort, own)
                        SELECT t.track, t.tag, t.seq, v.id, t.sort, t.own FROM tags_3 t JOIN tag_values v ON v.tag = t.tag AND v.value = t.value;
                    DROP TABLE tags_3;
                    ALTER TABLE directories ADD COLUMN listing BLOB;
                    \(schema)
                    INSERT OR REPLACE INTO meta(key, value) VALUES('\(pendingSearchKey)', 1);
                    PRAGMA user_version=\(schemaVersion)
                    """)
            }
        } else if version != schemaVersion {
            throw SQLiteError(database: path, statement: nil, code: foreignSchemaCode,
                              message: "not a Tonearm library of schema \(schemaVersion) (user_version \(version), \(tables) tables)")
        }
        try db.execute(unavailableIndex)
        // What a scan cut short left to its end.
        try db.execute(valueIndex)
        if try db.integer("SELECT count(*) FROM meta WHERE key = '\(pendingSearchKey)'") == 1 { try fillSearchIndex(db) }
        try db.transaction { () throws(SQLiteError) in try ListingRecord.makePending(db) }
        return db
    }
}
