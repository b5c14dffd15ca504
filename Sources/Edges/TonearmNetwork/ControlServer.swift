#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOPosix
import Synchronization
import TonearmControl
import TonearmJSON

public struct ControlServerOptions: Sendable {
    /// The socket file. Its directory must exist.
    public var path: String
    /// Permissions of the socket file; connecting needs write permission.
    public var mode: mode_t = 0o660
    /// Event topics clients may subscribe to.
    public var topics: [String] = []
    /// A longer request line is refused with `lineTooLong`.
    public var maxLineBytes = 65536
    /// Clients beyond these are refused with `tooManyClients`.
    public var maxClients = 32
    /// Per client: responses and events it has not read yet. Over this it is disconnected.
    public var maxPendingOutputBytes = 1 << 20
    /// Told what the server cannot tell a client: a client disconnected for not reading, a
    /// client refused, a request dropped without an answer. Called from any thread.
    public var log: (@Sendable (String) -> Void)? = nil
    /// Told, on the event loop, that a client's connection closed (for whatever reason), so
    /// what it owned (its sessions) can go. Not called for the connections `stop` closes.
    public var clientDisconnected: (@Sendable (Int) -> Void)? = nil

    public init(path: String, topics: [String] = []) {
        self.path = path
        self.topics = topics
    }
}

/// The daemon's control socket: a Unix-domain stream socket speaking JSON lines (see
/// `ControlErrorCode` for the protocol), served on one event loop of the group it is given —
/// the loop every socket of the daemon shares.
///
/// The socket is bound in `init`, so a daemon that cannot have its socket fails before it
/// starts anything else; `start` begins accepting (clients that connect before wait in the
/// backlog); `stop` closes every connection and removes the socket file. `publish` and the
/// `Reply`s may be used from any thread. Stop the server before shutting its group down.
public final class ControlServer: Sendable {
    public let options: ControlServerOptions
    private let loop: any EventLoop
    private let listener: any Channel
    private let service: NIOLoopBoundBox<ControlService>
    private let status = ServerStatus()
    private let socketFile: UnixSocketFile

    private enum Phase {
        case bound, serving, stopped
    }
    private let phase = Mutex(Phase.bound)

    /// Binds the socket, on a loop of `group`. `handler` is called on that loop for each
    /// well-formed request other than subscribe/unsubscribe; it must return quickly, answering
    /// through the `Reply` then or later, from any thread. Not from the loop itself.
    public init(
        options: ControlServerOptions, group: any EventLoopGroup,
        handler: @escaping @Sendable (ControlRequest, Reply) -> Void
    ) throws(ControlError) {
        let loop = group.next()
        let service = NIOLoopBoundBox.makeBoxSendingValue(ControlService(options: options, status: status, handler: handler), eventLoop: loop)
        let (socket, socketFile) = try UnixSocketFile.bind(at: options.path, mode: options.mode)
        let bootstrap = makeStreamServerBootstrap(
            on: loop, name: "control", maxPendingOutputBytes: options.maxPendingOutputBytes, log: options.log
        ) { channel in
            try service.value.admit(channel)
        }
        do {
            listener = try bootstrap.withBoundSocket(socket.rawValue).wait()
        } catch {
            socketFile.removeIfOurs()
            throw ControlError(path: options.path, message: "cannot listen on \(options.path): \(error)")
        }
        self.options = options
        self.loop = loop
        self.service = service
        self.socketFile = socketFile
    }

    deinit { stop() }

    /// Starts accepting clients. Once only.
    public func start() {
        phase.withLock { phase in
            guard case .bound = phase else { preconditionFailure("ControlServer.start() called twice or after stop()") }
            phase = .serving
        }
        listener.setOption(.autoRead, value: true).whenFailure { [options] error in
            options.log?("control: cannot start accepting clients: \(error)")
        }
    }

    /// Closes the socket and every connection, waits until they are closed, and removes the
    /// socket file. Not from the event loop. Replies after this are dropped. Idempotent.
    public func stop() {
        let previous = phase.withLock { phase in
            defer { phase = .stopped }
            return phase
        }
        guard previous != .stopped else { return }
        precondition(!loop.inEventLoop, "ControlServer.stop() called on its event loop")
        status.stopped.store(true, ordering: .relaxed)
        let (loop, listener, service) = (loop, listener, service)
        let closed = loop.flatSubmit {
            service.value.stopping = true
            let closing = [listener.close()] + service.value.roster.clients.values.compactMap { $0.close() }
            return EventLoopFuture.andAllComplete(closing, on: loop)
        }
        try? closed.wait()
        socketFile.removeIfOurs()
    }

    /// Sends `{"event":topic,"data":event}` to every client subscribed to `topic`. From any
    /// thread; never waits for a client (one that is too far behind is disconnected). The
    /// event is serialised on the caller's thread.
    public func publish(topic: String, event: JSONValue) {
        publish(PreparedEvent(topic: topic, data: event))
    }

    /// Sends `{"event":topic,"data":event}` to one client, if it is connected and subscribed
    /// to `topic` (events about its own sessions). From any thread; never waits.
    public func publish(topic: String, event: JSONValue, to clientID: Int) {
        send(PreparedEvent(topic: topic, data: event), only: clientID)
    }

    /// Publishes an event serialised beforehand.
    public func publish(_ event: PreparedEvent) {
        send(event, only: nil)
    }

    private func send(_ event: PreparedEvent, only clientID: Int?) {
        let service = service
        if loop.inEventLoop {
            service.value.publish(event.line, topic: event.topic, only: clientID)
        } else if !status.stopped.load(ordering: .relaxed) {
            loop.execute { service.value.publish(event.line, topic: event.topic, only: clientID) }
        }
    }

    /// Clients connected now.
    public var clientCount: Int { status.clientCount.load(ordering: .relaxed) }
}

/// An event line serialised once: the caller chooses where that cost is paid, and the same
/// bytes go to every subscriber, and out again, without it.
public struct PreparedEvent: Sendable {
    public let topic: String
    let line: ByteBuffer

    public init(topic: String, data: JSONValue) {
        self.topic = topic
        line = ByteBuffer(bytes: TonearmControl.line(.object([("event", .string(topic)), ("data", data)])))
    }
}
