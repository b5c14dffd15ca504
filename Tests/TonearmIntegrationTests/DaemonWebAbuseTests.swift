import Foundation
import Synchronization
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The web remote attacked while the daemon plays on the paced device, with real sockets and
/// curl, through the abuse suite's yardstick (`withstands`): another site's page by DNS
/// rebinding, the token on every route, token guessing, and connections closed by the peer.
final class DaemonWebAbuseTests: XCTestCase {
    override func setUpWithError() throws {
        try requirePacedDevice()
        guard toolsAvailable("curl") else { throw XCTSkip("curl is not installed; run ./scripts/setup") }
    }

    /// The reproduction of issue 24: a page on evil.example, its name pointed at 127.0.0.1,
    /// sends its own Host and a matching Origin.
    func testDNSRebindingIsRefused() throws {
        let (world, port) = try startDaemon()
        try world.playForAbuse()
        try world.ok("volume", "50")
        let other = try world.fixture("other.flac", taggedFixture(2, seconds: 5))
        let queued = try world.statusJSON().int("queueCount")
        let evil = ["-H", "Host: evil.example:\(port)", "-H", "Origin: http://evil.example:\(port)"]
        let report = try world.withstands("DNS rebinding (web)", rounds: 3) {
            for body in [#"{"command":"volume","percent":18}"#, #"{"command":"add","paths":["\#(other)"]}"#] {
                let (code, text) = try curl(port, "/api", evil + ["-H", "Content-Type: application/json", "-d", body])
                guard code == 421, text.contains("evil.example") else { throw TestSupportError("\(body) with Host evil.example: \(code) \(text)") }
            }
            let upgrade = try exchange(port, webSocketUpgrade(host: "evil.example:\(port)", origin: "http://evil.example:\(port)"))
            guard upgrade.hasPrefix("HTTP/1.1 421 ") else { throw TestSupportError("the WebSocket upgrade with Host evil.example: \(upgrade)") }
        }
        XCTAssertEqual(report.roundSeconds.count, 3)
        let after = try world.statusJSON()
        XCTAssertEqual(after.int("volume"), 50, "the volume is unchanged")
        XCTAssertEqual(after.int("queueCount"), queued, "nothing was added")

        // The box's own name still works, so the refusal is not a refusal of everything.
        let (code, text) = try curl(port, "/api", ["-H", "Origin: http://127.0.0.1:\(port)", "-H", "Content-Type: application/json",
                                                   "-d", #"{"command":"volume","percent":18}"#])
        XCTAssertEqual(code, 200, text)
        XCTAssertEqual(try world.statusJSON().int("volume"), 18)
        let upgrade = try exchange(port, webSocketUpgrade(host: "localhost:\(port)", origin: "http://localhost:\(port)"))
        XCTAssertTrue(upgrade.hasPrefix("HTTP/1.1 101 "), upgrade)
        let hostname = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "localhost"
        for host in [hostname, hostname + ".local"] {
            let (named, namedText) = try curl(port, "/api/status", ["-H", "Host: \(host):\(port)"])
            XCTAssertEqual(named, 200, "the box's own name \(host): \(namedText)")
        }
    }

    /// With `[web] token` the WebSocket and the covers need it too, and guessing it is slowed.
    func testTheTokenGuardsTheWebSocketAndTheArt() throws {
        let token = "correct-horse-battery"
        let (world, port) = try startDaemon(profile: "[web]\ntoken = \"\(token)\"\n")
        var fixture = taggedFixture(1, seconds: 60)
        fixture.picture = FixturePicture(width: 300, height: 300)
        try world.playForAbuse(world.fixture("cover.flac", fixture))
        let artwork = try XCTUnwrap(world.statusJSON().object("artwork")?.string("id"), "the track has a cover")
        let report = try world.withstands("token on /ws and /art", rounds: 3) {
            let upgrade = try exchange(port, webSocketUpgrade(host: "127.0.0.1:\(port)", origin: nil))
            guard upgrade.hasPrefix("HTTP/1.1 401 ") else { throw TestSupportError("a WebSocket without the token: \(upgrade)") }
            for path in ["/art/\(artwork)?size=64", "/art/placeholder", "/api/status"] {
                let (code, text) = try curl(port, path)
                guard code == 401 else { throw TestSupportError("\(path) without the token: \(code) \(text)") }
            }
        }
        XCTAssertEqual(report.roundSeconds.count, 3)

        // The page's way in: a login, then the cookie opens the WebSocket and the covers.
        let cookies = world.path("cookies.txt")
        let (login, loginText) = try curl(port, "/login", ["-c", cookies, "-H", "Content-Type: application/json",
                                                           "-d", #"{"token":"\#(token)"}"#])
        XCTAssertEqual(login, 204, loginText)
        let jar = try String(contentsOfFile: cookies, encoding: .utf8)
        let session = try XCTUnwrap(jar.split(separator: "\n").first { $0.contains("tonearm-session") }?.split(separator: "\t").last)
        XCTAssertTrue(jar.contains("#HttpOnly_"), "HttpOnly: \(jar)")
        let (art, _) = try curl(port, "/art/\(artwork)?size=64", ["-b", cookies])
        XCTAssertEqual(art, 200)
        let upgrade = try exchange(port, webSocketUpgrade(host: "127.0.0.1:\(port)", origin: "http://127.0.0.1:\(port)",
                                                          extra: "Cookie: tonearm-session=\(session)\r\n"))
        XCTAssertTrue(upgrade.hasPrefix("HTTP/1.1 101 "), upgrade)
        let (bearer, _) = try curl(port, "/api/status", ["-H", "Authorization: Bearer \(token)"])
        XCTAssertEqual(bearer, 200)

        // Guessing: after a wrong token, the address waits before any token is checked again:
        // 1 s after the first, twice as long after each more. Each guess is timed from its
        // request to its answer, so a machine slow enough to outlast a wait is told apart
        // from a guard that let a guess through early.
        let codes = Codes()
        try world.withstands("token guessing (web)", rounds: 1) {
            for guess in 0..<20 {
                let sent = monotonicSeconds()
                let code = try curl(port, "/api/status", ["-H", "Authorization: Bearer guess-\(guess)-xxxx"]).code
                codes.list.withLock { $0.append(Guess(code: code, sent: sent, answered: monotonicSeconds())) }
            }
        }
        let answered = codes.list.withLock { $0 }
        let summary = answered.map(\.code)
        XCTAssertEqual(summary.first, 401)
        XCTAssertEqual(Set(summary).subtracting([401, 429]), [], "\(summary)")
        XCTAssertTrue(summary.contains(429), "guesses wait: \(summary)")
        let checked = answered.filter { $0.code == 401 }
        for (n, (earlier, later)) in zip(checked, checked.dropFirst()).enumerated() {
            let wait = Double(1 << n)
            XCTAssertGreaterThanOrEqual(later.answered - earlier.sent, wait,
                                        "wrong token \(n + 2) was checked before the \(Int(wait)) s wait ended: \(summary)")
        }
        let last = try XCTUnwrap(checked.last)
        let sent = monotonicSeconds()
        let (slowed, slowedText) = try curl(port, "/api/status", ["-H", "Authorization: Bearer \(token)"])
        if slowed == 429 {
            XCTAssertTrue(slowedText.contains("too many wrong tokens from this address"), slowedText)
        } else {
            // Only a wait that ended lets even the right token in.
            XCTAssertEqual(slowed, 200, slowedText)
            XCTAssertGreaterThanOrEqual(monotonicSeconds() - last.sent, Double(1 << (checked.count - 1)),
                                        "the right token was let in before the wait ended: \(summary), sent \(sent - last.sent) s after the last")
        }
    }

    /// Issue 24: 80 sequential curls got 64 answers and 16 × 503 (each closed connection kept
    /// its place for 30 s).
    func testSequentialClientsAreAllServed() throws {
        let (world, port) = try startDaemon()
        try world.playForAbuse()
        try world.withstands("80 sequential curls of /api/status", rounds: 1) {
            var codes: [Int] = []
            for _ in 0..<80 { codes.append(try curl(port, "/api/status").code) }
            guard codes.allSatisfy({ $0 == 200 }) else {
                throw TestSupportError("not all 200: \(Dictionary(grouping: codes, by: { $0 }).mapValues(\.count))")
            }
        }
    }

    /// 64 connections (the limit) opened and closed by the peer, plain ones and WebSockets (half
    /// of them closed, half reset): the next request is answered at once, not refused for 30 s.
    func testClosedConnectionsGiveTheirPlaceBack() throws {
        let (world, port) = try startDaemon()
        try world.playForAbuse()
        try world.withstands("64 sockets opened and closed (web)", rounds: 2) {
            for fd in try (0..<64).map({ _ in try connectTCP(port: port) }) { close(fd) }
            let (code, text) = try curl(port, "/api/status")
            guard code == 200 else { throw TestSupportError("after 64 closed sockets: \(code) \(text)") }
        }
        try world.withstands("64 WebSockets opened and closed (web)", rounds: 2) {
            var sockets: [Int32] = []
            for _ in 0..<64 {
                let fd = try connectTCP(port: port)
                sockets.append(fd)
                let head = try exchange(fd: fd, webSocketUpgrade(host: "127.0.0.1:\(port)", origin: nil))
                guard head.hasPrefix("HTTP/1.1 101 ") else { throw TestSupportError("WebSocket \(sockets.count): \(head)") }
            }
            for (index, fd) in sockets.enumerated() {
                if index % 2 == 0 { shutdown(fd, Int32(SHUT_WR)) } else { resetOnClose(fd) }
                close(fd)
            }
            let (code, text) = try curl(port, "/api/status")
            guard code == 200 else { throw TestSupportError("after 64 closed WebSockets: \(code) \(text)") }
        }
    }

    // MARK: helpers

    /// A daemon with the web remote on a free port (and `profile` as its board profile), not
    /// yet playing.
    private func startDaemon(profile: String? = nil) throws -> (DaemonBench, Int) {
        let world = try DaemonBench(start: false)
        let port = try freeTCPPort()
        var arguments = ["--web-port", String(port)]
        if let profile {
            let path = world.path("web.toml")
            try profile.write(toFile: path, atomically: true, encoding: .utf8)
            arguments += ["--config", path]
        }
        world.daemon.arguments = arguments
        try world.daemon.start()
        return (world, port)
    }
}

private final class Codes: Sendable {
    let list = Mutex<[Guess]>([])
}

/// A guess's answer, and when it was sent and answered (monotonic seconds).
private struct Guess: Sendable {
    let code: Int
    let sent: Double
    let answered: Double
}

private func webSocketUpgrade(host: String, origin: String?, extra: String = "") -> String {
    "GET /ws HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        + (origin.map { "Origin: \($0)\r\n" } ?? "") + extra + "\r\n"
}

/// `curl` of 127.0.0.1:`port``path`: the status code and the body.
private func curl(_ port: Int, _ path: String, _ arguments: [String] = []) throws -> (code: Int, text: String) {
    let result = try runProcess("/usr/bin/curl", ["-sS", "--max-time", "10", "-w", "\n%{http_code}"] + arguments
                                + ["http://127.0.0.1:\(port)\(path)"], timeout: 15)
    guard result.status == 0, let last = result.stdout.split(separator: "\n").last, let code = Int(last) else {
        throw TestSupportError("curl \(path): \(result)")
    }
    return (code, String(result.stdout.dropLast(last.count + 1)))
}

/// Sends `request` on a new connection and returns the response's head (up to 5 s).
private func exchange(_ port: Int, _ request: String) throws -> String {
    let fd = try connectTCP(port: port)
    defer { close(fd) }
    return try exchange(fd: fd, request)
}

private func exchange(fd: Int32, _ request: String) throws -> String {
    let bytes = Array(request.utf8)
    guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
        throw TestSupportError("write: errno \(errno)")
    }
    var received: [UInt8] = []
    let deadline = monotonicSeconds() + 5
    while !received.suffix(4).elementsEqual([13, 10, 13, 10]) {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let left = Int32(max(0, (deadline - monotonicSeconds()) * 1000))
        guard poll(&poller, 1, left) == 1 else { throw TestSupportError("no response head within 5 s: \(String(decoding: received, as: UTF8.self))") }
        var byte: UInt8 = 0
        guard read(fd, &byte, 1) == 1 else { break }
        received.append(byte)
    }
    return String(decoding: received, as: UTF8.self)
}

/// `close` then sends RST instead of FIN.
private func resetOnClose(_ fd: Int32) {
    var option = linger(l_onoff: 1, l_linger: 0)
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
}
