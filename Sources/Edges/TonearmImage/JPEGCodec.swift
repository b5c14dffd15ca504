import CTurboJPEG

/// libjpeg-turbo through TurboJPEG: headers, shrink-on-load decoding and baseline encoding. Every
/// call makes its own handle and destroys it before returning, so nothing is shared between threads.
enum JPEGCodec {
    /// A fraction libjpeg-turbo can scale by while it decodes (the IDCT does the work, so a smaller
    /// factor is both faster and smaller in memory).
    struct ScalingFactor: Sendable, Equatable {
        var num: Int
        var denom: Int

        /// TJSCALED: the integer ceiling of `dimension` × num / denom, as libjpeg-turbo computes it.
        func scaled(_ dimension: Int) -> Int {
            Int((Int64(dimension) * Int64(num) + Int64(denom) - 1) / Int64(denom))
        }
    }

    /// The library's reducing factors (1/8, 1/4, 3/8, 1/2 … 1/1), smallest first. Enlarging ones are
    /// left out: a cover is never enlarged.
    static let reducingFactors: [ScalingFactor] = {
        var count: Int32 = 0
        guard let list = tjGetScalingFactors(&count) else { return [ScalingFactor(num: 1, denom: 1)] }
        let factors = UnsafeBufferPointer(start: list, count: Int(count))
            .map { ScalingFactor(num: Int($0.num), denom: Int($0.denom)) }
            .filter { $0.num <= $0.denom }
        return factors.sorted { $0.num * $1.denom < $1.num * $0.denom }
    }()

    /// The factor to decode at so that a width × height JPEG scaled to fit `size` × `size` never needs
    /// the whole picture: the smallest one whose result still covers the target on both sides.
    static func decodeScale(width: Int, height: Int, toFit size: Int) -> (num: Int, denom: Int) {
        let factor = decodeScale(width: width, height: height, covering: CoverArt.fitted(width: width, height: height, into: size))
        return (factor.num, factor.denom)
    }

    static func decodeScale(width: Int, height: Int, covering target: (width: Int, height: Int)) -> ScalingFactor {
        reducingFactors.first { $0.scaled(width) >= target.width && $0.scaled(height) >= target.height }
            ?? ScalingFactor(num: 1, denom: 1)
    }

    static func header(_ bytes: [UInt8]) throws(ImageError) -> PictureHeader {
        let handle = try decompressor()
        defer { tjDestroy(handle) }
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
        let status = bytes.withUnsafeBufferPointer {
            tjDecompressHeader3(handle, $0.baseAddress, UInt($0.count), &width, &height, &subsampling, &colorspace)
        }
        guard status == 0 else {
            throw ImageError("cannot read JPEG cover header: \(message(handle))")
        }
        // Data that ends before the frame header reads as a tables-only stream, which has no size.
        guard width > 0, height > 0 else {
            throw ImageError("cannot read JPEG cover header: the data ends before the frame header (\(bytes.count) bytes)")
        }
        let cmyk = colorspace == Int32(TJCS_CMYK.rawValue) || colorspace == Int32(TJCS_YCCK.rawValue)
        return PictureHeader(format: .jpeg, width: Int(width), height: Int(height), isCMYK: cmyk)
    }

    /// Decodes at `scale`, always to RGB. A warning (a truncated file, corrupt data) fails the decode:
    /// libjpeg-turbo would fill the rest with grey, and a half-grey cover is worse than the placeholder.
    static func decode(_ bytes: [UInt8], header: PictureHeader, scale: ScalingFactor) throws(ImageError) -> RGBImage {
        let handle = try decompressor()
        defer { tjDestroy(handle) }
        let width = scale.scaled(header.width), height = scale.scaled(header.height)
        // TurboJPEG will not turn CMYK into RGB, so those are converted here.
        let format = header.isCMYK ? TJPF_CMYK : TJPF_RGB
        let channels = header.isCMYK ? 4 : 3
        var pixels = [UInt8](repeating: 0, count: width * height * channels)
        let status = bytes.withUnsafeBufferPointer { jpeg in
            pixels.withUnsafeMutableBufferPointer { destination in
                tjDecompress2(handle, jpeg.baseAddress, UInt(jpeg.count), destination.baseAddress,
                              Int32(width), 0, Int32(height), Int32(format.rawValue), 0)
            }
        }
        guard status == 0 else {
            throw ImageError.decoding(.jpeg, header.width, header.height, message(handle))
        }
        if header.isCMYK { pixels = rgb(fromCMYK: pixels) }
        return RGBImage(pixels: pixels, width: width, height: height)
    }

    /// As libjpeg-turbo's own conversion: CMYK JPEGs store inverted ink (Adobe's convention), so
    /// red = C × K / 255 and so on.
    static func rgb(fromCMYK cmyk: [UInt8]) -> [UInt8] {
        let count = cmyk.count / 4
        return [UInt8](unsafeUninitializedCapacity: count * 3) { rgb, initialized in
            cmyk.withUnsafeBufferPointer { cmyk in
                for i in 0..<count {
                    let k = UInt32(cmyk[4 * i + 3])
                    for c in 0..<3 {
                        rgb[3 * i + c] = UInt8((UInt32(cmyk[4 * i + c]) * k + 127) / 255)
                    }
                }
            }
            initialized = count * 3
        }
    }

    /// Sample layouts the encoder accepts; covers are always written from RGB.
    enum Layout: Sendable {
        case rgb, gray, cmyk

        var pixelFormat: TJPF {
            switch self {
            case .rgb: TJPF_RGB
            case .gray: TJPF_GRAY
            case .cmyk: TJPF_CMYK
            }
        }

        var channels: Int {
            switch self {
            case .rgb: 3
            case .gray: 1
            case .cmyk: 4
            }
        }
    }

    /// A baseline JPEG, quality 85, 4:2:0: what every browser and head unit shows, at a third of the
    /// size of 4:4:4.
    static func encode(_ image: RGBImage) throws(ImageError) -> EncodedImage {
        let bytes = try encode(image.pixels, width: image.width, height: image.height, layout: .rgb)
        return EncodedImage(bytes: bytes, mimeType: "image/jpeg", width: image.width, height: image.height)
    }

    static func encode(_ pixels: [UInt8], width: Int, height: Int, layout: Layout) throws(ImageError) -> [UInt8] {
        precondition(pixels.count == width * height * layout.channels, "pixel buffer does not match its size")
        guard let handle = tjInitCompress() else {
            throw ImageError("cannot start the JPEG encoder: \(message(nil))")
        }
        defer { tjDestroy(handle) }
        var jpeg: UnsafeMutablePointer<UInt8>? = nil
        var jpegSize: UInt = 0
        // TurboJPEG allocates the output itself: its worst-case estimate is far larger than a cover.
        defer { tjFree(jpeg) }
        let subsampling = layout == .gray ? TJSAMP_GRAY : TJSAMP_420
        let status = pixels.withUnsafeBufferPointer {
            tjCompress2(handle, $0.baseAddress, Int32(width), 0, Int32(height), Int32(layout.pixelFormat.rawValue),
                        &jpeg, &jpegSize, Int32(subsampling.rawValue), 85, 0)
        }
        guard status == 0, let jpeg else {
            throw ImageError("cannot encode JPEG (\(width)×\(height)): \(message(handle))")
        }
        return Array(UnsafeBufferPointer(start: jpeg, count: Int(jpegSize)))
    }

    private static func decompressor() throws(ImageError) -> tjhandle {
        guard let handle = tjInitDecompress() else {
            throw ImageError("cannot start the JPEG decoder: \(message(nil))")
        }
        return handle
    }

    private static func message(_ handle: tjhandle?) -> String {
        guard let text = tjGetErrorStr2(handle) else { return "unknown TurboJPEG error" }
        return String(cString: text)
    }
}
