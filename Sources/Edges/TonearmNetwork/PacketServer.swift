#if canImport(Glibc)
import Glibc
#endif
import SystemPackage
import Synchronization
import TonearmControl
import TonearmSystem

/// A listening Unix sequenced-packet socket, served by a thread of its own rather than the
/// event loop: each connection is handed, blocking, to whoever serves it (a program's audio is
/// read by a thread that waits on it). The file is made as `UnixSocketFile` makes the control
/// socket's, with its mode set and, when asked, its group, before anyone can connect.
public final class PacketServer: Sendable {
    public let path: String
    private let listener: FileDescriptor
    private let file: UnixSocketFile
    private let stopping = Wakeup()
    private let thread = Mutex<NamedThread?>(nil)

    /// Binds `path` (mode `mode`, group `group` when given: `chown` needs the daemon to be in
    /// it) and listens. A group that cannot be set is a warning for `log`, not a failure.
    public init(path: String, mode: mode_t = 0o660, group: String?, log: @Sendable (String) -> Void) throws(ControlError) {
        self.path = path
        (listener, file) = try UnixSocketFile.bind(at: path, mode: mode, packets: true)
        if let group {
            if let entry = getgrnam(group) {
                if chown(path, uid_t.max, entry.pointee.gr_gid) != 0 {
                    log("\(path) keeps its group: cannot give it to group \(group): \(Errno(rawValue: errno)) (is the daemon's user in group \(group)?)")
                }
            } else {
                log("\(path) keeps its group: there is no group \(group)")
            }
        }
        guard Glibc.listen(listener.rawValue, 64) == 0 else {
            let error = Errno(rawValue: errno)
            try? listener.close()
            file.removeIfOurs()
            throw ControlError(path: path, message: "cannot listen on \(path): \(error)")
        }
    }

    /// Accepts connections on a thread of its own until `stop`, handing each to `serve` (on that
    /// thread: `serve` starts whatever serves it and returns).
    public func start(_ serve: @escaping @Sendable (FileDescriptor) -> Void) {
        let listener = self.listener, stopping = self.stopping
        let accepting = NamedThread(name: "tonearm-accept") {
            var fds = [pollfd(fd: listener.rawValue, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: stopping.descriptor, events: Int16(POLLIN), revents: 0)]
            while true {
                guard poll(&fds, 2, -1) >= 0 || errno == EINTR else { return }
                if fds[1].revents != 0 { return }
                guard fds[0].revents != 0 else { continue }
                let fd = accept(listener.rawValue, nil, nil)
                if fd >= 0 {
                    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                    serve(FileDescriptor(rawValue: fd))
                }
                // EMFILE and the like: the connection waits in the backlog; do not spin on it.
                else if errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS { sleepMilliseconds(100) }
            }
        }
        thread.withLock { $0 = accepting }
    }

    /// Stops accepting, closes the socket and removes its file (if it is still ours).
    public func stop() {
        stopping.post()
        thread.withLock { thread in
            thread?.join()
            thread = nil
        }
        try? listener.close()
        file.removeIfOurs()
    }
}
