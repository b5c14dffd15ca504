#if canImport(Glibc)
import Glibc
#endif

// Every socket call of the module goes through here, once, and comes back as an errno value
// that the callers turn into a ControlError naming the path.

/// The text of an errno value ("No such file or directory").
func errnoText(_ code: Int32) -> String { String(cString: strerror(code)) }

/// The longest path a `sockaddr_un` holds (108 bytes with the terminating zero).
let maxSocketPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

/// A new Unix-domain stream socket, close-on-exec; returns the descriptor or `-errno`.
func makeUnixSocket(nonBlocking: Bool) -> Int32 {
    var type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
    let fd = socket(AF_UNIX, type, 0)
    return fd >= 0 ? fd : -errno
}

/// Calls `body` with the address of `path`; the caller has checked the length.
private func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8.prefix(maxSocketPathBytes))
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
}

/// Makes a descriptor non-blocking and close-on-exec. Glibc's Swift module leaves out the
/// GNU calls that do it atomically (`accept4`, `pipe2`, `eventfd`); the daemon does not fork
/// while the control server starts, so the short window does not matter.
func makeNonBlockingCloseOnExec(_ fd: Int32) {
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
}

/// `accept`, non-blocking and close-on-exec; returns the descriptor or `-errno`.
func acceptClient(_ listener: Int32) -> Int32 {
    let fd = accept(listener, nil, nil)
    guard fd >= 0 else { return -errno }
    makeNonBlockingCloseOnExec(fd)
    return fd
}

/// `connect`; returns 0 or errno. On a non-blocking socket EINPROGRESS never happens for
/// Unix sockets, but EAGAIN does when the listener's backlog is full.
func connectUnix(_ fd: Int32, to path: String) -> Int32 {
    withAddress(path) { address, length in
        while connect(fd, address, length) != 0 {
            if errno != EINTR { return errno }
        }
        return 0
    }
}

/// `bind`; returns 0 or errno.
func bindUnix(_ fd: Int32, to path: String) -> Int32 {
    withAddress(path) { address, length in bind(fd, address, length) == 0 ? 0 : errno }
}

/// The file at `path` (not following a symbolic link), or the errno of `lstat`.
func fileStatus(_ path: String) -> Result<stat, Errno> {
    var status = stat()
    return lstat(path, &status) == 0 ? .success(status) : .failure(Errno(errno))
}

/// An errno value as an error, for `Result`.
struct Errno: Error, Equatable {
    var code: Int32
    init(_ code: Int32) { self.code = code }
}

func isSocket(_ status: stat) -> Bool { status.st_mode & S_IFMT == S_IFSOCK }
func isDirectory(_ status: stat) -> Bool { status.st_mode & S_IFMT == S_IFDIR }

/// `send` without SIGPIPE (a reader that went away must not kill the daemon) and without
/// blocking. Returns the count sent, 0 when the socket is full, or `-errno`.
func sendNow(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
    while true {
        let sent = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
        if sent >= 0 { return sent }
        switch errno {
        case EINTR: continue
        case EAGAIN, EWOULDBLOCK: return 0
        default: return -Int(errno)
        }
    }
}

/// `recv` into `buffer`. Returns the count read, 0 at end of stream, `nil` when nothing is
/// there yet, or `-errno`.
func receiveNow(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int? {
    while true {
        let count = recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
        if count >= 0 { return count }
        switch errno {
        case EINTR: continue
        case EAGAIN, EWOULDBLOCK: return nil
        default: return -Int(errno)
        }
    }
}

/// Waits for `events` on one descriptor for at most `seconds` (forever when nil); returns
/// the revents, 0 on timeout.
func waitFor(_ fd: Int32, events: Int16, seconds: Double?) -> Int16 {
    let deadline = seconds.map { monotonicNow() + $0 }
    while true {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        let milliseconds = deadline.map { Int32(clamping: Int((max(0, $0 - monotonicNow()) * 1000).rounded(.up))) } ?? -1
        let ready = poll(&entry, 1, milliseconds)
        if ready > 0 { return entry.revents }
        if ready == 0 { return 0 }
        if errno != EINTR { return Int16(POLLERR) }
    }
}

/// Seconds on the monotonic clock.
func monotonicNow() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
