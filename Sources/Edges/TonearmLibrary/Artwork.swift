import TonearmDecoding

#if canImport(Glibc)
import Glibc
#endif

/// Where a track's cover comes from. The scan records where and how big; the bytes are read
/// only when a client asks for them (`MusicLibrary.artworkBytes`).
public enum ArtworkSource: Sendable, Equatable {
    /// The file's own embedded picture: the front cover, else the first picture.
    /// `fingerprint` is the FNV-1a hash of the image bytes.
    case embedded(path: String, mimeType: String, width: Int, height: Int, byteCount: Int, fingerprint: UInt64)
    /// A cover image in the track's directory (`cover.jpg`, `folder.png`…), by its canonical
    /// path. `fingerprint` hashes that path, the size and the modification time.
    case file(path: String, mimeType: String, byteCount: Int, width: Int?, height: Int?, fingerprint: UInt64)

    /// Names the image, not the track: every track of an album that carries the same cover
    /// (embedded bytes alike, or one cover file) has the same id, so a client fetches and
    /// caches it once.
    public var id: String {
        switch self {
        case .embedded(_, _, _, _, _, let fingerprint): "flac-" + hex(fingerprint)
        case .file(_, _, _, _, _, let fingerprint): "file-" + hex(fingerprint)
        }
    }

    /// The id of a picture held in memory (a linked program's cover): `prefix`, a '-' and the
    /// FNV-1a hash of its bytes, as an embedded picture's is made.
    public static func id(ofPicture bytes: [UInt8], prefix: String) -> String {
        var hash = FNV1a64()
        hash.combine(bytes)
        return prefix + "-" + hex(hash.value)
    }

    /// The audio file, or the cover file.
    public var path: String {
        switch self {
        case .embedded(let path, _, _, _, _, _), .file(let path, _, _, _, _, _): path
        }
    }

    public var mimeType: String {
        switch self {
        case .embedded(_, let mimeType, _, _, _, _), .file(_, let mimeType, _, _, _, _): mimeType
        }
    }

    public var byteCount: Int {
        switch self {
        case .embedded(_, _, _, _, let byteCount, _), .file(_, _, let byteCount, _, _, _): byteCount
        }
    }

    /// Pixels, when known (0 or nil: neither the FLAC block nor the image header said).
    public var width: Int? {
        switch self {
        case .embedded(_, _, let width, _, _, _): width > 0 ? width : nil
        case .file(_, _, _, let width, _, _): width
        }
    }

    public var height: Int? {
        switch self {
        case .embedded(_, _, _, let height, _, _): height > 0 ? height : nil
        case .file(_, _, _, _, let height, _): height
        }
    }
}

enum Artwork {
    /// Cover file names, most preferred first; matched without regard to case.
    static let coverFileNames = ["cover.jpg", "cover.jpeg", "cover.png", "folder.jpg", "folder.jpeg", "folder.png"]

    /// Covers bigger than this are not offered: a client on the control socket would have to
    /// take them whole, and the daemon would have to hold them.
    static let largestCover = 16 << 20

    /// The picture to show, as `TrackInfo.preferredPicture` chooses it (front cover, else the
    /// first), leaving out pictures that are only a URL (MIME type "-->") or have no bytes.
    static func displayPicture(_ pictures: [Picture]) -> Picture? {
        let usable = pictures.filter { $0.mimeType != "-->" && $0.byteCount > 0 }
        return usable.first { $0.type == Picture.frontCoverType } ?? usable.first
    }

    /// The embedded cover of a file opened with `keepPictureData: true`.
    static func embedded(path: String, pictures: [Picture]) -> ArtworkSource? {
        guard let picture = displayPicture(pictures), let data = picture.data, !data.isEmpty else { return nil }
        var width = picture.width, height = picture.height
        var mimeType = picture.mimeType
        // Some taggers leave the PICTURE block's size (and even its MIME type) empty.
        if width == 0 || height == 0 || mimeType.isEmpty, let header = ImageHeader.parse(data) {
            width = width > 0 ? width : header.width ?? 0
            height = height > 0 ? height : header.height ?? 0
            if mimeType.isEmpty { mimeType = header.mimeType }
        }
        var hash = FNV1a64()
        hash.combine(data)
        return .embedded(path: path, mimeType: mimeType, width: width, height: height, byteCount: data.count,
                         fingerprint: hash.value)
    }

    /// The preferred cover file among a directory's names, or nil. `musicDirectory` (canonical)
    /// confines a cover that is a symbolic link.
    static func coverFile(directory: String, names: [String], musicDirectory: String?) -> ArtworkSource? {
        for wanted in coverFileNames {
            // Two names differing only in case: take the byte-wise first, for a stable choice.
            let matches = names.filter { $0.lowercased() == wanted }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            for name in matches {
                if let source = coverFile(at: joinPath(directory, name), musicDirectory: musicDirectory) {
                    return source
                }
            }
        }
        return nil
    }

    private static func coverFile(at path: String, musicDirectory: String?) -> ArtworkSource? {
        guard let real = try? FileSystem.realPath(path) else { return nil }
        if let musicDirectory, !isInside(real, musicDirectory) { return nil }
        guard let fd = try? FileSystem.openForReading(real) else { return nil }
        defer { close(fd) }
        guard let status = try? FileSystem.status(of: fd), status.kind == .regular,
              status.size > 0, status.size <= largestCover else { return nil }
        // Only images that are what a client expects (PNG or JPEG, whatever the name says).
        guard let header = ImageHeader.parse(read: { offset, count in
            (try? FileSystem.read(fd, offset: offset, count: count)) ?? []
        }) else { return nil }
        return .file(path: real, mimeType: header.mimeType, byteCount: status.size, width: header.width,
                     height: header.height, fingerprint: fileFingerprint(path: real, status: status))
    }

    static func fileFingerprint(path: String, status: FileStatus) -> UInt64 {
        var hash = FNV1a64()
        hash.combine(Array(path.utf8))
        for value in [status.size, status.modifiedSeconds, status.modifiedNanoseconds] {
            hash.combine(withUnsafeBytes(of: UInt64(truncatingIfNeeded: value).littleEndian) { Array($0) })
        }
        return hash.value
    }

    static func bytes(of source: ArtworkSource) throws(LibraryError) -> [UInt8] {
        switch source {
        case .embedded(let path, _, _, _, _, let fingerprint):
            let pictures: [Picture]
            do {
                pictures = try Decoders.open(path: path, keepPictureData: true).info.pictures
            } catch {
                throw .artworkUnavailable(path, cause: decodeCause(error))
            }
            guard let data = displayPicture(pictures)?.data, !data.isEmpty else {
                throw .artworkUnavailable(path, cause: "the file no longer has a picture")
            }
            var hash = FNV1a64()
            hash.combine(data)
            guard hash.value == fingerprint else {
                throw .artworkUnavailable(path, cause: "the picture changed since the library was scanned")
            }
            return data

        case .file(let path, _, _, _, _, let fingerprint):
            let fd: Int32
            do {
                fd = try FileSystem.openForReading(path)
            } catch {
                throw .artworkUnavailable(path, cause: error.text)
            }
            defer { close(fd) }
            do {
                let status = try FileSystem.status(of: fd)
                guard status.kind == .regular, fileFingerprint(path: path, status: status) == fingerprint else {
                    throw LibraryError.artworkUnavailable(path, cause: "the file changed since the library was scanned")
                }
                let data = try FileSystem.read(fd, offset: 0, count: status.size)
                guard data.count == status.size else {
                    throw LibraryError.artworkUnavailable(path, cause: "the file shrank while being read")
                }
                return data
            } catch let error as LibraryError {
                throw error
            } catch {
                throw .artworkUnavailable(path, cause: (error as? SystemError)?.text ?? "\(error)")
            }
        }
    }
}

/// FNV-1a, 64 bits: a fast, dependency-free hash, good enough to tell images apart (not
/// meant to resist anyone crafting collisions).
struct FNV1a64 {
    private(set) var value: UInt64 = 0xCBF2_9CE4_8422_2325

    mutating func combine(_ bytes: [UInt8]) {
        var h = value
        bytes.withUnsafeBufferPointer { buffer in
            for byte in buffer {
                h = (h ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            }
        }
        value = h
    }
}

/// Sixteen lower-case hex digits.
func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
}

/// A decoding error's cause, without the path its description starts with.
func decodeCause(_ error: DecodeError) -> String {
    let text = error.description
    let prefix = error.path + ": "
    return text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : text
}

func joinPath(_ directory: String, _ name: String) -> String {
    directory.hasSuffix("/") ? directory + name : directory + "/" + name
}

/// The directory part of a canonical absolute path.
func parentDirectory(_ path: String) -> String {
    guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
    let parent = String(path[..<slash])
    return parent.isEmpty ? "/" : parent
}
