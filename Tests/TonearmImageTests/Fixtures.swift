import XCTest
@testable import TonearmImage

typealias RGB = (r: UInt8, g: UInt8, b: UInt8)

/// Pictures the tests scale: PNGs written by `PNGWriter`, JPEGs made from them by the module itself
/// (a PNG is always re-encoded, so fitting it into its own size gives a JPEG of that size).
enum Fixtures {
    static let red: RGB = (220, 40, 40)
    static let blue: RGB = (40, 40, 220)
    static let green: RGB = (40, 180, 60)
    static let light: RGB = (230, 230, 230)

    /// Red top left, blue top right, green bottom left, light grey bottom right: a flip or a swap of
    /// axes shows.
    static func quadrantsPNG(width: Int, height: Int) -> [UInt8] {
        func row(_ left: RGB, _ right: RGB) -> [UInt8] {
            (0..<width).flatMap { x -> [UInt8] in
                let c = x < width / 2 ? left : right
                return [c.r, c.g, c.b]
            }
        }
        let top = row(red, blue), bottom = row(green, light)
        return PNGWriter.encode(width: width, height: height, colourType: .rgb) { y in y < height / 2 ? top : bottom }
    }

    static func quadrantsJPEG(width: Int, height: Int) throws -> [UInt8] {
        let jpeg = try CoverArt.scaled(quadrantsPNG(width: width, height: height), toFit: max(width, height))
        XCTAssertEqual(jpeg.mimeType, "image/jpeg")
        XCTAssertEqual([jpeg.width, jpeg.height], [width, height])
        return jpeg.bytes
    }

    /// The 3000 px cover several tests start from, made once.
    static let cover3000: Result<[UInt8], Error> = Result { try quadrantsJPEG(width: 3000, height: 3000) }

    static func uniform(_ width: Int, _ height: Int, _ colour: RGB) -> [UInt8] {
        let row = (0..<width).flatMap { _ in [colour.r, colour.g, colour.b] }
        return PNGWriter.encode(width: width, height: height, colourType: .rgb) { _ in row }
    }
}

/// Deterministic bytes that are neither JPEG nor PNG.
struct SplitMix64 {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension RGBImage {
    func pixel(_ x: Int, _ y: Int) -> RGB {
        let p = (y * width + x) * 3
        return (pixels[p], pixels[p + 1], pixels[p + 2])
    }
}

func assertColour(_ image: RGBImage, _ x: Int, _ y: Int, _ expected: RGB, tolerance: Int = 12,
                  file: StaticString = #filePath, line: UInt = #line) {
    let actual = image.pixel(x, y)
    let close = abs(Int(actual.r) - Int(expected.r)) <= tolerance
        && abs(Int(actual.g) - Int(expected.g)) <= tolerance
        && abs(Int(actual.b) - Int(expected.b)) <= tolerance
    XCTAssertTrue(close, "pixel (\(x), \(y)) is \(actual), expected \(expected) ± \(tolerance)", file: file, line: line)
}

/// The four quadrants' centres hold their colours.
func assertQuadrants(_ image: RGBImage, file: StaticString = #filePath, line: UInt = #line) {
    let w = image.width, h = image.height
    assertColour(image, w / 4, h / 4, Fixtures.red, file: file, line: line)
    assertColour(image, 3 * w / 4, h / 4, Fixtures.blue, file: file, line: line)
    assertColour(image, w / 4, 3 * h / 4, Fixtures.green, file: file, line: line)
    assertColour(image, 3 * w / 4, 3 * h / 4, Fixtures.light, file: file, line: line)
}

func assertThrowsImageError(_ body: () throws -> Void, containing parts: [String],
                            file: StaticString = #filePath, line: UInt = #line) {
    do {
        try body()
        XCTFail("no error; expected one containing \(parts)", file: file, line: line)
    } catch {
        guard let error = error as? ImageError else {
            return XCTFail("\(error) is not an ImageError", file: file, line: line)
        }
        for part in parts {
            XCTAssertTrue(error.description.contains(part), "\"\(error.description)\" does not contain \"\(part)\"",
                          file: file, line: line)
        }
    }
}
