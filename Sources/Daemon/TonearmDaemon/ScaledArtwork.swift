import SystemPackage
import TonearmControlPlane
import TonearmImage
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// Covers scaled to the sizes clients ask for, made once per picture and size and kept as files
/// under the runtime directory (in memory on a board, but not in the daemon's), at most
/// `limit` of them: the oldest made goes first. Scaling runs here, off the daemon's actor, so
/// a 3000 px cover being shrunk holds up no command.
actor ScaledArtwork {
    private let directory: String
    private let limit: Int
    /// Files made, oldest first.
    private var made: [String] = []

    init(directory: String, limit: Int = 256) {
        self.directory = directory
        self.limit = limit
        // What an earlier run left is not counted: start empty.
        if let entries = opendir(directory) {
            while let entry = readdir(entries) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name.hasSuffix(".jpg") || name.hasSuffix(".partial") { unlink(directory + "/" + name) }
            }
            closedir(entries)
        }
    }

    /// The picture `id` scaled to fit `size`; `original` reads its bytes when it has not been
    /// made at that size yet. Reading and scaling run on the library's worker pool, in
    /// `client`'s turn.
    func image(id: String, size: Int, for client: String, original: @escaping @Sendable () throws(CommandFailure) -> [UInt8])
        async throws(CommandFailure) -> EncodedImage {
        let path = directory + "/" + id + "-" + String(size) + ".jpg"
        let (image, stored) = try await WorkerPool.library.run(for: client) { () throws(CommandFailure) -> (EncodedImage, Bool) in
            if let bytes = try? WholeFile.read(path, limit: 32 << 20), let dimensions = CoverArt.dimensions(bytes) {
                return (EncodedImage(bytes: bytes, mimeType: "image/jpeg", width: dimensions.width, height: dimensions.height), false)
            }
            let bytes = try original()
            let image: EncodedImage
            do throws(ImageError) {
                image = try CoverArt.scaled(bytes, toFit: size)
            } catch {
                throw CommandFailure(.notPlayable, "cover \(id): \(error)")
            }
            // Not kept when it cannot be written: made again next time. The client still gets it.
            return (image, (try? WholeFile.replace(path, with: image.bytes)) != nil)
        }
        if stored, !made.contains(path) {
            made.append(path)
            if made.count > limit { unlink(made.removeFirst()) }
        }
        return image
    }
}
