import Foundation
import TestSupport
import TonearmDecoding
import XCTest

final class VorbisCommentTests: XCTestCase {
    private func read(_ entries: [[UInt8]], keepPictureData: Bool = false) -> VorbisComments {
        var comments = VorbisComments(keepPictureData: keepPictureData)
        for entry in entries { entry.withUnsafeBufferPointer { comments.add($0) } }
        comments.finish()
        return comments
    }

    private func summary(_ p: Picture) -> String {
        "type \(p.type) \(p.mimeType) '\(p.description)' \(p.width)x\(p.height) \(p.byteCount) bytes"
    }

    private func entry(_ text: String) -> [UInt8] { Array(text.utf8) }

    private func pictureEntry(_ block: [UInt8]) -> [UInt8] {
        entry("METADATA_BLOCK_PICTURE=" + Data(block).base64EncodedString())
    }

    func testNamesAreUpperCasedAndValuesKeptInOrder() {
        let comments = read([entry("title=Ça va"), entry("Artist=A"), entry("ARTIST=B"), entry("empty="),
                             entry("no equals sign"), entry("DESCRIPTION=a=b")])
        XCTAssertEqual(comments.comments.map(\.name), ["TITLE", "ARTIST", "ARTIST", "EMPTY", "DESCRIPTION"])
        XCTAssertEqual(comments.comments.map(\.value), ["Ça va", "A", "B", "", "a=b"])
        XCTAssertEqual(comments.value("ARTIST"), "A", "the first of several")
        XCTAssertEqual(comments.malformedEntries, 1)
    }

    func testAPictureBlockBecomesAPicture() throws {
        let data: [UInt8] = Array(0..<200)
        let block = OggFixtures.pictureBlock(type: 4, mimeType: "image/jpeg", description: "Rückseite", width: 640,
                                             height: 480, data: data)
        let kept = read([pictureEntry(block), entry("TITLE=x")], keepPictureData: true)
        XCTAssertEqual(kept.comments.map(\.name), ["TITLE"], "the picture is not a comment")
        XCTAssertEqual(kept.pictures.map(summary), ["type 4 image/jpeg 'Rückseite' 640x480 200 bytes"])
        XCTAssertEqual(kept.pictures.first?.data, data)
        let light = read([pictureEntry(block)])
        XCTAssertEqual(light.pictures.first?.byteCount, 200)
        XCTAssertNil(light.pictures.first?.data, "bytes only when asked for")
        XCTAssertEqual(light.pictures.first?.description, "Rückseite")
    }

    func testPicturesWhoseLengthsLieAreDropped() {
        let data = [UInt8](repeating: 7, count: 64)
        let good = OggFixtures.pictureBlock(type: 3, mimeType: "image/png", description: "d", width: 1, height: 1, data: data)
        let mimeLengthAt = 4, descriptionLengthAt = 8 + 9, dataLengthAt = good.count - 64 - 4
        func lying(_ at: Int, _ value: UInt32) -> [UInt8] {
            var block = good
            block.replaceSubrange(at..<(at + 4), with: [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)])
            return block
        }
        let liars: [(String, [UInt8])] = [
            ("a 4 GB MIME type", lying(mimeLengthAt, 0xFFFF_FFFF)),
            ("a MIME type past the end", lying(mimeLengthAt, UInt32(good.count))),
            ("a 2 GB description", lying(descriptionLengthAt, 0x7FFF_FFFF)),
            ("a description past the end", lying(descriptionLengthAt, 100)),
            ("2 GB of data", lying(dataLengthAt, 0x7FFF_FFF0)),
            ("one byte more data than there is", lying(dataLengthAt, 65)),
            ("a block cut short", Array(good.prefix(30))),
            ("no block at all", []),
        ]
        for (lie, block) in liars {
            for keep in [false, true] {
                let comments = read([pictureEntry(block)], keepPictureData: keep)
                XCTAssertEqual(comments.pictures.count, 0, lie)
                XCTAssertEqual(comments.malformedEntries, 1, lie)
            }
        }
        // Less data than there is: the data is what the block says.
        let shorter = read([pictureEntry(lying(dataLengthAt, 10))], keepPictureData: true)
        XCTAssertEqual(shorter.pictures.first?.data, [UInt8](repeating: 7, count: 10))
    }

    func testBase64ThatIsNotIsRefused() {
        let block = OggFixtures.pictureBlock(type: 3, mimeType: "image/png", description: "", width: 1, height: 1, data: [1, 2, 3])
        var text = Data(block).base64EncodedString()
        text.insert("*", at: text.index(text.startIndex, offsetBy: 10))
        XCTAssertEqual(read([entry("METADATA_BLOCK_PICTURE=" + text)]).pictures.count, 0)
        XCTAssertEqual(read([entry("METADATA_BLOCK_PICTURE=====")]).pictures.count, 0)
        // Unpadded base64 is read as well.
        let unpadded = Data(block).base64EncodedString().replacingOccurrences(of: "=", with: "")
        XCTAssertEqual(read([entry("METADATA_BLOCK_PICTURE=" + unpadded)], keepPictureData: true).pictures.first?.data, [1, 2, 3])
    }

    func testOldCoverArtIsAFrontCoverWithItsMIMEType() {
        let image = TinyPNG.make(width: 4, height: 4)
        let comments = read([entry("COVERART=" + Data(image).base64EncodedString()), entry("COVERARTMIME=image/png")],
                            keepPictureData: true)
        XCTAssertEqual(comments.pictures.map(summary), ["type 3 image/png '' 0x0 \(image.count) bytes"])
        XCTAssertEqual(comments.pictures.first?.data, image)
        XCTAssertEqual(comments.comments.map(\.name), ["COVERARTMIME"])
        XCTAssertEqual(read([entry("COVERART=" + Data(image).base64EncodedString())]).pictures.first?.byteCount, image.count)
    }
}
