import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization
import TestSupport
import TonearmControlPlane
import TonearmNetwork
import TonearmPlayer
import XCTest
@testable import TonearmWeb

/// The web remote's routes, status codes and limits, through the server's real pipeline on an
/// `EmbeddedChannel`: no socket, no daemon.
@MainActor
final class WebServerTests: XCTestCase {
    func testThePageIsServedWithValidators() async throws {
        let web = try EmbeddedWeb()
        let page = try await web.get("/")
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.header("Content-Type"), "text/html; charset=utf-8")
        XCTAssertTrue(page.text.contains("/page.js"), "the page loads its script")
        let tag = try XCTUnwrap(page.header("ETag"))
        XCTAssertEqual(page.header("Cache-Control"), "no-cache")
        let again = try await web.get("/", headers: "If-None-Match: \(tag)\r\n")
        XCTAssertEqual(again.status, 304)
        XCTAssertTrue(again.body.isEmpty)
        for (path, type) in [("/page.js", "text/javascript; charset=utf-8"), ("/page.css", "text/css; charset=utf-8")] {
            let file = try await web.get(path)
            XCTAssertEqual(file.status, 200, path)
            XCTAssertEqual(file.header("Content-Type"), type, path)
            XCTAssertFalse(file.body.isEmpty, path)
        }
    }

    func testNothingIsReadByItsPath() async throws {
        let web = try EmbeddedWeb()
        for path in ["/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/page.js/../../../etc/passwd", "//etc/passwd",
                     "/art/../../etc/passwd", "/art/..%2f..%2fetc%2fpasswd", "/art/%2e%2e", "/art/flac-1%00", "/art/FLAC-1",
                     "/art/" + String(repeating: "a", count: 65), "/index.html", "/API", "/ws/../etc/passwd"] {
            let response = try await web.get(path)
            XCTAssertEqual(response.status, 404, path)
            XCTAssertFalse(response.text.contains("root:"), path)
        }
        XCTAssertTrue(web.plane.commands.isEmpty, "no artwork was asked for: \(web.plane.commands)")
    }

    func testCommandsGoToTheControlPlane() async throws {
        let web = try EmbeddedWeb()
        let paused = try await web.post(#"{"command":"pause","id":7}"#)
        XCTAssertEqual(paused.status, 200, paused.text)
        XCTAssertEqual(paused.text, #"{"id":7,"ok":true,"result":{"status":"success"}}"# + "\n")
        XCTAssertEqual(web.plane.commands, [.remote(CommandRequest(.pause))])
        XCTAssertEqual(web.plane.received.first?.source, "web")

        web.plane.disable([CommandName(named: "nextTrack")!])
        let disabled = try await web.post(#"{"command":"nextTrack"}"#)
        XCTAssertEqual(disabled.status, 200)
        XCTAssertTrue(disabled.text.contains(#""status":"disabled""#), disabled.text)

        let status = try await web.get("/api/status")
        XCTAssertEqual(status.status, 200)
        XCTAssertTrue(status.text.contains(#""state":"stopped""#), status.text)
        XCTAssertEqual(status.header("Cache-Control"), "no-store")
    }

    func testBadRequestsAreRefusedWithTheirCode() async throws {
        let web = try EmbeddedWeb()
        let cases: [(body: String, type: String, status: Int, code: String?)] = [
            (#"{"command":"pause"}"#, "text/plain", 415, nil),
            (#"{"command":"pause"}"#, "application/x-www-form-urlencoded", 415, nil),
            (#"{"command":"pause""#, "application/json", 400, "malformed"),
            (#"["pause"]"#, "application/json", 400, "badRequest"),
            (#"{"command":7}"#, "application/json", 400, "badRequest"),
            (#"{"command":"pause","id":[1]}"#, "application/json", 400, "badRequest"),
            (#"{"command":"fly"}"#, "application/json", 404, "unknownCommand"),
            (#"{"command":"seek"}"#, "application/json", 400, "badArgument"),
            (#"{"command":"artwork","artwork":"flac-1","size":9000}"#, "application/json", 400, "badArgument"),
            (#"{"command":"sessionOpen","category":"playback"}"#, "application/json; charset=utf-8", 400, "badArgument"),
        ]
        for test in cases {
            let response = try await web.post(test.body, type: test.type)
            XCTAssertEqual(response.status, test.status, "\(test.body) as \(test.type): \(response.text)")
            if let code = test.code { XCTAssertTrue(response.text.contains(#""code":"\#(code)""#), "\(test.body): \(response.text)") }
        }
        XCTAssertTrue(web.plane.commands.isEmpty, "nothing bad reached the plane: \(web.plane.commands)")

        let wrongMethod = try await web.get("/api")
        XCTAssertEqual(wrongMethod.status, 405)
        XCTAssertEqual(wrongMethod.header("Allow"), "POST")
        let delete = try await web.request("DELETE / HTTP/1.1\r\nHost: box\r\n\r\n")
        XCTAssertEqual(delete.status, 405)
        let unknownReport = try await web.get("/api/sessionOpen")
        XCTAssertEqual(unknownReport.status, 404)
        let notASocket = try await web.get("/ws")
        XCTAssertEqual(notASocket.status, 400)
    }

    func testAnotherSitesPageCannotCommand() async throws {
        let web = try EmbeddedWeb()
        let foreign = try await web.post(#"{"command":"pause"}"#, headers: "Origin: http://evil.example\r\n")
        XCTAssertEqual(foreign.status, 403)
        let lookalike = try await web.post(#"{"command":"pause"}"#, headers: "Origin: http://box:8080.evil.example\r\n")
        XCTAssertEqual(lookalike.status, 403)
        XCTAssertTrue(web.plane.commands.isEmpty)
        let own = try await web.post(#"{"command":"pause"}"#, headers: "Origin: http://box:8080\r\n")
        XCTAssertEqual(own.status, 200)
        XCTAssertEqual(web.plane.commands.count, 1)
    }

    func testABodyOverTheLimitIsRefusedAndTheConnectionClosed() async throws {
        let web = try EmbeddedWeb { $0.maxBodyBytes = 100 }
        let body = #"{"command":"add","paths":[""# + String(repeating: "x", count: 200) + #""]}"#
        let response = try await web.post(body)
        XCTAssertEqual(response.status, 413)
        XCTAssertEqual(response.header("Connection"), "close")
        web.channel.embeddedEventLoop.run()
        XCTAssertFalse(web.channel.isActive)
        XCTAssertTrue(web.plane.commands.isEmpty)
    }

    func testAConnectionOverTheLimitIsTurnedAway() async throws {
        let web = try EmbeddedWeb { $0.maxClients = 1 }
        let second = EmbeddedChannel()
        try web.service.admit(second)
        try await second.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 2)).get()
        second.embeddedEventLoop.run()
        let refusal = try XCTUnwrap(second.readOutbound(as: ByteBuffer.self))
        XCTAssertTrue(String(buffer: refusal).hasPrefix("HTTP/1.1 503 "), String(buffer: refusal))
        XCTAssertFalse(second.isActive)
        let first = try await web.get("/")
        XCTAssertEqual(first.status, 200, "the first connection is served")
    }

    func testASlowOrSilentClientIsClosed() async throws {
        let trickle = try EmbeddedWeb { $0.requestTimeout = .seconds(30) }
        try trickle.send("GET / HTTP/1.1\r\nHo")
        trickle.channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        try trickle.send("st: b")
        trickle.channel.embeddedEventLoop.advanceTime(by: .seconds(11))
        XCTAssertFalse(trickle.channel.isActive, "a request that takes over 30 s to arrive")

        let silent = try EmbeddedWeb { $0.requestTimeout = .seconds(30) }
        let page = try await silent.get("/")
        XCTAssertEqual(page.status, 200)
        silent.channel.embeddedEventLoop.advanceTime(by: .seconds(29))
        XCTAssertTrue(silent.channel.isActive)
        let again = try await silent.get("/page.css")
        XCTAssertEqual(again.status, 200, "a request within the time starts the clock again")
        silent.channel.embeddedEventLoop.advanceTime(by: .seconds(31))
        XCTAssertFalse(silent.channel.isActive, "silent for over 30 s")
    }

    func testPipelinedRequestsAreAnsweredInOrder() async throws {
        let web = try EmbeddedWeb()
        try web.send("GET /page.css HTTP/1.1\r\nHost: box\r\n\r\nGET /nope HTTP/1.1\r\nHost: box\r\n\r\nGET /page.js HTTP/1.1\r\nHost: box\r\n\r\n")
        var statuses: [Int] = [], types: [String?] = []
        for _ in 0..<3 {
            let response = try await web.response()
            statuses.append(response?.status ?? 0)
            types.append(response?.header("Content-Type"))
        }
        XCTAssertEqual(statuses, [200, 404, 200])
        XCTAssertEqual(types.first ?? nil, "text/css; charset=utf-8")
        XCTAssertEqual(types.last ?? nil, "text/javascript; charset=utf-8")
    }

    func testArtIsSizedCachedAndChecked() async throws {
        let web = try EmbeddedWeb()
        let placeholder = try await web.get("/art/placeholder?size=64")
        XCTAssertEqual(placeholder.status, 200)
        XCTAssertEqual(placeholder.header("Content-Type"), "image/svg+xml")
        XCTAssertTrue(placeholder.text.hasPrefix(#"<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64""#), placeholder.text)
        XCTAssertTrue(placeholder.text.hasSuffix("</svg>"))
        XCTAssertLessThan(placeholder.body.count, 2048)
        // Well-formed: every element it opens is closed.
        XCTAssertEqual(placeholder.text.components(separatedBy: "<g ").count, placeholder.text.components(separatedBy: "</g>").count)
        XCTAssertEqual(placeholder.header("Cache-Control"), "public, max-age=31536000, immutable")
        let tag = try XCTUnwrap(placeholder.header("ETag"))
        let cached = try await web.get("/art/placeholder?size=64", headers: "If-None-Match: \(tag)\r\n")
        XCTAssertEqual(cached.status, 304)
        for size in ["5", "4096", "abc", ""] {
            let response = try await web.get("/art/placeholder?size=\(size)")
            XCTAssertEqual(response.status, 400, "size=\(size)")
        }
        // An id the plane has no picture for.
        let missing = try await web.get("/art/flac-0123abcd?size=300")
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(web.plane.commands, [.artwork(id: "flac-0123abcd", fitting: 300)], "asked at the size the page wants")
    }

    func testAWebSocketOpensForThePageOnlyAndHearsPushes() async throws {
        let opened = OpenedSockets()
        let refused = try EmbeddedWeb { options in options.webSocketOpened = { opened.add($0) } }
        let upgrade = "GET /ws HTTP/1.1\r\nHost: box:8080\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        let foreign = try await refused.request(upgrade + "Origin: http://evil.example\r\n\r\n")
        XCTAssertEqual(foreign.status, 403)
        XCTAssertTrue(opened.ids.isEmpty)

        // A browser opens a WebSocket on a connection of its own.
        let web = try EmbeddedWeb { options in options.webSocketOpened = { opened.add($0) } }
        let own = try await web.request(upgrade + "Origin: http://box:8080\r\n\r\n")
        XCTAssertEqual(own.status, 101)
        XCTAssertEqual(own.header("Sec-WebSocket-Accept"), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        XCTAssertEqual(opened.ids.count, 1)
        web.service.broadcast(#"{"event":"status"}"#)
        XCTAssertEqual(try web.written(), [0x81, 18] + Array(#"{"event":"status"}"#.utf8))

        // A ping (masked, as a browser sends it) is answered with its pong.
        try web.send([0x89, 0x82, 1, 2, 3, 4, UInt8(ascii: "h") ^ 1, UInt8(ascii: "i") ^ 2])
        XCTAssertEqual(try web.written(), [0x8A, 2, UInt8(ascii: "h"), UInt8(ascii: "i")])
        // No clock on a WebSocket: a quiet page stays.
        web.channel.embeddedEventLoop.advanceTime(by: .seconds(120))
        XCTAssertTrue(web.channel.isActive)
    }

    func testEventsFollowWhatChanged() async {
        var state = ControlState()
        state.volume = 40
        func names(_ subsystems: Set<Subsystem>, currentItemWas: Int? = nil) -> [String] {
            WebEvents.changed(ChangeBatch(subsystems: subsystems), state, nil, now: 0, currentItemWas: currentItemWas).map { event in
                String(event.dropFirst(#"{"event":""#.count).prefix { $0 != "\"" })
            }
        }
        XCTAssertEqual(names([.mixer]), ["status"])
        XCTAssertEqual(names([.options]), ["status"])
        XCTAssertEqual(names([.queue]), ["status", "queue"])
        XCTAssertEqual(names([.sessions]), ["status", "sessions"])
        XCTAssertEqual(names([.storedPlaylists]), ["playlists"])
        XCTAssertEqual(names([.library]), ["library"])
        XCTAssertEqual(names([]), [])
        XCTAssertEqual(names([.player], currentItemWas: 4), ["status", "queue"], "the next item plays: the page marks it")
        XCTAssertEqual(WebEvents.all(state, nil, now: 0).count, 5)
        XCTAssertTrue(WebEvents.all(state, nil, now: 0)[0].contains(#""volume":40"#) || WebEvents.all(state, nil, now: 0)[0].contains(#""volume":40.0"#))
    }
}

final class OpenedSockets: Sendable {
    private let list = Mutex<[Int]>([])
    func add(_ id: Int) { list.withLock { $0.append(id) } }
    var ids: [Int] { list.withLock { $0 } }
}
