#if canImport(Glibc)
import Glibc
#endif
import TonearmJSON

/// The server thread: one `poll` over the wake pipe, the listening socket and every
/// client. It accepts, reads and frames lines, answers what the server answers itself, calls
/// the handler, and sends what the `Outbox` holds. Only this thread touches descriptors.
final class ServerLoop {
    /// A client's input side, which only this thread sees.
    private struct Connection {
        let id: Int
        let fd: Int32
        /// The start of a line whose newline has not come yet.
        var partial: [UInt8] = []
        /// Skipping the rest of a line that was too long.
        var discarding = false
        /// The client half-closed: it is closed once its requests are answered and sent.
        var inputClosed = false
        /// Why it is to be closed at the end of this turn.
        var closeReason: String?
    }

    private let options: ControlServerOptions
    private let listener: Int32
    private let outbox: Outbox
    private let handler: @Sendable (ControlRequest, Reply) -> Void
    private var connections: [Connection] = []
    private var nextClientID = 1
    /// Accepting stopped for a moment because the process ran out of descriptors.
    private var acceptPausedUntil: Double?
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 8)

    init(options: ControlServerOptions, listener: Int32, outbox: Outbox, handler: @escaping @Sendable (ControlRequest, Reply) -> Void) {
        self.options = options
        self.listener = listener
        self.outbox = outbox
        self.handler = handler
    }

    deinit { readBuffer.deallocate() }

    func run() {
        while true {
            let (stopping, writable) = sendPendingOutput()
            if stopping { break }
            closeMarkedConnections()

            if let until = acceptPausedUntil, monotonicNow() >= until { acceptPausedUntil = nil }
            var descriptors = [
                pollfd(fd: outbox.wakeDescriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: listener, events: acceptPausedUntil == nil ? Int16(POLLIN) : 0, revents: 0),
            ]
            for connection in connections {
                var events: Int16 = connection.inputClosed ? 0 : Int16(POLLIN)
                if writable.contains(connection.id) { events |= Int16(POLLOUT) }
                descriptors.append(pollfd(fd: connection.fd, events: events, revents: 0))
            }
            let ready = poll(&descriptors, nfds_t(descriptors.count), acceptPausedUntil == nil ? -1 : 100)
            if ready < 0 {
                if errno != EINTR { outbox.log?("control: poll failed: \(errnoText(errno))") }
                continue
            }
            if descriptors[0].revents != 0 { outbox.drainWake() }

            // Clients first, by index: accepting only appends, so the indices stay valid.
            for index in 0..<(descriptors.count - 2) {
                service(index, revents: descriptors[index + 2].revents)
            }
            if descriptors[1].revents & Int16(POLLIN) != 0 { acceptClients() }
        }
        for connection in connections { close(connection.fd) }
        outbox.state.withLock { $0.peers.removeAll() }
        connections.removeAll()
    }

    // MARK: Output

    /// Sends what each client has pending, as far as its socket takes it; marks clients to
    /// close; returns whether the server is stopping and which clients still have output.
    private func sendPendingOutput() -> (stopping: Bool, writable: Set<Int>) {
        outbox.state.withLock { state in
            var writable = Set<Int>()
            for index in connections.indices {
                let id = connections[index].id
                guard let peerIndex = state.peers.index(forKey: id) else { continue }
                if let reason = state.peers.values[peerIndex].dropReason {
                    connections[index].closeReason = connections[index].closeReason ?? reason
                    continue
                }
                if let error = state.peers.values[peerIndex].output.flush(to: connections[index].fd) {
                    // The client went away; nobody is reading what is left.
                    if error != EPIPE && error != ECONNRESET {
                        connections[index].closeReason = connections[index].closeReason ?? "send failed: \(errnoText(error))"
                    } else {
                        connections[index].closeReason = connections[index].closeReason ?? ""
                    }
                    continue
                }
                let peer = state.peers.values[peerIndex]
                if !peer.output.isEmpty {
                    writable.insert(id)
                } else if connections[index].inputClosed && peer.outstanding == 0 {
                    connections[index].closeReason = connections[index].closeReason ?? ""
                }
            }
            return (state.stopping, writable)
        }
    }

    private func closeMarkedConnections() {
        guard connections.contains(where: { $0.closeReason != nil }) else { return }
        let closing = connections.filter { $0.closeReason != nil }
        connections.removeAll { $0.closeReason != nil }
        outbox.state.withLock { state in
            for connection in closing { state.peers[connection.id] = nil }
        }
        for connection in closing {
            close(connection.fd)
            if let reason = connection.closeReason, !reason.isEmpty {
                outbox.log?("control: disconnected client \(connection.id): \(reason)")
            }
            options.clientDisconnected?(connection.id)
        }
        if acceptPausedUntil != nil { acceptPausedUntil = nil }
    }

    // MARK: Accepting

    private func acceptClients() {
        // Bounded, so a flood of connections cannot starve the clients already here.
        for _ in 0..<64 {
            let fd = acceptClient(listener)
            if fd < 0 {
                switch -fd {
                case EINTR, ECONNABORTED: continue
                case EAGAIN, EWOULDBLOCK: return
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    outbox.log?("control: cannot accept a client: \(errnoText(-fd)); pausing")
                    acceptPausedUntil = monotonicNow() + 0.1
                    return
                default:
                    outbox.log?("control: cannot accept a client: \(errnoText(-fd))")
                    return
                }
            }
            guard connections.count < options.maxClients else {
                refuse(fd)
                continue
            }
            let id = nextClientID
            nextClientID += 1
            connections.append(Connection(id: id, fd: fd))
            outbox.state.withLock { $0.peers[id] = Outbox.Peer() }
        }
    }

    /// One error line, sent if the socket takes it, then the door.
    private func refuse(_ fd: Int32) {
        let message = "tonearmd serves at most \(options.maxClients) clients at once; try again later"
        let bytes = line(Reply.failure(id: nil, code: ControlErrorCode.tooManyClients, message: message))
        _ = bytes.withUnsafeBytes { sendNow(fd, $0) }
        close(fd)
        outbox.log?("control: refused a client: \(options.maxClients) already connected")
    }

    // MARK: Input

    private func service(_ index: Int, revents: Int16) {
        if revents == 0 { return }
        if revents & Int16(POLLNVAL | POLLERR) != 0 {
            connections[index].closeReason = revents & Int16(POLLNVAL) != 0 ? "descriptor invalid" : ""
            return
        }
        let hungUp = revents & Int16(POLLHUP) != 0
        if revents & Int16(POLLIN) != 0 || hungUp {
            // One read per turn keeps clients fair; a client that hung up has a bounded amount
            // left, read to the end so its requests still run (`echo … | nc -U` style).
            repeat {
                guard let count = receiveNow(connections[index].fd, readBuffer) else { break }
                if count < 0 {
                    connections[index].closeReason = Int32(-count) == ECONNRESET ? "" : "receive failed: \(errnoText(Int32(-count)))"
                    return
                }
                if count == 0 {
                    endOfInput(index)
                    break
                }
                consume(UnsafeRawBufferPointer(rebasing: readBuffer[..<count]).assumingMemoryBound(to: UInt8.self), index)
            } while hungUp
        }
        // Nobody can read the responses of a client that hung up completely.
        if hungUp { connections[index].closeReason = connections[index].closeReason ?? "" }
    }

    private func endOfInput(_ index: Int) {
        if !connections[index].partial.isEmpty && !connections[index].discarding {
            // The last line may lack its newline.
            let last = connections[index].partial
            connections[index].partial = []
            last.withUnsafeBufferPointer { handleLine($0, clientID: connections[index].id) }
        }
        connections[index].partial = []
        connections[index].inputClosed = true
    }

    /// Splits received bytes into lines.
    private func consume(_ bytes: UnsafeBufferPointer<UInt8>, _ index: Int) {
        let clientID = connections[index].id
        let limit = options.maxLineBytes
        var start = 0
        while start < bytes.count {
            guard let newline = bytes[start...].firstIndex(of: 0x0A) else {
                // No newline yet: keep the start of the line, unless it is already too long.
                let rest = UnsafeBufferPointer(rebasing: bytes[start...])
                if connections[index].discarding { return }
                if connections[index].partial.count + rest.count > limit {
                    connections[index].partial = []
                    connections[index].discarding = true
                    refuseLongLine(clientID)
                } else {
                    connections[index].partial.append(contentsOf: rest)
                }
                return
            }
            let segment = UnsafeBufferPointer(rebasing: bytes[start..<newline])
            start = newline + 1
            if connections[index].discarding {
                connections[index].discarding = false
            } else if connections[index].partial.isEmpty {
                if segment.count > limit { refuseLongLine(clientID) } else { handleLine(segment, clientID: clientID) }
            } else if connections[index].partial.count + segment.count > limit {
                connections[index].partial = []
                refuseLongLine(clientID)
            } else {
                var whole = connections[index].partial
                connections[index].partial = []
                whole.append(contentsOf: segment)
                whole.withUnsafeBufferPointer { handleLine($0, clientID: clientID) }
                // Keep a small buffer for the next partial line.
                if whole.capacity <= 4096 {
                    whole.removeAll(keepingCapacity: true)
                    connections[index].partial = whole
                }
            }
        }
    }

    private func refuseLongLine(_ clientID: Int) {
        answer(clientID, id: .null, code: ControlErrorCode.lineTooLong,
               message: "request line longer than \(options.maxLineBytes) bytes; it was discarded")
    }

    // MARK: Requests

    private func handleLine(_ raw: UnsafeBufferPointer<UInt8>, clientID: Int) {
        var bytes = raw
        if bytes.last == 0x0D { bytes = UnsafeBufferPointer(rebasing: bytes.dropLast()) }
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }

        let request: JSONValue
        do {
            request = try JSONValue.parse(bytes)
        } catch {
            answer(clientID, id: .null, code: ControlErrorCode.malformed, message: "invalid JSON: \(error.description)")
            return
        }
        guard case .object = request else {
            answer(clientID, id: .null, code: ControlErrorCode.badRequest, message: "a request must be a JSON object")
            return
        }
        let id = request["id"] ?? .null
        switch id {
        case .array, .object:
            answer(clientID, id: .null, code: ControlErrorCode.badRequest, message: "'id' must be a string, number, boolean or null")
            return
        default: break
        }
        guard let command = request["command"]?.stringValue else {
            let why = request["command"] == nil ? "a request needs a \"command\"" : "'command' must be a string"
            answer(clientID, id: id, code: ControlErrorCode.badRequest, message: why)
            return
        }
        switch command {
        case "subscribe", "unsubscribe":
            changeSubscription(request, id: id, clientID: clientID, subscribing: command == "subscribe")
        default:
            let found = outbox.state.withLock { state -> Bool in
                guard let index = state.peers.index(forKey: clientID) else { return false }
                state.peers.values[index].outstanding += 1
                return true
            }
            guard found else { return }
            // The lock is not held: the handler may answer at once, which takes it.
            handler(
                ControlRequest(clientID: clientID, id: id, command: command, arguments: request),
                Reply(outbox: outbox, clientID: clientID, id: id, command: command))
        }
    }

    private func changeSubscription(_ request: JSONValue, id: JSONValue, clientID: Int, subscribing: Bool) {
        let known = options.topics
        var named = known
        if let topics = request["topics"], !topics.isNull {
            guard let list = topics.arrayValue?.compactMap(\.stringValue), list.count == topics.arrayValue?.count else {
                answer(clientID, id: id, code: ControlErrorCode.badArgument, message: "'topics' must be an array of strings")
                return
            }
            if let unknown = list.first(where: { !known.contains($0) }) {
                let choices = known.isEmpty ? "this daemon has none" : "known: \(known.joined(separator: ", "))"
                answer(clientID, id: id, code: ControlErrorCode.badArgument, message: "unknown topic '\(unknown)' (\(choices))")
                return
            }
            named = list
        }
        // The topics change and the response is queued under one lock, so the first event
        // the client sees comes after its subscribe response.
        outbox.state.withLock { state in
            guard let index = state.peers.index(forKey: clientID) else { return }
            let current = state.peers.values[index].topics
            let updated = known.filter { subscribing ? current.contains($0) || named.contains($0) : current.contains($0) && !named.contains($0) }
            state.peers.values[index].topics = updated
            let result: JSONValue = .object([("topics", .array(updated.map { .string($0) }))])
            let response = line(.object([("id", id), ("ok", .bool(true)), ("result", result)]))
            outbox.append(response, to: &state.peers.values[index])
        }
    }

    /// An error the server answers itself.
    private func answer(_ clientID: Int, id: JSONValue, code: String, message: String) {
        let bytes = line(Reply.failure(id: id, code: code, message: message))
        outbox.deliver(bytes, to: clientID, finishingRequest: false, fromServerThread: true)
    }
}
