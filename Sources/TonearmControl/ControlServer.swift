#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import TonearmJSON
import TonearmSystem

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
    /// Told, from the server thread, that a client's connection closed (for whatever reason),
    /// so what it owned (its sessions) can go. Not called for the connections `stop` closes.
    public var clientDisconnected: (@Sendable (Int) -> Void)? = nil

    public init(path: String, topics: [String] = []) {
        self.path = path
        self.topics = topics
    }
}

/// The daemon's control socket: a Unix-domain stream socket speaking JSON lines (see
/// `ControlErrorCode` for the protocol), served by one thread named "control" that `poll`s
/// every client.
///
/// The socket is bound in `init`, so a daemon that cannot have its socket fails before it
/// starts anything else; `start` begins serving; `stop` closes every connection, removes the
/// socket file and joins the thread. `publish` and the `Reply`s may be used from any thread.
public final class ControlServer: @unchecked Sendable {
    public let options: ControlServerOptions
    private let outbox: Outbox
    private let handler: @Sendable (ControlRequest, Reply) -> Void
    private let listener: Int32
    /// The socket file as bound, so `stop` removes it only if it is still ours.
    private let socketFile: (device: UInt64, inode: UInt64)

    private enum Phase {
        case bound
        case serving(NamedThread)
        case stopped
    }
    private let phase = Mutex(Phase.bound)

    /// Binds the socket. `handler` is called on the server thread for each well-formed
    /// request other than subscribe/unsubscribe; it must return quickly, answering through
    /// the `Reply` then or later, from any thread.
    public init(options: ControlServerOptions, handler: @escaping @Sendable (ControlRequest, Reply) -> Void) throws(ControlError) {
        precondition(options.maxClients > 0 && options.maxLineBytes > 0 && options.maxPendingOutputBytes > 0)
        precondition(Set(options.topics).count == options.topics.count, "duplicate topics")
        let path = options.path
        do {
            outbox = try Outbox(maxPendingOutputBytes: options.maxPendingOutputBytes, log: options.log)
        } catch {
            throw ControlError(path: path, message: "cannot serve \(path): pipe: \(error.reason)")
        }
        (listener, socketFile) = try Self.listen(at: path, mode: options.mode)
        self.options = options
        self.handler = handler
    }

    deinit { stop() }

    /// Starts the server thread. Once only.
    public func start() {
        let (options, listener, outbox, handler) = (options, listener, outbox, handler)
        phase.withLock { phase in
            guard case .bound = phase else { preconditionFailure("ControlServer.start() called twice or after stop()") }
            phase = .serving(NamedThread(name: "control") {
                ServerLoop(options: options, listener: listener, outbox: outbox, handler: handler).run()
            })
        }
    }

    /// Closes every connection and the socket, removes the socket file and waits for the
    /// server thread. Not from the handler (it runs on that thread). Replies after this are
    /// dropped. Idempotent.
    public func stop() {
        let previous = phase.withLock { phase in
            defer { phase = .stopped }
            return phase
        }
        switch previous {
        case .stopped: return
        case .bound: break
        case .serving(let thread):
            precondition(!thread.isCurrent, "ControlServer.stop() called on its own thread")
            outbox.state.withLock { $0.stopping = true }
            outbox.signal()
            thread.join()
        }
        close(listener)
        // Another daemon may have replaced a socket it thought stale; leave its file alone.
        if case .success(let status) = fileStatus(options.path),
           UInt64(status.st_dev) == socketFile.device, UInt64(status.st_ino) == socketFile.inode {
            unlink(options.path)
        }
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
        outbox.publish(PreparedEvent(topic: topic, data: event).line, topic: topic, only: clientID)
    }

    /// Publishes an event serialised beforehand.
    public func publish(_ event: PreparedEvent) {
        outbox.publish(event.line, topic: event.topic)
    }

    /// Clients connected now.
    public var clientCount: Int { outbox.state.withLock { $0.peers.count } }

    // MARK: The socket file

    /// Binds and listens on `path`, replacing a stale socket file but never a live one.
    private static func listen(at path: String, mode: mode_t) throws(ControlError) -> (Int32, (device: UInt64, inode: UInt64)) {
        func failure(_ why: String) -> ControlError { ControlError(path: path, message: "cannot listen on \(path): \(why)") }

        guard !path.isEmpty else { throw failure("the socket path is empty") }
        guard path.utf8.count <= maxSocketPathBytes else {
            throw failure("the path is \(path.utf8.count) bytes long; a Unix socket path holds at most \(maxSocketPathBytes)")
        }
        let directory = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        switch fileStatus(directory) {
        case .failure(let error) where error.code == ENOENT: throw failure("directory \(directory) does not exist")
        case .failure(let error): throw failure("directory \(directory): \(errnoText(error.code))")
        case .success(let status) where !isDirectory(status): throw failure("\(directory) is not a directory")
        case .success: break
        }

        if case .success(let status) = fileStatus(path) {
            guard isSocket(status) else { throw failure("a file that is not a socket is in the way") }
            // A socket file is left behind when a daemon crashes. If something answers on it,
            // it is not stale.
            let probe = makeUnixSocket(nonBlocking: true)
            guard probe >= 0 else { throw failure("socket: \(errnoText(-probe))") }
            let connected = connectUnix(probe, to: path)
            close(probe)
            switch connected {
            case 0, EAGAIN: throw ControlError(path: path, message: "another daemon is listening on \(path)")
            case ECONNREFUSED:
                if unlink(path) != 0 && errno != ENOENT {
                    throw failure("cannot remove the stale socket file: \(errnoText(errno))")
                }
            default:
                throw failure("cannot tell whether another daemon is listening on it: \(errnoText(connected))")
            }
        }

        let fd = makeUnixSocket(nonBlocking: true)
        guard fd >= 0 else { throw failure("socket: \(errnoText(-fd))") }
        let bound = bindUnix(fd, to: path)
        guard bound == 0 else {
            close(fd)
            if bound == EADDRINUSE { throw ControlError(path: path, message: "another daemon is listening on \(path)") }
            throw failure(errnoText(bound))
        }
        // Nobody can connect before `listen`, so the mode is right before anyone can use it.
        guard chmod(path, mode) == 0 else {
            let why = errnoText(errno)
            close(fd)
            unlink(path)
            throw failure("cannot set its mode to \(String(mode, radix: 8)): \(why)")
        }
        guard Glibc.listen(fd, SOMAXCONN) == 0, case .success(let status) = fileStatus(path) else {
            let why = errnoText(errno)
            close(fd)
            unlink(path)
            throw failure(why)
        }
        return (fd, (UInt64(status.st_dev), UInt64(status.st_ino)))
    }
}

/// An event line serialised once: the caller chooses where that cost is paid, and the same
/// event can go out again without it.
public struct PreparedEvent: Sendable {
    public let topic: String
    let line: [UInt8]

    public init(topic: String, data: JSONValue) {
        self.topic = topic
        line = TonearmControl.line(.object([("event", .string(topic)), ("data", data)]))
    }
}
