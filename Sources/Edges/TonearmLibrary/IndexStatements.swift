import TonearmControlPlane
import TonearmSQLite

/// The scanner's prepared statements, made once per connection, and the writes made of them.
final class IndexStatements {
    let allTracks: Statement
    let allFailures: Statement
    let allDirectories: Statement
    let insertDirectory: Statement
    let updateDirectory: Statement
    let deleteDirectory: Statement
    let insertFailure: Statement
    let deleteFailure: Statement
    let setTrackAvailable: Statement
    private let selectTrackID: Statement
    private let selectTrackStamp: Statement
    private let selectDirectoryID: Statement
    private let insertTrack: Statement
    private let updateTrack: Statement
    private let insertTag: Statement
    private let db: Database
    private let deleteTags: Statement
    private let selectValueID: Statement
    private let insertValue: Statement
    private let insertSearchValue: Statement
    /// Tracks were replaced or deleted: values may be left in `value_text` that no track has.
    var searchIndexNeedsSweep = false
    private let deleteTrackRow: Statement
    private let setDirectoriesAvailable: Statement
    private let setTracksAvailable: Statement

    init(_ db: Database) throws(SQLiteError) {
        allTracks = try db.prepare("SELECT id, path FROM tracks")
        selectTrackStamp = try db.prepare("SELECT id, size, modified_ns, available FROM tracks WHERE path = ?")
        allFailures = try db.prepare("SELECT path, size, modified_ns FROM failures")
        allDirectories = try db.prepare("SELECT id, path, mount, available FROM directories")
        insertDirectory = try db.prepare("INSERT INTO directories(path, parent, modified, mount) VALUES(?, ?, ?, ?)")
        updateDirectory = try db.prepare("UPDATE directories SET modified = ?, mount = ? WHERE id = ?")
        deleteDirectory = try db.prepare("DELETE FROM directories WHERE id = ?")
        insertFailure = try db.prepare("INSERT OR REPLACE INTO failures(path, size, modified_ns, reason) VALUES(?, ?, ?, ?)")
        deleteFailure = try db.prepare("DELETE FROM failures WHERE path = ?")
        setTrackAvailable = try db.prepare("UPDATE tracks SET available = ? WHERE id = ?")
        selectTrackID = try db.prepare("SELECT id FROM tracks WHERE path = ?")
        selectDirectoryID = try db.prepare("SELECT id FROM directories WHERE path = ?")
        insertTrack = try db.prepare("""
            INSERT INTO tracks(path, directory, size, modified, modified_ns, rate, bits, channels, duration,
                track_total, disc_total, rg_track_gain, rg_track_peak, rg_album_gain, rg_album_peak, has_picture)
            VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        updateTrack = try db.prepare("""
            UPDATE tracks SET path = ?, directory = ?, size = ?, modified = ?, modified_ns = ?, rate = ?, bits = ?,
                channels = ?, duration = ?, track_total = ?, disc_total = ?, rg_track_gain = ?, rg_track_peak = ?,
                rg_album_gain = ?, rg_album_peak = ?, has_picture = ?, available = 1
            WHERE id = ?
            """)
        self.db = db
        insertTag = try db.prepare("INSERT INTO tags(track, tag, seq, value, sort, own) VALUES(?, ?, ?, ?, ?, ?)")
        deleteTags = try db.prepare("DELETE FROM tags WHERE track = ?")
        selectValueID = try db.prepare("SELECT id FROM tag_values WHERE tag = ? AND value = ?")
        insertValue = try db.prepare("INSERT INTO tag_values(tag, value) VALUES(?, ?)")
        insertSearchValue = try db.prepare("INSERT INTO value_text(rowid, value) VALUES(?, ?)")
        deleteTrackRow = try db.prepare("DELETE FROM tracks WHERE id = ?")
        setDirectoriesAvailable = try db.prepare("UPDATE directories SET available = ? WHERE path = ? OR path LIKE ? ESCAPE '\\'")
        setTracksAvailable = try db.prepare("UPDATE tracks SET available = ? WHERE path LIKE ? ESCAPE '\\'")
    }

    func trackID(_ path: String) throws(SQLiteError) -> Int? {
        try selectTrackID.bind([.text(path)])
        return try selectTrackID.step() ? selectTrackID.integer(0) : nil
    }

    /// The indexed track at `path`: its id, size, modification time and availability.
    func trackStamp(_ path: String) throws(SQLiteError) -> (id: Int, size: Int, modifiedNanoseconds: Int, available: Bool)? {
        try selectTrackStamp.bind([.text(path)])
        guard try selectTrackStamp.step() else { return nil }
        return (selectTrackStamp.integer(0), selectTrackStamp.integer(1), selectTrackStamp.integer(2), selectTrackStamp.integer(3) != 0)
    }

    func directoryID(_ path: String) throws(SQLiteError) -> Int? {
        try selectDirectoryID.bind([.text(path)])
        return try selectDirectoryID.step() ? selectDirectoryID.integer(0) : nil
    }

    /// Adds a track with its tags, or replaces the track `replacing`; returns its id. New
    /// values of the searched tags go into `value_text` unless `searchIndex` is false (a scan
    /// into an empty library, which fills it at the end).
    @discardableResult
    func store(_ track: IndexedTrack, directory: Int, replacing: Int?, searchIndex: Bool = true) throws(SQLiteError) -> Int {
        func optional(_ x: Int?) -> SQLValue { x.map { .integer($0) } ?? .null }
        func optional(_ x: Double?) -> SQLValue { x.map { .real($0) } ?? .null }
        var values: [SQLValue] = [
            .text(track.path), .integer(directory), .integer(track.size), .integer(track.modified),
            .integer(track.modifiedNanoseconds), .integer(track.sampleRate), .integer(track.bitsPerSample),
            .integer(track.channels), optional(track.duration), optional(track.trackTotal), optional(track.discTotal),
            optional(track.replayGain.trackGain), optional(track.replayGain.trackPeak),
            optional(track.replayGain.albumGain), optional(track.replayGain.albumPeak), .integer(track.hasPicture ? 1 : 0),
        ]
        let id: Int
        if let replacing {
            id = replacing
            values.append(.integer(id))
            try updateTrack.bind(values)
            while try updateTrack.step() {}
            try deleteTags.run(.integer(id))
            searchIndexNeedsSweep = true
        } else {
            do {
                try insertTrack.bind(values)
                while try insertTrack.step() {}
            } catch where error.isConstraint {
                // The walk did not know the track, but the index has it: replace it.
                guard let existing = try trackID(track.path) else { throw error }
                return try store(track, directory: directory, replacing: existing, searchIndex: searchIndex)
            }
            id = db.lastInsertRowID
        }
        for (seq, row) in track.tagRows.enumerated() {
            let value = try valueID(row.tag, row.value, searchIndex: searchIndex)
            try insertTag.run(.integer(id), .integer(row.tag.index), .integer(seq), .integer(value),
                              row.sort == row.value ? .null : .text(row.sort), .integer(row.own ? 1 : 0))
        }
        return id
    }

    /// The id of `value` of `tag` in `tag_values`, added when new (and, for a searched tag, to
    /// `value_text` unless `searchIndex` is false).
    private func valueID(_ tag: Tag, _ value: String, searchIndex: Bool) throws(SQLiteError) -> Int {
        var found: Int?
        try selectValueID.rows([.integer(tag.index), .text(value)]) { row in
            found = row.integer(0)
            return false
        }
        if let found { return found }
        try insertValue.run(.integer(tag.index), .text(value))
        let id = db.lastInsertRowID
        if searchIndex && IndexDatabase.searchedTags.contains(tag) { try insertSearchValue.run(.integer(id), .text(value)) }
        return id
    }

    func deleteTrack(_ id: Int) throws(SQLiteError) {
        try deleteTags.run(.integer(id))
        searchIndexNeedsSweep = true
        try deleteTrackRow.run(.integer(id))
    }

    /// Marks a directory and everything under it (un)available.
    func setSubtreeAvailable(_ path: String, _ available: Bool) throws(SQLiteError) {
        let flag = SQLValue.integer(available ? 1 : 0)
        let pattern = path.isEmpty ? "%" : likeEscaped(path) + "/%"
        try setDirectoriesAvailable.run(flag, .text(path), .text(pattern))
        try setTracksAvailable.run(flag, .text(pattern))
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

/// `text` with LIKE's wildcards (and the escape) escaped by `\`.
func likeEscaped(_ text: String) -> String {
    var out = ""
    for c in text {
        if c == "%" || c == "_" || c == "\\" { out.append("\\") }
        out.append(c)
    }
    return out
}
