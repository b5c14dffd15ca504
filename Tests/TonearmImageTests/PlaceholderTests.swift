import XCTest
@testable import TonearmImage

final class PlaceholderTests: XCTestCase {
    func testPlaceholdersAreJPEGsOfTheSizeAsked() throws {
        for size in [16, 64, 512] {
            let placeholder = try CoverArt.placeholder(size: size)
            XCTAssertEqual(placeholder.mimeType, "image/jpeg")
            XCTAssertEqual([placeholder.width, placeholder.height], [size, size])
            XCTAssertEqual(Array(placeholder.bytes.prefix(3)), [0xFF, 0xD8, 0xFF])
            let dimensions = try XCTUnwrap(CoverArt.dimensions(placeholder.bytes))
            XCTAssertEqual([dimensions.width, dimensions.height], [size, size])
            let pixels = try CoverArt.pixels(of: placeholder.bytes)
            XCTAssertEqual([pixels.width, pixels.height], [size, size])
        }
    }

    func testTheSameSizeGivesTheSameBytes() throws {
        for size in [64, 512] {
            XCTAssertEqual(try CoverArt.placeholder(size: size), try CoverArt.placeholder(size: size))
        }
        XCTAssertNotEqual(try CoverArt.placeholder(size: 64).bytes, try CoverArt.placeholder(size: 65).bytes)
    }

    func testItIsADarkGradientWithARecordAndALabel() throws {
        let size = 512
        let pixels = try CoverArt.pixels(of: CoverArt.placeholder(size: size).bytes)
        func brightness(_ x: Int, _ y: Int) -> Int {
            let p = pixels.pixel(x, y)
            return Int(p.r) + Int(p.g) + Int(p.b)
        }
        // Dark everywhere but the label; lighter top left than bottom right.
        XCTAssertLessThan(brightness(4, 4), 3 * 70)
        XCTAssertGreaterThan(brightness(4, 4), brightness(size - 5, size - 5))
        // The record is darker than the background around it.
        XCTAssertLessThan(brightness(size / 2, size / 2 - Int(0.3 * Double(size))), brightness(size / 2, 6))
        // The label: warm and brighter than the rest.
        let label = pixels.pixel(size / 2 + size / 12, size / 2)
        XCTAssertGreaterThan(label.r, 120)
        XCTAssertGreaterThan(label.r, label.g)
        XCTAssertGreaterThan(label.g, label.b)
        // The spindle hole shows the background again.
        XCTAssertLessThan(brightness(size / 2, size / 2), Int(label.r) + Int(label.g) + Int(label.b) - 100)
    }

    func testThePlaceholderScalesLikeAnyCover() throws {
        let placeholder = try CoverArt.placeholder(size: 256)
        let scaled = try CoverArt.scaled(placeholder.bytes, toFit: 100)
        XCTAssertEqual([scaled.width, scaled.height], [100, 100])
    }
}
