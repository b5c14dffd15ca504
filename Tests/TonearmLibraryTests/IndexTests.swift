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

    /// A song sorts among the songs of the directories under its own ("a/t" after "a/sub/…",
    /// "a b/…" before "a/…"): a page whose total is not wanted stops reading once its songs
    /// are known, and is the page one that counts would give.
    func testAPageThatNeedNotCountStopsReadingAndIsThePageThatCounts() throws {
        let files = ["a/c.flac", "a/t.flac", "a/sub/y.flac", "a/sub/deep/1.flac", "a b/z.flac", "a-b/q.flac", "a-a/r.flac",
                     "a-b c/s.flac", "b/m.flac", "b/sub/n.flac", "b/o.flac", "0.flac", "~.flac"]
        for (number, file) in files.enumerated() {
            try Tracks.write(music + "/" + file, tags: [("TITLE", "T\(number)"), ("GENRE", number % 3 == 0 ? "Folk" : "Rock")])
        }
        let (index, _) = try makeIndex()
        try scan(index)
        // Directories found later, numbered after those whose paths follow theirs.
        for file in ["a a/v.flac", "0/u.flac", "a/sub/a/w.flac"] {
            try Tracks.write(music + "/" + file, tags: [("TITLE", file), ("GENRE", "Rock")])
        }
        try scan(index)
        let catalog = index.catalog
        // All directories, those under one, those a tag's row names.
        for filters in [[], [TagFilter(.tag(.genre), "Folk", negated: true)], [TagFilter(.base, "a")], [TagFilter(.tag(.genre), "Rock")]] {
            var all: [String] = []
            let total = try catalog.songs(SongQuery(filters, matching: .exact)) { all.append($0.path); return true }
            XCTAssertEqual(all, all.sorted { $0.precedes($1) })
            XCTAssertEqual(total, all.count)
            for lower in 0...total + 1 {
                for upper in lower...total + 1 {
                    var counted: [String] = [], uncounted: [String] = []
                    try catalog.songs(SongQuery(filters, matching: .exact, window: lower..<upper)) { counted.append($0.path); return true }
                    let read = try catalog.songs(SongQuery(filters, matching: .exact, window: lower..<upper, countsAll: false)) {
                        uncounted.append($0.path)
                        return true
                    }
                    XCTAssertEqual(uncounted, counted, "\(filters) \(lower)..<\(upper)")
                    XCTAssertEqual(counted, Array(all[min(lower, total)..<min(upper, total)]))
                    XCTAssertLessThanOrEqual(read, total)
                    XCTAssertGreaterThanOrEqual(read, min(upper, total))
                }
            }
            // The page after a song: the songs that follow it, whatever directory they are in.
            for (place, last) in all.enumerated() {
                for size in 1...3 {
                    for countsAll in [true, false] {
                        var page: [String] = []
                        try catalog.songs(SongQuery(filters, matching: .exact, window: 0..<size, countsAll: countsAll, after: last)) {
                            page.append($0.path)
                            return true
                        }
                        XCTAssertEqual(page, Array(all[(place + 1)...].prefix(size)), "\(filters) after \(last)")
                    }
                }
            }
            var first: [String] = []
            let read = try catalog.songs(SongQuery(filters, matching: .exact, window: 0..<1, countsAll: false)) { first.append($0.path); return true }
            XCTAssertEqual(first, [all[0]])
            XCTAssertLessThan(read, total, "\(filters): reading stopped before the last directory")
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
        XCTAssertEqual(try alone.integer("SELECT sum(songs) FROM directories"), 60)
        XCTAssertEqual(try tagIndex(alone, .title).filter { $0.key.value == "D6 T10" }.map(\.directories.count), [1])
    }

    /// A scan into an empty library makes the tag index at its end; one stopped before that
    /// leaves a database whose next opening makes it.
    func testTheTagIndexIsMadeAtTheEndOfAFirstScanOrOnTheNextOpen() throws {
        try writeTree()
        let db = try Database(path: tmp.file("library.db"))
        var (index, _) = try makeIndex()
        try scan(index)
        XCTAssertEqual(try tagIndex(db, .album).map(\.key.value), ["Abbey Road", "Lady Soul", "Mix Tape"])
        XCTAssertEqual(try db.integer("SELECT count(*) FROM meta WHERE key = '\(TagIndex.pendingKey)'"), 0)
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.album), "Abbey Road")], .exact).count, 2)
        index.stop()
        // As a scan into an empty library cut short leaves it: records, no tag index.
        try db.execute("DELETE FROM tag_index; INSERT INTO meta(key, value) VALUES('\(TagIndex.pendingKey)', 1)")
        XCTAssertEqual(try tagIndex(db, .album), [])
        (index, _) = try makeIndex()
        XCTAssertEqual(try tagIndex(db, .album).map(\.key.value), ["Abbey Road", "Lady Soul", "Mix Tape"])
        XCTAssertEqual(try db.integer("SELECT count(*) FROM meta WHERE key = '\(TagIndex.pendingKey)'"), 0)
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.album), "Abbey Road")], .exact).count, 2)
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.title), "ethin")], .substring), ["Beatles/Abbey Road/02.flac"])
    }

    /// The tag index holds each value once, with the directories that have it; it gains new
    /// values and directories as files come, and loses those no song has any more.
    func testTheTagIndexHoldsEachValueOnceAndFollowsTheFiles() throws {
        try writeTree()
        let db = try Database(path: tmp.file("library.db"))
        func directories(_ tag: Tag, _ value: String) throws -> [[String]] {
            try tagIndex(db, tag).filter { $0.key.value == value }.map { entry in
                try entry.directories.map { try directoryPath(db, $0) }
            }
        }
        let (index, _) = try makeIndex()
        try scan(index)
        XCTAssertEqual(try directories(.album, "Abbey Road"), [["Beatles/Abbey Road"]])
        XCTAssertEqual(try directories(.albumArtist, "Zed"), [["Mix"]], "AlbumArtist from Artist")
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.album), "BEY ro")], .substring).count, 2)

        try FileManager.default.removeItem(atPath: music + "/Aretha")
        try Tracks.write(music + "/New/01.flac", tags: [("TITLE", "Fresh Start"), ("ALBUM", "Abbey Road")])
        try Tracks.write(music + "/Beatles/Abbey Road/02.flac", tags: [("TITLE", "Something"), ("ALBUM", "Abbey Road")])
        try scan(index)
        XCTAssertEqual(try directories(.album, "Lady Soul"), [])
        XCTAssertEqual(try directories(.title, "Chain of Fools"), [])
        XCTAssertEqual(try directories(.album, "Abbey Road"), [["Beatles/Abbey Road", "New"]])
        XCTAssertEqual(try directories(.title, "Something"), [["Beatles/Abbey Road"]])
        XCTAssertEqual(try directories(.artist, "The Beatles"), [["Beatles/Abbey Road"]], "01 has it still")
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.title), "sh st")], .substring), ["New/01.flac"])
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.album), "abbey")], .substring).count, 3)
        try FileManager.default.removeItem(atPath: music + "/Beatles/Abbey Road/01.flac")
        try scan(index)
        XCTAssertEqual(try directories(.artist, "The Beatles"), [])
        XCTAssertEqual(try directories(.album, "Abbey Road"), [["Beatles/Abbey Road", "New"]])
    }

    /// A connection keeps the blocks its last query expanded while the index is the one they
    /// were read from: changed by another connection (by hand here, as a scan would), the next
    /// query reads what is there now, the tag's row and the directories' records.
    func testAQueryReadsTheIndexAsItIsNowNotAsTheLastQueryExpandedIt() throws {
        try writeTree()
        let (index, _) = try makeIndex()
        try scan(index)
        let catalog = index.catalog
        let together = [TagFilter(.tag(.title), "together")]
        for _ in 0..<2 {
            XCTAssertEqual(try paths(catalog, together, .substring), ["Beatles/Abbey Road/01.flac", "Mix/01.flac"])
        }
        let db = try Database(path: tmp.file("library.db"))
        try db.execute("UPDATE directories SET listing = (SELECT listing FROM directories WHERE path = 'Aretha/Lady Soul') WHERE path = 'Mix'")
        XCTAssertEqual(try paths(catalog, together, .substring), ["Beatles/Abbey Road/01.flac"], "Mix's record, as it is now")
        // A query that does not read the titles' row leaves it kept.
        XCTAssertEqual(try paths(catalog, [TagFilter(.tag(.album), "Lady Soul")], .exact), ["Aretha/Lady Soul/01.flac"])
        try db.execute("UPDATE tag_index SET block = (SELECT block FROM tag_index WHERE tag = \(Tag.album.index)) WHERE tag = \(Tag.title.index)")
        XCTAssertEqual(try paths(catalog, together, .substring), [], "the title row, as it is now")
    }

    /// Track and Disc are the numbers before their totals, as mpd shows them.
    func testTrackAndDiscAreKeptWithoutTheirTotals() throws {
        try Tracks.write(music + "/Album/03.flac", tags: [("TITLE", "Three"), ("TRACKNUMBER", "3/12"), ("DISCNUMBER", " 1 / 2")])
        try Tracks.write(music + "/Album/04.flac", tags: [("TITLE", "Four"), ("TRACKNUMBER", "4"), ("DISCNUMBER", "/2")])
        let (index, _) = try makeIndex()
        try scan(index)
        let db = try Database(path: tmp.file("library.db"))
        XCTAssertEqual(try tagIndex(db, .track).map(\.key.value), ["3", "4"])
        XCTAssertEqual(try tagIndex(db, .disc).map(\.key.value), ["1"], "a disc number without its number is none")
        XCTAssertEqual(try index.catalog.listDirectory("Album").songs.map { $0.tags.map(\.value) }, [["Three", "3", "1"], ["Four", "4"]])
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
    /// unavailable; mounted back, they are there again. Directories beside it whose names
    /// differ only in case or begin with its name stay available.
    func testAnUnmountedStickIsMarkedUnavailableAndComesBack() throws {
        try writeTree()
        let stick = tmp.file("stick")
        try Tracks.write(stick + "/Album/01.flac", tags: [("ALBUM", "On The Stick"), ("TITLE", "Portable")])
        try Tracks.write(music + "/USB/Other/01.flac", tags: [("ALBUM", "Beside The Stick"), ("TITLE", "Upper")])
        try Tracks.write(music + "/usb.old/01.flac", tags: [("ALBUM", "Beside The Stick"), ("TITLE", "Older")])
        try FileManager.default.createDirectory(atPath: music + "/usb", withIntermediateDirectories: true)
        guard run("/bin/mount", ["--bind", stick, music + "/usb"]) else { throw XCTSkip("mount --bind is not allowed here") }
        var mounted = true
        defer { if mounted { _ = run("/bin/umount", [music + "/usb"]) } }
        let (index, _) = try makeIndex(watch: true)
        XCTAssertEqual(try scan(index).indexed, 7)

        XCTAssertTrue(run("/bin/umount", [music + "/usb"]))
        mounted = false
        XCTAssertTrue(waitUntil(timeout: 120) { index.unavailable == ["usb"] }, "unavailable: \(index.unavailable)")
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.album), "On The Stick")], .exact), [])
        XCTAssertFalse(try values(index.catalog, .album).contains("On The Stick"))
        XCTAssertEqual(try paths(index.catalog, [TagFilter(.tag(.album), "Beside The Stick")], .exact), ["USB/Other/01.flac", "usb.old/01.flac"])
        XCTAssertEqual(try index.catalog.totals().songs, 6)
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

    /// A database of schema 5, which kept a row per track and per tag value, is brought to the
    /// current schema with every answer as it was and every file's time kept (a rescan reads
    /// nothing again); an older one is set aside and begun again.
    func testADatabaseOfSchema5IsMigratedAndAnOlderOneBegunAgain() throws {
        try writeTree()
        var (index, _) = try makeIndex()
        try scan(index)
        func answers(_ catalog: any LibraryCatalog) throws -> [[String]] {
            [try values(catalog, .albumArtist), try values(catalog, .album, groupedBy: [.albumArtist]),
             try paths(catalog, [TagFilter(.tag(.album), "Abbey Road")], .exact),
             try paths(catalog, [TagFilter(.tag(.title), "TOGETHER")], .substring),
             try songs(catalog, [], .exact).map { "\($0.path) \($0.modified) \($0.size) \($0.duration ?? -1) " +
                 $0.tags.map { "\($0.tag.rawValue)=\($0.value)" }.joined(separator: ";") }]
        }
        let before = try answers(index.catalog)
        XCTAssertEqual(before[4].count, 4)
        index.stop()
        try makeSchema5()
        let db = try Database(path: tmp.file("library.db"))
        XCTAssertEqual(try db.integer("SELECT count(*) FROM tracks"), 4)
        (index, _) = try makeIndex()
        XCTAssertEqual(try db.integer("PRAGMA user_version"), IndexDatabase.schemaVersion)
        XCTAssertEqual(try db.integer("SELECT count(*) FROM sqlite_master WHERE name IN ('tracks', 'tags', 'tag_values', 'value_text')"), 0)
        XCTAssertEqual(try answers(index.catalog), before)
        let rescan = try scan(index)
        XCTAssertEqual([rescan.unchanged, rescan.indexed, rescan.removed], [4, 0, 0])
        XCTAssertEqual(try answers(index.catalog), before)

        index.stop()
        try db.execute("PRAGMA user_version = 4")
        (index, _) = try makeIndex()
        let aside = try FileManager.default.contentsOfDirectory(atPath: tmp.path).filter { $0.hasPrefix("library.db.broken-") }
        XCTAssertEqual(aside.filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }.count, 1, "\(aside)")
        XCTAssertEqual(try scan(index).indexed, 4)
        XCTAssertEqual(try answers(index.catalog), before)
    }

    /// A directory's songs are one record and the tag index names the directories of each
    /// value: after a first scan and after every kind of change made by rescans, both are what
    /// a first scan of the same files into an empty library makes. A damaged record is read
    /// as no songs, and the next scan reads its directory's files again.
    func testRescansKeepTheRecordsAndTagIndexAFirstScanMakes() throws {
        try writeTree()
        let (index, _) = try makeIndex()
        try scan(index)
        let db = try Database(path: tmp.file("library.db"))
        var fresh = 0
        func check(_ what: String) throws {
            fresh += 1
            let other = try makeIndex(database: tmp.file("fresh\(fresh).db")).0
            try scan(other)
            let otherDB = try Database(path: tmp.file("fresh\(fresh).db"))
            XCTAssertEqual(try contents(db), try contents(otherDB), what)
            other.stop()
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
        let figures = try scan(index)
        XCTAssertEqual([figures.indexed, figures.unchanged, figures.removed], [2, 1, 2])
        try check("rescan")
        XCTAssertEqual(try index.catalog.listDirectory("Beatles/Abbey Road").songs.map { $0.tags.first { $0.tag == .title }?.value },
                       ["Come Together", "Something Else"])
        XCTAssertEqual(try index.catalog.listDirectory("Beatles/Let It Be").songs.map(\.path), ["Beatles/Let It Be/03.flac"])
        XCTAssertEqual(try index.catalog.listDirectory("Aretha/Lady Soul").songs, [])
        XCTAssertThrowsError(try index.catalog.listDirectory("Mix"))

        // One file scanned on its own, then gone and scanned on its own.
        try Tracks.write(music + "/Aretha/Lady Soul/01.flac", tags: [("TITLE", "Chain of Fools"), ("ALBUM", "Lady Soul")])
        try scan(index, "Aretha/Lady Soul/01.flac")
        try check("one file")
        XCTAssertEqual(try index.catalog.listDirectory("Aretha/Lady Soul").songs.map(\.path), ["Aretha/Lady Soul/01.flac"])
        try FileManager.default.removeItem(atPath: music + "/Beatles/Let It Be/03.flac")
        XCTAssertEqual(try scan(index, "Beatles/Let It Be/03.flac").removed, 1)
        try check("one file gone")

        // Damaged: no songs, until a scan reads the directory's files again.
        try db.execute("UPDATE directories SET listing = x'05789c00' WHERE path = 'Beatles/Abbey Road'")
        XCTAssertEqual(try index.catalog.listDirectory("Beatles/Abbey Road").songs, [])
        XCTAssertEqual(try scan(index).indexed, 2)
        try check("damaged record")
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

    /// Every directory's songs and every tag's values with their directories, by path.
    func contents(_ db: Database) throws -> [String] {
        var out: [String] = []
        try db.prepare("SELECT path, listing, songs, play_time FROM directories ORDER BY path").rows([]) { row in
            let songs = row.isNull(1) ? [] : row.withBlob(1) { ListingRecord.entries($0) } ?? []
            out.append("\(row.text(0) ?? "?"): \(row.integer(2)) \(row.real(3)) " + songs.map { entry in
                "\(entry.song.path) \(entry.modifiedNanoseconds) \(entry.song.tags.map { "\($0.tag.rawValue)=\($0.value)" })"
            }.joined(separator: ", "))
            return true
        }
        for tag in Tag.ordered {
            for entry in try tagIndex(db, tag) {
                out.append("\(tag.rawValue) \(entry.key.value) \(entry.key.sort): " + (try entry.directories.map { try directoryPath(db, $0) }).joined(separator: ", "))
            }
        }
        return out
    }

    /// The database as schema 5 had it: a row per track and per tag value of a track, a
    /// search index over the values, records of another format.
    func makeSchema5() throws {
        let db = try Database(path: tmp.file("library.db"))
        var directories: [(id: Int, entries: [ListingRecord.Entry])] = []
        try db.prepare("SELECT id, listing FROM directories WHERE listing IS NOT NULL").rows([]) { row in
            directories.append((row.integer(0), row.withBlob(1) { ListingRecord.entries($0) } ?? []))
            return true
        }
        try db.execute("""
            DROP TABLE tag_index;
            ALTER TABLE directories DROP COLUMN songs; ALTER TABLE directories DROP COLUMN play_time;
            UPDATE directories SET listing = x'00';
            CREATE TABLE tracks(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, directory INTEGER NOT NULL,
                size INTEGER NOT NULL, modified INTEGER NOT NULL, modified_ns INTEGER NOT NULL, rate INTEGER NOT NULL,
                bits INTEGER NOT NULL, channels INTEGER NOT NULL, duration REAL, track_total INTEGER, disc_total INTEGER,
                rg_track_gain REAL, rg_track_peak REAL, rg_album_gain REAL, rg_album_peak REAL,
                has_picture INTEGER NOT NULL, available INTEGER NOT NULL DEFAULT 1);
            CREATE INDEX tracks_directory ON tracks(directory);
            CREATE INDEX directories_unlisted ON directories(id) WHERE listing IS NULL;
            CREATE TRIGGER tracks_added AFTER INSERT ON tracks BEGIN
                UPDATE directories SET listing = NULL WHERE id = NEW.directory AND listing IS NOT NULL; END;
            CREATE TABLE tag_values(id INTEGER PRIMARY KEY, tag INTEGER NOT NULL, value TEXT NOT NULL);
            CREATE UNIQUE INDEX tag_values_key ON tag_values(tag, value);
            CREATE TABLE tags(track INTEGER NOT NULL, tag INTEGER NOT NULL, seq INTEGER NOT NULL, value INTEGER NOT NULL,
                sort TEXT, own INTEGER NOT NULL, PRIMARY KEY(track, tag, seq)) WITHOUT ROWID;
            CREATE INDEX tags_value ON tags(value, sort);
            CREATE VIEW searched_values AS SELECT id, value FROM tag_values WHERE tag IN (0, 2, 4, 6, 13, 15);
            CREATE VIRTUAL TABLE value_text USING fts5(
                value, content = 'searched_values', content_rowid = 'id', columnsize = 0, tokenize = 'trigram');
            PRAGMA user_version = 5
            """)
        let track = try db.prepare("""
            INSERT INTO tracks(path, directory, size, modified, modified_ns, rate, bits, channels, duration,
                rg_track_gain, rg_track_peak, rg_album_gain, rg_album_peak, has_picture)
            VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let value = try db.prepare("INSERT OR IGNORE INTO tag_values(tag, value) VALUES(?, ?)")
        let tagRow = try db.prepare("""
            INSERT INTO tags(track, tag, seq, value, sort, own)
            SELECT ?, ?, ?, id, ?, ? FROM tag_values WHERE tag = ? AND value = ?
            """)
        func optional(_ x: Double?) -> SQLValue { x.map { .real($0) } ?? .null }
        for (id, entries) in directories {
            for entry in entries {
                let song = entry.song
                try track.run(.text(song.path), .integer(id), .integer(song.size), .integer(song.modified),
                              .integer(entry.modifiedNanoseconds), .integer(song.sampleRate), .integer(song.bitsPerSample),
                              .integer(song.channels), optional(song.duration), optional(song.replayGain.trackGain),
                              optional(song.replayGain.trackPeak), optional(song.replayGain.albumGain),
                              optional(song.replayGain.albumPeak), .integer(song.hasPicture ? 1 : 0))
                let trackID = db.lastInsertRowID
                // Schema 5's rows: the file's values in its order, then AlbumArtist taken from Artist.
                var rows = song.tags.map { tag, value in
                    (tag: tag, value: value, sort: tag.sortTag.flatMap(song.first) ?? value, own: true)
                }
                if song.first(.albumArtist) == nil {
                    Tag.albumArtist.forEachValue(in: song.tags.map { (tag: $0.tag.index, value: $0.value) }) { value, sort in
                        rows.append((.albumArtist, value, sort ?? value, false))
                        return true
                    }
                }
                for (seq, row) in rows.enumerated() {
                    try value.run(.integer(row.tag.index), .text(row.value))
                    try tagRow.run(.integer(trackID), .integer(row.tag.index), .integer(seq),
                                   row.sort == row.value ? .null : .text(row.sort), .integer(row.own ? 1 : 0),
                                   .integer(row.tag.index), .text(row.value))
                }
            }
        }
        try db.execute("INSERT INTO value_text(value_text) VALUES('rebuild')")
    }

    func tagIndex(_ db: Database, _ tag: Tag) throws -> [TagIndex.Entry] {
        try TagIndex.read(tag, db.prepare(TagIndex.selectSQL), database: db.path)
    }

    func directoryPath(_ db: Database, _ id: Int) throws -> String {
        var path = "?"
        try db.prepare("SELECT path FROM directories WHERE id = ?").rows([.integer(id)]) { row in
            path = row.text(0) ?? "?"
            return false
        }
        return path
    }

}
