#if canImport(Glibc)
import Glibc
#endif
import NIOCore

/// One MPD client on the server's loop: the greeting, its request lines, command lists, and
/// `idle`. A request goes to the handler and the next line waits until it is answered (MPD
/// answers in order); a client that sends more than `maxQueuedLines` meanwhile is closed.
final class MPDConnection: ChannelInboundHandler {
    typealias InboundIn = InboundLine
    typealias OutboundOut = ByteBuffer

    let clientID: Int
    private let service: MPDService
    private var context: ChannelHandlerContext?
    private var greeted = false
    private var closing = false

    /// A request is with the handler.
    private var busy = false
    /// Lines that came while busy or idling, in order.
    private var queued: [[UInt8]] = []
    static let maxQueuedLines = 1024
    /// The client half-closed: once its lines are answered, the connection closes.
    private var inputEnded = false

    /// Inside `command_list_begin` … `command_list_end`.
    private var list: (ok: Bool, commands: [MPDCommand], bytes: Int)?
    /// Idling, and for which subsystems (empty: all).
    private var idling: Set<String>?
    /// What changed since the last `idle` answer.
    private var events = Set<String>()
    /// Closes a client that says nothing for this long, unless it idles or waits for an answer.
    private var silence: Scheduled<Void>?

    /// MPD's idle subsystems, in the order `idle` lists them.
    static let subsystems = ["database", "stored_playlist", "playlist", "player", "mixer", "output", "options",
                             "partition", "sticker", "update", "subscription", "message", "neighbor", "mount"]

    init(clientID: Int, service: MPDService) {
        self.clientID = clientID
        self.service = service
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { greet(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        silence?.cancel()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        greet(context)
        context.fireChannelActive()
    }

    private func greet(_ context: ChannelHandlerContext) {
        guard !greeted else { return }
        greeted = true
        write("OK MPD \(MPDServer.protocolVersion)\n", flush: true)
        armTimeout()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing = true
        silence?.cancel()
        service.closed(clientID)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let errno = (error as? IOError)?.errnoCode
        if errno != EPIPE && errno != ECONNRESET {
            service.options.log?("mpd: client \(clientID) disconnected: \(error)")
        }
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A client that half-closes gets its answers, then the connection closes.
        if event as? ChannelEvent == .inputClosed {
            inputEnded = true
            drain()
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Input

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        switch unwrapInboundIn(data) {
        case .tooLong:
            fail(MPDError.line(MPDError.argument, command: "", "line longer than \(service.options.maxLineBytes) bytes"))
        case .line(let bytes):
            if busy || !queued.isEmpty {
                guard queued.count < Self.maxQueuedLines else {
                    fail(MPDError.line(MPDError.system, command: "", "more than \(Self.maxQueuedLines) requests waiting for their answers"))
                    return
                }
                queued.append(Array(bytes.readableBytesView))
            } else {
                handle(Array(bytes.readableBytesView))
            }
        }
    }

    /// Handles queued lines until one goes to the handler.
    private func drain() {
        while !busy, !closing, !queued.isEmpty {
            handle(queued.removeFirst())
        }
        if inputEnded, !busy, queued.isEmpty { hangUp() }
    }

    private func handle(_ bytes: [UInt8]) {
        armTimeout()
        let words: [String]
        do throws(MPDTokens.Failure) {
            words = try MPDTokens.split(bytes)
        } catch {
            let why = error == .unterminatedQuote ? "missing closing '\"'" : "space expected after closing '\"'"
            answer(MPDError.line(MPDError.argument, command: "", why))
            return
        }
        guard let name = words.first else {
            if list == nil { answer(MPDError.line(MPDError.unknown, command: "", "No command given")) }
            return
        }
        let command = MPDCommand(name, Array(words.dropFirst()))
        if idling != nil {
            // While idling only `noidle` may come; anything else ends the connection (as MPD).
            if name == "noidle" {
                idling = nil
                answer("OK\n")
            } else {
                hangUp()
            }
            return
        }
        if var open = list {
            switch name {
            case "command_list_end":
                list = nil
                dispatch(MPDRequest(clientID: clientID, commands: open.commands, isList: true, listOK: open.ok))
            case "command_list_begin", "command_list_ok_begin":
                list = nil
                answer(MPDError.line(MPDError.notList, index: open.commands.count, command: name, "a command list cannot hold another"))
            default:
                open.commands.append(command)
                open.bytes += bytes.count
                guard open.bytes <= service.options.maxCommandListBytes else {
                    list = nil
                    fail(MPDError.line(MPDError.system, command: "", "command list larger than \(service.options.maxCommandListBytes) bytes"))
                    return
                }
                list = open
            }
            return
        }
        switch name {
        case "command_list_begin": list = (false, [], 0)
        case "command_list_ok_begin": list = (true, [], 0)
        case "command_list_end": answer(MPDError.line(MPDError.notList, command: name, "not in a command list"))
        case "idle": idle(command.arguments)
        case "noidle": break  // not idling: no answer
        case "close": hangUp()
        default: dispatch(MPDRequest(clientID: clientID, commands: [command]))
        }
    }

    // MARK: Idle

    private func idle(_ names: [String]) {
        let mask = Set(names.map { $0.lowercased() })
        if let unknown = mask.first(where: { !Self.subsystems.contains($0) }) {
            answer(MPDError.line(MPDError.argument, command: "idle", "Unrecognized idle event: \(unknown)"))
            return
        }
        idling = mask
        silence?.cancel()
        reportIdle()
    }

    func changed(_ subsystems: Set<String>) {
        events.formUnion(subsystems)
        if idling != nil { reportIdle() }
    }

    /// Answers the idle if something it waits for changed.
    private func reportIdle() {
        guard let mask = idling else { return }
        let hits = Self.subsystems.filter { events.contains($0) && (mask.isEmpty || mask.contains($0)) }
        guard !hits.isEmpty else { return }
        events.subtract(hits)
        idling = nil
        answer(hits.map { "changed: \($0)\n" }.joined() + "OK\n")
    }

    // MARK: Output

    private func dispatch(_ request: MPDRequest) {
        guard let context else { return }
        busy = true
        silence?.cancel()
        let loop = context.eventLoop
        let connection = NIOLoopBound(self, eventLoop: loop)
        let status = service.status
        let reply = MPDReply(deliver: { bytes, close in
            let send: @Sendable () -> Void = { connection.value.replied(bytes, close: close) }
            if loop.inEventLoop {
                send()
            } else if !status.stopped.load(ordering: .relaxed) {
                loop.execute(send)
            }
        }, part: { bytes, done in
            let send: @Sendable () -> Void = { connection.value.repliedInPart(bytes, done: done) }
            if loop.inEventLoop {
                send()
            } else if !status.stopped.load(ordering: .relaxed) {
                loop.execute(send)
            } else {
                done(false)
            }
        })
        service.handler(request, reply)
    }

    /// Part of a long answer: `done` is told once it is written (or that it never will be).
    private func repliedInPart(_ bytes: [UInt8], done: @escaping @Sendable (Bool) -> Void) {
        guard !closing, let context else { return done(false) }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        context.writeAndFlush(wrapOutboundOut(buffer)).whenComplete { result in
            if case .success = result { done(true) } else { done(false) }
        }
    }

    private func replied(_ bytes: [UInt8], close: Bool) {
        busy = false
        guard !closing, let context else { return }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        if close {
            hangUp()
            return
        }
        armTimeout()
        drain()
    }

    /// An answer the connection gives itself; the next queued line follows.
    private func answer(_ text: String) {
        write(text, flush: true)
        armTimeout()
        drain()
    }

    private func write(_ text: String, flush: Bool) {
        guard !closing, let context else { return }
        let buffer = context.channel.allocator.buffer(string: text)
        if flush {
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        } else {
            context.write(wrapOutboundOut(buffer), promise: nil)
        }
    }

    /// An error line, then the door.
    private func fail(_ line: String) {
        write(line, flush: true)
        hangUp()
    }

    private func hangUp() {
        guard !closing, let context else { return }
        closing = true
        silence?.cancel()
        let channel = context.channel
        // Writes complete in order: once this empty one has, everything before it is out.
        context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(capacity: 0))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    /// Closes the connection at once (the server stops); the future says when it is closed.
    func close() -> EventLoopFuture<Void>? {
        guard let context else { return nil }
        closing = true
        context.close(promise: nil)
        return context.channel.closeFuture
    }

    private func armTimeout() {
        silence?.cancel()
        silence = nil
        guard let timeout = service.options.connectionTimeout, let context, !busy, idling == nil else { return }
        let connection = NIOLoopBound(self, eventLoop: context.eventLoop)
        silence = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            connection.value.timedOut()
        }
    }

    private func timedOut() {
        guard !busy, idling == nil, !closing else { return }
        hangUp()
    }
}
