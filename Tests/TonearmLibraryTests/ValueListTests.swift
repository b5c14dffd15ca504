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
}
