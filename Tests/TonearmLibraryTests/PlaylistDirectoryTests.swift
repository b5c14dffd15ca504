import TestSupport
import TonearmLibrary
import XCTest

/// Stored playlists as files: written whole and atomically, read as mpd writes them, names
/// that cannot be file names refused.
final class PlaylistDirectoryTests: XCTestCase {
    func testWriteReadEditRenameAndRemove() throws {
        let tmp = try TemporaryDirectory(prefix: "tonearm-playlists")
        let playlists = PlaylistDirectory(path: tmp.path)
        try playlists.write("Road Trip", ["A/1.flac", "B/2.flac"], replacing: false)
        XCTAssertEqual(String(decoding: FileManager.default.contents(atPath: tmp.file("Road Trip.m3u")) ?? Data(), as: UTF8.self),
                       "A/1.flac\nB/2.flac\n", "one entry a line, as mpd writes them")
        XCTAssertEqual(try playlists.read("Road Trip").entries, ["A/1.flac", "B/2.flac"])
        XCTAssertThrowsError(try playlists.write("Road Trip", [], replacing: false)) {
            XCTAssertEqual($0 as? LibraryError, .playlistExists("Road Trip"))
        }
        try playlists.edit("Road Trip") { $0.append("C/3.flac") }
        XCTAssertEqual(try playlists.read("Road Trip").entries.count, 3)
        try playlists.rename("Road Trip", to: "Trip")
        XCTAssertThrowsError(try playlists.read("Road Trip")) { XCTAssertEqual($0 as? LibraryError, .noSuchPlaylist("Road Trip")) }
        try playlists.write("Other", ["x"])
        XCTAssertThrowsError(try playlists.rename("Trip", to: "Other")) { XCTAssertEqual($0 as? LibraryError, .playlistExists("Other")) }
        XCTAssertEqual(try playlists.all().map(\.name), ["Other", "Trip"])
        try playlists.remove("Trip")
        XCTAssertThrowsError(try playlists.remove("Trip")) { XCTAssertEqual($0 as? LibraryError, .noSuchPlaylist("Trip")) }
        let left = try FileManager.default.contentsOfDirectory(atPath: tmp.path)
        XCTAssertEqual(left, ["Other.m3u"], "no temporary file is left behind")
    }

    func testFilesWrittenByHandAreReadAsM3U() throws {
        let tmp = try TemporaryDirectory(prefix: "tonearm-playlists")
        try "#EXTM3U\r\n#EXTINF:1,x\r\n  A/1.flac  \r\n\r\nhttp://radio/x\n/abs/2.flac".write(toFile: tmp.file("hand.m3u"), atomically: true, encoding: .utf8)
        try "x".write(toFile: tmp.file(".hidden.m3u"), atomically: true, encoding: .utf8)
        try "x".write(toFile: tmp.file("notes.txt"), atomically: true, encoding: .utf8)
        let playlists = PlaylistDirectory(path: tmp.path)
        XCTAssertEqual(try playlists.all().map(\.name), ["hand"])
        XCTAssertEqual(try playlists.read("hand").entries, ["A/1.flac", "http://radio/x", "/abs/2.flac"])
    }

    func testNamesThatCannotBeFileNamesAreRefused() throws {
        let tmp = try TemporaryDirectory(prefix: "tonearm-playlists")
        let playlists = PlaylistDirectory(path: tmp.path)
        for name in ["", "a/b", "a\nb", ".hidden", String(repeating: "x", count: 251)] {
            XCTAssertThrowsError(try playlists.write(name, ["A/1.flac"]), name) { error in
                guard case .badPlaylistName = error as? LibraryError else { return XCTFail("\(error)") }
            }
        }
        XCTAssertThrowsError(try playlists.write("ok", ["two\nlines"]))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: tmp.path), [])
        let missing = PlaylistDirectory(path: tmp.file("nowhere"))
        XCTAssertThrowsError(try missing.write("x", [])) { error in
            guard case .playlistsUnavailable = error as? LibraryError else { return XCTFail("\(error)") }
        }
    }
}
