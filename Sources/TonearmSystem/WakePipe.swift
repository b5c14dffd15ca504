#if canImport(Glibc)
import Glibc
#endif

/// Wakes a thread asleep in poll(2) beside its devices (GPIO lines, input devices, a serial
/// port): a non-blocking pipe whose read end the thread polls. A pipe rather than an eventfd,
/// which Glibc's Swift module does not declare. A full pipe already wakes, so `wake` never
/// blocks.
public final class WakePipe: Sendable {
    /// The end to poll for POLLIN; -1 when no pipe could be made (see `failure`).
    public let descriptor: Int32
    private let writer: Int32
    /// Why there is no pipe (the system's words); nil when there is one.
    public let failure: String?

    public init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            }
            failure = nil
        } else {
            failure = String(cString: strerror(errno))
        }
        descriptor = ends[0]
        writer = ends[1]
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
        if writer >= 0 { close(writer) }
    }

    public func wake() {
        guard writer >= 0 else { return }
        var byte: UInt8 = 1
        _ = write(writer, &byte, 1)
    }

    /// Empties the pipe, once the poll said it is readable.
    public func drain() {
        guard descriptor >= 0 else { return }
        var bytes: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        while read(descriptor, &bytes, 32) > 0 {}
    }
}
