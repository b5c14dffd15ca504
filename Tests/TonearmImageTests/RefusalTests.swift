import XCTest
@testable import TonearmImage

final class RefusalTests: XCTestCase {
    func testATruncatedJPEGIsRefusedWithTheLibrarysReason() throws {
        let cover = try Fixtures.cover3000.get()
        let truncated = Array(cover.prefix(cover.count / 2))
        assertThrowsImageError({ _ = try CoverArt.scaled(truncated, toFit: 300) },
                               containing: ["cannot decode JPEG cover (3000×3000): ", "Premature end of JPEG file"])
    }

    func testAJPEGCutInsideItsHeaderIsRefused() throws {
        let cover = try Fixtures.cover3000.get()
        assertThrowsImageError({ _ = try CoverArt.scaled(Array(cover.prefix(40)), toFit: 300) },
                               containing: ["cannot read JPEG cover header: the data ends before the frame header (40 bytes)"])
        assertThrowsImageError({ _ = try CoverArt.scaled([0xFF, 0xD8, 0xFF, 0xE0, 0x00], toFit: 300) },
                               containing: ["cannot read JPEG cover header: "])
    }

    func testACorruptOrTruncatedPNGIsRefusedWithTheLibrarysReason() throws {
        var png = Fixtures.quadrantsPNG(width: 100, height: 100)
        let truncated = Array(png.prefix(png.count / 2))
        assertThrowsImageError({ _ = try CoverArt.scaled(truncated, toFit: 50) }, containing: ["cannot decode PNG cover (100×100): "])
        // A flipped byte in the image data: the zlib stream's check no longer matches.
        png[png.count / 2] ^= 0xFF
        assertThrowsImageError({ _ = try CoverArt.scaled(png, toFit: 50) },
                               containing: ["cannot decode PNG cover (100×100): IDAT: incorrect data check"])
    }

    func testBytesThatAreNeitherJPEGNorPNGAreRefused() {
        var random = SplitMix64(state: 42)
        var bytes = (0..<1000).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        bytes[0] = 0x42
        assertThrowsImageError({ _ = try CoverArt.scaled(bytes, toFit: 300) },
                               containing: ["neither JPEG nor PNG", "1000 bytes starting 42 "])
        assertThrowsImageError({ _ = try CoverArt.scaled(Array("GIF89a".utf8), toFit: 300) },
                               containing: ["neither JPEG nor PNG (6 bytes starting 47 49 46 38 39 61)"])
        assertThrowsImageError({ _ = try CoverArt.scaled([], toFit: 300) }, containing: ["empty"])
    }

    func testASizeOutsideSixteenTo4096IsRefused() {
        let png = Fixtures.uniform(20, 20, Fixtures.red)
        for size in [Int.min, -1, 0, 15, 4097, 5000] {
            assertThrowsImageError({ _ = try CoverArt.scaled(png, toFit: size) }, containing: ["fit \(size) px", "16…4096"])
        }
        XCTAssertNoThrow(try CoverArt.scaled(png, toFit: 16))
        XCTAssertNoThrow(try CoverArt.scaled(png, toFit: 4096))
    }

    func testAPNGClaiming20000By20000IsRefusedBeforeDecoding() {
        // No image data at all: a decoder would have failed differently (and allocated 1.2 GB first).
        let huge = PNGWriter.headerOnly(width: 20000, height: 20000)
        assertThrowsImageError({ _ = try CoverArt.scaled(huge, toFit: 300) },
                               containing: ["cannot decode PNG cover (20000×20000): 400 megapixels, over the limit of 100"])
    }

    func testAJPEGClaimingOver100MegapixelsIsRefusedBeforeDecoding() throws {
        var jpeg = try Fixtures.quadrantsJPEG(width: 64, height: 64)
        // Rewrite the frame header (SOF0: marker, length, precision, height, width) to 20000×20000.
        let sof = try XCTUnwrap((0..<jpeg.count - 1).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 })
        jpeg.replaceSubrange(sof + 5..<sof + 9, with: [0x4E, 0x20, 0x4E, 0x20])
        let dimensions = try XCTUnwrap(CoverArt.dimensions(jpeg))
        XCTAssertEqual([dimensions.width, dimensions.height], [20000, 20000])
        assertThrowsImageError({ _ = try CoverArt.scaled(jpeg, toFit: 300) },
                               containing: ["cannot decode JPEG cover (20000×20000): 400 megapixels"])
    }

    func testAZeroDimensionIsRefusedBeforeDecoding() {
        assertThrowsImageError({ _ = try CoverArt.scaled(PNGWriter.headerOnly(width: 0, height: 100), toFit: 300) },
                               containing: ["cannot decode PNG cover (0×100): a zero dimension"])
    }
}
