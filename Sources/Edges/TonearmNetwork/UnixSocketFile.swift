#if canImport(Glibc)
import Glibc
#endif
import SystemPackage
import TonearmControl

/// A listening Unix socket's file, for any server on the edge: bound only where no server
/// answers (a file left by a crash is replaced, a live one never), given its mode before anyone
/// can connect, and removed at the end only if it is still ours.
public struct UnixSocketFile: Sendable {
    public let path: String
    /// The file as bound, so `removeIfOurs` leaves a file another daemon put there alone.
    private let device: DeviceID
    private let inode: Inode

    /// Binds a new socket at `path` and sets the file's mode. The socket is not listening yet:
    /// its owner hands it to SwiftNIO (`ServerBootstrap.withBoundSocket`), which listens, so
    /// nobody connects before the mode is right.
    public static func bind(at path: String, mode: mode_t, packets: Bool = false) throws(ControlError) -> (FileDescriptor, UnixSocketFile) {
        func failure(_ why: String) -> ControlError { ControlError(path: path, message: "cannot listen on \(path): \(why)") }
        let taken = ControlError(path: path, message: "another daemon is listening on \(path)")

        guard !path.isEmpty else { throw failure("the socket path is empty") }
        guard path.utf8.count <= LocalSocket.maxPathBytes else {
            throw failure("the path is \(path.utf8.count) bytes long; a Unix socket path holds at most \(LocalSocket.maxPathBytes)")
        }
        var directory = FilePath(path)
        directory.removeLastComponent()
        if directory.isEmpty { directory = "." }
        switch Result(catching: { () throws(Errno) in try directory.stat() }) {
        case .failure(.noSuchFileOrDirectory): throw failure("directory \(directory) does not exist")
        case .failure(let error): throw failure("directory \(directory): \(error)")
        case .success(let status) where status.type != .directory: throw failure("\(directory) is not a directory")
        case .success: break
        }

        if let existing = try? FilePath(path).stat(followTargetSymlink: false) {
            guard existing.type == .socket else { throw failure("a file that is not a socket is in the way") }
            // A socket file is left behind when a daemon crashes. If something answers on it,
            // it is not stale.
            let probed = Result { () throws(Errno) in
                let probe = try LocalSocket.open(nonBlocking: true, packets: packets)
                defer { try? probe.close() }
                try LocalSocket.connect(probe, to: path)
            }
            switch probed {
            case .success, .failure(.resourceTemporarilyUnavailable):  // a full backlog is alive too
                throw taken
            case .failure(.connectionRefused):
                if unlink(path) != 0 && errno != ENOENT {
                    throw failure("cannot remove the stale socket file: \(Errno(rawValue: errno))")
                }
            case .failure(let error):
                throw failure("cannot tell whether another daemon is listening on it: \(error)")
            }
        }

        let socket: FileDescriptor
        do {
            socket = try LocalSocket.open(nonBlocking: true, packets: packets)
        } catch {
            throw failure("socket: \(error)")
        }
        do {
            try LocalSocket.bind(socket, to: path)
        } catch {
            try? socket.close()
            throw error == .addressInUse ? taken : failure("\(error)")
        }
        func undo(_ why: String) -> ControlError {
            try? socket.close()
            unlink(path)
            return failure(why)
        }
        guard chmod(path, mode) == 0 else {
            throw undo("cannot set its mode to \(String(mode, radix: 8)): \(Errno(rawValue: errno))")
        }
        guard let bound = try? FilePath(path).stat(followTargetSymlink: false) else {
            throw undo("the socket file vanished as it was made")
        }
        return (socket, UnixSocketFile(path: path, device: bound.deviceID, inode: bound.inode))
    }

    /// Removes the file if it is the one `bind` made: another daemon may have replaced a
    /// socket it thought stale.
    public func removeIfOurs() {
        guard let status = try? FilePath(path).stat(followTargetSymlink: false),
              status.deviceID == device, status.inode == inode else { return }
        unlink(path)
    }
}
