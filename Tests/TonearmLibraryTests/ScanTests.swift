import Foundation
import TestSupport
import TonearmDecoding
import XCTest
@testable import TonearmLibrary

final class ScanTests: XCTestCase {
    /// One album directory with discs, track numbers, untagged files, other files and a subfolder.
    func testAlbumOrderByDiscThenTrackThenNaturalName() throws {
        let tmp = try TemporaryDirectory()
        let album = tmp.file("Album")
        try Tracks.write(album + "/a.flac", tags: [("DISCNUMBER", "1"), ("TRACKNUMBER", "10"), ("TITLE", "Ten")])
        try Tracks.write(album + "/b.flac", tags: [("DISCNUMBER", "2"), ("TRACKNUMBER", "1")])
        try Tracks.write(album + "/c.flac", tags: [("DISCNUMBER", "1/2"), ("TRACKNUMBER", "2")])
        try Tracks.write(album + "/d.flac", tags: [("DISCNUMBER", "1")])
        try Tracks.write(album + "/e.flac", tags: [("TRACKNUMBER", "3/12")])  // no disc: disc 1
        try Tracks.write(album + "/Track 10.flac")
        try Tracks.write(album + "/Track 2.flac")
        try Tracks.write(album + "/x.FLAC", tags: [("DISCNUMBER", "2"), ("TRACKNUMBER", "5")])
        try Tracks.write(album + "/Bonus/z.flac", tags: [("TRACKNUMBER", "1")])
        try writeBytes(Array("liner notes".utf8), to: album + "/notes.txt")
        try Tracks.write(album + "/song.flac.bak")

        let result = try MusicLibrary.tracks(at: [album], musicDirectory: nil)
        XCTAssertEqual(names(result.tracks),
                       ["c.flac", "e.flac", "a.flac", "d.flac", "Track 2.flac", "Track 10.flac", "b.flac", "x.FLAC", "z.flac"])
        XCTAssertEqual(result.skipped, [])
        let ten = try XCTUnwrap(result.tracks.first { $0.path.hasSuffix("/a.flac") })
        XCTAssertEqual(ten.metadata.title, "Ten")
        XCTAssertEqual(ten.metadata.discNumber, 1)
        XCTAssertEqual(ten.metadata.trackNumber, 10)
        XCTAssertEqual(try XCTUnwrap(ten.metadata.duration), 0.1, accuracy: 1e-9)
        XCTAssertEqual(ten.path, canonical(album) + "/a.flac")
    }

    /// A tree of albums plays album by album (never interleaved by track number), recursively,
    /// subfolders in natural order.
    func testRecursionKeepsAlbumsTogether() throws {
        let tmp = try TemporaryDirectory()
        for album in ["Artist/Album 10", "Artist/Album 9", "Other/Live/CD2", "Other/Live/CD1"] {
            for track in 1...2 {
                try Tracks.write(tmp.file("\(album)/\(track).flac"), tags: [("TRACKNUMBER", "\(track)")])
            }
        }
        let result = try MusicLibrary.tracks(at: [tmp.path], musicDirectory: nil)
        let relative = result.tracks.map { String($0.path.dropFirst(canonical(tmp.path).count + 1)) }
        XCTAssertEqual(relative, [
            "Artist/Album 9/1.flac", "Artist/Album 9/2.flac", "Artist/Album 10/1.flac", "Artist/Album 10/2.flac",
            "Other/Live/CD1/1.flac", "Other/Live/CD1/2.flac", "Other/Live/CD2/1.flac", "Other/Live/CD2/2.flac",
        ])
    }

    func testHiddenFilesAndDirectoriesArePassedOver() throws {
        let tmp = try TemporaryDirectory()
        try Tracks.write(tmp.file("music/seen.flac"))
        try Tracks.write(tmp.file("music/.hidden.flac"))
        try Tracks.write(tmp.file("music/.trash/deleted.flac"))
        let result = try MusicLibrary.tracks(at: [tmp.file("music")], musicDirectory: nil)
        XCTAssertEqual(names(result.tracks), ["seen.flac"])
        // Named explicitly, a hidden file is what the user asked for.
        XCTAssertEqual(names(try MusicLibrary.tracks(at: [tmp.file("music/.hidden.flac")], musicDirectory: nil).tracks),
                       [".hidden.flac"])
    }

    func testBrokenFLACFilesInADirectoryAreSkippedAndReported() throws {
        let tmp = try TemporaryDirectory()
        try Tracks.write(tmp.file("album/01.flac"))
        try writeBytes(Array("not audio at all".utf8), to: tmp.file("album/02.flac"))
        try writeBytes([], to: tmp.file("album/03.flac"))
        try writeBytes([0x89, 0x50, 0x4E, 0x47], to: tmp.file("album/cover.png"))
        let result = try MusicLibrary.tracks(at: [tmp.file("album")], musicDirectory: nil)
        XCTAssertEqual(names(result.tracks), ["01.flac"])
        let root = canonical(tmp.file("album"))
        XCTAssertEqual(result.skipped, [
            SkippedFile(path: root + "/02.flac", reason: "not a FLAC file (no 'fLaC' stream marker)"),
            SkippedFile(path: root + "/03.flac", reason: "empty file"),
        ])
        XCTAssertEqual(result.skipped[1].description, root + "/03.flac: empty file")
    }

    func testANamedFileMustBeFLACWhateverItsName() throws {
        let tmp = try TemporaryDirectory()
        try Tracks.write(tmp.file("song.audio"))
        try writeBytes(Array("text".utf8), to: tmp.file("readme.flac"))
        XCTAssertEqual(names(try MusicLibrary.tracks(at: [tmp.file("song.audio")], musicDirectory: nil).tracks),
                       ["song.audio"])
        let error = libraryError { () throws(LibraryError) in
            try MusicLibrary.tracks(at: [tmp.file("readme.flac")], musicDirectory: nil)
        }
        XCTAssertEqual(error, .notPlayable(tmp.file("readme.flac"), cause: "not a FLAC file (no 'fLaC' stream marker)"))
        XCTAssertEqual(error?.description, "'\(tmp.file("readme.flac"))' cannot be played: not a FLAC file (no 'fLaC' stream marker)")
    }

    func testAFIFONamedLikeFLACNeverBlocksTheScan() throws {
        let tmp = try TemporaryDirectory()
        try Tracks.write(tmp.file("album/01.flac"))
        XCTAssertEqual(mkfifo(tmp.file("album/02.flac"), 0o644), 0)
        XCTAssertEqual(names(try MusicLibrary.tracks(at: [tmp.file("album")], musicDirectory: nil).tracks), ["01.flac"])
        XCTAssertEqual(
            libraryError { () throws(LibraryError) in try MusicLibrary.tracks(at: [tmp.file("album/02.flac")], musicDirectory: nil) },
            .notPlayable(tmp.file("album/02.flac"), cause: "not a regular file or directory"))
    }

    func testSymbolicLinkLoopsEnd() throws {
        let tmp = try TemporaryDirectory()
        try Tracks.write(tmp.file("music/Loop/a.flac"))
        try symlink(tmp.file("music/Loop/self"), to: ".")
        try symlink(tmp.file("music/Loop/up"), to: "..")
        try symlink(tmp.file("music/Loop/again"), to: tmp.file("music/Loop"))
        try symlink(tmp.file("music/Loop/dangling.flac"), to: tmp.file("nowhere.flac"))
        // Two links that point at each other: realpath fails with ELOOP.
        try symlink(tmp.file("music/Loop/ping.flac"), to: "pong.flac")
        try symlink(tmp.file("music/Loop/pong.flac"), to: "ping.flac")
        let started = Date()
        let result = try MusicLibrary.tracks(at: [tmp.file("music/Loop")], musicDirectory: tmp.file("music"))
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        XCTAssertEqual(names(result.tracks), ["a.flac"])
        XCTAssertEqual(result.skipped.map { ($0.path as NSString).lastPathComponent }.sorted(),
                       ["dangling.flac", "ping.flac", "pong.flac"])
        XCTAssertTrue(result.skipped.allSatisfy { $0.reason.hasPrefix("broken symbolic link") }, "\(result.skipped)")
    }

    func testPathsKeepTheirOrderAndALinkedFileHasItsRealPath() throws {
        let tmp = try TemporaryDirectory()
        try Tracks.write(tmp.file("B/2.flac"))
        try Tracks.write(tmp.file("A/1.flac"))
        try symlink(tmp.file("A/linked.flac"), to: tmp.file("B/2.flac"))
        let result = try MusicLibrary.tracks(
            at: [tmp.file("B"), tmp.file("A/1.flac"), tmp.file("A/linked.flac")], musicDirectory: nil)
        XCTAssertEqual(result.tracks.map(\.path),
                       [canonical(tmp.file("B/2.flac")), canonical(tmp.file("A/1.flac")), canonical(tmp.file("B/2.flac"))])
    }

    /// A name that is not UTF-8 (Latin-1 "café") is carried by `FileName` and opens again.
    func testNamesThatAreNotUTF8AreListedAndOpen() throws {
        let tmp = try TemporaryDirectory()
        try Tracks.write(tmp.file("album/01.flac"))
        try Tracks.write(tmp.file("album/latin.flac"), tags: [("TITLE", "Café")])
        let raw: [CChar] = Array(tmp.file("album/caf").utf8CString.dropLast()) + [CChar(bitPattern: 0xE9)] + Array(".flac".utf8CString)
        XCTAssertEqual(rename(tmp.file("album/latin.flac"), raw), 0)
        let result = try MusicLibrary.tracks(at: [tmp.file("album")], musicDirectory: nil)
        XCTAssertEqual(result.skipped, [])
        XCTAssertEqual(names(result.tracks), ["01.flac", "caf\u{10FFE9}.flac"])
        let latin = try XCTUnwrap(result.tracks.last)
        XCTAssertEqual(latin.metadata.title, "Café")
        XCTAssertEqual(try FLACDecoder(path: latin.path).info.title, "Café")
    }

    func testMissingPath() throws {
        let tmp = try TemporaryDirectory()
        let missing = tmp.file("gone.flac")
        let error = libraryError { () throws(LibraryError) in try MusicLibrary.tracks(at: [missing], musicDirectory: nil) }
        XCTAssertEqual(error, .notFound(missing))
        XCTAssertEqual(error?.description, "'\(missing)': no such file or directory")
        XCTAssertEqual(libraryError { () throws(LibraryError) in try MusicLibrary.tracks(at: [""], musicDirectory: nil) },
                       .notFound(""))
    }

    func testNaturalOrder() {
        let sorted = ["track10", "Track 2", "track1", "a", "B", "track01b", "track01a", "10", "9", "010", "disc2-1", "disc10-1"]
            .sorted(by: naturalOrder)
        XCTAssertEqual(sorted, ["9", "010", "10", "a", "B", "disc2-1", "disc10-1", "Track 2", "track1", "track01a", "track01b", "track10"])
        XCTAssertTrue(naturalOrder("01", "1"))
        XCTAssertFalse(naturalOrder("1", "01"))
        XCTAssertFalse(naturalOrder("x", "x"))
    }
}
