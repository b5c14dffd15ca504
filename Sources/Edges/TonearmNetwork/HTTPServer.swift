#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization
import TonearmControl

/// One whole HTTP request, as the server's handler gets it.
public struct HTTPRequest: Sendable {
    /// The connection it came on; ids are never reused while the server lives.
    public var clientID: Int
    public var head: HTTPRequestHead
    public var body: [UInt8]
    /// The peer's IP address ("192.168.1.20", "fd00::7"); nil when it has none (a test's channel).
    public var peerAddress: String?

    public init(clientID: Int, head: HTTPRequestHead, body: [UInt8] = [], peerAddress: String? = nil) {
        self.clientID = clientID
        self.head = head
        self.body = body
        self.peerAddress = peerAddress
    }

    /// The target's path, as sent (not decoded): routes match it exactly.
    public var path: Substring { head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0] }

    /// The query's value for `name`, percent-decoded; nil when absent or not valid UTF-8.
    public func query(_ name: String) -> String? {
        guard let mark = head.uri.firstIndex(of: "?") else { return nil }
        for pair in head.uri[head.uri.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if percentDecoded(parts[0]) == name { return parts.count > 1 ? percentDecoded(parts[1]) : "" }
        }
        return nil
    }
}

/// `%XX` and `+` decoded; nil for a bad escape or bytes that are not UTF-8.
func percentDecoded(_ text: Substring) -> String? {
    var bytes: [UInt8] = []
    var utf8 = text.utf8.makeIterator()
    while let byte = utf8.next() {
        switch byte {
        case UInt8(ascii: "+"): bytes.append(0x20)
        case UInt8(ascii: "%"):
            guard let high = utf8.next().flatMap(hexValue), let low = utf8.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        default: bytes.append(byte)
        }
    }
    return String(validating: bytes, as: UTF8.self)
}

private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

public struct HTTPResponse: Sendable {
    public var status: HTTPResponseStatus
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(_ status: HTTPResponseStatus, contentType: String? = nil, body: [UInt8] = [], headers: HTTPHeaders = [:]) {
        self.status = status
        self.headers = headers
        self.body = body
        if let contentType { self.headers.replaceOrAdd(name: "Content-Type", value: contentType) }
    }

    /// A short plain-text answer: what went wrong, for a person reading it.
    public static func text(_ status: HTTPResponseStatus, _ message: String) -> HTTPResponse {
        HTTPResponse(status, contentType: "text/plain; charset=utf-8", body: Array((message + "\n").utf8))
    }
}

/// The answer to one request, given once, from any thread. Released unanswered, it answers
/// 500 itself, so a browser never waits for a response that cannot come.
public final class HTTPReply: Sendable {
    private let deliver: @Sendable (HTTPResponse) -> Void
    private let answered = Atomic<Bool>(false)

    init(deliver: @escaping @Sendable (HTTPResponse) -> Void) { self.deliver = deliver }

    deinit {
        if !answered.load(ordering: .acquiring) { deliver(.text(.internalServerError, "the daemon dropped the request without answering")) }
    }

    public func send(_ response: HTTPResponse) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        deliver(response)
    }
}

public struct HTTPServerOptions: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// Connections at once, WebSockets included; one more gets 503 and is closed.
    public var maxClients = 64
    /// A longer body gets 413 and the connection is closed.
    public var maxBodyBytes = 64 << 10
    /// A connection silent this long between requests, or taking longer than this to send one,
    /// is closed. A WebSocket has none: what the server sends finds out whether it is there.
    public var requestTimeout: TimeAmount = .seconds(30)
    /// Per connection: what it has not read yet. Over this it is disconnected.
    public var maxPendingOutputBytes = 1 << 20
    /// The one path a WebSocket opens on.
    public var webSocketPath = "/ws"
    /// Whether a WebSocket may open for this request (its `Host`, `Origin`, credentials), asked
    /// off the event loop; the upgrade waits for the answer. Refused, the request goes to the
    /// handler like any other, to be answered with why.
    public var acceptsWebSocket: @Sendable (HTTPRequest) async -> Bool = { _ in true }
    /// Told what the server cannot tell a client. From any thread.
    public var log: (@Sendable (String) -> Void)? = nil
    /// Told, on the event loop, that a WebSocket opened; send it what it needs to start.
    public var webSocketOpened: (@Sendable (Int) -> Void)? = nil

    public init(host: String = "127.0.0.1", port: Int = 8080) {
        self.host = host
        self.port = port
    }
}

/// HTTP/1.1 and WebSockets on the edge: whole requests (head and a bounded body) go to the
/// handler, one at a time per connection, in order; WebSockets only get what the server
/// pushes (`broadcast`, `send`). Served on one loop of the group it is given; the handler is
/// never waited for, so a slow answer holds up nobody else.
///
/// The listener is bound in `init`; `start` begins accepting; `stop` closes everything.
public final class HTTPServer: Sendable {
    public let options: HTTPServerOptions
    private let loop: any EventLoop
    private let listener: any Channel
    private let service: NIOLoopBoundBox<HTTPService>
    private let status = ServerStatus()
    private let phase = Mutex(0)  // 0 bound, 1 serving, 2 stopped

    public init(options: HTTPServerOptions, group: any EventLoopGroup,
                handler: @escaping @Sendable (HTTPRequest, HTTPReply) -> Void) throws(ControlError) {
        let loop = group.next()
        let status = status
        let service = NIOLoopBoundBox.makeBoxSendingValue(HTTPService(options: options, status: status, handler: handler), eventLoop: loop)
        let bootstrap = makeStreamServerBootstrap(
            on: loop, name: "web", maxPendingOutputBytes: options.maxPendingOutputBytes, log: options.log
        ) { channel in
            try service.value.admit(channel)
        }.childChannelOption(.socketOption(.so_keepalive), value: 1)
        let place = "\(options.host):\(options.port)"
        do {
            listener = try bootstrap.serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: options.host, port: options.port).wait()
        } catch {
            throw ControlError(path: place, message: "cannot listen on \(place): \(error)")
        }
        self.options = options
        self.loop = loop
        self.service = service
    }

    deinit { stop() }

    public func start() {
        phase.withLock { phase in
            precondition(phase == 0, "HTTPServer.start() called twice or after stop()")
            phase = 1
        }
        listener.setOption(.autoRead, value: true).whenFailure { [options] error in
            options.log?("web: cannot start accepting clients: \(error)")
        }
    }

    /// Closes the listener and every connection. Not from the event loop. Idempotent.
    public func stop() {
        let previous = phase.withLock { phase in
            defer { phase = 2 }
            return phase
        }
        guard previous != 2 else { return }
        precondition(!loop.inEventLoop, "HTTPServer.stop() called on its event loop")
        status.stopped.store(true, ordering: .relaxed)
        let (loop, listener, service) = (loop, listener, service)
        let closed = loop.flatSubmit {
            service.value.stopping = true
            let closing = [listener.close()] + service.value.roster.clients.values.map { $0.channel.close() }
            return EventLoopFuture.andAllComplete(closing, on: loop)
        }
        try? closed.wait()
    }

    /// A text message to every open WebSocket. From any thread; never waits.
    public func broadcast(_ text: String) {
        onLoop { $0.broadcast(text) }
    }

    /// A text message to one WebSocket. From any thread; never waits.
    public func send(_ text: String, toWebSocket id: Int) {
        onLoop { $0.send(text, to: id) }
    }

    private func onLoop(_ body: @escaping @Sendable (HTTPService) -> Void) {
        guard !status.stopped.load(ordering: .relaxed) else { return }
        let service = service
        if loop.inEventLoop {
            body(service.value)
        } else {
            loop.execute { body(service.value) }
        }
    }
}

/// The server's side on its loop: the connections, which of them are WebSockets, the handler.
package final class HTTPService {
    let options: HTTPServerOptions
    let handler: @Sendable (HTTPRequest, HTTPReply) -> Void
    let roster: ClientRoster<HTTPClient>
    private(set) var webSockets: [Int: any Channel] = [:]
    var stopping = false

    /// A service of its own (a test's, on an `EmbeddedChannel`).
    package convenience init(options: HTTPServerOptions, handler: @escaping @Sendable (HTTPRequest, HTTPReply) -> Void) {
        self.init(options: options, status: ServerStatus(), handler: handler)
    }

    init(options: HTTPServerOptions, status: ServerStatus, handler: @escaping @Sendable (HTTPRequest, HTTPReply) -> Void) {
        precondition(options.maxClients > 0 && options.maxBodyBytes >= 0)
        self.options = options
        self.handler = handler
        roster = ClientRoster(limit: options.maxClients, status: status)
    }

    /// Sets up a new connection's pipeline (the server's, or a test's `EmbeddedChannel`).
    package func admit(_ channel: any Channel) throws {
        if stopping { throw ChannelError.ioOnClosedChannel }
        guard let id = roster.admit({ HTTPClient(id: $0, channel: channel) })?.id else {
            let refusal = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 28\r\nConnection: close\r\n\r\ntoo many connections at once"
            try channel.pipeline.syncOperations.addHandler(RefuseClient(line: ByteBuffer(string: refusal)))
            options.log?("web: refused a client: \(roster.limit) already connected")
            return
        }
        channel.closeFuture.assumeIsolated().whenComplete { _ in
            self.webSockets[id] = nil
            _ = self.roster.remove(id)
        }
        let deadline = RequestDeadline(timeout: options.requestTimeout)
        let collector = HTTPRequestCollector(clientID: id, service: self, deadline: deadline)
        let path = options.webSocketPath
        let accepts = options.acceptsWebSocket
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: 4096,
            shouldUpgrade: { channel, head in
                guard head.uri == path || head.uri.hasPrefix(path + "?") else { return channel.eventLoop.makeSucceededFuture(nil) }
                let loop = channel.eventLoop
                let promise = loop.makePromise(of: HTTPHeaders?.self)
                let request = HTTPRequest(clientID: id, head: head, peerAddress: channel.remoteAddress?.ipAddress)
                Task {
                    let accepted = await accepts(request)
                    loop.execute { promise.succeed(accepted ? HTTPHeaders() : nil) }
                }
                return promise.futureResult
            },
            upgradePipelineHandler: { [service = NIOLoopBound(self, eventLoop: channel.eventLoop)] channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(WebSocketPeer())
                    service.value.opened(id, channel)
                }
            }
        )
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(PendingOutputLimit(limit: options.maxPendingOutputBytes, client: "web: client \(id)", log: options.log))
        try sync.addHandler(deadline)
        try sync.configureHTTPServerPipeline(
            withServerUpgrade: (upgraders: [upgrader], completionHandler: { [handlers = NIOLoopBound((deadline, collector), eventLoop: channel.eventLoop)] context in
                let (deadline, collector) = handlers.value
                deadline.disarm(forever: true)
                context.pipeline.syncOperations.removeHandler(collector, promise: nil)
            }),
            withErrorHandling: true
        )
        try sync.addHandler(collector)
    }

    /// Connections open now, WebSockets included.
    package var connectionCount: Int { roster.clients.count }
    package var webSocketCount: Int { webSockets.count }

    private func opened(_ id: Int, _ channel: any Channel) {
        webSockets[id] = channel
        options.webSocketOpened?(id)
    }

    package func broadcast(_ text: String) {
        for channel in webSockets.values { write(text, channel) }
    }

    package func send(_ text: String, to id: Int) {
        if let channel = webSockets[id] { write(text, channel) }
    }

    private func write(_ text: String, _ channel: any Channel) {
        let frame = WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(string: text))
        channel.writeAndFlush(frame, promise: nil)
    }
}

/// A connection, by its number.
struct HTTPClient {
    let id: Int
    let channel: any Channel
}

/// Closes a connection that sends nothing for `timeout` between requests, or takes longer
/// than that to send one (a client that trickles a byte at a time cannot hold a connection).
/// No clock runs while the handler works on a request, nor on a WebSocket.
final class RequestDeadline: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum State { case waiting, receiving, answering, off }

    private let timeout: TimeAmount
    private var state = State.waiting
    private var timer: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        arm()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if state == .waiting {
            state = .receiving
            arm()
        }
        context.fireChannelRead(data)
    }

    /// The whole request is in: no clock while it is answered.
    func requestReceived() {
        guard state != .off else { return }
        state = .answering
        timer?.cancel()
        timer = nil
    }

    /// The answer is out: the clock runs again for the next request.
    func answered() {
        guard state != .off else { return }
        state = .waiting
        arm()
    }

    func disarm(forever: Bool) {
        if forever { state = .off }
        timer?.cancel()
        timer = nil
    }

    private func arm() {
        timer?.cancel()
        guard state != .off, let context else { return }
        let channel = NIOLoopBound(context.channel, eventLoop: context.eventLoop)
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            channel.value.close(promise: nil)
        }
    }
}

/// Gathers a request's head and body, hands it to the handler, writes the answer back.
final class HTTPRequestCollector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let clientID: Int
    private unowned let service: HTTPService
    private let deadline: RequestDeadline
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var refused = false
    /// A request handed to the handler and not answered yet.
    private var answering = false
    /// The client half-closed: nothing more can come, so the connection closes once the
    /// request in flight, if any, is answered (a closed socket must not hold a slot).
    private var inputClosed = false

    init(clientID: Int, service: HTTPService, deadline: RequestDeadline) {
        self.clientID = clientID
        self.service = service
        self.deadline = deadline
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
            refused = false
            if let length = head.headers.first(name: "Content-Length").flatMap({ Int($0) }), length > service.options.maxBodyBytes {
                refuse(context, head)
            }
        case .body(var part):
            guard !refused else { return }
            guard body.count + part.readableBytes <= service.options.maxBodyBytes else {
                if let head { refuse(context, head) }
                return
            }
            body += part.readBytes(length: part.readableBytes) ?? []
        case .end:
            guard !refused, let head else { return }
            self.head = nil
            deadline.requestReceived()
            answering = true
            let request = HTTPRequest(clientID: clientID, head: head, body: body, peerAddress: context.channel.remoteAddress?.ipAddress)
            body = []
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let loop = context.eventLoop
            let reply = HTTPReply { response in
                loop.execute {
                    let (collector, context) = bound.value
                    collector.write(response, for: head, context)
                }
            }
            service.handler(request, reply)
        }
    }

    /// HTTP's pipelining handler passes this on only after every request that came before it.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event as? ChannelEvent == .inputClosed {
            inputClosed = true
            if !answering { context.close(promise: nil) }
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// A WebSocket upgrade that was refused (another site's page) goes on as a plain request,
    /// answered with why; anything else (a reset connection too) ends the connection.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is NIOWebSocketUpgradeError { return }
        context.close(promise: nil)
    }

    /// A body over the limit: 413, and the connection closes (the rest of it is not read).
    private func refuse(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        refused = true
        deadline.requestReceived()
        var response = HTTPResponse.text(.payloadTooLarge, "the body is over \(service.options.maxBodyBytes) bytes")
        response.headers.replaceOrAdd(name: "Connection", value: "close")
        write(response, for: head, context)
    }

    private func write(_ response: HTTPResponse, for request: HTTPRequestHead, _ context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        var headers = response.headers
        headers.replaceOrAdd(name: "Content-Length", value: String(response.body.count))
        // A refused upgrade ends the connection: its client wanted something else than HTTP on
        // it (and NIO's pipeline would not read another request after it).
        let close = !request.isKeepAlive || headers.first(name: "Connection")?.lowercased() == "close" || request.headers.contains(name: "Upgrade")
        if close { headers.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: request.version, status: response.status, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if request.method != .HEAD, !response.body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: response.body)))), promise: nil)
        }
        let channel = context.channel
        let deadline = deadline
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            self.answering = false
            if close || self.inputClosed { channel.close(promise: nil) } else { deadline.answered() }
        }
    }
}

/// A page's WebSocket: pings answered, a close answered and done, anything else it sends
/// dropped (the page learns everything from what the server pushes). A peer that goes away
/// without a close frame (FIN or RST) is let go at once, not at the next push.
final class WebSocketPeer: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private var closing = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            guard !closing else {
                context.close(promise: nil)
                return
            }
            closing = true
            let channel = context.channel
            let close = WebSocketFrame(fin: true, opcode: .connectionClose, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(close)).whenComplete { _ in channel.close(promise: nil) }
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event as? ChannelEvent == .inputClosed { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
