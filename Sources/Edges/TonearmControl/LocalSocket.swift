#if canImport(Glibc)
import Glibc
#endif
import SystemPackage
import TonearmSystem

/// Unix-domain stream sockets: the calls swift-system does not wrap (`socket`, `connect`,
/// `bind`, `send`, `poll`), each wrapped once, with swift-system's `FileDescriptor` and
/// `Errno`. The client connects with them; the server binds its socket file with them before
/// SwiftNIO takes the descriptor over.
package enum LocalSocket {
    /// The longest path a `sockaddr_un` holds (107 bytes and the terminating zero).
    package static let maxPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// A new stream socket (or, with `packets`, a sequenced-packet one: each send one
    /// message), close-on-exec, and non-blocking if asked.
    package static func open(nonBlocking: Bool, packets: Bool = false) throws(Errno) -> FileDescriptor {
        var type = Int32((packets ? SOCK_SEQPACKET : SOCK_STREAM).rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
        let fd = socket(AF_UNIX, type, 0)
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        return FileDescriptor(rawValue: fd)
    }

    /// `connect`. On a non-blocking socket a full listen backlog is `EAGAIN` (a Unix socket
    /// never answers `EINPROGRESS`).
    package static func connect(_ socket: FileDescriptor, to path: String) throws(Errno) {
        let result = withAddress(path) { address, length in
            while Glibc.connect(socket.rawValue, address, length) != 0 {
                if errno != EINTR { return errno }
            }
            return 0
        }
        if result != 0 { throw Errno(rawValue: result) }
    }

    /// `bind`: creates the socket file.
    package static func bind(_ socket: FileDescriptor, to path: String) throws(Errno) {
        let result = withAddress(path) { address, length in
            Glibc.bind(socket.rawValue, address, length) == 0 ? 0 : errno
        }
        if result != 0 { throw Errno(rawValue: result) }
    }

    /// `send` without blocking and without SIGPIPE (a peer that went away must not end the
    /// process): the count sent, 0 when the socket takes nothing now.
    package static func send(_ socket: FileDescriptor, _ bytes: UnsafeRawBufferPointer) throws(Errno) -> Int {
        while true {
            let sent = Glibc.send(socket.rawValue, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            if sent >= 0 { return sent }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return 0
            default: throw Errno(rawValue: errno)
            }
        }
    }

    /// `FileDescriptor.read`, whose errors are `Errno`, with that type.
    package static func read(_ socket: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        do {
            return try socket.read(into: buffer)
        } catch {
            throw error as? Errno ?? .ioError
        }
    }

    /// Waits until the socket is readable (or writable) for at most `seconds` (forever when
    /// nil); false when the time ran out. A hang-up or an error counts as ready: the next call
    /// on the socket says what happened.
    package static func wait(_ socket: FileDescriptor, writable: Bool = false, seconds: Double?) throws(Errno) -> Bool {
        let deadline = seconds.map { monotonicSeconds() + $0 }
        while true {
            var entry = pollfd(fd: socket.rawValue, events: Int16(writable ? POLLOUT : POLLIN), revents: 0)
            let milliseconds = deadline.map { Int32(clamping: Int((max(0, $0 - monotonicSeconds()) * 1000).rounded(.up))) } ?? -1
            let ready = poll(&entry, 1, milliseconds)
            if ready > 0 { return true }
            if ready == 0 { return false }
            if errno != EINTR { throw Errno(rawValue: errno) }
        }
    }

    /// Calls `body` with the address of `path`; the caller has checked its length.
    private static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8.prefix(maxPathBytes))
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
}
