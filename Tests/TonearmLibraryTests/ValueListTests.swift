import Foundation
import TestSupport
import TonearmControlPlane
import XCTest
@testable import TonearmLibrary

/// `list TAG` without filters: the values of the available tracks only, one each, in order.
final class ValueListTests: IndexTestCase {
    func testTheTracksOfAStickThatIsOutAreLeftOut() throws {
        try Tracks.write(music + "/Home/01.flac", tags: [("ALBUMARTIST", "Zed"), ("ALBUM", "Home"), ("TITLE", "One")])
        try Tracks.write(music + "/Home/02.flac", tags: [("ALBUMARTIST", "Zed"), ("ALBUM", "Home"), ("TITLE", "Two")])
        let stick = tmp.file("stick")
        try Tracks.write(stick + "/Away/01.flac", tags: [("ARTIST", "Ann"), ("ALBUM", "Away"), ("TITLE", "Three")])
        try FileManager.default.createDirectory(atPath: music + "/usb", withIntermediateDirectories: true)
        guard run("/bin/mount", ["--bind", stick, music + "/usb"]) else { throw XCTSkip("mount --bind is not allowed here") }
        var mounted = true
        defer { if mounted { _ = run("/bin/umount", [music + "/usb"]) } }
        let (index, _) = try makeIndex(watch: true)
        try scan(index)
        XCTAssertEqual(index.progress.indexed, 3)
        XCTAssertEqual(try values(index.catalog, .albumArtist), ["Ann", "Zed"], "AlbumArtist falls back to Artist")
        XCTAssertEqual(try values(index.catalog, .title), ["One", "Three", "Two"])
        XCTAssertEqual(try values(index.catalog, .album, groupedBy: [.albumArtist]), ["Ann|Away", "Zed|Home"])

        XCTAssertTrue(run("/bin/umount", [music + "/usb"]))
        mounted = false
        XCTAssertTrue(waitUntil(timeout: 120) { index.unavailable == ["usb"] }, "unavailable: \(index.unavailable)")
        XCTAssertEqual(try values(index.catalog, .albumArtist), ["Zed"])
        XCTAssertEqual(try values(index.catalog, .title), ["One", "Two"])
        XCTAssertEqual(try values(index.catalog, .album, groupedBy: [.albumArtist]), ["Zed|Home"])
    }

    /// A list grouped by other tags and a count by one: the same whether a directory's songs
    /// all share their values (answered from the tag index's rows) or not (its songs read),
    /// as made here song by song from the listings.
    func testGroupedListsAndCountsAreTheSongsWhetherADirectoryIsWholeOrNot() throws {
        try Tracks.write(music + "/Whole/01.flac", tags: [("ALBUMARTIST", "A"), ("ALBUM", "X"), ("GENRE", "G"), ("TITLE", "1")])
        try Tracks.write(music + "/Whole/02.flac", tags: [("ALBUMARTIST", "A"), ("ALBUM", "X"), ("GENRE", "G"), ("TITLE", "2")])
        try Tracks.write(music + "/Mixed/01.flac", tags: [("ALBUMARTIST", "A"), ("ALBUM", "Y"), ("GENRE", "H"), ("TITLE", "3")])
        try Tracks.write(music + "/Mixed/02.flac", tags: [("ARTIST", "B"), ("ARTISTSORT", "Bee"), ("ALBUM", "Y"), ("TITLE", "4")])
        try Tracks.write(music + "/Mixed/03.flac", tags: [("ALBUM", "Z"), ("GENRE", "G"), ("TITLE", "5")])
        try Tracks.write(music + "/Two/01.flac", tags: [("ALBUMARTIST", "C"), ("ALBUMARTIST", "A"), ("ALBUM", "W"), ("TITLE", "6")])
        try Tracks.write(music + "/Two/02.flac", tags: [("ALBUMARTIST", "C"), ("ALBUMARTIST", "A"), ("ALBUM", "W"), ("TITLE", "7")])
        let (index, _) = try makeIndex()
        try scan(index)
        let catalog = index.catalog
        var songs: [LibrarySong] = []
        for directory in ["Whole", "Mixed", "Two"] { songs += try catalog.listDirectory(directory).songs }
        XCTAssertEqual(songs.count, 7)
        func rows(_ song: LibrarySong, _ tag: Tag) -> [(value: String, sort: String)] {
            var rows: [(value: String, sort: String)] = []
            tag.forEachValue(in: song.tags.map { (tag: $0.tag.index, value: $0.value) }) { value, sort in
                rows.append((value, sort ?? value))
                return true
            }
            return rows
        }
        // The list, made song by song: each combination with the least sort of each value.
        func expected(_ tag: Tag, _ groups: [Tag]) -> [String] {
            var sorts: [[String]: [String]] = [:]
            for song in songs {
                var combinations: [(values: [String], sorts: [String])] = [([], [])]
                for group in groups {
                    let these = rows(song, group).isEmpty ? [("", "")] : rows(song, group)
                    combinations = combinations.flatMap { c in these.map { (c.values + [$0.0], c.sorts + [$0.1]) } }
                }
                for c in combinations {
                    for value in rows(song, tag) {
                        let key = c.values + [value.value], new = c.sorts + [value.sort]
                        sorts[key] = sorts[key].map { zip($0, new).map { $0.precedes($1) ? $0 : $1 } } ?? new
                    }
                }
            }
            return sorts.sorted { a, b in
                for n in a.key.indices where a.value[n] != b.value[n] || a.key[n] != b.key[n] {
                    return a.value[n] != b.value[n] ? a.value[n].precedes(b.value[n]) : a.key[n].precedes(b.key[n])
                }
                return false
            }.map { $0.key.joined(separator: "|") }
        }
        for (tag, groups) in [(Tag.album, [Tag.albumArtist]), (.album, [.albumArtist, .genre]), (.title, [.genre]),
                              (.albumArtist, [.album]), (.genre, [.albumArtist])] {
            XCTAssertEqual(try values(catalog, tag, groupedBy: groups), expected(tag, groups), "\(tag) by \(groups)")
        }
        XCTAssertEqual(try values(catalog, .album, groupedBy: [.albumArtist]), ["|Z", "A|W", "A|X", "A|Y", "B|Y", "C|W"])
        for group in [Tag.albumArtist, .genre, .album] {
            var counts: [String: Int] = [:]
            for song in songs {
                for value in Set(rows(song, group).map(\.value)).union(rows(song, group).isEmpty ? [""] : []) { counts[value, default: 0] += 1 }
            }
            let answered = try catalog.count([], matching: .exact, groupedBy: group)
            XCTAssertEqual(Dictionary(uniqueKeysWithValues: answered.map { ($0.group ?? "?", $0.songs) }), counts, "count by \(group)")
            XCTAssertEqual(answered.map { $0.playTime }.reduce(0, +), Double(counts.values.reduce(0, +)) * (songs[0].duration ?? 0), accuracy: 1e-9)
        }
        XCTAssertEqual(try catalog.count([], matching: .exact, groupedBy: .genre).map { "\($0.group ?? "?")=\($0.songs)" }, ["=3", "G=3", "H=1"])
        XCTAssertEqual(try catalog.count([], matching: .exact, groupedBy: nil).map(\.songs), [7])
    }
}
