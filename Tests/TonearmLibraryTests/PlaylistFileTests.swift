import Foundation
import TestSupport
import XCTest
@testable import TonearmLibrary

/// Playlist files given to `add`: m3u, extended m3u and pls, holding URLs and local paths.
final class PlaylistFileTests: XCTestCase {
    func testPlainAndExtendedM3U() {
        let text = "\u{FEFF}#EXTM3U\r\n#EXTINF:-1,Radio One - News\r\nhttp://radio.example/one\r\n\r\n"
            + "  relative/song.flac  \n#EXTINF:215, Artist - Song \n/abs/song.flac\n# a comment\nhttps://two.example/s.mp3\n"
        XCTAssertEqual(PlaylistDirectory.m3uEntries(Array(text.utf8)), [
            PlaylistEntry(location: "http://radio.example/one", title: "Radio One - News"),
            PlaylistEntry(location: "relative/song.flac"),
            PlaylistEntry(location: "/abs/song.flac", title: "Artist - Song"),
            PlaylistEntry(location: "https://two.example/s.mp3"),
        ])
        // An #EXTINF without a comma has no title; one is not carried past its entry.
        XCTAssertEqual(PlaylistDirectory.m3uEntries(Array("#EXTINF:10\na\nb\n".utf8)),
                       [PlaylistEntry(location: "a"), PlaylistEntry(location: "b")])
        XCTAssertEqual(PlaylistDirectory.m3uEntries([]), [])
    }

    func testPLSInTheOrderOfItsNumbers() {
        let text = "[playlist]\nNumberOfEntries=3\nFile2=http://b.example/\nTitle2=Bee FM\nfile1 = http://a.example/\n"
            + "Length1=-1\nFile3=local.flac\nVersion=2\ngarbage line\nFileX=ignored\n"
        XCTAssertEqual(PlaylistDirectory.plsEntries(Array(text.utf8)), [
            PlaylistEntry(location: "http://a.example/"),
            PlaylistEntry(location: "http://b.example/", title: "Bee FM"),
            PlaylistEntry(location: "local.flac"),
        ])
    }

    func testAFilesRelativeEntriesAreFoundBesideIt() throws {
        let tmp = try TemporaryDirectory()
        try "#EXTM3U\n#EXTINF:-1,Station\nhttp://radio.example/s\nsub/a.flac\n/else/b.flac\n"
            .write(toFile: tmp.file("list.m3u8"), atomically: true, encoding: .utf8)
        XCTAssertEqual(try PlaylistDirectory.entries(ofFile: tmp.file("list.m3u8")), [
            PlaylistEntry(location: "http://radio.example/s", title: "Station"),
            PlaylistEntry(location: tmp.path + "/sub/a.flac"),
            PlaylistEntry(location: "/else/b.flac"),
        ])
        XCTAssertTrue(PlaylistDirectory.isPlaylistFile("x/Y.PLS"))
        XCTAssertTrue(PlaylistDirectory.isPlaylistFile("a.m3u"))
        XCTAssertFalse(PlaylistDirectory.isPlaylistFile("http://radio.example/list.m3u"))
        XCTAssertFalse(PlaylistDirectory.isPlaylistFile("a.flac"))
        XCTAssertThrowsError(try PlaylistDirectory.entries(ofFile: tmp.file("missing.pls")))
    }
}
