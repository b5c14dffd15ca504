import Foundation
import TestSupport
@testable import TonearmDecoding
import XCTest

final class APETests: XCTestCase {
    func testItemsMapOntoVorbisCommentNames() throws {
        for header in [false, true] {
            let bytes = APEBytes.tag(items: [
                ("Title", "Grüße ★"), ("Artist", "One\u{0}Two"), ("Album", "Album"), ("Album Artist", "Band"), ("Year", "2003"),
                ("Track", "3/12"), ("Disc", "1/2"), ("Genre", "Jazz"), ("Composer", "C"), ("REPLAYGAIN_TRACK_GAIN", "-7.01 dB"),
                ("replaygain_album_peak", "1.02"), ("MUSICBRAINZ_ALBUMID", "abc"), ("Empty", ""),
            ], header: header)
            XCTAssertEqual(APEv2.tagSize(footer: Array(bytes.suffix(32))), bytes.count)
            let tags = try APEv2.read(bytes, keepPictureData: false)
            XCTAssertEqual(tags.comments.map(\.name), [
                "TITLE", "ARTIST", "ARTIST", "ALBUM", "ALBUMARTIST", "DATE", "TRACKNUMBER", "DISCNUMBER", "GENRE", "COMPOSER",
                "REPLAYGAIN_TRACK_GAIN", "REPLAYGAIN_ALBUM_PEAK", "MUSICBRAINZ_ALBUMID",
            ], "header: \(header)")
            XCTAssertEqual(tags.comments.map(\.value), ["Grüße ★", "One", "Two", "Album", "Band", "2003", "3/12", "1/2", "Jazz", "C",
                                                        "-7.01 dB", "1.02", "abc"])
        }
    }

    func testCoverArtIsAPicture() throws {
        let png = TinyPNG.make(width: 8, height: 4)
        let bytes = APEBytes.tag(items: [("Title", "T")], binary: [("Cover Art (Front)", Array("cover.png".utf8) + [0] + png),
                                                                   ("Cover Art (Back)", Array("b.png".utf8) + [0] + png),
                                                                   ("Some Blob", [1, 2, 3])], header: true)
        let tags = try APEv2.read(bytes, keepPictureData: true)
        XCTAssertEqual(tags.pictures, [
            Picture(type: 3, mimeType: "image/png", description: "cover.png", width: 8, height: 4, byteCount: png.count, data: png),
            Picture(type: 4, mimeType: "image/png", description: "b.png", width: 8, height: 4, byteCount: png.count, data: png),
        ])
        XCTAssertNil(try APEv2.read(bytes, keepPictureData: false).pictures.first?.data)
        XCTAssertEqual(tags.comments.map(\.name), ["TITLE"])
    }

    func testBadSizesAreReportedOrEndTheWalk() throws {
        var bytes = APEBytes.tag(items: [("Title", "T"), ("Artist", "A")], header: false)
        XCTAssertNil(APEv2.tagSize(footer: Array(bytes.prefix(32))), "items are no footer")
        // The footer claims more than there is.
        let footerAt = bytes.count - 32
        bytes[footerAt + 12] = 0xFF
        bytes[footerAt + 13] = 0xFF
        XCTAssertThrowsError(try APEv2.read(bytes, keepPictureData: false)) { error in
            guard case .badMetadata? = (error as? DecodeError)?.reason else { return XCTFail("\(error)") }
        }
        // An item whose value runs past the items ends the walk; those before it are kept.
        var overrun = APEBytes.tag(items: [("Title", "T"), ("Artist", "A")], header: false)
        let second = 8 + "Title".count + 1 + 1
        overrun[second] = 0xFF
        XCTAssertEqual(try APEv2.read(overrun, keepPictureData: false).comments.map(\.name), ["TITLE"])
        // An item count far beyond the items stops at their end.
        var counted = APEBytes.tag(items: [("Title", "T")], header: false)
        counted[counted.count - 32 + 16] = 0xFF
        XCTAssertEqual(try APEv2.read(counted, keepPictureData: false).comments.map(\.value), ["T"])
    }

    /// The layout around raw audio: an APE tag before an ID3v1 tag, or at the very end; a
    /// claim past the audio's start is not trusted.
    func testTheTagsAroundTheAudioAreFound() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-ape")
        let audio = [UInt8](repeating: 0x55, count: 1000)
        let ape = APEBytes.tag(items: [("Title", "APE"), ("Year", "1999")], header: true)
        let v1 = ID3Bytes.v1(title: "v1", artist: "v1 artist")
        let front = ID3Bytes.tag(version: 3, frames: [ID3Bytes.frame23("TIT2", ID3Bytes.text(0, "ID3v2"))])
        let cases: [(String, [UInt8], [String], Range<Int>)] = [
            ("ape-v1", audio + ape + v1, ["APE", "1999", "v1 artist"], 0..<1000),
            ("ape", audio + ape, ["APE", "1999"], 0..<1000),
            ("v1", audio + v1, ["v1 artist", "v1"], 0..<1000),
            ("v2-ape-v1", front + audio + ape + v1, ["ID3v2", "1999"], front.count..<(front.count + 1000)),
            ("none", audio, [], 0..<1000),
        ]
        for (name, bytes, values, range) in cases {
            let file = directory.file(name)
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            let source = try FileSource(path: file)
            let layout = try TaggedAudio.read(source, keepPictureData: false)
            XCTAssertEqual(layout.tags.comments.map(\.value), values, name)
            XCTAssertEqual(Int(layout.audioStart)..<Int(layout.audioEnd), range, name)
            XCTAssertEqual(source.offset, layout.audioStart, name)
        }
        // A footer claiming more than the file holds: no tag, the bytes stay audio.
        var lying = ape
        lying[lying.count - 32 + 13] = 0x7F
        let file = directory.file("lying")
        try Data(audio + lying).write(to: URL(fileURLWithPath: file))
        let layout = try TaggedAudio.read(try FileSource(path: file), keepPictureData: false)
        XCTAssertEqual(layout.audioEnd, UInt64(audio.count + lying.count))
        XCTAssertTrue(layout.tags.comments.isEmpty)
    }
}
