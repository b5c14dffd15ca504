import Foundation
import TestSupport
import TonearmDecoding
import XCTest
@testable import TonearmLibrary

final class ArtworkTests: XCTestCase {
    private func scan(_ path: String) throws -> [LibraryTrack] {
        try MusicLibrary.tracks(at: [path], musicDirectory: nil).tracks
    }

    func testEmbeddedFrontCoverBeatsACoverFile() throws {
        let tmp = try TemporaryDirectory()
        // Written by the flac tool, as a user's files would be.
        try FileManager.default.createDirectory(atPath: tmp.file("album"), withIntermediateDirectories: true)
        try FLACFixture(frames: 4410, tags: [("TITLE", "With cover")], picture: FixturePicture(type: 3, width: 30, height: 20))
            .write(to: tmp.file("album/01.flac"))
        try writeBytes(TinyJPEG.make(width: 64, height: 64), to: tmp.file("album/cover.jpg"))
        let track = try XCTUnwrap(scan(tmp.file("album/01.flac")).first)
        let png = TinyPNG.make(width: 30, height: 20)
        XCTAssertEqual(track.artwork, .embedded(path: track.path, mimeType: "image/png", width: 30, height: 20,
                                                byteCount: png.count, fingerprint: fnv(png)))
        XCTAssertEqual(track.artwork?.id, "flac-" + hex(fnv(png)))
        XCTAssertEqual(try MusicLibrary.artworkBytes(try XCTUnwrap(track.artwork)), png)
    }

    func testTheFrontCoverIsPreferredOverOtherPictures() throws {
        let tmp = try TemporaryDirectory()
        try Tracks.write(tmp.file("a.flac"), pictures: [Tracks.png(10, 10, type: 4), Tracks.png(12, 8, type: 3)])
        try Tracks.write(tmp.file("b.flac"), pictures: [Tracks.png(10, 10, type: 4), Tracks.png(11, 11, type: 0)])
        let tracks = try scan(tmp.path)
        XCTAssertEqual(tracks.map { $0.artwork?.width }, [12, 10], "front cover, else the first picture")
        XCTAssertEqual(try MusicLibrary.artworkBytes(try XCTUnwrap(tracks[0].artwork)), TinyPNG.make(width: 12, height: 8))
    }

    func testAPictureBlockWithoutSizesGetsThemFromTheImage() throws {
        let tmp = try TemporaryDirectory()
        try Tracks.write(tmp.file("a.flac"), pictures: [Tracks.png(17, 9, blockSize: false)])
        let artwork = try XCTUnwrap(scan(tmp.file("a.flac")).first?.artwork)
        XCTAssertEqual(artwork.width, 17)
        XCTAssertEqual(artwork.height, 9)
        XCTAssertEqual(artwork.mimeType, "image/png")
    }

    func testCoverFilePrecedence() throws {
        let tmp = try TemporaryDirectory()
        let jpeg = TinyJPEG.make(width: 40, height: 24)
        let png = TinyPNG.make(width: 5, height: 6)
        // cover.jpg (any case) beats folder.jpg
        try Tracks.write(tmp.file("one/01.flac"))
        try writeBytes(jpeg, to: tmp.file("one/Cover.JPG"))
        try writeBytes(png, to: tmp.file("one/folder.jpg"))
        // cover.png beats folder.jpg
        try Tracks.write(tmp.file("two/01.flac"))
        try writeBytes(jpeg, to: tmp.file("two/Folder.jpg"))
        try writeBytes(png, to: tmp.file("two/cover.png"))
        // folder.jpg alone; a hidden or empty cover does not count
        try Tracks.write(tmp.file("three/01.flac"))
        try writeBytes(jpeg, to: tmp.file("three/.cover.jpg"))
        try writeBytes([], to: tmp.file("three/cover.jpg"))
        try writeBytes(jpeg, to: tmp.file("three/folder.jpg"))
        // nothing usable
        try Tracks.write(tmp.file("four/01.flac"))
        try writeBytes(jpeg, to: tmp.file("four/back.jpg"))
        // a cover.jpg that is no JPEG (nor PNG) is passed over
        try Tracks.write(tmp.file("five/01.flac"))
        try writeBytes(Array("GIF89a".utf8) + [UInt8](repeating: 0, count: 30), to: tmp.file("five/cover.jpg"))
        try writeBytes(png, to: tmp.file("five/folder.png"))

        let tracks = try ["one", "two", "three", "four", "five"].map { try XCTUnwrap(scan(tmp.file($0)).first) }
        XCTAssertEqual(tracks.map { $0.artwork.map { ($0.path as NSString).lastPathComponent } },
                       ["Cover.JPG", "cover.png", "folder.jpg", nil, "folder.png"])
        let one = try XCTUnwrap(tracks[0].artwork)
        guard case .file(let path, "image/jpeg", jpeg.count, 40?, 24?, _) = one else { return XCTFail("\(one)") }
        XCTAssertEqual(path, canonical(tmp.file("one/Cover.JPG")))
        XCTAssertEqual(try MusicLibrary.artworkBytes(one), jpeg)
        XCTAssertEqual(tracks[1].artwork?.mimeType, "image/png")
        XCTAssertEqual(tracks[1].artwork?.width, 5)
        XCTAssertTrue(try XCTUnwrap(tracks[1].artwork?.id).hasPrefix("file-"))
    }

    func testTracksSharingAnImageShareAnId() throws {
        let tmp = try TemporaryDirectory()
        try Tracks.write(tmp.file("embedded/01.flac"), pictures: [Tracks.png(20, 20)])
        try Tracks.write(tmp.file("embedded/02.flac"), tags: [("TITLE", "different tags, same picture")], pictures: [Tracks.png(20, 20)])
        try Tracks.write(tmp.file("embedded/03.flac"), pictures: [Tracks.png(21, 20)])
        try Tracks.write(tmp.file("files/01.flac"))
        try Tracks.write(tmp.file("files/02.flac"))
        try writeBytes(TinyJPEG.make(width: 8, height: 8), to: tmp.file("files/cover.jpg"))
        let tracks = try scan(tmp.path)
        let ids = tracks.map { $0.artwork?.id ?? "none" }
        XCTAssertEqual(ids[0], ids[1])
        XCTAssertNotEqual(ids[1], ids[2])
        XCTAssertEqual(ids[3], ids[4])
        XCTAssertNotEqual(ids[0], ids[3])
        XCTAssertTrue(ids.allSatisfy { $0.count == 21 }, "\(ids)")
        // A rescan gives the same ids.
        XCTAssertEqual(try scan(tmp.path).map { $0.artwork?.id ?? "none" }, ids)
    }

    func testAChangedCoverIsNotServedUnderItsOldId() throws {
        let tmp = try TemporaryDirectory()
        try Tracks.write(tmp.file("01.flac"))
        try writeBytes(TinyJPEG.make(width: 8, height: 8), to: tmp.file("cover.jpg"))
        let before = try XCTUnwrap(scan(tmp.path).first?.artwork)
        try writeBytes(TinyJPEG.make(width: 16, height: 8), to: tmp.file("cover.jpg"))
        let error = libraryError { () throws(LibraryError) in try MusicLibrary.artworkBytes(before) }
        XCTAssertEqual(error, .artworkUnavailable(canonical(tmp.file("cover.jpg")), cause: "the file changed since the library was scanned"))
        let after = try XCTUnwrap(scan(tmp.path).first?.artwork)
        XCTAssertNotEqual(after.id, before.id)
        XCTAssertEqual(try MusicLibrary.artworkBytes(after), TinyJPEG.make(width: 16, height: 8))

        try FileManager.default.removeItem(atPath: tmp.file("cover.jpg"))
        XCTAssertEqual(libraryError { () throws(LibraryError) in try MusicLibrary.artworkBytes(after) },
                       .artworkUnavailable(canonical(tmp.file("cover.jpg")), cause: "No such file or directory"))
    }

    func testACoverLinkLeadingOutsideTheMusicDirectoryIsIgnored() throws {
        let tmp = try TemporaryDirectory()
        try Tracks.write(tmp.file("music/01.flac"))
        try writeBytes(TinyJPEG.make(width: 8, height: 8), to: tmp.file("private/photo.jpg"))
        try symlink(tmp.file("music/cover.jpg"), to: tmp.file("private/photo.jpg"))
        XCTAssertNil(try MusicLibrary.tracks(at: ["01.flac"], musicDirectory: tmp.file("music")).tracks.first?.artwork)
        XCTAssertNotNil(try MusicLibrary.tracks(at: [tmp.file("music/01.flac")], musicDirectory: nil).tracks.first?.artwork)
    }

    // MARK: Image headers

    func testPNGDimensions() {
        XCTAssertEqual(ImageHeader.parse(TinyPNG.make(width: 37, height: 21)),
                       ImageHeader(mimeType: "image/png", width: 37, height: 21))
        XCTAssertEqual(ImageHeader.parse(Array(TinyPNG.make(width: 3, height: 3).prefix(20))), ImageHeader(mimeType: "image/png"))
    }

    func testJPEGDimensionsAfterOtherSegments() {
        let exif = TinyJPEG.segment(0xE1, Array("Exif\0\0".utf8) + [UInt8](repeating: 0xAB, count: 3000))
        let comment = TinyJPEG.segment(0xFE, Array("made for a test".utf8))
        let fill: [UInt8] = [0xFF, 0xFF]  // fill bytes may precede any marker
        let jpeg = TinyJPEG.make(width: 640, height: 480, extraSegments: [exif, fill + comment])
        XCTAssertEqual(ImageHeader.parse(jpeg), ImageHeader(mimeType: "image/jpeg", width: 640, height: 480))
        XCTAssertEqual(ImageHeader.parse(TinyJPEG.make(width: 1, height: 65535, progressive: true)),
                       ImageHeader(mimeType: "image/jpeg", width: 1, height: 65535))
        // Cut before the frame header: a JPEG, size unknown.
        XCTAssertEqual(ImageHeader.parse(Array(jpeg.prefix(1000))), ImageHeader(mimeType: "image/jpeg"))
    }

    func testNotAnImage() {
        XCTAssertNil(ImageHeader.parse(Array("GIF89a........".utf8)))
        XCTAssertNil(ImageHeader.parse([]))
        // A segment length below 2 would loop forever if trusted.
        XCTAssertEqual(ImageHeader.parse([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x00, 0, 0, 0]), ImageHeader(mimeType: "image/jpeg"))
    }

    func testTheTestJPEGIsAJPEG() throws {
        guard toolsAvailable("file") else { throw XCTSkip("no `file` tool") }
        let tmp = try TemporaryDirectory()
        try writeBytes(TinyJPEG.make(width: 40, height: 24), to: tmp.file("t.jpg"))
        let out = try runChecked("file", ["-b", tmp.file("t.jpg")]).stdout
        XCTAssertTrue(out.contains("JPEG image data") && out.contains("40x24"), out)
    }

    private func fnv(_ bytes: [UInt8]) -> UInt64 {
        var hash = FNV1a64()
        hash.combine(bytes)
        return hash.value
    }
}
