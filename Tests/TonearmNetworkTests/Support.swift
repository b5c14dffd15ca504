import Foundation
import TonearmControl
import TonearmJSON
import TestSupport
import TonearmNetwork
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The event loop every test server runs on, as the daemon's servers share one.
let testLoopGroup = NetworkEdge.makeEventLoopGroup()

/// The handler the tests serve with:
/// - `echo` answers its `value`;
/// - `add` answers `a + b`, both integers;
/// - `later` answers "late" after `ms` milliseconds, from another thread;
/// - `drop` never answers;
/// - `whoami` answers the client's id;
/// - anything else is an unknown command.
let testHandler: @Sendable (ControlRequest, Reply) -> Void = { request, reply in
    switch request.command {
    case "echo":
        reply.succeed(request["value"] ?? .null)
    case "add":
        do throws(ArgumentError) {
            reply.succeed(.int(try request.int("a") + request.int("b")))
        } catch {
            reply.fail(error)
        }
    case "later":
        let ms = request["ms"]?.intValue ?? 100
        Thread {
            usleep(useconds_t(ms * 1000))
            reply.succeed(.string("late"))
        }.start()
    case "drop":
        break
    case "whoami":
        reply.succeed(.int(request.clientID))
    default:
        reply.failUnknownCommand()
    }
}

/// A running server on a socket in a fresh directory, stopped when released.
final class RunningServer: @unchecked Sendable {
    let directory: TemporaryDirectory
    let server: ControlServer
    var path: String { server.options.path }

    init(topics: [String] = ["nowPlaying", "state"], configure: (inout ControlServerOptions) -> Void = { _ in }) throws {
        directory = try TemporaryDirectory(prefix: "tonearm-network")
        var options = ControlServerOptions(path: directory.file("control.sock"), topics: topics)
        configure(&options)
        server = try ControlServer(options: options, group: testLoopGroup, handler: testHandler)
        server.start()
    }

    deinit { server.stop() }

    /// Waits up to `seconds` for the server to have `count` clients. The waits here end with
    /// what they wait for; their defaults bound only a hang, so a busy machine does not fail them.
    func waitForClients(_ count: Int, seconds: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while server.clientCount != count {
            if Date() > deadline { return false }
            usleep(2000)
        }
        return true
    }
}

/// A client socket with no protocol knowledge, to send whatever bytes a test needs.
final class RawConnection {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8) + [0])
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }

    /// A socket the test connected itself.
    init(adopting fd: Int32) { self.fd = fd }

    deinit { close(fd) }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Sends everything, blocking; false when the server closed the connection.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool { sendAll(fd, bytes) }

    func shutdownWriting() { shutdown(fd, Int32(SHUT_WR)) }

    /// The next line as JSON; nil at end of stream or after `timeout` seconds.
    func readMessage(timeout: Double = 30) -> JSONValue? {
        guard let line = readLine(timeout: timeout) else { return nil }
        return try? JSONValue.parse(line)
    }

    func readLine(timeout: Double = 30) -> [UInt8]? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<newline])
                buffer.removeFirst(newline + 1)
                return line
            }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return nil }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, Int32(remaining * 1000) + 1) > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return nil }
            buffer += chunk[..<count]
        }
    }

    /// True when the server closed the connection within `timeout` (reading and dropping
    /// whatever was still queued).
    func isClosedByServer(timeout: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 65536)
        while deadline.timeIntervalSinceNow > 0 {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 100) >= 0 else { return false }
            if entry.revents == 0 { continue }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count == 0 || (count < 0 && errno == ECONNRESET) { return true }
        }
        return false
    }
}

/// Runs `body(0..<count)` on that many threads at once and waits for all of them. (Not
/// `concurrentPerform`, whose few workers would block while the answers they wait for need
/// threads of their own.)
func runConcurrently(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let finished = DispatchGroup()
    for i in 0..<count {
        finished.enter()
        Thread {
            body(i)
            finished.leave()
        }.start()
    }
    finished.wait()
}

/// Hands a value to another thread that becomes its only user.
struct Handover<Value>: @unchecked Sendable {
    let value: Value
}

extension JSONValue {
    /// The error code of a failed response.
    var errorCode: String? { self["error"]?["code"]?.stringValue }
}
