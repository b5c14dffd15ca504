import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import TestSupport
import TonearmControlPlane
import TonearmNetwork
@testable import TonearmWeb

/// The web server's pipeline on an `EmbeddedChannel`, answering through the real routes and a
/// `TestControlPlane`: raw request bytes in, raw response bytes out, no socket. An
/// `EmbeddedChannel` is used from the thread that made it only: the main actor, for the test,
/// the routes' answers and the event loop alike.
@MainActor
final class EmbeddedWeb {
    let plane: TestControlPlane
    let service: HTTPService
    let channel = EmbeddedChannel()
    private var pending: [UInt8] = []

    let access: WebAccess

    /// The box is called `box` (and answers on port 8080, `HTTPServerOptions`' default); its
    /// client comes from `peer`.
    init(plane: TestControlPlane = TestControlPlane(), token: String? = nil, allowedHosts: [String] = [],
         access: WebAccess? = nil, peer: String = "127.0.0.1", configure: (inout HTTPServerOptions) -> Void = { _ in }) throws {
        self.plane = plane
        var options = HTTPServerOptions()
        configure(&options)
        let access = access ?? WebAccess(token: token)
        self.access = access
        let hosts = HostCheck(port: options.port, allowedHosts: allowedHosts,
                              box: BoxIdentity(read: { [.name("box"), .address([192, 168, 1, 20])] }))
        let routes = WebRoutes(plane: plane, hosts: hosts, access: access, source: CommandSource("web", client: plane.newClient()))
        options.acceptsWebSocket = { routes.acceptsWebSocket($0) }
        service = HTTPService(options: options) { request, reply in
            Task { @MainActor in reply.send(await routes.respond(request)) }
        }
        try service.admit(channel)
        try channel.connect(to: SocketAddress(ipAddress: peer, port: 1)).wait()
    }

    deinit { _ = try? channel.finish() }

    struct Response {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    func send(_ raw: String) throws { try send(Array(raw.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
    }

    /// The next whole response, waiting up to `timeout` for the routes' task to answer.
    func response(timeout: Double = 3) async throws -> Response? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            channel.embeddedEventLoop.run()
            while let part = try channel.readOutbound(as: ByteBuffer.self) { pending += part.readableBytesView }
            if let (response, used) = Self.parse(pending) {
                pending.removeFirst(used)
                return response
            }
            if Date() > deadline { return nil }
            try await Task.sleep(nanoseconds: 2_000_000)
        }
    }

    /// Every byte written since the last look (WebSocket frames).
    func written() throws -> [UInt8] {
        channel.embeddedEventLoop.run()
        var bytes = pending
        pending = []
        while let part = try channel.readOutbound(as: ByteBuffer.self) { bytes += part.readableBytesView }
        return bytes
    }

    /// A request and its response.
    func request(_ raw: String, label: String? = nil) async throws -> Response {
        try send(raw)
        guard let response = try await response() else { throw TestSupportError("no response to \(label ?? String(raw.prefix(60)))") }
        return response
    }

    func get(_ path: String, host: String = "box:8080", headers: String = "") async throws -> Response {
        try await request("GET \(path) HTTP/1.1\r\nHost: \(host)\r\n\(headers)\r\n")
    }

    func post(_ body: String, type: String = "application/json", headers: String = "") async throws -> Response {
        try await request("POST /api HTTP/1.1\r\nHost: box:8080\r\nContent-Type: \(type)\r\nContent-Length: \(body.utf8.count)\r\n\(headers)\r\n\(body)")
    }

    static func parse(_ bytes: [UInt8]) -> (Response, Int)? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, bytes.count - 3)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else { return nil }
        let head = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(head[0].split(separator: " ")[1]) ?? 0
        let headers = head.dropFirst().map { line -> (String, String) in
            let parts = line.split(separator: ":", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
        }
        let length = headers.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0
        guard bytes.count >= end + 4 + length else { return nil }
        return (Response(status: status, headers: headers, body: Array(bytes[(end + 4)..<(end + 4 + length)])), end + 4 + length)
    }
}
