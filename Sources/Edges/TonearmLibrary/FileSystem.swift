import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

// The Glibc calls this module makes, each wrapped once. Failures come back as `SystemError`
// (an errno); callers turn them into a `LibraryError` that names the path.

/// A failed system call: its errno.
struct SystemError: Error {
    var code: Int32

    init(_ code: Int32 = errno) { self.code = code }

    var text: String { String(cString: strerror(code)) }
    var isMissing: Bool { code == ENOENT || code == ENOTDIR }
}

/// What `stat` says about a path, following symbolic links.
struct FileStatus {
    enum Kind { case regular, directory, other }

    var kind: Kind
    var size: Int
    var device: UInt64
    var inode: UInt64
    var modifiedSeconds: Int
    var modifiedNanoseconds: Int

    var identity: FileIdentity { FileIdentity(device: device, inode: inode) }

    init(_ st: stat) {
        switch st.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        default: kind = .other
        }
        size = Int(st.st_size)
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        modifiedSeconds = Int(st.st_mtim.tv_sec)
        modifiedNanoseconds = Int(st.st_mtim.tv_nsec)
    }
}

/// A file or directory as the kernel knows it, whatever names lead to it.
struct FileIdentity: Hashable {
    var device: UInt64
    var inode: UInt64
}

/// One name in a directory, with the type readdir reports (no extra stat).
struct DirectoryEntry {
    enum Kind { case regular, directory, symbolicLink, unknown, other }

    var name: String
    var kind: Kind
}

/// An open directory: its names, and the files in it looked at and opened by name, so the
/// kernel resolves one name instead of the whole path from the root each time.
final class OpenDirectory {
    private let stream: OpaquePointer
    private var fd: Int32 { dirfd(stream) }

    init(_ path: String) throws(SystemError) {
        guard let stream = FileName.withPath(path, { opendir($0) }) else { throw SystemError() }
        self.stream = stream
    }

    /// The sub-directory `name`, following a symbolic link.
    init(_ name: String, in parent: OpenDirectory) throws(SystemError) {
        let fd = FileName.withPath(name) { openat(parent.fd, $0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { throw SystemError() }
        guard let stream = fdopendir(fd) else {
            let error = SystemError()
            close(fd)
            throw error
        }
        self.stream = stream
    }

    deinit { closedir(stream) }

    /// The names in it, except `.` and `..`; a name that is not UTF-8 as `FileName` carries it.
    func entries() throws(SystemError) -> [DirectoryEntry] {
        var result: [DirectoryEntry] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw SystemError() }
                break
            }
            let name = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: UInt8.self, capacity: MemoryLayout.size(ofValue: tuple.pointee)) {
                    FileName.string(UnsafeBufferPointer(start: $0, count: strlen(UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))))
                }
            }
            if name == "." || name == ".." { continue }
            let kind: DirectoryEntry.Kind
            switch Int32(entry.pointee.d_type) {
            case Int32(DT_REG): kind = .regular
            case Int32(DT_DIR): kind = .directory
            case Int32(DT_LNK): kind = .symbolicLink
            case Int32(DT_UNKNOWN): kind = .unknown
            default: kind = .other
            }
            result.append(DirectoryEntry(name: name, kind: kind))
        }
        return result
    }

    /// What `stat` says about `name` in it, following symbolic links.
    func status(_ name: String) throws(SystemError) -> FileStatus {
        var st = stat()
        guard FileName.withPath(name, { fstatat(fd, $0, &st, 0) }) == 0 else { throw SystemError() }
        return FileStatus(st)
    }

    /// `name` in it, opened for reading.
    func openFile(_ name: String) throws(SystemError) -> Int32 {
        let file = FileName.withPath(name) { openat(fd, $0, O_RDONLY | O_CLOEXEC) }
        guard file >= 0 else { throw SystemError() }
        return file
    }
}

enum FileSystem {
    static func status(_ path: String) throws(SystemError) -> FileStatus {
        var st = stat()
        guard FileName.withPath(path, { stat($0, &st) }) == 0 else { throw SystemError() }
        return FileStatus(st)
    }

    static func status(of fd: Int32) throws(SystemError) -> FileStatus {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw SystemError() }
        return FileStatus(st)
    }

    /// The canonical absolute path: no `.`, `..` or symbolic links.
    static func realPath(_ path: String) throws(SystemError) -> String {
        guard let resolved = FileName.withPath(path, { realpath($0, nil) }) else { throw SystemError() }
        defer { free(resolved) }
        return FileName.string(UnsafeBufferPointer(start: UnsafeRawPointer(resolved).assumingMemoryBound(to: UInt8.self),
                                                   count: strlen(resolved)))
    }

    static func currentDirectory() throws(SystemError) -> String {
        guard let cwd = getcwd(nil, 0) else { throw SystemError() }
        defer { free(cwd) }
        return FileName.string(UnsafeBufferPointer(start: UnsafeRawPointer(cwd).assumingMemoryBound(to: UInt8.self),
                                                   count: strlen(cwd)))
    }

    /// The names in a directory, except `.` and `..`.
    static func entries(_ path: String) throws(SystemError) -> [DirectoryEntry] {
        try OpenDirectory(path).entries()
    }

    static func openForReading(_ path: String) throws(SystemError) -> Int32 {
        let fd = FileName.withPath(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw SystemError() }
        return fd
    }

    /// Up to `count` bytes from `offset`; fewer at the end of the file.
    static func read(_ fd: Int32, offset: Int, count: Int) throws(SystemError) -> [UInt8] {
        guard count > 0 else { return [] }
        var failure: SystemError?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var done = 0
            while done < count {
                let n = pread(fd, buffer.baseAddress! + done, count - done, off_t(offset + done))
                if n < 0 && errno == EINTR { continue }
                if n < 0 {
                    failure = SystemError()
                    break
                }
                if n == 0 { break }
                done += n
            }
            initialized = done
        }
        if let failure { throw failure }
        return bytes
    }

    /// Writes all of `bytes`.
    /// Replaces `name` in the directory open as `directory` with `bytes` so that a crash or a
    /// power cut leaves the old file or the new one, never a mix: `temporary` is written and
    /// fsynced, renamed over `name`, and the directory fsynced (the rename is what makes it
    /// durable).
    static func replace(_ name: String, in directory: Int32, temporary: String, with bytes: [UInt8], mode: mode_t) throws(SystemError) {
        let fd = openat(directory, temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw SystemError() }
        do throws(SystemError) {
            try write(fd, bytes)
            guard fsync(fd) == 0 else { throw SystemError() }
        } catch {
            close(fd)
            unlinkat(directory, temporary, 0)
            throw error
        }
        guard close(fd) == 0 else { throw SystemError() }
        guard renameat(directory, temporary, directory, name) == 0 else {
            let error = SystemError()
            unlinkat(directory, temporary, 0)
            throw error
        }
        guard fsync(directory) == 0 else { throw SystemError() }
    }

    static func write(_ fd: Int32, _ bytes: [UInt8]) throws(SystemError) {
        var failure: SystemError?
        bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + done, buffer.count - done)
                if n < 0 && errno == EINTR { continue }
                if n < 0 {
                    failure = SystemError()
                    return
                }
                done += n
            }
        }
        if let failure { throw failure }
    }

    /// `mkdir -p` with `mode` for each directory it makes.
    static func makeDirectories(_ path: String, mode: mode_t) throws(SystemError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if FileName.withPath(prefix, { mkdir($0, mode) }) != 0 && errno != EEXIST { throw SystemError() }
        }
        guard try status(path).kind == .directory else { throw SystemError(ENOTDIR) }
    }
}

/// `path` with `.` and `..` resolved by text alone (no file system access), for paths that
/// do not exist and so cannot go through `realpath`.
func lexicallyNormalized(_ absolutePath: String) -> String {
    var parts: [Substring] = []
    for component in absolutePath.split(separator: "/") {
        switch component {
        case ".": continue
        case "..": if !parts.isEmpty { parts.removeLast() }
        default: parts.append(component)
        }
    }
    return "/" + parts.joined(separator: "/")
}

/// True when `path` is `directory` or lies beneath it. Both are canonical absolute paths.
/// Compared byte by byte: `String`'s own comparison treats canonically equivalent Unicode as
/// equal, and two such names are two different directories on disk.
func isInside(_ path: String, _ directory: String) -> Bool {
    let root = directory.utf8.last == UInt8(ascii: "/") ? directory : directory + "/"
    return path.utf8.elementsEqual(directory.utf8) || path.utf8.starts(with: root.utf8)
}
