import TonearmControlPlane
import TonearmSQLite

/// The index's way from a tag value to the songs that have it: for each tag, one row of
/// `tag_index` holding every distinct value of that tag in the library, each with the value
/// that sorts it and the directories (ids) whose records hold a song with that value — and of
/// those, the ones where every song has it (an album's directory: its Album, AlbumArtist,
/// Date, most often).
///
/// A query asks the tags' rows which directories to read and matches the songs of their
/// records (`SongMatcher`); a list of a tag's values reads the tag's row alone, and a list
/// grouped by other tags, or a count by one, reads only the records of directories whose
/// songs do not all share their values. Values are kept per directory, not per song, so that
/// a change to a directory changes the rows of the values it gained and lost (`Changes`),
/// found from its record before and after.
///
/// A row's bytes, before compression (`Deflate`): a format byte, the number of values, then
/// each value in sort order (by its sort, then itself, byte by byte): the value, its sort
/// (empty when the value sorts itself), the number of directories and their ids ascending,
/// each as its difference from the one before, doubled, plus one where every song has the
/// value. A string is its UTF-8 length, then its bytes.
enum TagIndex {
    static let format: UInt8 = 1

    /// A value of one tag with what sorts it: a value sorted two ways (two files with
    /// different ArtistSort for one Artist) is two keys.
    struct Key: Hashable {
        var value: String
        var sort: String
    }

    struct Entry: Equatable {
        var key: Key
        /// Ascending.
        var directories: [Int]
        /// Those of `directories` where every song has the value.
        var everySong: Set<Int> = []
    }

    /// Sort order: by sort, then value, byte by byte (as SQLite compares text).
    static func precedes(_ a: Key, _ b: Key) -> Bool {
        if a.sort != b.sort { return a.sort.precedes(b.sort) }
        return a.value.precedes(b.value)
    }

    static func block(_ entries: [Entry]) -> [UInt8] {
        var out: [UInt8] = [format]
        ListingRecord.appendVarint(entries.count, to: &out)
        for entry in entries {
            ListingRecord.append(entry.key.value, to: &out)
            ListingRecord.append(entry.key.sort == entry.key.value ? "" : entry.key.sort, to: &out)
            ListingRecord.appendVarint(entry.directories.count, to: &out)
            var last = 0
            for directory in entry.directories {
                ListingRecord.appendVarint((directory - last) << 1 | (entry.everySong.contains(directory) ? 1 : 0), to: &out)
                last = directory
            }
        }
        return Deflate.compressed(out)
    }

    /// The entries of a row, in its order; nil when `block` is not a whole row of this format.
    static func entries(_ block: UnsafeRawBufferPointer) -> [Entry]? {
        guard let bytes = Deflate.expanded(block) else { return nil }
        return bytes.withUnsafeBytes { raw -> [Entry]? in
            var reader = ListingRecord.Reader(raw)
            guard reader.byte() == format, let count = reader.varint(), count >= 0, count <= raw.count else { return nil }
            var entries: [Entry] = []
            entries.reserveCapacity(count)
            for _ in 0..<count {
                guard let value = reader.string(), let sort = reader.string(), let n = reader.varint(),
                      n >= 0, n <= raw.count else { return nil }
                var entry = Entry(key: Key(value: value, sort: sort.isEmpty ? value : sort), directories: [])
                entry.directories.reserveCapacity(n)
                var last = 0
                for _ in 0..<n {
                    guard let posting = reader.varint(), posting >= 0 else { return nil }
                    let step = posting >> 1
                    guard step > 0 || (step == 0 && entry.directories.isEmpty) else { return nil }
                    last += step
                    entry.directories.append(last)
                    if posting & 1 == 1 { entry.everySong.insert(last) }
                }
                entries.append(entry)
            }
            return reader.atEnd ? entries : nil
        }
    }

    /// Each entry of an expanded row, in place: `wanted` gets the entry's value and says
    /// whether its directories are wanted, which go to `directory` one by one. False when the
    /// row is not whole.
    static func forEachEntry(
        _ raw: UnsafeRawBufferPointer, wanted: (UnsafeRawBufferPointer) throws(CommandFailure) -> Bool, directory: (Int) -> Void
    ) throws(CommandFailure) -> Bool {
        var reader = ListingRecord.Reader(raw)
        guard reader.byte() == format, let count = reader.varint(), count >= 0, count <= raw.count else { return false }
        for _ in 0..<count {
            guard let value = reader.text(), reader.text() != nil, let n = reader.varint(), n >= 0, n <= raw.count else { return false }
            let taken = try wanted(value)
            var last = 0
            for _ in 0..<n {
                guard let posting = reader.varint(), posting >= 0 else { return false }
                last += posting >> 1
                if taken { directory(last) }
            }
        }
        return reader.atEnd
    }

    /// Every key a directory's songs give each tag, with whether every song has it.
    static func keys(of songs: [LibrarySong]) -> [Tag: [Key: Bool]] {
        var counts: [Tag: [Key: Int]] = [:]
        struct Seen: Hashable {
            var tag: Tag
            var key: Key
        }
        for song in songs {
            var seen = Set<Seen>()
            let numbered = song.tags.map { (tag: $0.tag.index, value: $0.value) }
            var tags = Set(song.tags.map(\.tag))
            tags.insert(.albumArtist)
            for tag in tags {
                tag.forEachValue(in: numbered) { value, sort in
                    let key: Key
                    if hashedTags.contains(tag) {
                        let hash = hashed(value)
                        key = Key(value: hash, sort: hash)
                    } else {
                        key = Key(value: value, sort: sort ?? value)
                    }
                    // A value twice in one song counts once: one song.
                    if seen.insert(Seen(tag: tag, key: key)).inserted {
                        counts[tag, default: [:]][key, default: 0] += 1
                    }
                    return true
                }
            }
        }
        return counts.mapValues { $0.mapValues { $0 == songs.count } }
    }

    /// Tags whose every value names one song (MusicBrainz's recording and release-track ids):
    /// their rows keep a hash of each value instead of its text. Those ids were three quarters
    /// of the index (18,750 of them, 444 KB, for 20,000 tracks); their hashes take a fifth of
    /// that. A find of one id reads the directories its hash names and compares the songs
    /// there; any other comparison, and a list of the values, reads every record.
    static let hashedTags: Set<Tag> = [.musicBrainzTrackID, .musicBrainzReleaseTrackID]

    /// A value's key in a hashed tag's row: 64-bit FNV-1a of its UTF-8, its high 32 bits in
    /// hexadecimal (the same in every process and release, unlike Swift's `Hasher`).
    static func hashed(_ value: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in value.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        let text = String(hash >> 32, radix: 16)
        return String(repeating: "0", count: 8 - text.count) + text
    }

    // MARK: The table

    /// The entries of `tag`'s row (none when it has no row). A row that cannot be read fails
    /// as a corrupt database does.
    static func read(_ tag: Tag, _ select: Statement, database: String) throws(SQLiteError) -> [Entry] {
        var entries: [Entry]? = []
        try select.rows([.integer(tag.index)]) { row in
            entries = row.withBlob(0, Self.entries)
            return false
        }
        guard let entries else {
            throw SQLiteError(database: database, statement: nil, code: 11, message: "the tag index of \(tag.rawValue) is damaged")
        }
        return entries
    }

    static let selectSQL = "SELECT block FROM tag_index WHERE tag = ?"

    /// Directories whose values changed in one transaction of a scan, to be written to the
    /// tags' rows before it commits.
    struct Changes {
        /// By directory, its keys as the rows have them and as they are to be.
        private var directories: [Int: (before: [Tag: [Key: Bool]], after: [Tag: [Key: Bool]])] = [:]

        var isEmpty: Bool { directories.isEmpty }

        /// Directory `id` had the songs that gave `before` and now gives `after` (when it
        /// changed before in these changes, `before` is what it had first).
        mutating func replace(directory id: Int, before: [Tag: [Key: Bool]], after: [Tag: [Key: Bool]]) {
            directories[id] = (directories[id]?.before ?? before, after)
        }

        /// Writes the changed rows (inside the caller's transaction) and empties the changes.
        mutating func write(_ db: Database) throws(SQLiteError) {
            guard !isEmpty else { return }
            // By tag, by key: the directories it leaves, and those it is in now (with whether
            // every song there has it).
            var lost: [Tag: [Key: Set<Int>]] = [:]
            var gained: [Tag: [Key: [Int: Bool]]] = [:]
            for (id, change) in directories {
                for (tag, keys) in change.before {
                    for (key, _) in keys where change.after[tag]?[key] == nil { lost[tag, default: [:]][key, default: []].insert(id) }
                }
                for (tag, keys) in change.after {
                    for (key, every) in keys where change.before[tag]?[key] != every { gained[tag, default: [:]][key, default: [:]][id] = every }
                }
            }
            let select = try db.prepare(TagIndex.selectSQL)
            for tag in Set(lost.keys).union(gained.keys) {
                var map = try TagIndex.map(TagIndex.read(tag, select, database: db.path))
                for (key, ids) in lost[tag] ?? [:] {
                    for id in ids { map[key]?[id] = nil }
                    if map[key]?.isEmpty == true { map[key] = nil }
                }
                for (key, ids) in gained[tag] ?? [:] { map[key, default: [:]].merge(ids) { $1 } }
                try TagIndex.store(tag, map, db)
            }
            directories = [:]
        }
    }

    /// A row's entries by key: each key's directories, with whether every song there has it.
    static func map(_ entries: [Entry]) -> [Key: [Int: Bool]] {
        var map: [Key: [Int: Bool]] = [:]
        for entry in entries {
            map[entry.key] = Dictionary(uniqueKeysWithValues: entry.directories.map { ($0, entry.everySong.contains($0)) })
        }
        return map
    }

    /// Writes `tag`'s row from its keys and their directories (deletes it when there are none).
    static func store(_ tag: Tag, _ map: [Key: [Int: Bool]], _ db: Database) throws(SQLiteError) {
        try store(tag, map.map { key, ids in
            Entry(key: key, directories: ids.keys.sorted(), everySong: Set(ids.filter(\.value).keys))
        }, db)
    }

    static func store(_ tag: Tag, _ entries: [Entry], _ db: Database) throws(SQLiteError) {
        guard !entries.isEmpty else {
            try db.prepare("DELETE FROM tag_index WHERE tag = ?").run(.integer(tag.index))
            return
        }
        let sorted = entries.sorted { precedes($0.key, $1.key) }
        try db.prepare("INSERT OR REPLACE INTO tag_index(tag, block) VALUES(?, ?)").run(.integer(tag.index), .blob(block(sorted)))
    }

    /// Makes every tag's row again from the directories' records (after a scan into an empty
    /// library, or one cut short before that). Inside the caller's transaction. Each key's
    /// directories are gathered as one array of ids (doubled, plus one where every song has
    /// it), in the order of the ids: the daemon's memory at the end of a first scan is a few
    /// MB for 20,000 songs, not a dictionary per value.
    static func rebuild(_ db: Database) throws(SQLiteError) {
        var maps: [Tag: [Key: [Int]]] = [:]
        let inflater = Deflate.Inflater()
        try db.prepare("SELECT id, listing FROM directories WHERE listing IS NOT NULL ORDER BY id").rows([]) { row in
            let id = row.integer(0)
            guard let songs = row.withBlob(1, { ListingRecord.songs($0, inflater) }) else { return true }
            for (tag, keys) in keys(of: songs) {
                for (key, every) in keys { maps[tag, default: [:]][key, default: []].append(id << 1 | (every ? 1 : 0)) }
            }
            return true
        }
        try db.execute("DELETE FROM tag_index")
        for tag in Array(maps.keys) {
            guard let map = maps.removeValue(forKey: tag) else { continue }
            try store(tag, map.map { key, postings in
                Entry(key: key, directories: postings.map { $0 >> 1 }, everySong: Set(postings.lazy.filter { $0 & 1 == 1 }.map { $0 >> 1 }))
            }, db)
        }
        try db.execute("DELETE FROM meta WHERE key = '\(pendingKey)'")
    }

    /// In `meta` while a scan into an empty library has not made the rows yet.
    static let pendingKey = "tag_index_pending"
}
