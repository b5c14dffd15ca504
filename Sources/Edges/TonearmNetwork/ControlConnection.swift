#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import TonearmControl
import TonearmJSON

/// The control protocol's server side (see `ControlErrorCode` for the protocol), on the
/// server's loop and touched only there: the topics, the command handler, and every
/// connection by client id, for events.
final class ControlService {
    let topics: [String]
    let maxLineBytes: Int
    let maxPendingOutputBytes: Int
    let handler: @Sendable (ControlRequest, Reply) -> Void
    let log: (@Sendable (String) -> Void)?
    let clientDisconnected: (@Sendable (Int) -> Void)?
    let status: ServerStatus
    let roster: ClientRoster<ControlConnection>
    /// The server is stopping: the connections that close now are closed by it.
    var stopping = false

    init(options: ControlServerOptions, status: ServerStatus, handler: @escaping @Sendable (ControlRequest, Reply) -> Void) {
        precondition(options.maxClients > 0 && options.maxLineBytes > 0 && options.maxPendingOutputBytes > 0)
        precondition(Set(options.topics).count == options.topics.count, "duplicate topics")
        topics = options.topics
        maxLineBytes = options.maxLineBytes
        maxPendingOutputBytes = options.maxPendingOutputBytes
        self.handler = handler
        log = options.log
        clientDisconnected = options.clientDisconnected
        self.status = status
        roster = ClientRoster(limit: options.maxClients, status: status)
    }

    /// Sets up an accepted connection: the line framing, the output limit and the protocol;
    /// or, with `maxClients` connected already, one `tooManyClients` line and the door. The
    /// channel's options come from `makeStreamServerBootstrap` (or a test).
    func admit(_ channel: any Channel) throws {
        // Accepted as the server stops: the bootstrap closes it.
        if stopping { throw ChannelError.ioOnClosedChannel }
        if roster.clients.count < roster.limit {
            try serve(channel)
            return
        }
        // Full, as far as this turn of the loop knows: clients that hung up just before this
        // one arrived may not have been seen yet (the listener's event can come first). Decide
        // once the turn's other events are handled; meanwhile nothing is read.
        try channel.syncOptions?.setOption(.autoRead, value: false)
        let pending = NIOLoopBound(channel, eventLoop: channel.eventLoop)
        channel.eventLoop.assumeIsolated().execute {
            let channel = pending.value
            do {
                if self.stopping {
                    channel.close(promise: nil)
                } else if self.roster.clients.count < self.roster.limit {
                    try self.serve(channel)
                } else {
                    try self.refuse(channel)
                }
                try channel.syncOptions?.setOption(.autoRead, value: true)
            } catch {
                channel.close(promise: nil)
            }
        }
    }

    /// The line framing, the output limit and the protocol.
    private func serve(_ channel: any Channel) throws {
        guard let connection = roster.admit({ ControlConnection(clientID: $0, service: self) }) else { return }
        // Normally `channelInactive` says it first; this covers a channel that never got active.
        let id = connection.clientID
        channel.closeFuture.assumeIsolated().whenComplete { _ in self.closed(id) }
        try channel.pipeline.syncOperations.addHandlers([
            PendingOutputLimit(limit: maxPendingOutputBytes, client: "control: client \(id)", log: log),
            ByteToMessageHandler(LineFrameDecoder(maxLineBytes: maxLineBytes)),
            connection,
        ])
    }

    /// One `tooManyClients` line, and the door.
    private func refuse(_ channel: any Channel) throws {
        let message = "tonearmd serves at most \(roster.limit) clients at once; try again later"
        let refusal = Reply.failure(id: nil, code: ControlErrorCode.tooManyClients, message: message)
        try channel.pipeline.syncOperations.addHandler(RefuseClient(line: ByteBuffer(bytes: line(refusal))))
        log?("control: refused a client: \(roster.limit) already connected")
    }

    /// A connection closed: its place is free at once, for a client already waiting to be
    /// accepted in the same turn of the loop (the channel's close future completes a turn later).
    func closed(_ clientID: Int) {
        guard roster.remove(clientID) != nil, !stopping else { return }
        clientDisconnected?(clientID)
    }

    /// Sends an event line to every client subscribed to `topic`, or to `only` that one.
    func publish(_ event: ByteBuffer, topic: String, only clientID: Int? = nil) {
        if let clientID {
            roster.clients[clientID]?.send(event, topic: topic)
        } else {
            for connection in roster.clients.values { connection.send(event, topic: topic) }
        }
    }
}

/// One control client: its lines in, answered by the server itself or handed to the command
/// handler; responses and its events out. On the server's loop.
final class ControlConnection: ChannelInboundHandler {
    typealias InboundIn = InboundLine
    typealias OutboundOut = ByteBuffer

    let clientID: Int
    private let service: ControlService
    private var context: ChannelHandlerContext?
    /// Subscribed topics, in the order the server lists its topics.
    private var topics: [String] = []
    /// Requests handed to the handler and not answered yet.
    private var outstanding = 0
    /// The client half-closed: the connection closes once its requests are answered.
    private var inputClosed = false
    private var closing = false
    /// Handling a line: answers given now go out with the others of the batch, at its end.
    private var inRead = false
    private var unflushed = false

    init(clientID: Int, service: ControlService) {
        self.clientID = clientID
        self.service = service
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    // MARK: Input

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        inRead = true
        defer { inRead = false }
        switch unwrapInboundIn(data) {
        case .tooLong:
            answer(id: .null, code: ControlErrorCode.lineTooLong,
                   message: "request line longer than \(service.maxLineBytes) bytes; it was discarded")
        case .line(let bytes):
            handle(bytes)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush()
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The framing passed the last line on before this.
        if event as? ChannelEvent == .inputClosed {
            inputClosed = true
            flush()
            closeIfAnswered()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing = true
        service.closed(clientID)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A client that went away is no news.
        let errno = (error as? IOError)?.errnoCode
        if errno != EPIPE && errno != ECONNRESET {
            service.log?("control: client \(clientID) disconnected: \(error)")
        }
        context.close(promise: nil)
    }

    private func handle(_ bytes: ByteBuffer) {
        if bytes.readableBytesView.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }

        let parsed = bytes.withUnsafeReadableBytes { raw in
            Result { () throws(JSONParseError) in try JSONValue.parse(raw.assumingMemoryBound(to: UInt8.self)) }
        }
        let request: JSONValue
        switch parsed {
        case .success(let value): request = value
        case .failure(let error):
            answer(id: .null, code: ControlErrorCode.malformed, message: "invalid JSON: \(error.description)")
            return
        }
        guard case .object = request else {
            answer(id: .null, code: ControlErrorCode.badRequest, message: "a request must be a JSON object")
            return
        }
        let id = request["id"] ?? .null
        switch id {
        case .array, .object:
            answer(id: .null, code: ControlErrorCode.badRequest, message: "'id' must be a string, number, boolean or null")
            return
        default: break
        }
        guard let command = request["command"]?.stringValue else {
            let why = request["command"] == nil ? "a request needs a \"command\"" : "'command' must be a string"
            answer(id: id, code: ControlErrorCode.badRequest, message: why)
            return
        }
        switch command {
        case "subscribe", "unsubscribe":
            changeSubscription(request, id: id, subscribing: command == "subscribe")
        default:
            outstanding += 1
            let reply = Reply(clientID: clientID, id: id, command: command, log: service.log, deliver: makeDelivery())
            service.handler(ControlRequest(clientID: clientID, id: id, command: command, arguments: request), reply)
        }
    }

    private func changeSubscription(_ request: JSONValue, id: JSONValue, subscribing: Bool) {
        let known = service.topics
        var named = known
        if let topics = request["topics"], !topics.isNull {
            guard let list = topics.arrayValue?.compactMap(\.stringValue), list.count == topics.arrayValue?.count else {
                answer(id: id, code: ControlErrorCode.badArgument, message: "'topics' must be an array of strings")
                return
            }
            if let unknown = list.first(where: { !known.contains($0) }) {
                let choices = known.isEmpty ? "this daemon has none" : "known: \(known.joined(separator: ", "))"
                answer(id: id, code: ControlErrorCode.badArgument, message: "unknown topic '\(unknown)' (\(choices))")
                return
            }
            named = list
        }
        // Events reach this connection on this loop too, so the first one it gets comes after
        // this response.
        topics = known.filter { subscribing ? topics.contains($0) || named.contains($0) : topics.contains($0) && !named.contains($0) }
        let result: JSONValue = .object([("topics", .array(topics.map { .string($0) }))])
        send(ByteBuffer(bytes: line(.object([("id", id), ("ok", .bool(true)), ("result", result)]))))
    }

    // MARK: Output

    /// Hands the `Reply` a way back to this connection from any thread. After `stop` the
    /// answer is dropped: the loop may be gone.
    private func makeDelivery() -> @Sendable ([UInt8]) -> Void {
        let loop = context!.eventLoop
        let connection = NIOLoopBound(self, eventLoop: loop)
        let status = service.status
        return { bytes in
            let response = ByteBuffer(bytes: bytes)
            if loop.inEventLoop {
                connection.value.replied(response)
            } else if !status.stopped.load(ordering: .relaxed) {
                loop.execute { connection.value.replied(response) }
            }
        }
    }

    private func replied(_ response: ByteBuffer) {
        outstanding -= 1
        if inRead {
            send(response)
        } else {
            sendNow(response)
            closeIfAnswered()
        }
    }

    /// An event, if this client subscribed to its topic.
    func send(_ event: ByteBuffer, topic: String) {
        if topics.contains(topic) { sendNow(event) }
    }

    /// An error the server answers itself.
    private func answer(id: JSONValue, code: String, message: String) {
        send(ByteBuffer(bytes: line(Reply.failure(id: id, code: code, message: message))))
    }

    /// Written now, sent when the batch of requests being read is done.
    private func send(_ line: ByteBuffer) {
        guard !closing, let context else { return }
        context.write(wrapOutboundOut(line), promise: nil)
        unflushed = true
    }

    private func sendNow(_ line: ByteBuffer) {
        guard !closing, let context else { return }
        context.writeAndFlush(wrapOutboundOut(line), promise: nil)
        unflushed = false
    }

    private func flush() {
        guard unflushed, let context else { return }
        unflushed = false
        context.flush()
    }

    /// A half-closed client is closed once its requests are answered and the answers sent.
    private func closeIfAnswered() {
        guard inputClosed, outstanding == 0, !closing, let context else { return }
        closing = true
        if (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) == 0 {
            // Nothing left to send: closed now, so its place is free for a client accepted in
            // this same turn of the loop (as when many clients leave and one arrives at once).
            context.close(promise: nil)
            return
        }
        // Writes complete in order: when this empty one does, everything before it is out.
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer())).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Closes the connection at once (the server is stopping); the future says when it is closed.
    func close() -> EventLoopFuture<Void>? {
        guard let context else { return nil }
        closing = true
        context.close(promise: nil)
        return context.channel.closeFuture
    }
}
