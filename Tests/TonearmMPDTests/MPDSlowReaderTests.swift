#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import Synchronization
import TestSupport
import TonearmControlPlane
@testable import TonearmMPD
import TonearmNetwork
import TonearmPlayer
import XCTest

/// The MPD server on a real TCP socket, read by a client as slow as a phone on weak Wi-Fi:
/// a small receive buffer, 2 KB at a time, with pauses.
final class MPDSlowReaderTests: XCTestCase {
    private static let songs = 3000

    private func queue() -> ControlState {
        var state = ControlState()
        state.queue = QueueState(version: 2, items: (0..<Self.songs).map { n in
            QueueItem(id: n + 1, path: "/music/Artist \(n / 100)/Album \(n / 10)/\(n).flac",
                      metadata: TrackMetadata(title: "Song \(n)", artist: "Artist \(n / 100)", album: "Album \(n / 10)",
                                              trackNumber: n % 10 + 1, duration: 180))
        })
        return state
    }

    func testASlowReaderGetsAWholeQueueListingInOrder() async throws {
        let plane = TestControlPlane(queue())
        let settings = MPDSettings(musicDirectory: "/music")
        // What the answer is, made whole.
        let expected = await MPDCommands(plane: plane, settings: settings).answer(MPDRequest(clientID: 1, commands: [MPDCommand("playlistinfo")])).0
        XCTAssertGreaterThan(expected.count, 256 << 10)

        let port = try Self.freePort()
        var options = MPDServerOptions(host: "127.0.0.1", port: port)
        // Less than the answer: it is handed over a part at a time, each once the client took
        // the one before, so a reader however slow is never over the limit.
        options.maxPendingOutputBytes = 256 << 10
        let logged = LogLines()
        let group = NetworkEdge.makeEventLoopGroup()
        let plugIn = MPDPlugIn(options: options, settings: settings, group: group)
        let serving = Task { try await plugIn.run(plane, log: PlugInLog { _, line in logged.append(line) }) }

        let client = try await Self.connect(port: port)
        defer { close(client) }
        XCTAssertEqual(try Self.readLine(client), "OK MPD 0.23.5")
        try Self.send(client, "playlistinfo\n")
        var received: [UInt8] = []
        var piece = [UInt8](repeating: 0, count: 2048)
        var reads = 0
        while !(received.count >= 3 && received.suffix(3) == Array("OK\n".utf8)) {
            let n = recv(client, &piece, piece.count, 0)
            guard n > 0 else {
                XCTFail("the connection closed after \(received.count) of \(expected.count) bytes: \(logged.lines)")
                break
            }
            received += piece[0..<n]
            reads += 1
            if reads % 4 == 0 { usleep(1000) }
        }
        let lines = String(decoding: received, as: UTF8.self).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, String(decoding: expected, as: UTF8.self).split(separator: "\n").count)
        XCTAssertEqual(lines.filter { $0.hasPrefix("Pos: ") }, (0..<Self.songs).map { "Pos: \($0)" })
        XCTAssertEqual(lines.last, "OK")
        XCTAssertTrue(received == expected, "the answer read is the answer made")
        XCTAssertEqual(logged.lines, [])

        serving.cancel()
        _ = try? await serving.value
        try await group.shutdownGracefully()
    }

    // MARK: The client

    private final class LogLines: Sendable {
        private let held = Mutex<[String]>([])
        func append(_ line: String) { held.withLock { $0.append(line) } }
        var lines: [String] { held.withLock { $0 } }
    }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else { throw TestSupportError("cannot bind a TCP port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A TCP client with a 16 KB receive buffer, once the server listens.
    private static func connect(port: Int) async throws -> Int32 {
        for _ in 0..<500 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var size: Int32 = 16384
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            if connected { return fd }
            close(fd)
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TestSupportError("nothing listens on port \(port)")
    }

    private static func send(_ fd: Int32, _ text: String) throws {
        let bytes = Array(text.utf8)
        guard Glibc.send(fd, bytes, bytes.count, 0) == bytes.count else { throw TestSupportError("cannot send \(text)") }
    }

    private static func readLine(_ fd: Int32) throws -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while recv(fd, &byte, 1, 0) == 1 {
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        throw TestSupportError("the connection closed")
    }
}
