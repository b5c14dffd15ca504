import TonearmControlPlane
import TonearmSQLite

/// The scanner's prepared statements, made once per connection, and the writes made of them.
final class IndexStatements {
    let allFailures: Statement
    let allDirectories: Statement
    let insertDirectory: Statement
    let updateDirectory: Statement
    let insertFailure: Statement
    let deleteFailure: Statement
    private let db: Database
    private let selectDirectoryID: Statement
    private let selectRecord: Statement
    private let updateRecord: Statement
    private let deleteDirectoryRow: Statement
    private let setDirectoriesAvailable: Statement
    private let setAllAvailable: Statement

    init(_ db: Database) throws(SQLiteError) {
        self.db = db
        allFailures = try db.prepare("SELECT path, size, modified_ns FROM failures")
        allDirectories = try db.prepare("SELECT id, path, mount, available FROM directories")
        insertDirectory = try db.prepare("INSERT INTO directories(path, parent, modified, mount) VALUES(?, ?, ?, ?)")
        updateDirectory = try db.prepare("UPDATE directories SET modified = ?, mount = ? WHERE id = ?")
        insertFailure = try db.prepare("INSERT OR REPLACE INTO failures(path, size, modified_ns, reason) VALUES(?, ?, ?, ?)")
        deleteFailure = try db.prepare("DELETE FROM failures WHERE path = ?")
        selectDirectoryID = try db.prepare("SELECT id FROM directories WHERE path = ?")
        selectRecord = try db.prepare(Self.recordSQL)
        updateRecord = try db.prepare("UPDATE directories SET listing = ?, songs = ?, play_time = ? WHERE id = ?")
        deleteDirectoryRow = try db.prepare("DELETE FROM directories WHERE id = ?")
        // Byte order, as the column compares: what lies under `dir` sorts from "dir/" up to,
        // not including, "dir0" ("0" is the byte after "/"), whatever the case of its letters.
        setDirectoriesAvailable = try db.prepare("UPDATE directories SET available = ? WHERE path = ? OR (path >= ? AND path < ?)")
        setAllAvailable = try db.prepare("UPDATE directories SET available = ?")
    }

    /// A directory's record: its songs (none when it has no record yet, or one that cannot be read).
    static let recordSQL = "SELECT listing FROM directories WHERE id = ? AND listing IS NOT NULL"

    static func entries(ofDirectory id: Int, _ select: Statement) throws(SQLiteError) -> [ListingRecord.Entry] {
        var entries: [ListingRecord.Entry] = []
        try select.rows([.integer(id)]) { row in
            entries = row.withBlob(0) { ListingRecord.entries($0) } ?? []
            return false
        }
        return entries
    }

    func entries(ofDirectory id: Int) throws(SQLiteError) -> [ListingRecord.Entry] {
        try Self.entries(ofDirectory: id, selectRecord)
    }

    func directoryID(_ path: String) throws(SQLiteError) -> Int? {
        // Read with `rows`, which resets the statement: one left stepped holds its snapshot
        // (the next write fails as busy) and keeps a checkpoint from cutting the log.
        var id: Int?
        try selectDirectoryID.rows([.text(path)]) { row in
            id = row.integer(0)
            return false
        }
        return id
    }

    /// Makes `entries` (in path order, byte by byte) directory `id`'s record.
    func writeRecord(_ id: Int, _ entries: [ListingRecord.Entry]) throws(SQLiteError) {
        let sorted = entries.sorted { $0.song.path.precedes($1.song.path) }
        try updateRecord.run(.blob(ListingRecord.record(sorted)), .integer(sorted.count),
                             .real(sorted.reduce(0) { $0 + ($1.song.duration ?? 0) }), .integer(id))
    }

    func deleteDirectory(_ id: Int) throws(SQLiteError) {
        try deleteDirectoryRow.run(.integer(id))
    }

    /// Marks a directory and everything under it (un)available.
    func setSubtreeAvailable(_ path: String, _ available: Bool) throws(SQLiteError) {
        if path.isEmpty { return try setAllAvailable.run(.integer(available ? 1 : 0)) }
        try setDirectoriesAvailable.run(.integer(available ? 1 : 0), .text(path), .text(path + "/"), .text(path + "0"))
    }
}

extension Tag {
    /// The tag's number in the database: its place in `Tag.allCases`. Append new tags at the
    /// end of the enum, or bump the schema.
    var index: Int { Tag.indexes[self]! }

    init?(index: Int) {
        guard Tag.ordered.indices.contains(index) else { return nil }
        self = Tag.ordered[index]
    }

    /// `allCases`, made once.
    static let ordered = Array(Tag.allCases)
    private static let indexes = Dictionary(uniqueKeysWithValues: ordered.enumerated().map { ($1, $0) })
}
