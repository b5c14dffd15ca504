import Foundation
import Synchronization
import TestSupport
import TonearmControlPlane
import XCTest
@testable import TonearmLibrary
import TonearmSQLite

/// The index on real files and a real SQLite database: scans, queries, the watcher, a pulled
/// stick (a bind mount), a damaged database.
final class IndexTests: IndexTestCase {
    /// Two album artists, a compilation without AlbumArtist, sort tags, two artists on one track.
    private func writeTree() throws {
        try Tracks.write(music + "/Beatles/Abbey Road/01.flac", tags: [
            ("ALBUMARTIST", "The Beatles"), ("ALBUMARTISTSORT", "Beatles, The"), ("ARTIST", "The Beatles"),
            ("ALBUM", "Abbey Road"), ("TITLE", "Come Together"), ("TRACKNUMBER", "1"), ("DATE", "1969"), ("GENRE", "Rock")])
        try Tracks.write(music + "/Beatles/Abbey Road/02.flac", tags: [
            ("ALBUMARTIST", "The Beatles"), ("ALBUMARTISTSORT", "Beatles, The"), ("ARTIST", "The Beatles"),
            ("ALBUM", "Abbey Road"), ("TITLE", "Something"), ("TRACKNUMBER", "2"), ("DATE", "1969"), ("GENRE", "Rock")])
        try Tracks.write(music + "/Aretha/Lady Soul/01.flac", tags: [
            ("ALBUMARTIST", "Aretha Franklin"), ("ARTIST", "Aretha Franklin"), ("ALBUM", "Lady Soul"),
            ("TITLE", "Chain of Fools"), ("TRACKNUMBER", "1"), ("GENRE", "Soul"), ("COMPOSER", "Don Covay")])
        try Tracks.write(music + "/Mix/01.flac", tags: [
            ("ARTIST", "Zed"), ("ARTIST", "Ann"), ("ALBUM", "Mix Tape"), ("TITLE", "Together Again"), ("GENRE", "Pop")])
    }

    func testScanIndexesTagsAndQueriesAnswerFromThem() throws {
        try writeTree()
        let (index, notices) = try makeIndex()
        let figures = try scan(index)
        XCTAssertEqual([figures.seen, figures.indexed, figures.unchanged, figures.failed, figures.removed], [4, 4, 0, 0, 0])
        XCTAssertGreaterThanOrEqual(notices.rung, 2, "a scan's start and end are published")
        let catalog = index.catalog

        // AlbumArtist falls back to Artist (both of the mix's), sorted by the sort tags.
        XCTAssertEqual(try values(catalog, .albumArtist), ["Ann", "Aretha Franklin", "The Beatles", "Zed"])
        XCTAssertEqual(try values(catalog, .album, groupedBy: [.albumArtist]),
                       ["Ann|Mix Tape", "Aretha Franklin|Lady Soul", "The Beatles|Abbey Road", "Zed|Mix Tape"])
        XCTAssertEqual(try values(catalog, .title, filters: [TagFilter(.tag(.album), "Abbey Road")]), ["Come Together", "Something"])

        // find: whole values, case matters; search: substrings, case ignored, short or long.
        XCTAssertEqual(try paths(catalog, [TagFilter(.tag(.album), "Abbey Road")], .exact),
                       ["Beatles/Abbey Road/01.flac", "Beatles/Abbey Road/02.flac"])
        XCTAssertEqual(try paths(catalog, [TagFilter(.tag(.album), "abbey road")], .exact), [])
        XCTAssertEqual(try paths(catalog, [TagFilter(.tag(.title), "TOGETHER")], .substring),
                       ["Beatles/Abbey Road/01.flac", "Mix/01.flac"])
        XCTAssertEqual(try paths(catalog, [TagFilter(.tag(.title), "oo")], .substring), ["Aretha/Lady Soul/01.flac"])
        XCTAssertEqual(try paths(catalog, [TagFilter(.tag(.composer), "covay")], .substring), ["Aretha/Lady Soul/01.flac"])
        XCTAssertEqual(try paths(catalog, [TagFilter(.anyTag, "soul")], .substring), ["Aretha/Lady Soul/01.flac"])
        XCTAssertEqual(try paths(catalog, [TagFilter(.tag(.genre), "Rock"), TagFilter(.tag(.title), "Something")], .exact),
                       ["Beatles/Abbey Road/02.flac"])
        XCTAssertEqual(try paths(catalog, [TagFilter(.base, "Beatles")], .exact).count, 2)
        XCTAssertEqual(try paths(catalog, [TagFilter(.file, "Mix/01.flac")], .exact), ["Mix/01.flac"])
        XCTAssertEqual(try paths(catalog, [TagFilter(.tag(.artist), "Ann")], .exact), ["Mix/01.flac"])

        // Pages, and the total beside them.
        var page: [String] = []
        let total = try catalog.songs(SongQuery([], matching: .exact, window: 1..<3)) { page.append($0.path); return true }
        XCTAssertEqual(total, 4)
        XCTAssertEqual(page, ["Beatles/Abbey Road/01.flac", "Beatles/Abbey Road/02.flac"])
        // The total is the same whether the page is full, the last, past the end, or the whole.
        for (window, songs) in [(3..<10, 1), (10..<20, 0), (0..<4, 4), (0..<5, 4)] {
            var read = 0
            XCTAssertEqual(try catalog.songs(SongQuery([], matching: .exact, window: window)) { _ in read += 1; return true }, 4, "\(window)")
            XCTAssertEqual(read, songs, "\(window)")
        }
        XCTAssertEqual(try catalog.songs(SongQuery([], matching: .exact)) { _ in true }, 4)
        XCTAssertEqual(try catalog.songs(SongQuery([], matching: .exact)) { _ in false }, 4, "a reader that stops still learns the total")
        XCTAssertEqual(try catalog.songs(SongQuery([TagFilter(.tag(.genre), "Rock")], matching: .exact, window: 0..<100)) { _ in true }, 2)

        // A song carries its own tags only (no AlbumArtist made up), several values in order.
        var mix: LibrarySong?
        try catalog.songs(SongQuery([TagFilter(.file, "Mix/01.flac")], matching: .exact)) { mix = $0; return false }
        XCTAssertEqual(mix?.tags.filter { $0.tag == .artist }.map(\.value), ["Zed", "Ann"])
        XCTAssertNil(mix?.first(.albumArtist))
        XCTAssertEqual(mix?.sampleRate, 44100)
        XCTAssertEqual(try XCTUnwrap(mix?.duration), 0.1, accuracy: 1e-9)

        let counts = try catalog.count([], matching: .exact, groupedBy: .genre)
        XCTAssertEqual(counts.map { "\($0.group ?? "")=\($0.songs)" }, ["Pop=1", "Rock=2", "Soul=1"])
        let totals = try catalog.totals()
        XCTAssertEqual([totals.songs, totals.albums, totals.artists], [4, 3, 4])
        XCTAssertEqual(totals.playTime, 0.4, accuracy: 1e-6)
        XCTAssertGreaterThan(totals.lastUpdate, 0)

        let root = try catalog.listDirectory("")
        XCTAssertEqual(root.directories.map(\.path), ["Aretha", "Beatles", "Mix"])
        XCTAssertEqual(try catalog.listDirectory("/Mix/").songs.map(\.path), ["Mix/01.flac"])
        // A listed song's tags come in the file's order, which is not the tags' own.
        let soul = try XCTUnwrap(catalog.listDirectory("Aretha/Lady Soul").songs.first)
        XCTAssertEqual(soul.tags.map(\.tag), [.albumArtist, .artist, .album, .title, .track, .genre, .composer])
        XCTAssertEqual(soul.tags.map(\.value), ["Aretha Franklin", "Aretha Franklin", "Lady Soul", "Chain of Fools", "1", "Soul", "Don Covay"])
        XCTAssertThrowsError(try catalog.listDirectory("Nope")) { error in
            XCTAssertEqual((error as? CommandFailure)?.code, .notFound)
        }
    }

    func testARescanReadsOnlyWhatChangedAndPrunesWhatWent() throws {
        try writeTree()
        let (index, _) = try makeIndex()
        try scan(index)
        let again = try scan(index)
        XCTAssertEqual([again.seen, again.indexed, again.unchanged, again.removed], [4, 0, 4, 0])

        try Tracks.write(music + "/Mix/01.flac", tags: [("ARTIST", "Zed"), ("TITLE", "Retitled")])
        try FileManager.default.removeItem(atPath: music + "/Aretha")
        try Tracks.write(music + "/New/01.flac", tags: [("TITLE", "Fresh")])
        let changed = try scan(index)
        XCTAssertEqual([changed.seen, changed.indexed, changed.unchanged, changed.removed], [4, 2, 2, 1])
        XCTAssertEqual(try values(index.catalog, .title), ["Come Together", "Fresh", "Retitled", "Something"])
        XCTAssertEqual(try index.catalog.listDirectory("").directories.map(\.path), ["Beatles", "Mix", "New"])

        // A scan of one directory touches nothing else; of a path that is gone, prunes it.
        let partial = try scan(index, "Beatles")
        XCTAssertEqual([partial.seen, partial.unchanged], [2, 2])
        try FileManager.default.removeItem(atPath: music + "/New")
        let gone = try scan(index, "New")
        XCTAssertEqual(gone.removed, 1)
        XCTAssertEqual(try index.catalog.totals().songs, 3)
    }

    /// The totals `status` shows are counted by the scanner as each scan ends, with the scan's
    /// number, and by the opening over a database that has some: the daemon reads them without
    /// asking the database.
    func testTheTotalsComeWithEachScanAndWithTheOpening() throws {
        let (empty, _) = try makeIndex()
        XCTAssertEqual(empty.totals, LibraryTotals())
        try writeTree()
        try scan(empty)
        let counted = empty.totals
        XCTAssertEqual([counted.songs, counted.albums, counted.artists], [4, 3, 4])
        XCTAssertEqual(counted, try empty.catalog.totals())

        try FileManager.default.removeItem(atPath: music + "/Aretha")
        try scan(empty)
        XCTAssertEqual(empty.totals.songs, 3)
        XCTAssertEqual(empty.totals, try empty.catalog.totals())
        empty.stop()

        let (reopened, _) = try makeIndex()
        XCTAssertEqual(reopened.progress.finishedJob, 0)
        XCTAssertEqual(reopened.totals.songs, 3)
        XCTAssertEqual(reopened.totals, try reopened.catalog.totals())
    }

    /// More directories and files than the walk's channel holds at once: everything reaches the
    /// writer, and a rescan finds every file again.
    func testAWalkLargerThanTheChannelIsIndexedWhole() throws {
        let (directories, files) = (12, 15)
        for d in 1...directories {
            for f in 1...files {
                try Tracks.write(music + "/D\(d)/\(f).flac", tags: [("TITLE", "D\(d) T\(f)"), ("ARTIST", "A\(d % 3)")])
            }
        }
        XCTAssertGreaterThan(directories * (files + 1), ScanChannel.chunkSize * ScanChannel.chunksHeld)
        let (index, _) = try makeIndex()
        let first = try scan(index)
        XCTAssertEqual([first.seen, first.indexed, first.failed], [directories * files, directories * files, 0])
        XCTAssertEqual(try index.catalog.listDirectory("").directories.count, directories)
        XCTAssertEqual(try index.catalog.listDirectory("D12").songs.map(\.path), (1...files).map { "D12/\($0).flac" }.sorted())
        let again = try scan(index)
        XCTAssertEqual([again.seen, again.indexed, again.unchanged], [directories * files, 0, directories * files])
    }

    /// A scan ends with what it wrote copied from the log into the database file and the log
    /// cut back: the file alone holds the library, and the log is not a second copy of it.
    func testAScanLeavesTheLibraryInTheDatabaseFileNotInTheLog() throws {
        for d in 1...6 {
            for f in 1...10 { try Tracks.write(music + "/D\(d)/\(f).flac", tags: [("TITLE", "D\(d) T\(f)"), ("ARTIST", "A\(d)")]) }
        }
        let (index, _) = try makeIndex()
        XCTAssertEqual(try scan(index).indexed, 60)
        func size(_ path: String) throws -> Int { (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? -1 }
        let log = try size(tmp.file("library.db-wal"))
        XCTAssertLessThanOrEqual(log, 32 + 4 * (24 + 4096), "the log after a scan: \(log) bytes")
        // The database file copied without its log, as a card's file system keeps it.
        try FileManager.default.copyItem(atPath: tmp.file("library.db"), toPath: tmp.file("alone.db"))
        let alone = try Database(path: tmp.file("alone.db"))
        XCTAssertEqual(try alone.integer("SELECT count(*) FROM tracks"), 60)
        XCTAssertEqual(try alone.integer("SELECT count(*) FROM tag_values WHERE value = 'D6 T10'"), 1)
    }

    /// A scan into an empty library makes the value index and the search index at its end; one
    /// stopped before that leaves a database whose next opening makes them.
    func testTheValueIndexIsMadeAtTheEndOfAFirstScanOrOnTheNextOpen() throws {
        try writeTree()
        func hasValueIndex() throws -> Bool {
            try Database(path: tmp.file("library.db")).integer("SELECT count(*) FROM sqlite_master WHERE name = 'tags_value'") == 1
        }
        var (index, _) = try makeIndex()
        try scan(index)
        XCTAssertTrue(try hasValueIndex())
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.album), "Abbey Road")], .exact).count, 2)
        index.stop()
        // As a scan into an empty library cut short leaves it: no value index, no search index.
        try Database(path: tmp.file("library.db")).execute("""
            DROP INDEX tags_value; DELETE FROM value_text;
            INSERT INTO meta(key, value) VALUES('\(IndexDatabase.pendingSearchKey)', 1)
            """)
        XCTAssertFalse(try hasValueIndex())
        (index, _) = try makeIndex()
        XCTAssertTrue(try hasValueIndex())
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.album), "Abbey Road")], .exact).count, 2)
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.title), "ethin")], .substring), ["Beatles/Abbey Road/02.flac"])
    }

    /// The search index holds each value once, gains new ones as files come, loses those no
    /// track has any more, and is made from the tags when a database of schema 1 is opened.
    func testTheSearchIndexHoldsEachValueOnceAndFollowsTheFiles() throws {
        try writeTree()
        func count(_ value: String) throws -> Int? {
            try Database(path: tmp.file("library.db")).integer("SELECT count(*) FROM value_text WHERE value = ?", .text(value))
        }
        var (index, _) = try makeIndex()
        try scan(index)
        XCTAssertEqual(try count("Abbey Road"), 1)
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.album), "BEY ro")], .substring).count, 2)

        try FileManager.default.removeItem(atPath: music + "/Aretha")
        try Tracks.write(music + "/New/01.flac", tags: [("TITLE", "Fresh Start"), ("ALBUM", "Abbey Road")])
        try scan(index)
        XCTAssertEqual(try count("Lady Soul"), 0)
        XCTAssertEqual(try count("Chain of Fools"), 0)
        XCTAssertEqual(try count("Abbey Road"), 1)
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.title), "sh st")], .substring), ["New/01.flac"])
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.album), "abbey")], .substring).count, 3)

        // A database of schema 1 (a search index per track) is brought to the current one.
        index.stop()
        try makeSchema3()
        try Database(path: tmp.file("library.db")).execute("""
            DROP TABLE value_text;
            CREATE VIRTUAL TABLE track_text USING fts5(artist, album, albumartist, title, composer, performer, tokenize = 'trigram');
            PRAGMA user_version = 1
            """)
        (index, _) = try makeIndex()
        XCTAssertEqual(try Database(path: tmp.file("library.db")).integer("PRAGMA user_version"), IndexDatabase.schemaVersion)
        XCTAssertEqual(try Database(path: tmp.file("library.db")).integer(
            "SELECT count(*) FROM sqlite_master WHERE name = 'track_text'"), 0)
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.title), "sh st")], .substring), ["New/01.flac"])
        XCTAssertEqual(try count("Abbey Road"), 1)
    }

    /// Track and Disc are the numbers before their totals, as mpd shows them; a database of
    /// schema 2, which kept "3/12", is brought to that.
    func testTrackAndDiscAreKeptWithoutTheirTotals() throws {
        try Tracks.write(music + "/Album/03.flac", tags: [("TITLE", "Three"), ("TRACKNUMBER", "3/12"), ("DISCNUMBER", " 1 / 2")])
        try Tracks.write(music + "/Album/04.flac", tags: [("TITLE", "Four"), ("TRACKNUMBER", "4"), ("DISCNUMBER", "/2")])
        var (index, _) = try makeIndex()
        try scan(index)
        func values(_ tag: Tag) throws -> [String] {
            var found: [String] = []
            let db = try Database(path: tmp.file("library.db"))
            // Schema 2 kept the values in `tags`, the current one in `tag_values`.
            let values = try db.integer("SELECT count(*) FROM sqlite_master WHERE name = 'tag_values'") == 1
                ? "(SELECT value FROM tag_values WHERE id = tags.value)" : "value"
            try db.prepare("SELECT \(values) FROM tags WHERE tag = ? ORDER BY track").rows([.integer(tag.index)]) { row in
                found.append(row.text(0) ?? "?")
                return true
            }
            return found
        }
        XCTAssertEqual(try values(.track), ["3", "4"])
        XCTAssertEqual(try values(.disc), ["1"], "a disc number without its number is none")
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.track), "3")], .exact), ["Album/03.flac"])

        index.stop()
        try makeSchema3()
        try Database(path: tmp.file("library.db")).execute("""
            UPDATE tags SET value = '3/12' WHERE tag = \(Tag.track.index) AND value = '3';
            INSERT INTO tags(track, tag, seq, value, sort, own)
                SELECT track, \(Tag.disc.index), 0, '/2', NULL, 1 FROM tags WHERE tag = \(Tag.track.index) AND value = '4';
            PRAGMA user_version = 2
            """)
        XCTAssertEqual(try values(.track), ["3/12", "4"])
        (index, _) = try makeIndex()
        XCTAssertEqual(try Database(path: tmp.file("library.db")).integer("PRAGMA user_version"), IndexDatabase.schemaVersion)
        XCTAssertEqual(try values(.track), ["3", "4"])
        XCTAssertEqual(try values(.disc), ["1"])
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.track), "3")], .exact), ["Album/03.flac"])
    }

    /// Every comparison a filter can make, with case counting in a find and not in a search,
    /// negation taking in songs without the tag, and a bad pattern refused with its reason.
    func testFiltersCompareWholeValuesPartsBeginningsAndPatterns() throws {
        try writeTree()
        let (index, _) = try makeIndex()
        try scan(index)
        let catalog = index.catalog
        let all = try paths(catalog, [], .exact)
        func check(_ filter: TagFilter, _ matching: Matching, _ expected: [String], line: UInt = #line) throws {
            XCTAssertEqual(try paths(catalog, [filter], matching), expected, "\(filter) \(matching)", line: line)
            var negated = filter
            negated.negated.toggle()
            XCTAssertEqual(try paths(catalog, [negated], matching), all.filter { !expected.contains($0) }, "not \(filter)", line: line)
        }
        let abbey = try paths(catalog, [TagFilter(.tag(.album), "Abbey Road")], .exact)
        XCTAssertEqual(abbey.count, 2)
        try check(TagFilter(.tag(.album), "abbey road", matching: .exact), .exact, [])
        try check(TagFilter(.tag(.album), "abbey road", matching: .exact), .substring, abbey)
        try check(TagFilter(.tag(.album), "bey Ro", matching: .substring), .exact, abbey)
        try check(TagFilter(.tag(.album), "bey ro", matching: .substring), .exact, [])
        try check(TagFilter(.tag(.album), "Abb", matching: .prefix), .exact, abbey)
        try check(TagFilter(.tag(.album), "abb", matching: .prefix), .exact, [])
        try check(TagFilter(.tag(.album), "abb", matching: .prefix), .substring, abbey)
        try check(TagFilter(.tag(.album), "^A[b]+ey R.ad$", matching: .regularExpression), .exact, abbey)
        try check(TagFilter(.tag(.album), "ABBEY", matching: .regularExpression), .exact, [])
        try check(TagFilter(.tag(.album), "ABBEY", matching: .regularExpression), .substring, abbey)
        try check(TagFilter(.file, "^Beatles/", matching: .regularExpression), .exact, all.filter { $0.hasPrefix("Beatles/") })
        XCTAssertThrowsError(try paths(catalog, [TagFilter(.tag(.album), "(", matching: .regularExpression)], .exact)) { error in
            XCTAssertTrue("\(error)".contains("regular expression refused: "), "\(error)")
        }
    }

    func testFilesThatFailAreListedWithTheirReasonAndReadAgainOnlyOnceChanged() throws {
        try writeTree()
        try writeBytes(Array("not a flac file".utf8), to: music + "/Mix/broken.flac")
        var truncated = try XCTUnwrap(readBytes(music + "/Mix/01.flac"))
        truncated.removeLast(truncated.count - 30)
        try writeBytes(truncated, to: music + "/Mix/short.flac")
        let (index, _) = try makeIndex()
        let first = try scan(index)
        XCTAssertEqual([first.indexed, first.failed], [4, 2])
        var failures: [String] = []
        try index.catalog.failures { path, reason in
            failures.append("\(path): \(reason)")
            return true
        }
        XCTAssertEqual(failures.count, 2)
        XCTAssertTrue(failures[0].hasPrefix("Mix/broken.flac: "), failures[0])
        XCTAssertTrue(failures[1].hasPrefix("Mix/short.flac: "), failures[1])
        let again = try scan(index)
        XCTAssertEqual([again.indexed, again.failed, again.unchanged], [0, 2, 4])
        // Mended, it is indexed and no longer listed.
        try Tracks.write(music + "/Mix/broken.flac", tags: [("TITLE", "Mended")])
        let mended = try scan(index)
        XCTAssertEqual([mended.indexed, mended.failed], [1, 1])
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.title), "Mended")], .exact), ["Mix/broken.flac"])
    }

    func testADamagedOrForeignDatabaseIsSetAsideAndRebuilt() throws {
        try writeTree()
        try writeBytes([UInt8](repeating: 0x5A, count: 8192), to: tmp.file("library.db"))
        let logged = Mutex<[String]>([])
        let index = try MusicIndex(.init(musicDirectory: music, databasePath: tmp.file("library.db"), watch: false),
                                   log: PlugInLog { _, line in logged.withLock { $0.append(line) } }, notify: {})
        indexes.append(index)
        XCTAssertEqual(try scan(index).indexed, 4)
        let aside = try FileManager.default.contentsOfDirectory(atPath: tmp.path).filter { $0.hasPrefix("library.db.broken-") }
        XCTAssertEqual(aside.count, 1)
        XCTAssertTrue(logged.withLock { $0 }.contains { $0.contains("set aside as") }, "\(logged.withLock { $0 })")
    }

    func testTheWatcherIndexesWhatChangesWithinSeconds() throws {
        try writeTree()
        let (index, _) = try makeIndex(watch: true)
        try scan(index)
        try Tracks.write(music + "/Beatles/Abbey Road/03.flac", tags: [("ALBUM", "Abbey Road"), ("TITLE", "Maxwell")])
        XCTAssertTrue(waitUntil(timeout: 120) { (try? self.paths(index.catalog, [TagFilter(.tag(.title), "Maxwell")], .exact)) == ["Beatles/Abbey Road/03.flac"] },
                      "a new file was not indexed")
        try FileManager.default.createDirectory(atPath: music + "/Later/Deep", withIntermediateDirectories: true)
        try Tracks.write(music + "/Later/Deep/01.flac", tags: [("TITLE", "Deep")])
        XCTAssertTrue(waitUntil(timeout: 120) { (try? self.paths(index.catalog, [TagFilter(.tag(.title), "Deep")], .exact)) == ["Later/Deep/01.flac"] },
                      "a file in a new directory was not indexed")
        try FileManager.default.moveItem(atPath: music + "/Mix", toPath: music + "/Renamed")
        XCTAssertTrue(waitUntil(timeout: 120) { (try? self.paths(index.catalog, [TagFilter(.tag(.title), "Together Again")], .exact)) == ["Renamed/01.flac"] },
                      "a renamed directory was not followed")
        try FileManager.default.removeItem(atPath: music + "/Aretha/Lady Soul/01.flac")
        XCTAssertTrue(waitUntil(timeout: 120) { (try? self.paths(index.catalog, [TagFilter(.tag(.album), "Lady Soul")], .exact)) == [] },
                      "a deleted file stayed")
    }

    /// A bind mount stands in for a USB stick: unmounted, its songs are kept and marked
    /// unavailable; mounted back, they are there again.
    func testAnUnmountedStickIsMarkedUnavailableAndComesBack() throws {
        try writeTree()
        let stick = tmp.file("stick")
        try Tracks.write(stick + "/Album/01.flac", tags: [("ALBUM", "On The Stick"), ("TITLE", "Portable")])
        try FileManager.default.createDirectory(atPath: music + "/usb", withIntermediateDirectories: true)
        guard run("/bin/mount", ["--bind", stick, music + "/usb"]) else { throw XCTSkip("mount --bind is not allowed here") }
        var mounted = true
        defer { if mounted { _ = run("/bin/umount", [music + "/usb"]) } }
        let (index, _) = try makeIndex(watch: true)
        XCTAssertEqual(try scan(index).indexed, 5)

        XCTAssertTrue(run("/bin/umount", [music + "/usb"]))
        mounted = false
        XCTAssertTrue(waitUntil(timeout: 120) { index.unavailable == ["usb"] }, "unavailable: \(index.unavailable)")
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.album), "On The Stick")], .exact), [])
        XCTAssertFalse(try values(index.catalog, .album).contains("On The Stick"))
        XCTAssertEqual(try index.catalog.totals().songs, 4)
        // A full rescan keeps them, unavailable.
        let rescan = try scan(index)
        XCTAssertEqual(rescan.removed, 0)
        XCTAssertEqual(index.unavailable, ["usb"])

        XCTAssertTrue(run("/bin/mount", ["--bind", stick, music + "/usb"]))
        mounted = true
        XCTAssertTrue(waitUntil(timeout: 120) { index.unavailable.isEmpty }, "still unavailable: \(index.unavailable)")
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.album), "On The Stick")], .exact), ["usb/Album/01.flac"])
        XCTAssertTrue(try values(index.catalog, .album).contains("On The Stick"))
    }

    func testANameThatIsNotUTF8IsIndexed() throws {
        try Tracks.write(music + "/latin.flac", tags: [("TITLE", "Café")])
        let raw: [CChar] = Array((music + "/caf").utf8CString.dropLast()) + [CChar(bitPattern: 0xE9)] + Array(".flac".utf8CString)
        XCTAssertEqual(rename(music + "/latin.flac", raw), 0)
        let (index, _) = try makeIndex()
        XCTAssertEqual(try scan(index).indexed, 1)
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.title), "Café")], .exact), ["caf\u{10FFE9}.flac"])
    }

    /// A car box's music directory is the stick itself.
    func testAMusicDirectoryThatIsTheStickKeepsItsSongsWhileItIsOut() throws {
        let stick = tmp.file("stick")
        try Tracks.write(stick + "/Album/01.flac", tags: [("TITLE", "One")])
        try Tracks.write(stick + "/Album/02.flac", tags: [("TITLE", "Two")])
        guard run("/bin/mount", ["--bind", stick, music]) else { throw XCTSkip("mount --bind is not allowed here") }
        var mounted = true
        defer { if mounted { _ = run("/bin/umount", [music]) } }
        let (index, _) = try makeIndex()
        XCTAssertEqual(try scan(index).indexed, 2)
        XCTAssertTrue(run("/bin/umount", [music]))
        mounted = false
        let out = try scan(index)
        XCTAssertEqual(out.removed, 0)
        XCTAssertEqual(index.unavailable, [""])
        XCTAssertEqual(try index.catalog.totals().songs, 0)
        XCTAssertTrue(run("/bin/mount", ["--bind", stick, music]))
        mounted = true
        let back = try scan(index)
        XCTAssertEqual([back.unchanged, back.indexed, back.removed], [2, 0, 0])
        XCTAssertEqual(index.unavailable, [])
        XCTAssertEqual(try values(index.catalog, .title), ["One", "Two"])
    }

    func testStoredPlaylistsAreRead() throws {
        try writeTree()
        let playlists = tmp.file("playlists")
        try writeBytes(Array("#EXTM3U\nBeatles/Abbey Road/01.flac\n\n# a comment\nMix/01.flac\n".utf8), to: playlists + "/Road Trip.m3u")
        try writeBytes(Array("ignored".utf8), to: playlists + "/notes.txt")
        let (index, _) = try makeIndex(playlists: playlists)
        try scan(index)
        let stored = try index.catalog.storedPlaylists()
        XCTAssertEqual(stored.map(\.name), ["Road Trip"])
        XCTAssertEqual(stored.first?.entries, ["Beatles/Abbey Road/01.flac", "Mix/01.flac"])
    }

    /// A database of schema 3, which wrote each track's values out in `tags`, is brought to the
    /// current schema with every answer as it was.
    func testADatabaseOfSchema3IsMigrated() throws {
        try writeTree()
        var (index, _) = try makeIndex()
        try scan(index)
        func answers(_ catalog: any LibraryCatalog) throws -> [[String]] {
            [try values(catalog, .albumArtist), try values(catalog, .album, groupedBy: [.albumArtist]),
             try paths(catalog, [TagFilter(.tag(.album), "Abbey Road")], .exact),
             try paths(catalog, [TagFilter(.tag(.title), "TOGETHER")], .substring),
             try songs(catalog, [], .exact).map { $0.tags.map { "\($0.tag.rawValue)=\($0.value)" }.joined(separator: ";") }]
        }
        let before = try answers(index.catalog)
        index.stop()
        try makeSchema3()
        (index, _) = try makeIndex()
        XCTAssertEqual(try Database(path: tmp.file("library.db")).integer("PRAGMA user_version"), IndexDatabase.schemaVersion)
        XCTAssertEqual(try answers(index.catalog), before)
        XCTAssertEqual(try scan(index).unchanged, 4)
        XCTAssertEqual(try answers(index.catalog), before)
    }

    /// A directory's songs are read from its record, made by the scan before each commit:
    /// after a first scan and after every kind of change, each directory has one, and it holds
    /// what the tables hold. A record that is damaged or not made yet is read from the tables.
    func testEachDirectorysSongsAreOneRecordThatFollowsItsTracks() throws {
        try writeTree()
        let (index, _) = try makeIndex()
        try scan(index)
        let db = try Database(path: tmp.file("library.db"))
        let directories = ["", "Beatles", "Beatles/Abbey Road", "Beatles/Let It Be", "Aretha", "Aretha/Lady Soul", "Mix"]
        func fromTables(_ directory: String) throws -> [LibrarySong] {
            var songs: [LibrarySong] = []
            let id = try db.integer("SELECT id FROM directories WHERE path = ?", .text(directory))
            try db.prepare(ListingRecord.songsOfDirectory).rows([.integer(id ?? -1)]) { row in
                songs.append(IndexCatalog.song(row))
                return true
            }
            return songs
        }
        func check(_ what: String) throws {
            XCTAssertEqual(try db.integer("SELECT count(*) FROM directories WHERE listing IS NULL"), 0, what)
            for directory in directories where try db.integer("SELECT count(*) FROM directories WHERE path = ?", .text(directory)) == 1 {
                XCTAssertEqual(try index.catalog.listDirectory(directory).songs, try fromTables(directory), "\(what): \(directory)")
            }
        }
        try check("first scan")
        XCTAssertEqual(try index.catalog.listDirectory("Beatles/Abbey Road").songs.map { $0.tags.first { $0.tag == .title }?.value },
                       ["Come Together", "Something"])

        // A tag changed (and nothing else in its directory), a song added, a song gone, a
        // directory gone.
        try Tracks.write(music + "/Beatles/Abbey Road/02.flac", tags: [("TITLE", "Something Else"), ("ALBUM", "Abbey Road")])
        try Tracks.write(music + "/Beatles/Let It Be/03.flac", tags: [("TITLE", "Maggie Mae"), ("ALBUM", "Let It Be")])
        try FileManager.default.removeItem(atPath: music + "/Mix")
        try FileManager.default.removeItem(atPath: music + "/Aretha/Lady Soul/01.flac")
        try scan(index)
        try check("rescan")
        XCTAssertEqual(try index.catalog.listDirectory("Beatles/Abbey Road").songs.map { $0.tags.first { $0.tag == .title }?.value },
                       ["Come Together", "Something Else"])
        XCTAssertEqual(try index.catalog.listDirectory("Beatles/Let It Be").songs.map(\.path), ["Beatles/Let It Be/03.flac"])
        XCTAssertEqual(try index.catalog.listDirectory("Aretha/Lady Soul").songs, [])
        XCTAssertThrowsError(try index.catalog.listDirectory("Mix"))

        // One file scanned on its own.
        try Tracks.write(music + "/Aretha/Lady Soul/01.flac", tags: [("TITLE", "Chain of Fools"), ("ALBUM", "Lady Soul")])
        try scan(index, "Aretha/Lady Soul/01.flac")
        try check("one file")
        XCTAssertEqual(try index.catalog.listDirectory("Aretha/Lady Soul").songs.map(\.path), ["Aretha/Lady Soul/01.flac"])

        // Damaged, and not made yet: read from the tables all the same.
        let expected = try fromTables("Beatles/Abbey Road")
        try db.execute("UPDATE directories SET listing = x'05789c00' WHERE path = 'Beatles/Abbey Road'")
        XCTAssertEqual(try index.catalog.listDirectory("Beatles/Abbey Road").songs, expected)
        try db.execute("UPDATE directories SET listing = NULL WHERE path = 'Beatles/Abbey Road'")
        XCTAssertEqual(try index.catalog.listDirectory("Beatles/Abbey Road").songs, expected)
        XCTAssertEqual(expected.count, 2)
    }

    /// Directories read in one snapshot are what `listDirectory` gives one at a time; a
    /// directory that is not there fails alone; a walk that fails ends its snapshot, so the
    /// next read sees the next scan.
    func testDirectoriesReadInOneSnapshotAreTheirListingsAndTheSnapshotEnds() throws {
        try writeTree()
        let (index, _) = try makeIndex()
        try scan(index)
        let catalog = index.catalog
        var directories = [""], one: [DirectoryListing] = []
        while one.count < directories.count {
            one.append(try catalog.listDirectory(directories[one.count]))
            directories += one.last?.directories.map(\.path) ?? []
        }
        XCTAssertEqual(directories, ["", "Aretha", "Beatles", "Mix", "Aretha/Lady Soul", "Beatles/Abbey Road"])
        let walked = try catalog.readingDirectories { (list) throws(CommandFailure) in try directories.map { (directory) throws(CommandFailure) in try list(directory) } }
        XCTAssertEqual(walked, one)
        XCTAssertEqual(walked[5].songs.map(\.path), ["Beatles/Abbey Road/01.flac", "Beatles/Abbey Road/02.flac"])

        let missing = try catalog.readingDirectories { (list) throws(CommandFailure) -> (CommandFailure?, DirectoryListing) in
            var failure: CommandFailure?
            do throws(CommandFailure) { _ = try list("Nowhere") } catch { failure = error }
            return (failure, try list("Beatles"))
        }
        XCTAssertEqual(missing.0?.code, .notFound)
        XCTAssertEqual(missing.1, one[2])

        // A walk that throws; then a scan changes a title: every connection reads it.
        XCTAssertThrowsError(try catalog.readingDirectories { (list) throws(CommandFailure) -> Int in
            _ = try list("Beatles/Abbey Road")
            throw CommandFailure(.badArgument, "stop")
        }) { XCTAssertEqual(($0 as? CommandFailure)?.message, "stop") }
        try Tracks.write(music + "/Beatles/Abbey Road/02.flac", tags: [("TITLE", "Something Else"), ("ALBUM", "Abbey Road")])
        try scan(index)
        for _ in 0..<4 {
            let titles = try catalog.readingDirectories { (list) throws(CommandFailure) in try list("Beatles/Abbey Road") }
                .songs.map { $0.tags.first { $0.tag == .title }?.value }
            XCTAssertEqual(titles, ["Come Together", "Something Else"])
        }
    }

    /// A database of schema 4, which kept no records, is given them when it is opened, with
    /// every answer as it was.
    func testADatabaseOfSchema4IsGivenItsRecords() throws {
        try writeTree()
        var (index, _) = try makeIndex()
        try scan(index)
        func listings(_ catalog: any LibraryCatalog) throws -> [[LibrarySong]] {
            try ["", "Beatles/Abbey Road", "Aretha/Lady Soul", "Mix"].map { try catalog.listDirectory($0).songs }
        }
        let before = try listings(index.catalog)
        XCTAssertEqual(before.map(\.count), [0, 2, 1, 1])
        index.stop()
        try makeSchema4()
        let db = try Database(path: tmp.file("library.db"))
        XCTAssertEqual(try db.integer("SELECT count(*) FROM pragma_table_info('directories') WHERE name = 'listing'"), 0)
        (index, _) = try makeIndex()
        XCTAssertEqual(try db.integer("PRAGMA user_version"), IndexDatabase.schemaVersion)
        XCTAssertEqual(try db.integer("SELECT count(*) FROM directories WHERE listing IS NULL"), 0)
        XCTAssertEqual(try listings(index.catalog), before)
        XCTAssertEqual(try scan(index).unchanged, 4)
        XCTAssertEqual(try listings(index.catalog), before)
    }

    /// The database as schema 4 had it: no records of directories' songs.
    func makeSchema4() throws {
        try Database(path: tmp.file("library.db")).execute("""
            DROP TRIGGER tracks_added; DROP TRIGGER tracks_changed; DROP TRIGGER tracks_removed;
            DROP INDEX directories_unlisted;
            ALTER TABLE directories DROP COLUMN listing;
            PRAGMA user_version = 4
            """)
    }

    /// The database as schema 3 had it: each track's tag values written out in `tags`, and a
    /// search index that kept its own copy of them.
    func makeSchema3() throws {
        try makeSchema4()
        let searched = IndexDatabase.searchedTags.map { String($0.index) }.joined(separator: ", ")
        try Database(path: tmp.file("library.db")).execute("""
            CREATE TABLE tags_3(track INTEGER NOT NULL, tag INTEGER NOT NULL, seq INTEGER NOT NULL, value TEXT NOT NULL,
                sort TEXT, own INTEGER NOT NULL, PRIMARY KEY(track, tag, seq)) WITHOUT ROWID;
            INSERT INTO tags_3 SELECT g.track, g.tag, g.seq, v.value, g.sort, g.own FROM tags g JOIN tag_values v ON v.id = g.value;
            DROP TABLE value_text; DROP VIEW searched_values; DROP TABLE tags; DROP TABLE tag_values;
            ALTER TABLE tags_3 RENAME TO tags;
            CREATE INDEX tags_value ON tags(tag, value);
            CREATE VIRTUAL TABLE value_text USING fts5(value, tag UNINDEXED, tokenize = 'trigram');
            INSERT INTO value_text(value, tag) SELECT DISTINCT value, tag FROM tags WHERE tag IN (\(searched));
            PRAGMA user_version = 3
            """)
    }

}
