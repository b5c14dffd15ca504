import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Leaves a socket file with nobody behind it at `path`, as a crashed daemon does.
public func makeStaleSocket(at path: String) throws {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSupportError("socket: \(String(cString: strerror(errno)))") }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    close(fd)
    guard bound == 0 else { throw TestSupportError("cannot bind \(path): \(String(cString: strerror(errno)))") }
}
