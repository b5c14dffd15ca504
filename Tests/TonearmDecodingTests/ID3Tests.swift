import Foundation
import TestSupport
@testable import TonearmDecoding
import XCTest

final class ID3Tests: XCTestCase {
    private typealias B = ID3Bytes

    private func read(_ bytes: [UInt8], keep: Bool = true) throws -> EmbeddedTags {
        try ID3v2.read(bytes, keepPictureData: keep)
    }

    private func values(_ tags: EmbeddedTags, _ name: String) -> [String] {
        tags.comments.filter { $0.name == name }.map(\.value)
    }

    private func badMetadata(_ call: () throws -> Void) -> String? {
        do {
            try call()
        } catch let error as DecodeError {
            if case .badMetadata(let why) = error.reason { return why }
            XCTFail("not bad metadata: \(error)")
        } catch {
            XCTFail("not a DecodeError: \(error)")
        }
        return nil
    }

    /// A text frame of each version: v2.2's three-letter id, v2.3's plain size, v2.4's syncsafe one.
    private func textFrame(_ version: UInt8, _ id: String, _ content: [UInt8]) -> [UInt8] {
        switch version {
        case 2: B.frame22(["TIT2": "TT2", "TPE1": "TP1", "TALB": "TAL", "TXXX": "TXX", "COMM": "COM", "TCON": "TCO", "TRCK": "TRK"][id]!, content)
        case 3: B.frame23(id, content)
        default: B.frame24(id, content)
        }
    }

    func testEveryEncodingInEveryVersion() throws {
        let samples: [(UInt8, String, Bool)] = [
            (0, "Grüße, Café", false), (1, "Grüße ★ 日本 𝄞", false), (1, "Grüße ★ 日本 𝄞", true),
            (2, "Grüße ★ 日本 𝄞", false), (3, "Grüße ★ 日本 𝄞", false),
        ]
        for version: UInt8 in [2, 3, 4] {
            for (encoding, text, bigEndianBOM) in samples {
                // With and without the terminator some writers add.
                for terminated in [false, true] {
                    let content = B.text(encoding, text, bigEndianBOM: bigEndianBOM) + (terminated ? B.nul(encoding) : [])
                    let tags = try read(B.tag(version: version, frames: [textFrame(version, "TIT2", content)], padding: 20))
                    XCTAssertEqual(values(tags, "TITLE"), [text], "v2.\(version) encoding \(encoding) BE BOM \(bigEndianBOM)")
                }
            }
        }
        // UTF-16 without a BOM is taken as little-endian.
        let noBOM: [UInt8] = [1] + Array("Hi".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        XCTAssertEqual(values(try read(B.tag(version: 3, frames: [B.frame23("TIT2", noBOM)])), "TITLE"), ["Hi"])
    }

    func testFramesMapOntoVorbisCommentNames() throws {
        let t = { (s: String) in B.text(3, s) }
        let tags = try read(B.tag(version: 4, frames: [
            B.frame24("TIT2", t("Title")), B.frame24("TPE1", t("Artist")), B.frame24("TALB", t("Album")),
            B.frame24("TPE2", t("Band")), B.frame24("TDRC", t("2020-01-02")), B.frame24("TRCK", t("3/12")),
            B.frame24("TPOS", t("1/2")), B.frame24("TCOM", t("Composer")),
            B.frame24("TXXX", t("replaygain_track_gain") + [0] + Array("-6.50 dB".utf8)),
            B.frame24("TXXX", t("REPLAYGAIN_ALBUM_PEAK") + [0] + Array("0.98".utf8)),
            B.frame24("TXXX", t("MusicBrainz Album Id") + [0] + Array("abc".utf8)),
            B.frame24("COMM", [3] + Array("eng".utf8) + [0] + Array("A comment".utf8)),
            B.frame24("COMM", [3] + Array("eng".utf8) + Array("iTunNORM".utf8) + [0] + Array(" 0000".utf8)),
            // MusicBrainz's recording id (as Picard writes it), then ids of other owners or not text: ignored.
            B.frame24("UFID", Array("http://musicbrainz.org".utf8) + [0] + Array("0f3b1c1e-6a4e-4b8e-9f43-3b9a0a6d6b21".utf8)),
            B.frame24("UFID", Array("http://example.com".utf8) + [0] + Array("abc".utf8)),
            B.frame24("UFID", Array("http://musicbrainz.org".utf8) + [0, 1, 2]),
        ]))
        // In MPD's order, whatever the frames' (what mpd lists for the same file); the other
        // frames after, in file order; MusicBrainz's recording id last.
        XCTAssertEqual(tags.comments.map(\.name), [
            "ARTIST", "ALBUMARTIST", "TITLE", "ALBUM", "TRACKNUMBER", "DATE", "COMPOSER", "COMMENT", "DISCNUMBER",
            "REPLAYGAIN_TRACK_GAIN", "REPLAYGAIN_ALBUM_PEAK", "MUSICBRAINZ ALBUM ID", "MUSICBRAINZ_TRACKID",
        ])
        XCTAssertEqual(tags.comments.map(\.value), [
            "Artist", "Band", "Title", "Album", "3/12", "2020-01-02", "Composer", "A comment", "1/2", "-6.50 dB", "0.98", "abc",
            "0f3b1c1e-6a4e-4b8e-9f43-3b9a0a6d6b21",
        ])
        let info = TrackInfo(path: "x", codec: "MP3", format: .init(sampleRate: 44100, channels: 2, bitsPerSample: 16),
                             totalFrames: nil, comments: tags.comments)
        XCTAssertEqual(info.replayGain.trackGain, -6.5)
        XCTAssertEqual(info.replayGain.albumPeak, 0.98)
        XCTAssertEqual(info.trackTotal, 12)
    }

    func testGenresByNumberAndByName() throws {
        for (raw, expected) in [("(17)", "Rock"), ("17", "Rock"), ("(17)Rock & Roll", "Rock & Roll"), ("(RX)", "Remix"),
                                ("(CR)", "Cover"), ("Shoegaze", "Shoegaze"), ("(9)(138)", "Metal"), ("((with parens)", "(with parens)"),
                                ("(999)", "(999)"), ("191", "Psybient")] {
            XCTAssertEqual(ID3v2.genreName(raw), expected, raw)
        }
        let tags = try read(B.tag(version: 4, frames: [B.frame24("TCON", B.text(0, "17") + [0] + Array("(32)".utf8) + [0] + Array("Trip".utf8))]))
        XCTAssertEqual(values(tags, "GENRE"), ["Rock", "Classical", "Trip"])
        let v22 = try read(B.tag(version: 2, frames: [B.frame22("TCO", B.text(0, "(8)"))]))
        XCTAssertEqual(values(v22, "GENRE"), ["Jazz"])
    }

    func testMultipleValuesAreSeparateComments() throws {
        for encoding: UInt8 in [0, 1, 2, 3] {
            let content = B.text(encoding, "One") + B.nul(encoding) + B.encoded(encoding, "Two") + B.nul(encoding)
                + B.encoded(encoding, "Three")
            let tags = try read(B.tag(version: 4, frames: [B.frame24("TPE1", content)]))
            XCTAssertEqual(values(tags, "ARTIST"), ["One", "Two", "Three"], "encoding \(encoding)")
        }
        let txxx = B.text(3, "CATALOG") + [0] + Array("A".utf8) + [0] + Array("B".utf8)
        XCTAssertEqual(values(try read(B.tag(version: 4, frames: [B.frame24("TXXX", txxx)])), "CATALOG"), ["A", "B"])
    }

    func testYearAndDayMonthMakeADateAndTDRCWins() throws {
        let v23 = try read(B.tag(version: 3, frames: [B.frame23("TYER", B.text(0, "2021")), B.frame23("TDAT", B.text(0, "2512"))]))
        XCTAssertEqual(values(v23, "DATE"), ["2021-12-25"])
        let yearOnly = try read(B.tag(version: 3, frames: [B.frame23("TYER", B.text(0, "1999"))]))
        XCTAssertEqual(values(yearOnly, "DATE"), ["1999"])
        let both = try read(B.tag(version: 4, frames: [B.frame24("TYER", B.text(0, "1999")), B.frame24("TDRC", B.text(0, "2001-02"))]))
        XCTAssertEqual(values(both, "DATE"), ["2001-02"])
        let v22 = try read(B.tag(version: 2, frames: [B.frame22("TYE", B.text(0, "1987"))]))
        XCTAssertEqual(values(v22, "DATE"), ["1987"])
    }

    func testPicturesOfEachVersionWithTheirSize() throws {
        let png = TinyPNG.make(width: 24, height: 16)
        let apicHead: [UInt8] = [3] + Array("image/png".utf8) + [0, 3]
        let apic: [UInt8] = apicHead + B.encoded(3, "Front ★") + [0] + png
        for version: UInt8 in [3, 4] {
            let frame = version == 3 ? B.frame23("APIC", apic) : B.frame24("APIC", apic)
            let tags = try read(B.tag(version: version, frames: [frame]))
            XCTAssertEqual(tags.pictures, [Picture(type: 3, mimeType: "image/png", description: "Front ★", width: 24, height: 16,
                                                   byteCount: png.count, data: png)])
            XCTAssertNil(try read(B.tag(version: version, frames: [frame]), keep: false).pictures.first?.data)
        }
        // v2.2 PIC: a three-letter format instead of a MIME type; UTF-16 description.
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x4A, 0x46, 0xFF, 0xC0, 0x00, 0x0B, 0x08, 0x01, 0x2C, 0x02, 0x58, 0x03, 0, 0, 0, 0xFF, 0xD9]
        let picHead: [UInt8] = [1] + Array("JPG".utf8) + [4]
        let pic: [UInt8] = picHead + B.encoded(1, "Back") + [0, 0] + jpeg
        let v22 = try read(B.tag(version: 2, frames: [B.frame22("PIC", pic)]))
        XCTAssertEqual(v22.pictures, [Picture(type: 4, mimeType: "image/jpeg", description: "Back", width: 600, height: 300,
                                              byteCount: jpeg.count, data: jpeg)])
        // An unknown image keeps its MIME type and no size.
        let odd = try read(B.tag(version: 3, frames: [B.frame23("APIC", [0] + Array("image/webp".utf8) + [0, 0, 0, 1, 2, 3])]))
        XCTAssertEqual(odd.pictures.first?.mimeType, "image/webp")
        XCTAssertEqual(odd.pictures.first?.width, 0)
        XCTAssertEqual(odd.pictures.first?.byteCount, 3)
    }

    func testUnsynchronisationOfWholeTagsAndOfFrames() throws {
        // Bytes that must be unsynchronised: 0xFF followed by 0x00 or ≥ 0xE0.
        let image: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0xFF, 0x00, 0xFF, 0xFF, 0x12]
        let apic = [0] + Array("image/jpeg".utf8) + [0, 3, 0] + image
        for version: UInt8 in [2, 3] {
            let frames = version == 2 ? B.frame22("PIC", [0] + Array("JPG".utf8) + [3, 0] + image) + B.frame22("TT2", B.text(0, "ÿ after"))
                : B.frame23("APIC", apic) + B.frame23("TIT2", B.text(0, "ÿ after"))
            let tags = try read(B.body(version: version, flags: 0x80, B.unsynchronised(frames)))
            XCTAssertEqual(tags.pictures.first?.data, image, "v2.\(version)")
            XCTAssertEqual(values(tags, "TITLE"), ["ÿ after"], "v2.\(version)")
        }
        // v2.4: per frame (flag 0x02), with a data length indicator (0x01) before the data.
        let unsynced = B.unsynchronised(apic)
        let frame = Array("APIC".utf8) + B.syncsafe(unsynced.count + 4) + [0, 0x03] + B.syncsafe(apic.count) + unsynced
        let tags = try read(B.tag(version: 4, frames: [frame, B.frame24("TIT2", B.text(3, "After"))]))
        XCTAssertEqual(tags.pictures.first?.data, image)
        XCTAssertEqual(values(tags, "TITLE"), ["After"])
        // v2.4 with the header's flag: every frame is unsynchronised.
        let all = try read(B.tag(version: 4, flags: 0x80, frames: [B.frame24("APIC", unsynced)]))
        XCTAssertEqual(all.pictures.first?.data, image)
    }

    func testExtendedHeadersAndAFooterAreSkipped() throws {
        let title = B.text(0, "Title")
        // 2.3: a 4-byte size that excludes itself, then 6 bytes (flags, padding size).
        let v23 = B.body(version: 3, flags: 0x40, [0, 0, 0, 6, 0, 0, 0, 0, 0, 0] + B.frame23("TIT2", title))
        XCTAssertEqual(values(try read(v23), "TITLE"), ["Title"])
        // 2.4: a syncsafe size that includes itself, a flag-byte count and the flags.
        let v24 = B.body(version: 4, flags: 0x40, B.syncsafe(6) + [1, 0] + B.frame24("TIT2", title))
        XCTAssertEqual(values(try read(v24), "TITLE"), ["Title"])
        // 2.4 footer: "3DI" after the frames; the tag's size counts it.
        var footed = B.body(version: 4, flags: 0x10, B.frame24("TIT2", title))
        footed += Array("3DI".utf8) + [4, 0, 0x10] + Array(footed[6..<10])
        XCTAssertEqual(ID3v2.tagSize(header: footed), footed.count)
        XCTAssertEqual(values(try read(footed), "TITLE"), ["Title"])
        // An extended header larger than the tag.
        let bad = B.body(version: 4, flags: 0x40, B.syncsafe(500) + [1, 0])
        XCTAssertNotNil(badMetadata { _ = try self.read(bad) })
    }

    func testCompressedAndEncryptedFramesAreSkipped() throws {
        let after = B.text(0, "Kept")
        let v23 = try read(B.tag(version: 3, frames: [
            B.frame23("TIT2", [0, 0, 0, 9] + [0x78, 0x9C, 1, 2, 3], flags: 0x80), B.frame23("TALB", [1] + [9, 9, 9], flags: 0x40),
            B.frame23("TPE1", [7] + after, flags: 0x20), B.frame23("TCOM", after),
        ]))
        XCTAssertEqual(v23.comments.map(\.name), ["ARTIST", "COMPOSER"], "a grouped frame is read, without its group byte")
        XCTAssertEqual(v23.comments.map(\.value), ["Kept", "Kept"])
        let v24 = try read(B.tag(version: 4, frames: [
            B.frame24("TIT2", B.syncsafe(9) + [0x78, 0x9C, 1, 2], flags: 0x09), B.frame24("TALB", [1, 9, 9], flags: 0x04),
            B.frame24("TPE1", [7] + after, flags: 0x40), B.frame24("TCOM", after),
        ]))
        XCTAssertEqual(v24.comments.map(\.name), ["ARTIST", "COMPOSER"])
    }

    func testBadSizesAreBoundedAndReported() throws {
        let frame = B.frame23("TIT2", B.text(0, "Title"))
        // The tag claims more than the bytes hold.
        var short = B.tag(version: 3, frames: [frame])
        short.removeLast(3)
        XCTAssertEqual(badMetadata { _ = try self.read(short) }?.hasPrefix("ID3v2 tag claims"), true)
        // A frame that runs past the tag ends the walk; the frames before it are kept.
        let overrun = Array("TALB".utf8) + B.bigEndian(10_000, 4) + [0, 0] + B.text(0, "x")
        let kept = try read(B.tag(version: 3, frames: [frame, overrun]))
        XCTAssertEqual(values(kept, "TITLE"), ["Title"])
        XCTAssertNil(kept.comments.first { $0.name == "ALBUM" })
        // Not a version there is; no header at all.
        XCTAssertNotNil(badMetadata { _ = try self.read(B.body(version: 5, [])) })
        XCTAssertNotNil(badMetadata { _ = try self.read(Array("ID4".utf8) + [3, 0, 0, 0, 0, 0, 0]) })
        XCTAssertNil(ID3v2.tagSize(header: Array("ID3".utf8)))
        // Empty frames, frames with only an encoding byte, and garbage ids end or skip quietly.
        let odd = try read(B.tag(version: 3, frames: [B.frame23("TIT2", []), B.frame23("TPE1", [0]), frame, Array("ab!d".utf8) + [0, 0, 0, 1, 0, 0, 9]]))
        XCTAssertEqual(odd.comments.map(\.name), ["TITLE"])
        // iTunes wrote 2.4 frame sizes as plain integers: 200 is 0x000000C8, not syncsafe.
        let long = String(repeating: "x", count: 199)
        let plain = Array("TIT2".utf8) + B.bigEndian(200, 4) + [0, 0] + B.text(0, long)
        let itunes = try read(B.tag(version: 4, frames: [plain, B.frame24("TPE1", B.text(0, "After"))]))
        XCTAssertEqual(values(itunes, "TITLE"), [long])
        XCTAssertEqual(values(itunes, "ARTIST"), ["After"])
    }

    /// From a source: a size beyond the file is an error, never an allocation of that size.
    func testTagsAtASourcesStartAreBounded() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-id3")
        let good = directory.file("good.tag")
        let tag = B.tag(version: 3, frames: [B.frame23("TIT2", B.text(0, "Title"))], padding: 100)
        try Data(tag + [1, 2, 3]).write(to: URL(fileURLWithPath: good))
        let source = try FileSource(path: good)
        let found = try XCTUnwrap(try ID3v2.read(atStartOf: source, keepPictureData: false))
        XCTAssertEqual(found.size, tag.count)
        XCTAssertEqual(source.offset, UInt64(tag.count), "left after the tag")
        XCTAssertEqual(values(found.tags, "TITLE"), ["Title"])

        let none = directory.file("none")
        try Data([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]).write(to: URL(fileURLWithPath: none))
        let plain = try FileSource(path: none)
        XCTAssertNil(try ID3v2.read(atStartOf: plain, keepPictureData: false))
        XCTAssertEqual(plain.offset, 0)

        let huge = directory.file("huge")
        try Data(Array("ID3".utf8) + [4, 0, 0, 0x7F, 0x7F, 0x7F, 0x7F] + [UInt8](repeating: 0, count: 1000)).write(to: URL(fileURLWithPath: huge))
        XCTAssertEqual(badMetadata { _ = try ID3v2.read(atStartOf: try FileSource(path: huge), keepPictureData: false) },
                       "ID3v2 tag claims 268435465 bytes, more than the 1010 there")
    }

    func testID3v1AndV11() throws {
        let v11 = ID3Bytes.v1(title: "Title", artist: "Artïst", album: "Album", year: "1987", comment: "Note", track: 7, genre: 17)
        let tags = try XCTUnwrap(ID3v1.read(v11))
        XCTAssertEqual(tags.comments.map(\.name), ["ARTIST", "TITLE", "ALBUM", "TRACKNUMBER", "DATE", "GENRE", "COMMENT"])
        XCTAssertEqual(tags.comments.map(\.value), ["Artïst", "Title", "Album", "7", "1987", "Rock", "Note"])
        // v1.0: a 30-byte comment, no track; genre 255 is none; trailing spaces trimmed.
        let v10 = ID3Bytes.v1(title: "Spaced   ", artist: "", comment: String(repeating: "c", count: 30))
        let plain = try XCTUnwrap(ID3v1.read(v10))
        XCTAssertEqual(plain.comments.map(\.name), ["TITLE", "COMMENT"])
        XCTAssertEqual(plain.comments.first?.value, "Spaced")
        XCTAssertNil(ID3v1.read(Array(v11.dropLast())))
        XCTAssertNil(ID3v1.read([UInt8](repeating: 0x41, count: 128)))
    }
}
