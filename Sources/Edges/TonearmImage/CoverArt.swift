/// An encoded picture ready to send to a client.
public struct EncodedImage: Sendable, Equatable {
    public var bytes: [UInt8]
    /// "image/jpeg" for everything this module writes; the original's when passed through.
    public var mimeType: String
    public var width: Int
    public var height: Int

    public init(bytes: [UInt8], mimeType: String, width: Int, height: Int) {
        self.bytes = bytes
        self.mimeType = mimeType
        self.width = width
        self.height = height
    }
}

/// Cover art at the size a client asks for. Nothing is cached and nothing is shared between
/// calls, so any thread may call at any time; every buffer lives only for the call.
public enum CoverArt {
    /// The sizes a client may ask for: below 16 px nothing is recognisable, above 4096 px the
    /// decoded picture alone would outgrow the daemon's memory budget.
    static let sizes = 16...4096
    /// Refused before anything is decoded: a bigger picture is an attack or a mistake, not a cover.
    static let maximumPixels: Int64 = 100_000_000

    /// The picture (JPEG or PNG bytes, recognised by their signature, not by a MIME type) scaled to fit
    /// `size` × `size`, aspect kept, as a baseline JPEG (quality 85, 4:2:0). Never enlarged: a JPEG that
    /// already fits is returned as it is (bytes unchanged). A JPEG is decoded at the smallest
    /// libjpeg-turbo scaling factor whose result still covers the target (a 3000 px cover asked at
    /// 300 px is decoded at 375 px, never whole); the rest is an area-averaging reduction to the exact
    /// size. A PNG (any colour type, alpha composited on dark grey) is decoded whole, then reduced the
    /// same way. Grayscale and CMYK JPEGs come out as RGB.
    public static func scaled(_ bytes: [UInt8], toFit size: Int) throws(ImageError) -> EncodedImage {
        guard sizes.contains(size) else {
            throw ImageError("cannot scale cover to fit \(size) px: the size must be within \(sizes.lowerBound)…\(sizes.upperBound)")
        }
        let header = try PictureHeader.read(bytes)
        try header.checkDecodable()
        let target = fitted(width: header.width, height: header.height, into: size)
        if header.format == .jpeg, target.width == header.width, target.height == header.height {
            return EncodedImage(bytes: bytes, mimeType: "image/jpeg", width: header.width, height: header.height)
        }
        // Decoded and reduced in a call of its own so the decoded picture is freed before encoding.
        let reduced = try decode(bytes, header: header, reducedTo: target)
        return try JPEGCodec.encode(reduced)
    }

    /// Width and height from the header without decoding; nil when unreadable (neither JPEG nor
    /// PNG, a damaged header, or a zero dimension).
    public static func dimensions(_ bytes: [UInt8]) -> (width: Int, height: Int)? {
        guard let header = try? PictureHeader.read(bytes), header.width > 0, header.height > 0 else { return nil }
        return (header.width, header.height)
    }

    /// The largest size with the picture's aspect that fits `size` × `size`; the picture's own when it
    /// already fits (never enlarged). A side never rounds down to nothing.
    static func fitted(width: Int, height: Int, into size: Int) -> (width: Int, height: Int) {
        if width <= size, height <= size { return (width, height) }
        // 64-bit: on a 32-bit board a 100-megapixel side times the size would overflow Int.
        func side(_ short: Int, _ long: Int) -> Int {
            Int(max(1, (Int64(short) * Int64(size) + Int64(long) / 2) / Int64(long)))
        }
        return width >= height ? (size, side(height, width)) : (side(width, height), size)
    }

    /// The picture decoded to RGB and reduced to `target` (which it must cover). JPEGs are shrunk
    /// while decoding as far as the target allows.
    static func decode(_ bytes: [UInt8], header: PictureHeader, reducedTo target: (width: Int, height: Int)) throws(ImageError) -> RGBImage {
        let decoded: RGBImage
        switch header.format {
        case .jpeg:
            let scale = JPEGCodec.decodeScale(width: header.width, height: header.height, covering: target)
            decoded = try JPEGCodec.decode(bytes, header: header, scale: scale)
        case .png:
            decoded = try PNGDecoder.decode(bytes, header: header)
        }
        return BoxScaler.reduce(decoded, toWidth: target.width, height: target.height)
    }

    /// The whole picture as RGB pixels, for looking at what was written.
    static func pixels(of bytes: [UInt8]) throws(ImageError) -> RGBImage {
        let header = try PictureHeader.read(bytes)
        try header.checkDecodable()
        return try decode(bytes, header: header, reducedTo: (header.width, header.height))
    }
}

/// The formats a cover may come in.
enum PictureFormat: Sendable {
    case jpeg, png

    var name: String {
        switch self {
        case .jpeg: "JPEG"
        case .png: "PNG"
        }
    }

    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// By the signature alone: a MIME type from a tag or a file name is often wrong.
    init?(signatureOf bytes: [UInt8]) {
        if bytes.count >= 3, bytes[0] == 0xFF, bytes[1] == 0xD8, bytes[2] == 0xFF {
            self = .jpeg
        } else if bytes.starts(with: PictureFormat.pngSignature) {
            self = .png
        } else {
            return nil
        }
    }
}

/// What a picture's header says, read before anything is decoded.
struct PictureHeader: Sendable {
    var format: PictureFormat
    var width: Int
    var height: Int
    /// For a JPEG: whether it must be decoded as CMYK (TurboJPEG cannot convert CMYK to RGB).
    var isCMYK = false

    static func read(_ bytes: [UInt8]) throws(ImageError) -> PictureHeader {
        guard let format = PictureFormat(signatureOf: bytes) else {
            if bytes.isEmpty { throw ImageError("cannot read cover: it is empty (0 bytes)") }
            let start = bytes.prefix(8).map { byte in
                let hex = String(byte, radix: 16, uppercase: true)
                return hex.count == 1 ? "0" + hex : hex
            }
            throw ImageError("cannot read cover: neither JPEG nor PNG (\(bytes.count) bytes starting \(start.joined(separator: " ")))")
        }
        switch format {
        case .jpeg: return try JPEGCodec.header(bytes)
        case .png: return try PNGDecoder.header(bytes)
        }
    }

    /// Refuses what must never reach a decoder: a zero side, or more pixels than a cover can have.
    func checkDecodable() throws(ImageError) {
        if width == 0 || height == 0 {
            throw ImageError.decoding(format, width, height, "a zero dimension")
        }
        let pixels = Int64(width) * Int64(height)
        if pixels > CoverArt.maximumPixels {
            throw ImageError.decoding(format, width, height,
                                      "\(pixels / 1_000_000) megapixels, over the limit of \(CoverArt.maximumPixels / 1_000_000)")
        }
    }
}
