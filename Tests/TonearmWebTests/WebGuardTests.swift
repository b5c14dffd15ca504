import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import TestSupport
import TonearmControlPlane
import TonearmNetwork
import TonearmPlayer
import XCTest
@testable import TonearmWeb

/// Who may ask (the `Host` check, the token, its guessing) and that a connection the client
/// closed lets go of its place, through the server's real pipeline on an `EmbeddedChannel`.
@MainActor
final class WebGuardTests: XCTestCase {
    private let upgrade = "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"

    // MARK: Host

    func testOnlyTheBoxsOwnHostsAreServed() async throws {
        let web = try EmbeddedWeb(allowedHosts: ["music.example", "[fd00::20]"])
        for host in ["localhost", "localhost:8080", "LocalHost.:8080", "127.0.0.1", "127.0.0.1:8080", "127.9.8.7:8080",
                     "[::1]", "[::1]:8080", "[0:0:0:0:0:0:0:1]:8080", "box", "BOX:8080", "box.", "192.168.1.20:8080",
                     "music.example", "Music.Example.:8080", "[fd00::20]:8080"] {
            let response = try await web.request("GET /api/status HTTP/1.1\r\nHost: \(host)\r\n\r\n")
            XCTAssertEqual(response.status, 200, "Host: \(host): \(response.text)")
        }
        let old = try await web.request("GET /api/status HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        XCTAssertEqual(old.status, 200, "HTTP/1.0 did not require Host: \(old.text)")

        for host in ["evil.example:8080", "evil.example", "localhost:8081", "127.0.0.1:80", "[::2]:8080", "10.0.0.1",
                     "box.evil.example", "localhost.evil.example", "sub.localhost", "192.168.1.21"] {
            let body = #"{"command":"volume","percent":18}"#
            let response = try await web.request("POST /api HTTP/1.1\r\nHost: \(host)\r\nOrigin: http://\(host)\r\n"
                                                 + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            XCTAssertEqual(response.status, 421, "Host: \(host): \(response.text)")
            XCTAssertTrue(response.text.hasSuffix("\n") && response.text.dropLast().split(separator: "\n").count == 1,
                          "one line: \(response.text)")
            XCTAssertTrue(response.text.contains(host.hasPrefix("localhost:") || host.hasPrefix("127.0.0.1:") ? "port" : host),
                          "says why: \(response.text)")
        }
        let page = try await web.get("/", host: "evil.example:8080")
        XCTAssertEqual(page.status, 421, "the page too")
        XCTAssertTrue(web.plane.commands.isEmpty, "nothing reached the plane: \(web.plane.commands)")
    }

    func testAMalformedOrMissingHostIsABadRequest() async throws {
        let web = try EmbeddedWeb()
        for host in ["", "[::1", "::1", "::1:8080", "localhost:", "localhost:abc", "localhost:99999", "local host", "a..b", ".box", "[box]"] {
            let response = try await web.request("GET /api/status HTTP/1.1\r\nHost: \(host)\r\n\r\n")
            XCTAssertEqual(response.status, 400, "Host: '\(host)': \(response.text)")
            XCTAssertTrue(response.text.contains("Host"), response.text)
        }
        let missing = try await web.request("GET /api/status HTTP/1.1\r\n\r\n")
        XCTAssertEqual(missing.status, 400)
        XCTAssertEqual(missing.text, "an HTTP/1.1 request needs a Host header\n")
        let twice = try await web.request("GET /api/status HTTP/1.1\r\nHost: box\r\nHost: evil.example\r\n\r\n")
        XCTAssertEqual(twice.status, 400)
        XCTAssertEqual(twice.text, "a request has one Host header, not 2\n")
    }

    func testAWebSocketForAnotherHostIsNotOpened() async throws {
        let opened = OpenedSockets()
        let web = try EmbeddedWeb { options in options.webSocketOpened = { opened.add($0) } }
        let response = try await web.request(upgrade + "Host: evil.example:8080\r\nOrigin: http://evil.example:8080\r\n\r\n")
        XCTAssertEqual(response.status, 421, response.text)
        XCTAssertNil(response.header("Upgrade"))
        XCTAssertTrue(opened.ids.isEmpty)
        XCTAssertEqual(web.service.webSocketCount, 0)
        XCTAssertEqual(response.header("Connection"), "close")
        web.channel.embeddedEventLoop.run()
        XCTAssertFalse(web.channel.isActive, "a refused upgrade ends the connection")
    }

    func testTheBoxsAddressesAreReadAgainOnAMissAtMostEveryInterval() async {
        let reads = Counter()
        let current = LockedValue<Set<RequestHost>>([.address([192, 168, 1, 20])])
        let box = BoxIdentity(refreshInterval: 5) {
            reads.increment()
            return current.value
        }
        XCTAssertTrue(box.knows(.address([192, 168, 1, 20]), now: 100))
        XCTAssertEqual(reads.value, 1)
        XCTAssertTrue(box.knows(.address([192, 168, 1, 20]), now: 200), "a hit reads nothing")
        XCTAssertEqual(reads.value, 1)
        // DHCP gives the box a new address.
        current.value = [.address([10, 0, 0, 7])]
        XCTAssertTrue(box.knows(.address([10, 0, 0, 7]), now: 201), "a miss reads them again")
        XCTAssertEqual(reads.value, 2)
        for second in 0..<40 { XCTAssertFalse(box.knows(.name("evil.example"), now: 202 + Double(second) / 10)) }
        XCTAssertEqual(reads.value, 2, "misses within 5 s of the last read read nothing")
        XCTAssertFalse(box.knows(.name("evil.example"), now: 206.5))
        XCTAssertEqual(reads.value, 3)
    }

    func testTheBoxsHostnameAndAddressesAreReadFromTheSystem() async {
        let hosts = BoxIdentity.readSystem()
        let hostname = ProcessInfo.processInfo.hostName.lowercased()
        let first = String(hostname.split(separator: ".").first ?? "")
        XCTAssertTrue(hosts.contains(.name(first)), "\(first) in \(hosts)")
        XCTAssertTrue(hosts.contains(.name(first + ".local")), "\(first).local in \(hosts)")
        XCTAssertTrue(hosts.contains(.address([127, 0, 0, 1])), "lo's address in \(hosts)")
    }

    func testHostsParse() async {
        XCTAssertEqual(RequestHost.parse("Box.Local.:8080")?.host, .name("box.local"))
        XCTAssertEqual(RequestHost.parse("Box.Local.:8080")?.port, 8080)
        XCTAssertEqual(RequestHost.parse("[::1]")?.host, .address([UInt8](repeating: 0, count: 15) + [1]))
        XCTAssertEqual(RequestHost.parse("10.1.2.3")?.host, .address([10, 1, 2, 3]))
        XCTAssertNil(RequestHost.parseAllowed("music.example:8080"), "allowed_hosts names no port")
        XCTAssertTrue(RequestHost.parse("127.200.0.1")!.host.isLoopback)
        XCTAssertFalse(RequestHost.parse("localhost.evil.example")!.host.isLoopback)
    }

    // MARK: the token

    func testATokenGuardsEverythingButThePagesFiles() async throws {
        let opened = OpenedSockets()
        let web = try EmbeddedWeb(token: "s3cret-token")
        for path in ["/", "/page.js", "/page.css"] {
            let file = try await web.get(path)
            XCTAssertEqual(file.status, 200, "\(path): the page asks for the token itself")
        }
        let none = try await web.post(#"{"command":"pause"}"#)
        XCTAssertEqual(none.status, 401)
        XCTAssertTrue(none.text.contains(#""code":"unauthorized""#), none.text)
        // (From another address: a wrong token makes its address wait.)
        let guesser = try EmbeddedWeb(plane: web.plane, access: web.access, peer: "10.0.0.9")
        let wrong = try await guesser.post(#"{"command":"pause"}"#, headers: "Authorization: Bearer s3cret-tokeN\r\n")
        XCTAssertEqual(wrong.status, 401)
        for path in ["/api/status", "/art/placeholder?size=64", "/art/flac-0123abcd", "/ws"] {
            let response = try await web.get(path)
            XCTAssertEqual(response.status, 401, "\(path): \(response.text)")
        }
        let socketWeb = try EmbeddedWeb(access: web.access) { options in options.webSocketOpened = { opened.add($0) } }
        let socket = try await socketWeb.request(upgrade + "Host: box:8080\r\nOrigin: http://box:8080\r\n\r\n")
        XCTAssertEqual(socket.status, 401, "the upgrade itself: \(socket.text)")
        XCTAssertTrue(opened.ids.isEmpty)
        XCTAssertTrue(web.plane.commands.isEmpty, "nothing reached the plane: \(web.plane.commands)")

        let right = try await web.post(#"{"command":"pause"}"#, headers: "Authorization: Bearer s3cret-token\r\n")
        XCTAssertEqual(right.status, 200)
        XCTAssertEqual(web.plane.commands, [.remote(CommandRequest(.pause))])
    }

    func testThePageLogsInOnceAndItsCookieOpensEveryRoute() async throws {
        let web = try EmbeddedWeb(token: "s3cret-token")
        let login = try await web.request(Self.login(#"{"token":"s3cret-token"}"#))
        XCTAssertEqual(login.status, 204, login.text)
        let cookie = try XCTUnwrap(login.header("Set-Cookie"))
        XCTAssertTrue(cookie.hasPrefix("tonearm-session=\(web.access.sessionKey);"), cookie)
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
            XCTAssertTrue(cookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.contains(attribute), "\(attribute): \(cookie)")
        }
        XCTAssertFalse(cookie.contains("s3cret-token"), "the cookie is not the token")
        let session = "Cookie: theme=dark; tonearm-session=\(web.access.sessionKey)\r\n"
        let status = try await web.get("/api/status", headers: session)
        XCTAssertEqual(status.status, 200)
        let art = try await web.get("/art/placeholder?size=64", headers: session)
        XCTAssertEqual(art.status, 200)
        let command = try await web.post(#"{"command":"pause"}"#, headers: session)
        XCTAssertEqual(command.status, 200)

        let opened = OpenedSockets()
        let socketWeb = try EmbeddedWeb(access: web.access) { options in options.webSocketOpened = { opened.add($0) } }
        let socket = try await socketWeb.request(upgrade + "Host: box:8080\r\nOrigin: http://box:8080\r\n" + session + "\r\n")
        XCTAssertEqual(socket.status, 101)
        XCTAssertEqual(opened.ids.count, 1)

        let stale = try await web.get("/api/status", headers: "Cookie: tonearm-session=0123456789abcdef0123456789abcdef\r\n")
        XCTAssertEqual(stale.status, 401, "a session from before a restart")
    }

    func testABadLoginIsRefusedWithWhy() async throws {
        let web = try EmbeddedWeb(token: "s3cret-token")
        let cases: [(request: String, status: Int, says: String)] = [
            (Self.login(#"{"token":42}"#), 400, #"{\"token\":\"…\"}"#),
            (Self.login(#"not json"#), 400, #"{\"token\":\"…\"}"#),
            (Self.login(#"{"token":"s3cret-token"}"#, type: "text/plain"), 415, "application/json"),
            (Self.login(#"{"token":"s3cret-token"}"#, origin: "http://evil.example"), 403, "another site"),
            ("GET /login HTTP/1.1\r\nHost: box\r\n\r\n", 405, "POST"),
        ]
        for test in cases {
            let response = try await web.request(test.request)
            XCTAssertEqual(response.status, test.status, "\(test.request): \(response.text)")
            XCTAssertTrue(response.text.contains(test.says), "\(test.request): \(response.text)")
            XCTAssertNil(response.header("Set-Cookie"))
        }
    }

    func testWrongTokensMakeTheirAddressWait() async throws {
        let access = WebAccess(token: "s3cret-token", guesses: TokenGuesses(firstWait: 600, longestWait: 600))
        let web = try EmbeddedWeb(access: access, peer: "192.168.1.50")
        let wrong = try await web.request(Self.login(#"{"token":"guess-0001"}"#))
        XCTAssertEqual(wrong.status, 401)
        XCTAssertTrue(wrong.text.contains("that token is wrong"), wrong.text)
        // Even the right token waits: a guesser cannot tell.
        for request in [Self.login(#"{"token":"s3cret-token"}"#),
                        "GET /api/status HTTP/1.1\r\nHost: box\r\nAuthorization: Bearer s3cret-token\r\n\r\n"] {
            let slowed = try await web.request(request)
            XCTAssertEqual(slowed.status, 429, slowed.text)
            XCTAssertEqual(slowed.header("Retry-After"), "600")
            XCTAssertTrue(slowed.text.contains("too many wrong tokens from this address: try again in 600 s"), slowed.text)
        }
        // Another address is not held up.
        let other = try EmbeddedWeb(access: access, peer: "192.168.1.51")
        let fine = try await other.request(Self.login(#"{"token":"s3cret-token"}"#))
        XCTAssertEqual(fine.status, 204)
    }

    func testTheWaitDoublesIsBoundedAndClearedByTheRightToken() async {
        var guesses = TokenGuesses(capacity: 3, firstWait: 1, longestWait: 60, forgetAfter: 900)
        var waits: [Int?] = []
        var now = 1000.0
        for _ in 0..<8 {
            guesses.failed("10.0.0.1", now: now)
            waits.append(guesses.wait(for: "10.0.0.1", now: now))
            now += 100
        }
        XCTAssertEqual(waits, [1, 2, 4, 8, 16, 32, 60, 60])
        XCTAssertNil(guesses.wait(for: "10.0.0.1", now: now), "the wait passed")
        guesses.succeeded("10.0.0.1")
        guesses.failed("10.0.0.1", now: now)
        XCTAssertEqual(guesses.wait(for: "10.0.0.1", now: now), 1, "a right token starts afresh")
        guesses.failed("10.0.0.1", now: now + 2000)
        XCTAssertEqual(guesses.wait(for: "10.0.0.1", now: now + 2000), 1, "so does a quarter of an hour without a guess")

        // One host's IPv6 addresses count as one.
        guesses.failed("2001:db8:1:2::a", now: now)
        guesses.failed("2001:db8:1:2:ffff::b", now: now + 1)
        XCTAssertEqual(guesses.wait(for: "2001:db8:1:2:1:2:3:4", now: now + 1), 2)
        XCTAssertNil(guesses.wait(for: "2001:db8:1:3::a", now: now + 1))
        // IPv4 peers of a server bound to `::` are each their own.
        XCTAssertEqual(TokenGuesses.key("::ffff:192.168.1.7"), "192.168.1.7")
        XCTAssertNotEqual(TokenGuesses.key("::ffff:192.168.1.7"), TokenGuesses.key("::ffff:192.168.1.8"))

        // At most `capacity` peers: the one quiet longest makes room.
        guesses.failed("10.0.0.2", now: now + 3000)
        guesses.failed("10.0.0.3", now: now + 3001)
        XCTAssertEqual(guesses.peers.count, 3)
        XCTAssertNotNil(guesses.wait(for: "10.0.0.3", now: now + 3001))
        XCTAssertNil(guesses.wait(for: "10.0.0.1", now: now + 3001), "forgotten to make room")
    }

    // MARK: closed connections

    func testAClientThatClosesOrResetsIsLetGoAtOnce() async throws {
        let web = try EmbeddedWeb()
        XCTAssertEqual(web.service.connectionCount, 1)
        web.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        web.channel.embeddedEventLoop.run()
        XCTAssertFalse(web.channel.isActive, "a half-closed connection with nothing to answer")
        XCTAssertEqual(web.service.connectionCount, 0)

        // Its last request is answered first (curl's way: the request, then FIN).
        let asking = try EmbeddedWeb()
        try asking.send("GET /api/status HTTP/1.1\r\nHost: box\r\n\r\n")
        asking.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        asking.channel.embeddedEventLoop.run()
        XCTAssertTrue(asking.channel.isActive, "closed only once answered")
        let answer = try await asking.response()
        XCTAssertEqual(answer?.status, 200)
        asking.channel.embeddedEventLoop.run()
        XCTAssertFalse(asking.channel.isActive)
        XCTAssertEqual(asking.service.connectionCount, 0)

        // Reset in the middle of a request.
        let reset = try EmbeddedWeb()
        try reset.send("GET /api/status HTTP/1.1\r\nHo")
        reset.channel.pipeline.fireErrorCaught(IOError(errnoCode: ECONNRESET, reason: "read(descriptor:pointer:size:)"))
        reset.channel.embeddedEventLoop.run()
        XCTAssertFalse(reset.channel.isActive)
        XCTAssertEqual(reset.service.connectionCount, 0)
    }


    func testAWebSocketWhosePeerWentAwayIsLetGoAtOnce() async throws {
        for ending in ["FIN", "RST"] {
            let web = try EmbeddedWeb()
            let response = try await web.request(upgrade + "Host: box:8080\r\n\r\n")
            XCTAssertEqual(response.status, 101)
            XCTAssertEqual(web.service.webSocketCount, 1)
            if ending == "FIN" {
                web.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
            } else {
                web.channel.pipeline.fireErrorCaught(IOError(errnoCode: ECONNRESET, reason: "read(descriptor:pointer:size:)"))
            }
            web.channel.embeddedEventLoop.run()
            XCTAssertFalse(web.channel.isActive, ending)
            XCTAssertEqual(web.service.webSocketCount, 0, "\(ending): gone before any push")
            XCTAssertEqual(web.service.connectionCount, 0, ending)
        }
    }

    private static func login(_ body: String, type: String = "application/json", origin: String? = nil) -> String {
        "POST /login HTTP/1.1\r\nHost: box:8080\r\nContent-Type: \(type)\r\nContent-Length: \(body.utf8.count)\r\n"
            + (origin.map { "Origin: \($0)\r\n" } ?? "") + "\r\n" + body
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

private final class LockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
