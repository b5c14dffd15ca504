import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A pseudo-terminal pair: the display's side (the master, read and written by the test) and
/// a slave path that `SerialPort` opens exactly as it opens /dev/ttyAMA0.
///
/// posix_openpt, unlockpt and ptsname_r are looked up at run time: Glibc's Swift module does
/// not declare them.
public final class PseudoTerminal {
    public let master: Int32
    public let slavePath: String
    /// Everything read from the master and not taken yet.
    public private(set) var received: [UInt8] = []

    private typealias OpenPT = @convention(c) (Int32) -> Int32
    private typealias UnlockPT = @convention(c) (Int32) -> Int32
    private typealias PtsnameR = @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32

    public init() throws {
        let libc = dlopen(nil, RTLD_NOW)
        guard let openSymbol = dlsym(libc, "posix_openpt"), let unlockSymbol = dlsym(libc, "unlockpt"),
              let nameSymbol = dlsym(libc, "ptsname_r")
        else { throw TestSupportError("posix_openpt, unlockpt or ptsname_r missing from libc") }
        let fd = unsafeBitCast(openSymbol, to: OpenPT.self)(O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw TestSupportError("posix_openpt: \(String(cString: strerror(errno)))") }
        var name = [CChar](repeating: 0, count: 256)
        guard unsafeBitCast(unlockSymbol, to: UnlockPT.self)(fd) == 0,
              unsafeBitCast(nameSymbol, to: PtsnameR.self)(fd, &name, name.count) == 0
        else {
            Glibc.close(fd)
            throw TestSupportError("unlockpt/ptsname_r: \(String(cString: strerror(errno)))")
        }
        var options = termios()
        tcgetattr(fd, &options)
        cfmakeraw(&options)
        tcsetattr(fd, TCSANOW, &options)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        master = fd
        slavePath = name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    deinit { close() }

    private var closed = false

    /// The display goes away: the slave hangs up.
    public func close() {
        if !closed {
            Glibc.close(master)
            closed = true
        }
    }

    /// Writes all of `bytes`, waiting (up to `timeout`) while the slave's buffer is full;
    /// returns how many went.
    @discardableResult
    public func write(_ bytes: [UInt8], timeout: Double = 5) -> Int {
        let deadline = monotonicSeconds() + timeout
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(master, $0.baseAddress! + sent, bytes.count - sent) }
            if n > 0 {
                sent += n
            } else if n < 0 && (errno == EAGAIN || errno == EINTR) {
                if monotonicSeconds() > deadline { break }
                var fds = [pollfd(fd: master, events: Int16(POLLOUT), revents: 0)]
                _ = poll(&fds, 1, 20)
            } else {
                break
            }
        }
        return sent
    }

    public func write(_ text: String) { write(Array(text.utf8)) }

    /// Reads what is there now, waiting at most `wait` seconds for the first byte.
    @discardableResult
    public func pump(wait: Double = 0) -> Int {
        var fds = [pollfd(fd: master, events: Int16(POLLIN), revents: 0)]
        _ = poll(&fds, 1, Int32(wait * 1000))
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = Glibc.read(master, &buffer, buffer.count)
            guard n > 0 else { break }
            received += buffer[..<n]
            total += n
        }
        return total
    }

    /// Reads until `condition` holds for what was received, or `timeout`.
    @discardableResult
    public func read(until condition: ([UInt8]) -> Bool, timeout: Double = 3) -> Bool {
        let deadline = monotonicSeconds() + timeout
        while !condition(received) {
            if monotonicSeconds() > deadline { return false }
            pump(wait: 0.02)
        }
        return true
    }

    /// The next `count` bytes (fewer if they did not come within `timeout`).
    public func take(_ count: Int, timeout: Double = 3) -> [UInt8] {
        read(until: { $0.count >= count }, timeout: timeout)
        let taken = Array(received.prefix(count))
        received.removeFirst(taken.count)
        return taken
    }

    /// Everything that arrives until nothing has for `quiet` seconds.
    public func takeAll(quiet: Double = 0.15, timeout: Double = 3) -> [UInt8] {
        let deadline = monotonicSeconds() + timeout
        while pump(wait: quiet) > 0 && monotonicSeconds() < deadline {}
        defer { received.removeAll() }
        return received
    }

    /// Lines received so far (complete ones), taken.
    public func takeLines(_ count: Int, timeout: Double = 3) -> [String] {
        read(until: { $0.filter { $0 == 0x0A }.count >= count }, timeout: timeout)
        var lines: [String] = []
        while lines.count < count, let end = received.firstIndex(of: 0x0A) {
            lines.append(String(decoding: received[..<end], as: UTF8.self))
            received.removeFirst(end + 1)
        }
        return lines
    }
}
