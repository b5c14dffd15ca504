/// A decoded picture: 8-bit RGB, rows top to bottom, no padding.
struct RGBImage: Sendable, Equatable {
    var pixels: [UInt8]
    var width: Int
    var height: Int
}

/// Area-averaging reduction: each output pixel is the mean of the source area it covers, partial
/// source pixels weighted by their share. Sharp enough for covers, no ringing, and it works row by
/// row with two accumulator rows beside the source and the result.
enum BoxScaler {
    /// `image` reduced to `width` × `height`, neither larger than the source's.
    static func reduce(_ image: RGBImage, toWidth width: Int, height: Int) -> RGBImage {
        precondition(width >= 1 && height >= 1 && width <= image.width && height <= image.height,
                     "the box scaler only reduces")
        if width == image.width, height == image.height { return image }
        let sourceWidth = image.width, sourceHeight = image.height
        // In units where a source pixel is `width` wide and a result pixel `sourceWidth`, both rows
        // are sourceWidth × width long: a source column falls into one result column or spills into the next.
        let columns = spans(from: sourceWidth, to: width)
        let divisor = UInt64(sourceWidth) * UInt64(sourceHeight)
        var row = [UInt64](repeating: 0, count: width * 3)
        var sum = [UInt64](repeating: 0, count: width * 3)
        var result = [UInt8](repeating: 0, count: width * height * 3)

        image.pixels.withUnsafeBufferPointer { source in
            result.withUnsafeMutableBufferPointer { result in
                row.withUnsafeMutableBufferPointer { row in
                    sum.withUnsafeMutableBufferPointer { sum in
                        for y in 0..<height {
                            let top = Int64(y) * Int64(sourceHeight), bottom = top + Int64(sourceHeight)
                            let first = Int(top / Int64(height)), last = Int((bottom - 1) / Int64(height))
                            sum.update(repeating: 0)
                            for sourceY in first...last {
                                let rowTop = Int64(sourceY) * Int64(height)
                                let weight = UInt64(min(rowTop + Int64(height), bottom) - max(rowTop, top))
                                sumColumns(source, row: sourceY, width: sourceWidth, columns: columns, into: row)
                                for i in 0..<row.count { sum[i] &+= row[i] &* weight }
                            }
                            let out = y * width * 3
                            for i in 0..<sum.count {
                                result[out + i] = UInt8((sum[i] + divisor / 2) / divisor)
                            }
                        }
                    }
                }
            }
        }
        return RGBImage(pixels: result, width: width, height: height)
    }

    /// Where one source column goes: its result column, its weight there, and what spills into the next.
    struct Span: Sendable {
        var column: Int
        var weight: UInt64
        var spill: UInt64
    }

    static func spans(from source: Int, to result: Int) -> [Span] {
        (0..<source).map { i in
            let start = Int64(i) * Int64(result), end = start + Int64(result)
            let column = start / Int64(source)
            let boundary = (column + 1) * Int64(source)
            return end <= boundary
                ? Span(column: Int(column), weight: UInt64(result), spill: 0)
                : Span(column: Int(column), weight: UInt64(boundary - start), spill: UInt64(end - boundary))
        }
    }

    /// One source row reduced horizontally into `row` (unnormalised sums).
    private static func sumColumns(_ source: UnsafeBufferPointer<UInt8>, row sourceY: Int, width: Int,
                                   columns: [Span], into row: UnsafeMutableBufferPointer<UInt64>) {
        row.update(repeating: 0)
        var p = sourceY * width * 3
        columns.withUnsafeBufferPointer { columns in
            for span in columns {
                let q = span.column * 3
                for c in 0..<3 {
                    let value = UInt64(source[p + c])
                    row[q + c] &+= value &* span.weight
                    if span.spill != 0 { row[q + 3 + c] &+= value &* span.spill }
                }
                p += 3
            }
        }
    }
}
