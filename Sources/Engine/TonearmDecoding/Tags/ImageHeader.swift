/// The format and pixel size of a PNG or JPEG, read from its header alone.
///
/// PNG keeps the size in IHDR, at a fixed offset. JPEG keeps it in the first SOFn segment,
/// after any APPn (JFIF, Exif with its thumbnail), DQT or DHT segments; each segment says its
/// length, so the walk reads a few bytes per segment and never the image data.
public struct ImageHeader: Equatable, Sendable {
    public var mimeType: String
    public var width: Int?
    public var height: Int?

    public init(mimeType: String, width: Int? = nil, height: Int? = nil) {
        self.mimeType = mimeType
        self.width = width
        self.height = height
    }

    /// `read(offset, count)` gives up to `count` bytes at `offset` (fewer at the end, none on
    /// a failure). Nil when the bytes are neither PNG nor JPEG.
    public static func parse(read: (_ offset: Int, _ count: Int) -> [UInt8]) -> ImageHeader? {
        let start = read(0, 24)
        if start.starts(with: pngSignature) {
            guard start.count == 24, start[12..<16].elementsEqual("IHDR".utf8) else {
                return ImageHeader(mimeType: "image/png")
            }
            return ImageHeader(mimeType: "image/png", width: bigEndian(start, 16, 4), height: bigEndian(start, 20, 4))
        }
        if start.starts(with: [0xFF, 0xD8]) {
            let size = jpegSize(read: read)
            return ImageHeader(mimeType: "image/jpeg", width: size?.width, height: size?.height)
        }
        return nil
    }

    public static func parse(_ bytes: [UInt8]) -> ImageHeader? { parse(bytes[...]) }

    public static func parse(_ bytes: ArraySlice<UInt8>) -> ImageHeader? {
        parse { offset, count in
            guard offset < bytes.count else { return [] }
            let start = bytes.startIndex + offset
            return Array(bytes[start..<min(bytes.endIndex, start + count)])
        }
    }

    private static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    private static func jpegSize(read: (Int, Int) -> [UInt8]) -> (width: Int, height: Int)? {
        var offset = 2
        // A real file reaches its SOF within a handful of segments; the bound stops a
        // crafted one from walking forever.
        for _ in 0..<256 {
            let head = read(offset, 2)
            guard head.count == 2, head[0] == 0xFF else { return nil }
            var marker = head[1]
            offset += 2
            while marker == 0xFF {  // fill bytes before a marker
                guard let next = read(offset, 1).first else { return nil }
                marker = next
                offset += 1
            }
            switch marker {
            case 0x01, 0xD0...0xD8:
                continue  // markers without a length
            case 0xD9, 0xDA:
                return nil  // end of image or start of scan: no frame header came first
            default:
                break
            }
            let segment = read(offset, 7)
            guard segment.count >= 2 else { return nil }
            let length = bigEndian(segment, 0, 2)
            guard length >= 2 else { return nil }
            // SOF0…SOF15 except DHT (C4), JPG (C8) and DAC (CC): precision, height, width.
            if (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker) {
                guard segment.count == 7 else { return nil }
                let height = bigEndian(segment, 3, 2), width = bigEndian(segment, 5, 2)
                // A height of 0 is defined later by a DNL segment; not worth chasing.
                return width > 0 && height > 0 ? (width, height) : nil
            }
            offset += length
        }
        return nil
    }

    private static func bigEndian(_ bytes: [UInt8], _ at: Int, _ count: Int) -> Int {
        bytes[at..<at + count].reduce(0) { $0 << 8 | Int($1) }
    }
}

extension ImageHeader {
    init(mimeType: String) { self.init(mimeType: mimeType, width: nil, height: nil) }
}
