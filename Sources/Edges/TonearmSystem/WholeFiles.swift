import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Small files read and written whole: covers and their scaled copies under the runtime
/// directory. A reader never sees half a file: it is written beside its place and renamed into
/// it. No fsync: the runtime directory is in memory and gone at the next boot anyway.
public enum WholeFile {
    /// The file's bytes; `Errno.fileTooLarge` past `limit`.
    public static func read(_ path: String, limit: Int) throws(Errno) -> [UInt8] {
        try read(path, limit: limit, regularOnly: false)
    }

    /// The bytes of a regular file, for a name that came from elsewhere: a FIFO, a device or a
    /// directory is refused (`Errno.invalidArgument`) before anything is read, so it cannot
    /// make the reader wait, and so is a file over `limit` (`Errno.fileTooLarge`).
    public static func readRegular(_ path: String, limit: Int) throws(Errno) -> [UInt8] {
        try read(path, limit: limit, regularOnly: true)
    }

    private static func read(_ path: String, limit: Int, regularOnly: Bool) throws(Errno) -> [UInt8] {
        do {
            let file = try FileDescriptor.open(FilePath(path), .readOnly, options: regularOnly ? [.closeOnExec, .nonBlocking] : [.closeOnExec])
            return try file.closeAfter {
                if regularOnly {
                    var status = stat()
                    guard fstat(file.rawValue, &status) == 0 else { throw Errno(rawValue: errno) }
                    guard status.st_mode & S_IFMT == S_IFREG else { throw Errno.invalidArgument }
                    guard status.st_size <= limit else { throw Errno.fileTooLarge }
                }
                var bytes: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 64 << 10)
                while true {
                    let count = try chunk.withUnsafeMutableBytes { try file.read(into: $0) }
                    if count == 0 { return bytes }
                    guard bytes.count + count <= limit else { throw Errno.fileTooLarge }
                    bytes += chunk[..<count]
                }
            }
        } catch let error as Errno {
            throw error
        } catch {
            throw Errno.ioError
        }
    }

    /// Replaces `path` with `bytes` (mode 0644 less the umask), making its folder — and that
    /// folder's parent — when missing.
    public static func replace(_ path: String, with bytes: [UInt8]) throws(Errno) {
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        let parent = String(directory[..<(directory.lastIndex(of: "/") ?? directory.startIndex)])
        for folder in [parent, directory] where !folder.isEmpty {
            if mkdir(folder, 0o755) != 0 && errno != EEXIST { throw Errno(rawValue: errno) }
        }
        let temporary = path + ".partial"
        do {
            let file = try FileDescriptor.open(FilePath(temporary), .writeOnly, options: [.create, .truncate, .closeOnExec],
                                               permissions: [.ownerReadWrite, .groupRead, .otherRead])
            _ = try file.closeAfter { try bytes.withUnsafeBytes { try file.writeAll($0) } }
        } catch let error as Errno {
            unlink(temporary)
            throw error
        } catch {
            unlink(temporary)
            throw Errno.ioError
        }
        guard rename(temporary, path) == 0 else {
            let error = Errno(rawValue: errno)
            unlink(temporary)
            throw error
        }
    }
}
