import SystemPackage
import TonearmControlPlane
import TonearmPlayer
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// The current track's cover as a file, for `mpris:artUrl` (MPRIS carries a URL, not bytes):
/// fetched through the control plane and written once per picture — every track of an album
/// with the same cover shares it — into a folder under the runtime directory; the cover before
/// it is removed, so the folder holds one picture at most. Used from the plug-in's task only.
struct CoverFiles {
    /// The folder; nil writes nothing (no `mpris:artUrl`).
    let directory: String?
    private var current: (id: String, path: String?)?

    /// The size desktops and head units show a cover at, at most: a 3000 px picture is not
    /// handed to them whole.
    static let size = 512

    init(directory: String?) {
        self.directory = directory
    }

    /// The `file://` URL of `artwork`'s file, written now if it is a new picture; nil when the
    /// item has none or it could not be written (said once in the log).
    mutating func url(for artwork: Artwork?, _ plane: any ControlPlane, log: PlugInLog) async -> String? {
        if let current, current.id == artwork?.id { return current.path.map(MPRISProperties.fileURL) }
        removeCurrent()
        guard let directory, let artwork else { return nil }
        var written: String?
        let result = await plane.send(.artwork(id: artwork.id, fitting: Self.size), from: CommandSource("MPRIS"))
        if case .artwork(_, let mimeType, let bytes) = result.payload, !bytes.isEmpty {
            let path = directory + "/" + Self.fileName(artwork.id, mimeType: mimeType)
            do throws(Errno) {
                try WholeFile.replace(path, with: bytes)
                written = path
            } catch {
                log.warning("MPRIS: cannot write the cover \(path): \(error); mpris:artUrl is left out")
            }
        } else {
            log.warning("MPRIS: the cover \(artwork.id) could not be read: \(result.failure?.message ?? "nothing came")")
        }
        current = (artwork.id, written)
        return written.map(MPRISProperties.fileURL)
    }

    /// Removes the file written last (the plug-in stops).
    mutating func removeCurrent() {
        if let path = current?.path { unlink(path) }
        current = nil
    }

    /// The id, kept to letters, digits, '-' and '_', and an extension from the MIME type.
    static func fileName(_ id: String, mimeType: String) -> String {
        let safe = String(id.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_")
                ? Character(scalar) : "_"
        })
        let ext = switch mimeType.lowercased() {
        case "image/jpeg", "image/jpg": "jpg"
        case "image/png": "png"
        case "image/gif": "gif"
        case "image/webp": "webp"
        default: "img"
        }
        return safe + "." + ext
    }
}
