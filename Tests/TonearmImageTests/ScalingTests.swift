import XCTest
@testable import TonearmImage

final class ScalingTests: XCTestCase {
    func testAThreeThousandPixelJPEGAskedAt300ComesBackAt300WithItsColoursInPlace() throws {
        let cover = try Fixtures.cover3000.get()
        let clock = ContinuousClock()
        var scaled: EncodedImage?
        let elapsed = try clock.measure { scaled = try CoverArt.scaled(cover, toFit: 300) }
        print("3000×3000 JPEG (\(cover.count) bytes) → 300: \(elapsed) (debug build)")
        let image = try XCTUnwrap(scaled)
        XCTAssertEqual(image.mimeType, "image/jpeg")
        XCTAssertEqual([image.width, image.height], [300, 300])
        XCTAssertEqual(Array(image.bytes.prefix(3)), [0xFF, 0xD8, 0xFF])
        let dimensions = try XCTUnwrap(CoverArt.dimensions(image.bytes))
        XCTAssertEqual([dimensions.width, dimensions.height], [300, 300])
        let pixels = try CoverArt.pixels(of: image.bytes)
        XCTAssertEqual([pixels.width, pixels.height], [300, 300])
        assertQuadrants(pixels)
        // What it wrote scales again.
        let again = try CoverArt.scaled(image.bytes, toFit: 100)
        XCTAssertEqual([again.width, again.height], [100, 100])
        assertQuadrants(try CoverArt.pixels(of: again.bytes))
    }

    func testTheThreeThousandPixelCoverIsDecodedAtAnEighthNotWhole() throws {
        let cover = try Fixtures.cover3000.get()
        let scale = JPEGCodec.decodeScale(width: 3000, height: 3000, toFit: 300)
        XCTAssertEqual([scale.num, scale.denom], [1, 8])
        let header = try PictureHeader.read(cover)
        let decoded = try JPEGCodec.decode(cover, header: header, scale: .init(num: scale.num, denom: scale.denom))
        XCTAssertEqual([decoded.width, decoded.height], [375, 375])
        assertQuadrants(decoded)
    }

    func testANonSquareCoverKeepsItsAspect() throws {
        let landscape = try Fixtures.quadrantsJPEG(width: 3000, height: 1500)
        let wide = try CoverArt.scaled(landscape, toFit: 500)
        XCTAssertEqual([wide.width, wide.height], [500, 250])
        assertQuadrants(try CoverArt.pixels(of: wide.bytes))

        let portrait = Fixtures.quadrantsPNG(width: 600, height: 1500)
        let tall = try CoverArt.scaled(portrait, toFit: 500)
        XCTAssertEqual([tall.width, tall.height], [200, 500])
        assertQuadrants(try CoverArt.pixels(of: tall.bytes))
    }

    func testAJPEGThatAlreadyFitsIsReturnedByteForByte() throws {
        let jpeg = try Fixtures.quadrantsJPEG(width: 200, height: 100)
        for size in [200, 300, 4096] {
            let result = try CoverArt.scaled(jpeg, toFit: size)
            XCTAssertEqual(result, EncodedImage(bytes: jpeg, mimeType: "image/jpeg", width: 200, height: 100), "fit \(size)")
        }
        let smaller = try CoverArt.scaled(jpeg, toFit: 199)
        XCTAssertEqual([smaller.width, smaller.height], [199, 100])
        XCTAssertNotEqual(smaller.bytes, jpeg)
    }

    func testAPNGSmallerThanTheSizeIsReencodedAtItsOwnSize() throws {
        let png = Fixtures.quadrantsPNG(width: 120, height: 80)
        let result = try CoverArt.scaled(png, toFit: 512)
        XCTAssertEqual(result.mimeType, "image/jpeg")
        XCTAssertEqual([result.width, result.height], [120, 80])
        XCTAssertEqual(Array(result.bytes.prefix(3)), [0xFF, 0xD8, 0xFF])
        let pixels = try CoverArt.pixels(of: result.bytes)
        XCTAssertEqual([pixels.width, pixels.height], [120, 80])
        assertQuadrants(pixels)
    }

    func testAPNGLargerThanTheSizeIsReduced() throws {
        let result = try CoverArt.scaled(Fixtures.quadrantsPNG(width: 1000, height: 1000), toFit: 333)
        XCTAssertEqual([result.width, result.height], [333, 333])
        assertQuadrants(try CoverArt.pixels(of: result.bytes))
    }

    func testTransparencyIsCompositedOnDarkGrey() throws {
        // Left half: white but fully transparent; right half: opaque orange.
        let row = (0..<64).flatMap { x -> [UInt8] in x < 32 ? [255, 255, 255, 0] : [200, 100, 50, 255] }
        let png = PNGWriter.encode(width: 64, height: 64, colourType: .rgba) { _ in row }
        let pixels = try CoverArt.pixels(of: CoverArt.scaled(png, toFit: 64).bytes)
        assertColour(pixels, 12, 32, (0x20, 0x20, 0x20), tolerance: 4)
        assertColour(pixels, 52, 32, (200, 100, 50), tolerance: 8)

        let grayAlpha = PNGWriter.encode(width: 32, height: 32, colourType: .grayAlpha) { _ in
            (0..<32).flatMap { x -> [UInt8] in x < 16 ? [255, 0] : [180, 255] }
        }
        let gray = try CoverArt.pixels(of: CoverArt.scaled(grayAlpha, toFit: 32).bytes)
        assertColour(gray, 4, 16, (0x20, 0x20, 0x20), tolerance: 4)
        assertColour(gray, 28, 16, (180, 180, 180), tolerance: 4)
    }

    func testAGrayscalePNGComesOutAsGrey() throws {
        // A ramp, black on the left to white on the right.
        let ramp = PNGWriter.encode(width: 256, height: 16, colourType: .gray) { _ in (0..<256).map { UInt8($0) } }
        let result = try CoverArt.scaled(ramp, toFit: 256)
        XCTAssertEqual([result.width, result.height], [256, 16])
        let pixels = try CoverArt.pixels(of: result.bytes)
        for x in stride(from: 8, to: 256, by: 16) {
            let value = UInt8(x)
            assertColour(pixels, x, 8, (value, value, value), tolerance: 6)
        }
    }

    func testEveryPNGColourTypeAndSixteenBitDepthDecode() throws {
        let palette = PNGWriter.encode(width: 32, height: 32, colourType: .palette, palette: [(10, 20, 30), (40, 160, 200)]) { _ in
            [UInt8](repeating: 1, count: 32)
        }
        assertColour(try CoverArt.pixels(of: CoverArt.scaled(palette, toFit: 16).bytes), 8, 8, (40, 160, 200), tolerance: 6)

        let deep = PNGWriter.encode(width: 32, height: 32, colourType: .rgb, bitDepth: 16) { _ in
            (0..<32).flatMap { _ -> [UInt8] in [0x80, 0x80, 0x40, 0x40, 0x20, 0x20] }
        }
        assertColour(try CoverArt.pixels(of: CoverArt.scaled(deep, toFit: 16).bytes), 8, 8, (0x80, 0x40, 0x20), tolerance: 6)

        let rgba = PNGWriter.encode(width: 32, height: 32, colourType: .rgba) { _ in
            (0..<32).flatMap { _ -> [UInt8] in [30, 200, 90, 255] }
        }
        assertColour(try CoverArt.pixels(of: CoverArt.scaled(rgba, toFit: 16).bytes), 8, 8, (30, 200, 90), tolerance: 6)
    }

    func testGrayscaleAndCMYKJPEGsComeOutAsRGB() throws {
        let grayPixels = [UInt8]((0..<64 * 64).map { i in i % 64 < 32 ? 60 : 200 })
        let gray = try JPEGCodec.encode(grayPixels, width: 64, height: 64, layout: .gray)
        let fromGray = try CoverArt.pixels(of: CoverArt.scaled(gray, toFit: 32).bytes)
        XCTAssertEqual([fromGray.width, fromGray.height], [32, 32])
        assertColour(fromGray, 8, 16, (60, 60, 60), tolerance: 6)
        assertColour(fromGray, 24, 16, (200, 200, 200), tolerance: 6)

        // Inverted ink, as libjpeg-turbo and Adobe store it: (255, 0, 0, 255) is red, (0, 0, 255, 255) blue.
        let cmykPixels = (0..<64 * 64).flatMap { i -> [UInt8] in i % 64 < 32 ? [255, 0, 0, 255] : [0, 0, 255, 255] }
        let cmyk = try JPEGCodec.encode(cmykPixels, width: 64, height: 64, layout: .cmyk)
        XCTAssertTrue(try PictureHeader.read(cmyk).isCMYK)
        let fromCMYK = try CoverArt.pixels(of: CoverArt.scaled(cmyk, toFit: 48).bytes)
        XCTAssertEqual([fromCMYK.width, fromCMYK.height], [48, 48])
        assertColour(fromCMYK, 10, 24, (255, 0, 0), tolerance: 12)
        assertColour(fromCMYK, 38, 24, (0, 0, 255), tolerance: 12)
    }

    func testDimensionsComeFromTheHeader() throws {
        let jpeg = try Fixtures.quadrantsJPEG(width: 320, height: 200)
        let fromJPEG = try XCTUnwrap(CoverArt.dimensions(jpeg))
        XCTAssertEqual([fromJPEG.width, fromJPEG.height], [320, 200])
        // Only the header is needed.
        let fromPNG = try XCTUnwrap(CoverArt.dimensions(Array(PNGWriter.headerOnly(width: 20000, height: 7).prefix(33))))
        XCTAssertEqual([fromPNG.width, fromPNG.height], [20000, 7])
        XCTAssertNil(CoverArt.dimensions([]))
        XCTAssertNil(CoverArt.dimensions([0xFF, 0xD8, 0xFF]))
        XCTAssertNil(CoverArt.dimensions(Array(PNGWriter.headerOnly(width: 10, height: 10).prefix(20))))
        XCTAssertNil(CoverArt.dimensions(PNGWriter.headerOnly(width: 0, height: 10)))
        XCTAssertNil(CoverArt.dimensions(Array("GIF89a and more bytes than a header".utf8)))
    }
}
