import CPNG

/// PNG through libpng's simplified API, which reports errors in the `png_image` it is given (no
/// setjmp) and converts every colour type and bit depth to 8-bit sRGB itself.
enum PNGDecoder {
    /// What transparent parts of a cover are laid on: the dark grey the clients draw behind covers.
    static let background = png_color(red: 0x20, green: 0x20, blue: 0x20)

    /// Width and height from IHDR, which the PNG specification places right after the signature.
    static func header(_ bytes: [UInt8]) throws(ImageError) -> PictureHeader {
        guard bytes.count >= 24 else {
            throw ImageError("cannot read PNG cover header: \(bytes.count) bytes, too short for IHDR")
        }
        guard bytes[12...15].elementsEqual("IHDR".utf8) else {
            throw ImageError("cannot read PNG cover header: the first chunk is not IHDR")
        }
        func bigEndian(_ at: Int) -> UInt32 {
            bytes[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }
        let width = bigEndian(16), height = bigEndian(20)
        // The specification's limit; it also keeps the values inside Int on a 32-bit board.
        guard width <= UInt32(Int32.max), height <= UInt32(Int32.max) else {
            throw ImageError("cannot read PNG cover header: \(width)×\(height) is beyond PNG's limit of 2³¹−1")
        }
        return PictureHeader(format: .png, width: Int(width), height: Int(height))
    }

    /// The whole picture as RGB, alpha composited on `background`.
    static func decode(_ bytes: [UInt8], header: PictureHeader) throws(ImageError) -> RGBImage {
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        // libpng frees its state itself after an error or a finished read; this covers every other way out.
        defer { png_image_free(&image) }
        let result: Result<RGBImage, ImageError> = bytes.withUnsafeBufferPointer { png in
            guard png_image_begin_read_from_memory(&image, png.baseAddress, png.count) != 0 else {
                return .failure(failure(&image, header))
            }
            // The header was checked against the limits; libpng must agree with it.
            guard Int(image.width) == header.width, Int(image.height) == header.height else {
                return .failure(.decoding(.png, header.width, header.height, "libpng reads \(image.width)×\(image.height)"))
            }
            image.format = png_uint_32(PNG_FORMAT_RGB)
            // A 16-bit PNG without gAMA or sRGB is read as sRGB, as image editors write them, not as linear.
            image.flags |= png_uint_32(PNG_IMAGE_FLAG_16BIT_sRGB)
            var pixels = [UInt8](repeating: 0, count: header.width * header.height * 3)
            var background = PNGDecoder.background
            let status = pixels.withUnsafeMutableBytes { destination in
                png_image_finish_read(&image, &background, destination.baseAddress, 0, nil)
            }
            guard status != 0 else { return .failure(failure(&image, header)) }
            return .success(RGBImage(pixels: pixels, width: header.width, height: header.height))
        }
        return try result.get()
    }

    private static func failure(_ image: inout png_image, _ header: PictureHeader) -> ImageError {
        let message = withUnsafeBytes(of: &image.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return .decoding(.png, header.width, header.height, message.isEmpty ? "libpng gave no reason" : message)
    }
}
