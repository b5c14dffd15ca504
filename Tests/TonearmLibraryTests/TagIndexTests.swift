import TonearmControlPlane
import TonearmSQLite
import XCTest
@testable import TonearmLibrary

/// The tag index's rows: every entry back as it went in, a damaged row read as none, values in
/// byte order of their sorts, and a scan's changes giving the rows a rebuild gives.
final class TagIndexTests: XCTestCase {
    private func key(_ value: String, _ sort: String? = nil) -> TagIndex.Key { TagIndex.Key(value: value, sort: sort ?? value) }

    func testEntriesComeBackAsTheyWentIn() {
        let entries = [
            TagIndex.Entry(key: key("Beatles, The"), directories: [0]),
            TagIndex.Entry(key: key("The Beatles", "Beatles, The"), directories: [1, 2, 300, 1 << 40], everySong: [2, 1 << 40]),
            TagIndex.Entry(key: key("Sigur Rós"), directories: [7]),
            TagIndex.Entry(key: key("東京事変", "Tokyo Jihen"), directories: Array(stride(from: 5, to: 50_000, by: 7)),
                           everySong: Set(stride(from: 5, to: 50_000, by: 21))),
            TagIndex.Entry(key: key("a\u{1E}b\n\0"), directories: [3]),
        ]
        for list in [[], entries, Array(entries.prefix(1))] {
            XCTAssertEqual(TagIndex.block(list).withUnsafeBytes { TagIndex.entries($0) }, list)
        }
    }

    /// Cut anywhere: none. A byte changed anywhere: none or some entries, never a crash.
    /// Directories not ascending, another format: none.
    func testADamagedRowIsReadAsNone() {
        let entries = (0..<20).map { TagIndex.Entry(key: key("Value \($0)"), directories: [$0, $0 + 3]) }
        let block = TagIndex.block(entries)
        for length in 0..<block.count {
            XCTAssertNil(Array(block[..<length]).withUnsafeBytes { TagIndex.entries($0) }, "cut at \(length)")
        }
        for at in block.indices {
            var damaged = block
            damaged[at] ^= 0x55
            _ = damaged.withUnsafeBytes { TagIndex.entries($0) }
        }
        let descending: [UInt8] = [TagIndex.format, 1, 1, 0x61, 0, 2, 10, 0]
        XCTAssertNil(Deflate.compressed(descending).withUnsafeBytes { TagIndex.entries($0) })
        let ascending: [UInt8] = [TagIndex.format, 1, 1, 0x61, 0, 2, 10, 3]
        XCTAssertEqual(Deflate.compressed(ascending).withUnsafeBytes { TagIndex.entries($0) },
                       [TagIndex.Entry(key: key("a"), directories: [5, 6], everySong: [6])])
        XCTAssertNil(Deflate.compressed([TagIndex.format + 1, 0]).withUnsafeBytes { TagIndex.entries($0) })
    }

    /// By sort, then value, byte by byte: upper case before lower, "Z" before "a", "é" after "z";
    /// "The Beatles" where "Beatles, The" is.
    func testValuesSortByTheirSortThenThemselvesByteByByte() {
        let keys = [key("b"), key("a"), key("Z"), key("é"), key("The Beatles", "Beatles, The"), key("Beatles, The"), key("z"), key("ab")]
        XCTAssertEqual(keys.sorted(by: TagIndex.precedes).map(\.value), ["Beatles, The", "The Beatles", "Z", "a", "ab", "b", "z", "é"])
    }

    /// Changes of many directories, one after another in random order (a directory changed
    /// more than once before they are written among them), written to the rows, give what
    /// `rebuild` makes from the records at the end.
    func testChangesGiveWhatARebuildGives() throws {
        let db = try Database(path: ":memory:")
        try db.execute(IndexDatabase.schema)
        var generator = SystemRandomNumberGenerator()
        let artists = ["A", "B", "C", "The D"]
        var records: [Int: [LibrarySong]] = [:]
        func songs() -> [LibrarySong] {
            (0..<Int.random(in: 0...3, using: &generator)).map { n in
                var tags: [(tag: Tag, value: String)] = [(.title, "T\(Int.random(in: 0..<6, using: &generator))")]
                if Bool.random(using: &generator) { tags.append((.artist, artists.randomElement(using: &generator)!)) }
                if Bool.random(using: &generator) { tags.append((.albumArtist, artists.randomElement(using: &generator)!)) }
                if Bool.random(using: &generator) { tags.append((.artistSort, "D, The")) }
                if Bool.random(using: &generator) { tags.append((.genre, "Rock")) }
                return LibrarySong(path: "\(n).flac", tags: tags)
            }
        }
        let update = try db.prepare("INSERT OR REPLACE INTO directories(id, path, listing) VALUES(?, ?, ?)")
        for round in 0..<30 {
            var changes = TagIndex.Changes()
            for _ in 0..<5 {
                let id = Int.random(in: 1...12, using: &generator)
                let after = Int.random(in: 0..<4, using: &generator) == 0 ? [] : songs()
                changes.replace(directory: id, before: TagIndex.keys(of: records[id] ?? []), after: TagIndex.keys(of: after))
                records[id] = after
                try update.run(.integer(id), .text("D\(id)"),
                               .blob(ListingRecord.record(after.map { ListingRecord.Entry(song: $0, modifiedNanoseconds: 0) })))
            }
            try changes.write(db)
            XCTAssertTrue(changes.isEmpty)
            let written = try Tag.ordered.map { try TagIndex.read($0, db.prepare(TagIndex.selectSQL), database: "test") }
            try TagIndex.rebuild(db)
            let rebuilt = try Tag.ordered.map { try TagIndex.read($0, db.prepare(TagIndex.selectSQL), database: "test") }
            XCTAssertEqual(written, rebuilt, "round \(round)")
            XCTAssertFalse(rebuilt.allSatisfy(\.isEmpty) && records.values.contains { !$0.isEmpty })
        }
    }

    /// The keys of a directory: each tag's values with their sorts, and whether every song
    /// has it; AlbumArtist from Artist when a song has none, sorted by AlbumArtistSort or
    /// ArtistSort; a value twice in one song is one song's.
    func testADirectorysKeysSayWhetherEverySongHasThem() {
        let keys = TagIndex.keys(of: [
            LibrarySong(path: "1", tags: [(.artist, "The D"), (.artistSort, "D, The"), (.title, "One"), (.genre, "G"), (.genre, "G")]),
            LibrarySong(path: "2", tags: [(.artist, "E"), (.albumArtist, "F"), (.title, "One"), (.genre, "G")]),
        ])
        XCTAssertEqual(keys[.artist], [key("The D", "D, The"): false, key("E"): false])
        XCTAssertEqual(keys[.albumArtist], [key("The D", "D, The"): false, key("F"): false])
        XCTAssertEqual(keys[.title], [key("One"): true])
        XCTAssertEqual(keys[.genre], [key("G"): true])
        XCTAssertEqual(keys[.artistSort], [key("D, The"): false])
        XCTAssertEqual(TagIndex.keys(of: []).count, 0)
    }
}
