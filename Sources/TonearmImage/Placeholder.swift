/// The cover for a track without one, drawn rather than shipped as a file: any size is as sharp as
/// the next, and the binary carries no picture. Calm on purpose, it sits among real covers.
enum Placeholder {
    private struct Colour {
        var r: Double, g: Double, b: Double

        func mixed(with other: Colour, _ amount: Double) -> Colour {
            Colour(r: r + (other.r - r) * amount, g: g + (other.g - g) * amount, b: b + (other.b - b) * amount)
        }
    }

    private static let gradientTop = Colour(r: 46, g: 50, b: 64)
    private static let gradientBottom = Colour(r: 17, g: 18, b: 25)
    private static let vinyl = Colour(r: 11, g: 11, b: 14)
    private static let groove = Colour(r: 38, g: 38, b: 46)
    private static let rim = Colour(r: 70, g: 72, b: 84)
    private static let label = Colour(r: 170, g: 92, b: 64)

    /// Everything is drawn from distances to the centre: coverage is how far an edge lies past the
    /// pixel's centre, clamped to one pixel, which anti-aliases every circle.
    static func draw(size: Int) -> RGBImage {
        let s = Double(size)
        let centre = s / 2
        let discRadius = 0.42 * s
        let labelRadius = 0.15 * s
        let holeRadius = max(0.012 * s, 0.75)
        let firstGroove = labelRadius + 0.035 * s
        let lastGroove = discRadius - 0.03 * s
        let grooveSpacing = max(0.022 * s, 3)
        let grooveCount = Int((lastGroove - firstGroove) / grooveSpacing) + 1
        let lineHalfWidth = max(0.0015 * s, 0.35)

        var pixels = [UInt8](repeating: 0, count: size * size * 3)
        pixels.withUnsafeMutableBufferPointer { pixels in
            for y in 0..<size {
                let dy = Double(y) + 0.5 - centre
                for x in 0..<size {
                    let dx = Double(x) + 0.5 - centre
                    let distance = (dx * dx + dy * dy).squareRoot()
                    // Diagonal gradient, lighter top left.
                    let background = gradientTop.mixed(with: gradientBottom, (Double(x) + Double(y) + 1) / (2 * s))
                    var colour = background.mixed(with: vinyl, inside(distance, discRadius))
                    colour = colour.mixed(with: rim, 0.5 * line(distance, discRadius - lineHalfWidth, lineHalfWidth))
                    let nearest = min(max(((distance - firstGroove) / grooveSpacing).rounded(), 0), Double(grooveCount - 1))
                    colour = colour.mixed(with: groove, 0.8 * line(distance, firstGroove + nearest * grooveSpacing, lineHalfWidth))
                    colour = colour.mixed(with: label, inside(distance, labelRadius))
                    colour = colour.mixed(with: background, inside(distance, holeRadius))
                    let p = (y * size + x) * 3
                    pixels[p] = UInt8(colour.r.rounded())
                    pixels[p + 1] = UInt8(colour.g.rounded())
                    pixels[p + 2] = UInt8(colour.b.rounded())
                }
            }
        }
        return RGBImage(pixels: pixels, width: size, height: size)
    }

    /// How much of a pixel at `distance` from the centre lies inside a circle of `radius`.
    private static func inside(_ distance: Double, _ radius: Double) -> Double {
        min(max(radius - distance + 0.5, 0), 1)
    }

    /// How much of a pixel at `distance` a ring of `radius` and half-width `halfWidth` covers.
    private static func line(_ distance: Double, _ radius: Double, _ halfWidth: Double) -> Double {
        min(max(halfWidth + 0.5 - abs(distance - radius), 0), 1)
    }
}
