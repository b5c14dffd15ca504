#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import TonearmNetwork

/// One MPD client on the server's loop: the greeting, its request lines, command lists, `idle`,
/// and the password. A request goes to the handler and the next line waits until it is
/// answered (MPD answers in order); a client that sends more than `maxQueuedLines` meanwhile
/// is closed.
///
/// The connection is where a client's authorization is decided and kept: `password` is checked
/// here, and each request carries whether its client may use more than
/// `MPDCommands.openCommands`. Until then `idle` is refused (so a stranger keeps the timeout).
/// Each wrong password from the client's address is answered later than the one before, the
/// connection's `maxPasswordFailures`th with the door; once one was wrong, a right one from
/// there waits as long, so a guesser learns nothing sooner by giving up on an answer.
final class MPDConnection: ChannelInboundHandler {
    typealias InboundIn = InboundLine
    typealias OutboundOut = ByteBuffer

    let clientID: Int
    /// The peer's IP address; nil for a Unix socket's client.
    let address: String?
    private let service: MPDService
    private var context: ChannelHandlerContext?
    private var greeted = false
    private var closing = false

    /// The client gave the password (or none is needed).
    private(set) var authorized: Bool
    private var passwordFailures = 0
    /// The answer to a wrong password, waiting for its delay.
    private var passwordAnswer: Scheduled<Void>?

    /// A request is with the handler (or a wrong password waits for its answer).
    private var busy = false
    /// `drain` is looping over the queued lines.
    private var draining = false
    /// Lines that came while busy or idling, in order.
    private var queued = CircularBuffer<[UInt8]>(initialCapacity: 2)
    static let maxQueuedLines = 1024
    /// The client half-closed: once its lines are answered, the connection closes.
    private var inputEnded = false

    /// Inside `command_list_begin` … `command_list_end`; changed in place, so reading a list
    /// takes time in proportion to its length.
    private var list: CommandList?
    private struct CommandList {
        /// `command_list_ok_begin`: a `list_OK` after each command's answer.
        var ok: Bool
        var commands: [MPDCommand] = []
        var bytes = 0
        /// Where the list holds a `password`, which must come alone.
        var passwordIndex: Int?
    }
    /// Idling, and for which subsystems (empty: all).
    private var idling: Set<String>?
    /// What changed since the last `idle` answer.
    private var events = Set<String>()
    /// Closes a client that says nothing for `connectionTimeout`, unless it idles or waits for
    /// an answer, and one that takes none of its answer for as long. Armed once and moved on
    /// when it fires early, rather than re-armed per line.
    private var silence: Scheduled<Void>?
    /// The last line heard, answer written, or write that began to wait for the client, from
    /// which the timeout counts.
    private var lastActivity = NIODeadline.uptimeNanoseconds(0)
    /// Writes the socket has not taken yet: the client has not read what came before them.
    /// A slow reader takes them a little at a time (each one taken starts the timeout over);
    /// one that reads nothing is closed when the timeout is up.
    private var unwritten = 0

    /// MPD's idle subsystems, in the order `idle` lists them.
    static let subsystems = ["database", "stored_playlist", "playlist", "player", "mixer", "output", "options",
                             "partition", "sticker", "update", "subscription", "message", "neighbor", "mount"]

    init(clientID: Int, address: String?, service: MPDService) {
        self.clientID = clientID
        self.address = address
        self.service = service
        authorized = service.options.password == nil
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { greet(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        silence?.cancel()
        passwordAnswer?.cancel()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        greet(context)
        context.fireChannelActive()
    }

    private func greet(_ context: ChannelHandlerContext) {
        guard !greeted else { return }
        greeted = true
        write("OK MPD \(MPDServer.protocolVersion)\n")
        armTimeout()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing = true
        silence?.cancel()
        passwordAnswer?.cancel()
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
            fail(MPDError(.argument, "line longer than \(service.options.maxLineBytes) bytes").line(failed: ""))
        case .line(let bytes):
            if busy || !queued.isEmpty {
                guard queued.count < Self.maxQueuedLines else {
                    fail(MPDError(.system, "more than \(Self.maxQueuedLines) requests waiting for their answers").line(failed: ""))
                    return
                }
                queued.append(bytes.getBytes(at: bytes.readerIndex, length: bytes.readableBytes)!)
            } else {
                handle(bytes.getBytes(at: bytes.readerIndex, length: bytes.readableBytes)!)
            }
        }
    }

    /// Handles queued lines until one goes to the handler. A line answered at once (by the
    /// connection, or by the handler on the loop) ends in a call from inside the loop below:
    /// that call returns, and the loop goes on, so a thousand queued lines are no thousand
    /// nested calls.
    private func drain() {
        guard !draining else { return }
        draining = true
        defer { draining = false }
        while !busy, !closing, !queued.isEmpty {
            handle(queued.removeFirst())
        }
        if inputEnded, !busy, queued.isEmpty { hangUp() }
    }

    private func handle(_ bytes: [UInt8]) {
        armTimeout()
        let words: [String]
        do throws(MPDError) {
            words = try MPDTokens.split(bytes)
        } catch {
            answer(error.line(failed: ""))
            return
        }
        guard let name = words.first else {
            if list == nil { answer(MPDError(.unknown, "No command given").line(failed: "")) }
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
        if list != nil {
            listed(command, bytes: bytes.count)
            return
        }
        switch name {
        case "command_list_begin": list = CommandList(ok: false)
        case "command_list_ok_begin": list = CommandList(ok: true)
        case "command_list_end": answer(MPDError(.notList, "not in a command list").line(failed: name))
        case "idle" where !authorized: answer(MPDError(.permission, "you don't have permission for \"idle\"").line(failed: name))
        case "idle": idle(command.arguments)
        case "noidle": break  // not idling: no answer
        case "close": hangUp()
        case "password": password(command.arguments)
        default: dispatch(MPDRequest(clientID: clientID, commands: [command], authorized: authorized))
        }
    }

    /// A line inside a command list.
    private func listed(_ command: MPDCommand, bytes: Int) {
        switch command.name {
        case "command_list_end":
            guard let open = list else { return }
            list = nil
            if let index = open.passwordIndex {
                // One guess per answer, so that wrong ones slow down.
                answer(MPDError(.password, "the password must be sent alone, not in a command list").line(index: index, failed: "password"))
                return
            }
            dispatch(MPDRequest(clientID: clientID, commands: open.commands, isList: true, listOK: open.ok, authorized: authorized))
        case "command_list_begin", "command_list_ok_begin":
            let index = list?.commands.count ?? 0
            list = nil
            answer(MPDError(.notList, "a command list cannot hold another").line(index: index, failed: command.name))
        default:
            // In place: a copy of the list held here would make each line copy it whole.
            let options = service.options
            guard let listed = list?.bytes, listed + bytes <= options.maxCommandListBytes else {
                list = nil
                fail(MPDError(.system, "command list larger than \(options.maxCommandListBytes) bytes").line(failed: ""))
                return
            }
            guard let count = list?.commands.count, count < options.maxCommandListCommands else {
                list = nil
                fail(MPDError(.system, "command list longer than \(options.maxCommandListCommands) commands").line(failed: ""))
                return
            }
            if command.name == "password", list?.passwordIndex == nil, let index = list?.commands.count { list?.passwordIndex = index }
            list?.bytes += bytes
            list?.commands.append(command)
        }
    }

    // MARK: Password

    private func password(_ arguments: [String]) {
        guard arguments.count == 1 else {
            answer(MPDError(.argument, arguments.isEmpty ? "too few arguments" : "too many arguments").line(failed: "password"))
            return
        }
        guard let context else { return }
        let options = service.options
        let now = context.eventLoop.now
        let right = options.password.map { constantTimeEqual(arguments[0], $0) } ?? false
        // Wrong ones lately from the address (a Unix socket's client: this connection's own).
        let failures: Int
        if right {
            failures = address.map { service.passwordFailures.recent(from: $0, now: now) } ?? passwordFailures
        } else {
            passwordFailures += 1
            failures = address.map { service.passwordFailures.failed(from: $0, now: now) } ?? passwordFailures
        }
        let last = !right && passwordFailures >= options.maxPasswordFailures
        let why = last ? "incorrect password (\(passwordFailures) wrong, closing the connection)" : "incorrect password"
        let line = right ? Array("OK\n".utf8) : Array(MPDError(.password, why).line(failed: "password").utf8)
        guard failures > 0 else {
            authorized = true
            answer("OK\n")
            return
        }
        // Twice as long for each wrong one, up to `maxPasswordDelay`.
        let delay = min(options.passwordDelay * (1 << Int64(min(failures - 1, 20))), options.maxPasswordDelay)
        busy = true
        let connection = NIOLoopBound(self, eventLoop: context.eventLoop)
        passwordAnswer = context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
            let connection = connection.value
            connection.passwordAnswer = nil
            if right {
                connection.authorized = true
                if let address = connection.address { connection.service.passwordFailures.forget(address) }
            }
            connection.replied(line, close: last)
        }
    }

    /// Closes a client that has not given the password, to make room for another (the server
    /// or its address is full): strangers that connect and wait cannot keep the owner out.
    func makeRoom() {
        fail(MPDError(.permission, "closed to make room for another client: no password given").line(failed: ""))
    }

    /// Taken neither by its password nor on its way out: may make room for another.
    var isStranger: Bool { !authorized && !closing }

    // MARK: Idle

    private func idle(_ names: [String]) {
        let mask = Set(names.map { $0.lowercased() })
        if let unknown = mask.first(where: { !Self.subsystems.contains($0) }) {
            answer(MPDError(.argument, "Unrecognized idle event: \(unknown)").line(failed: "idle"))
            return
        }
        idling = mask
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
    /// The next part is made only then, so what waits for a slow reader is one part.
    private func repliedInPart(_ bytes: [UInt8], done: @escaping @Sendable (Bool) -> Void) {
        guard !closing, let context else { return done(false) }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        output(buffer, done: done)
    }

    private func replied(_ bytes: [UInt8], close: Bool) {
        busy = false
        guard !closing, let context else { return }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        output(buffer)
        if close {
            hangUp()
            return
        }
        armTimeout()
        drain()
    }

    /// An answer the connection gives itself; the next queued line follows.
    private func answer(_ text: String) {
        write(text)
        armTimeout()
        drain()
    }

    private func write(_ text: String) {
        guard !closing, let context else { return }
        output(context.channel.allocator.buffer(string: text))
    }

    /// Writes and flushes `buffer`, counted in `unwritten` until the socket takes it; `done`
    /// is told whether it was written.
    private func output(_ buffer: ByteBuffer, done: (@Sendable (Bool) -> Void)? = nil) {
        guard let context else {
            done?(false)
            return
        }
        let loop = context.eventLoop
        if unwritten == 0 {
            lastActivity = loop.now
            if silence == nil, let timeout = service.options.connectionTimeout { scheduleTimeout(at: lastActivity + timeout) }
        }
        unwritten += 1
        context.writeAndFlush(wrapOutboundOut(buffer)).assumeIsolated().whenComplete { result in
            self.unwritten -= 1
            self.lastActivity = loop.now
            guard let done else { return }
            if case .success = result { done(true) } else { done(false) }
        }
    }

    /// An error line, then the door.
    private func fail(_ line: String) {
        write(line)
        hangUp()
    }

    private func hangUp() {
        guard !closing, let context else { return }
        closing = true
        let channel = context.channel
        // Writes complete in order: once this empty one has, everything before it is out. (A
        // client that takes none of it is closed by the timeout, which stays armed.)
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

    /// Starts the silence over: from now, the client has `connectionTimeout`.
    private func armTimeout() {
        guard let timeout = service.options.connectionTimeout, let context else { return }
        lastActivity = context.eventLoop.now
        if silence == nil { scheduleTimeout(at: lastActivity + timeout) }
    }

    private func scheduleTimeout(at deadline: NIODeadline) {
        guard let context else { return }
        let connection = NIOLoopBound(self, eventLoop: context.eventLoop)
        silence = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            connection.value.timedOut()
        }
    }

    private func timedOut() {
        silence = nil
        guard let timeout = service.options.connectionTimeout, let context, context.channel.isActive else { return }
        let stalled = unwritten > 0
        // Busy or idling, with nothing waiting for the client: the answer that ends it starts
        // the silence over.
        guard stalled || (!busy && idling == nil && !closing) else { return }
        let deadline = lastActivity + timeout
        if deadline > context.eventLoop.now {
            scheduleTimeout(at: deadline)
        } else if stalled {
            // Its answer cannot be written, so neither can an error line: the door at once.
            service.options.log?("mpd: client \(clientID) disconnected: it took none of its answer for \(timeout.nanoseconds / 1_000_000_000) s (it stopped reading)")
            closing = true
            context.close(promise: nil)
        } else {
            hangUp()
        }
    }
}
