import SystemPackage
import TonearmControlPlane
import TonearmImage
import TonearmSystem

/// The picture a linked player names by `mpris:artUrl`, read when the URL changes. Only a
/// `file:` URL of this machine is read (shairport-sync's cover cache, mpris-proxy's), and only
/// a regular file of at most 4 MB that is a JPEG or a PNG by its own bytes: whatever a player
/// names, nothing else leaves the daemon as a cover. Other schemes (`http:`, `https:`,
/// `data:`) are not fetched — the daemon opens no connection a player asks for — and the item
/// shows without a picture.
enum LinkedCover {
    static let largest = 4 << 20

    enum Outcome: Equatable {
        case picture(LinkedArtwork)
        /// Not a `file:` URL of this machine: left out, without a word.
        case notLocal
        /// A local file that cannot be shown, and why.
        case refused(String)
    }

    static func read(_ url: String) -> Outcome {
        guard let path = MPRISProperties.filePath(url) else { return .notLocal }
        let bytes: [UInt8]
        do throws(Errno) {
            bytes = try WholeFile.readRegular(path, limit: largest)
        } catch {
            let why = switch error {
            case .invalidArgument: "not a regular file"
            case .fileTooLarge: "larger than \(largest >> 20) MB"
            default: "\(error)"
            }
            return .refused("cannot read the cover \(path): \(why)")
        }
        return picture(bytes).map(Outcome.picture) ?? .refused("the cover \(path) is neither a JPEG nor a PNG")
    }

    /// JPEG or PNG bytes, by their signature, with a readable size.
    static func picture(_ bytes: [UInt8]) -> LinkedArtwork? {
        let mimeType: String
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) {
            mimeType = "image/jpeg"
        } else if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            mimeType = "image/png"
        } else {
            return nil
        }
        guard let size = CoverArt.dimensions(bytes) else { return nil }
        return LinkedArtwork(mimeType: mimeType, width: size.width, height: size.height, bytes: bytes)
    }
}
