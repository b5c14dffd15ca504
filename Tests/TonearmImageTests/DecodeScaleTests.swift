import XCTest
@testable import TonearmImage

final class DecodeScaleTests: XCTestCase {
    func testTheReducingFactorsAreLibjpegTurbosFromAnEighthToOne() {
        let factors = JPEGCodec.reducingFactors.map { [$0.num, $0.denom] }
        XCTAssertEqual(factors.first, [1, 8])
        XCTAssertEqual(factors.last, [1, 1])
        XCTAssertEqual(Array(factors.prefix(4)), [[1, 8], [1, 4], [3, 8], [1, 2]])
        XCTAssertEqual(factors.count, 8)
    }

    func testTheChosenFactorCoversTheTargetAndTheNextSmallerWouldNot() {
        let factors = JPEGCodec.reducingFactors
        let sides = Array(stride(from: 1, through: 6000, by: 17)) + [16, 300, 375, 1499, 2999, 3000, 3001, 4096, 65500]
        let others = [1, 7, 299, 300, 1000, 1500, 3000, 6000, 65500]
        let sizes = [16, 17, 75, 100, 299, 300, 500, 512, 1000, 2048, 4096]
        var checked = 0
        for width in sides {
            for height in others {
                for size in sizes {
                    for (w, h) in [(width, height), (height, width)] {
                        let target = CoverArt.fitted(width: w, height: h, into: size)
                        let chosen = JPEGCodec.decodeScale(width: w, height: h, toFit: size)
                        let factor = JPEGCodec.ScalingFactor(num: chosen.num, denom: chosen.denom)
                        let index = factors.firstIndex(of: factor)
                        XCTAssertNotNil(index, "\(w)×\(h) fit \(size): \(chosen) is not a libjpeg-turbo factor")
                        XCTAssertTrue(factor.scaled(w) >= target.width && factor.scaled(h) >= target.height,
                                      "\(w)×\(h) fit \(size): \(chosen) does not cover \(target)")
                        if let index, index > 0 {
                            let smaller = factors[index - 1]
                            XCTAssertFalse(smaller.scaled(w) >= target.width && smaller.scaled(h) >= target.height,
                                           "\(w)×\(h) fit \(size): \(smaller) would also cover \(target)")
                        }
                        checked += 1
                    }
                }
            }
        }
        XCTAssertGreaterThan(checked, 70_000)
    }

    func testKnownCases() {
        func scale(_ w: Int, _ h: Int, _ size: Int) -> [Int] {
            let s = JPEGCodec.decodeScale(width: w, height: h, toFit: size)
            return [s.num, s.denom]
        }
        XCTAssertEqual(scale(3000, 3000, 300), [1, 8], "375 px covers 300")
        XCTAssertEqual(scale(3000, 1500, 500), [1, 4], "750×375 covers 500×250; 375 would not")
        XCTAssertEqual(scale(1000, 1000, 500), [1, 2])
        XCTAssertEqual(scale(1000, 1000, 501), [5, 8])
        XCTAssertEqual(scale(600, 600, 599), [1, 1])
        XCTAssertEqual(scale(200, 100, 300), [1, 1], "fits already")
    }

    func testFittingKeepsTheAspectAndNeverEnlarges() {
        XCTAssertEqual(CoverArt.fitted(width: 3000, height: 1500, into: 500).height, 250)
        XCTAssertEqual(CoverArt.fitted(width: 1500, height: 3000, into: 500).width, 250)
        XCTAssertEqual(CoverArt.fitted(width: 100_000_000, height: 1, into: 300).height, 1)
        XCTAssertEqual(CoverArt.fitted(width: 120, height: 80, into: 512).width, 120)
        XCTAssertEqual(CoverArt.fitted(width: 999, height: 500, into: 300).height, 150)
    }
}

final class BoxScalerTests: XCTestCase {
    private func grey(_ values: [UInt8], width: Int) -> RGBImage {
        RGBImage(pixels: values.flatMap { [$0, $0, $0] }, width: width, height: values.count / width)
    }

    func testEachOutputPixelIsTheMeanOfTheAreaItCovers() {
        XCTAssertEqual(BoxScaler.reduce(grey([0, 100, 200, 44], width: 4), toWidth: 2, height: 1), grey([50, 122], width: 2))
        // Three into two: the middle pixel is shared half and half.
        XCTAssertEqual(BoxScaler.reduce(grey([0, 90, 180], width: 3), toWidth: 2, height: 1), grey([30, 150], width: 2))
        XCTAssertEqual(BoxScaler.reduce(grey([0, 90, 180], width: 1), toWidth: 1, height: 2), grey([30, 150], width: 1))
        XCTAssertEqual(BoxScaler.reduce(grey([10, 20, 30, 40], width: 2), toWidth: 1, height: 1), grey([25], width: 1))
    }

    func testAUniformPictureStaysUniformAtAnyRatio() {
        let source = RGBImage(pixels: (0..<(37 * 23)).flatMap { _ in [77, 140, 3] }, width: 37, height: 23)
        for (w, h) in [(36, 22), (19, 11), (7, 5), (1, 1), (37, 1)] {
            let reduced = BoxScaler.reduce(source, toWidth: w, height: h)
            XCTAssertEqual(reduced.pixels, (0..<(w * h)).flatMap { _ in [77, 140, 3] }, "\(w)×\(h)")
        }
    }

    func testTheSameSizeIsTheSamePicture() {
        let source = grey([1, 2, 3, 4, 5, 6], width: 3)
        XCTAssertEqual(BoxScaler.reduce(source, toWidth: 3, height: 2), source)
    }
}
