import Foundation
import TestSupport
import TonearmControlPlane
import XCTest
@testable import TonearmLibrary

/// `list TAG` without filters: the values of the available tracks only, one each, in order.
final class ValueListTests: XCTestCase {
    private var tmp: TemporaryDirectory!
    private var music: String { tmp.file("music") }
    private var indexes: [MusicIndex] = []

    override func setUp() async throws {
        tmp = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
    }

    override func tearDown() {
        for index in indexes { index.stop() }
        indexes = []
    }

    private func run(_ program: String, _ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    private func values(_ catalog: any LibraryCatalog, _ tag: Tag, groupedBy groups: [Tag] = []) throws -> [String] {
        var out: [String] = []
        try catalog.values(of: tag, filters: [], groupedBy: groups) { out.append($0.joined(separator: "|")); return true }
        return out
    }

    private func scan(_ index: MusicIndex) {
        let job = index.scan(nil)
        XCTAssertTrue(waitUntil(timeout: 20) { index.progress.finishedJob >= job }, "scan \(job) did not finish")
    }

    func testTheTracksOfAStickThatIsOutAreLeftOut() throws {
        try Tracks.write(music + "/Home/01.flac", tags: [("ALBUMARTIST", "Zed"), ("ALBUM", "Home"), ("TITLE", "One")])
        try Tracks.write(music + "/Home/02.flac", tags: [("ALBUMARTIST", "Zed"), ("ALBUM", "Home"), ("TITLE", "Two")])
        let stick = tmp.file("stick")
        try Tracks.write(stick + "/Away/01.flac", tags: [("ARTIST", "Ann"), ("ALBUM", "Away"), ("TITLE", "Three")])
        try FileManager.default.createDirectory(atPath: music + "/usb", withIntermediateDirectories: true)
        guard run("/bin/mount", ["--bind", stick, music + "/usb"]) else { throw XCTSkip("mount --bind is not allowed here") }
        var mounted = true
        defer { if mounted { _ = run("/bin/umount", [music + "/usb"]) } }
        let index = try MusicIndex(.init(musicDirectory: music, databasePath: tmp.file("library.db"), watch: true),
                                   log: .silent, notify: {})
        indexes.append(index)
        scan(index)
        XCTAssertEqual(index.progress.indexed, 3)
        XCTAssertEqual(try values(index.catalog, .albumArtist), ["Ann", "Zed"], "AlbumArtist falls back to Artist")
        XCTAssertEqual(try values(index.catalog, .title), ["One", "Three", "Two"])
        XCTAssertEqual(try values(index.catalog, .album, groupedBy: [.albumArtist]), ["Ann|Away", "Zed|Home"])

        XCTAssertTrue(run("/bin/umount", [music + "/usb"]))
        mounted = false
        XCTAssertTrue(waitUntil(timeout: 10) { index.unavailable == ["usb"] }, "unavailable: \(index.unavailable)")
        XCTAssertEqual(try values(index.catalog, .albumArtist), ["Zed"])
        XCTAssertEqual(try values(index.catalog, .title), ["One", "Two"])
        XCTAssertEqual(try values(index.catalog, .album, groupedBy: [.albumArtist]), ["Zed|Home"])
    }
}
