#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOPosix
import Synchronization
import TonearmControl

/// One MPD command as a client sent it: its name and arguments, unquoted.
public struct MPDCommand: Sendable, Equatable {
    public var name: String
    public var arguments: [String]

    public init(_ name: String, _ arguments: [String] = []) {
        self.name = name
        self.arguments = arguments
    }
}

/// What a connection hands to the server's handler: one command, or a command list's.
public struct MPDRequest: Sendable, Equatable {
    public var clientID: Int
    public var commands: [MPDCommand]
    /// In a list: true for `command_list_ok_begin` (a `list_OK` after each command's answer).
    public var isList: Bool
    public var listOK: Bool

    public init(clientID: Int, commands: [MPDCommand], isList: Bool = false, listOK: Bool = false) {
        self.clientID = clientID
        self.commands = commands
        self.isList = isList
        self.listOK = listOK
    }
}

/// The answer to an `MPDRequest`, from any thread: parts of a long answer as they are made
/// (`write`, which returns once the part is handed to the socket, so the answer never waits in
/// memory whole), then the rest once with its `OK` or `ACK` line (`send`). `close` closes the
/// connection once it is sent (the `close` command).
public final class MPDReply: Sendable {
    private let deliver: @Sendable ([UInt8], Bool) -> Void
    private let part: @Sendable ([UInt8], @escaping @Sendable (Bool) -> Void) -> Void

    init(deliver: @escaping @Sendable ([UInt8], Bool) -> Void,
         part: @escaping @Sendable ([UInt8], @escaping @Sendable (Bool) -> Void) -> Void) {
        self.deliver = deliver
        self.part = part
    }

    public func send(_ response: [UInt8], close: Bool = false) { deliver(response, close) }

    /// Sends part of the answer; false when the client is gone (stop making the rest).
    public func write(_ bytes: [UInt8]) async -> Bool {
        await withCheckedContinuation { continuation in part(bytes) { continuation.resume(returning: $0) } }
    }
}

public struct MPDServerOptions: Sendable {
    /// Address and port for TCP; nil for none.
    public var host: String?
    public var port: Int = 6600
    /// A Unix socket's path; nil for none.
    public var socketPath: String?
    public var socketMode: mode_t = 0o666
    public var maxClients = 20
    /// A longer request line gets an error and closes the connection (as MPD does).
    public var maxLineBytes = 4096
    /// A command list holding more bytes closes the connection.
    public var maxCommandListBytes = 1 << 20
    /// A client silent this long is closed, unless it idles or waits for an answer; nil never.
    public var connectionTimeout: TimeAmount? = .seconds(60)
    /// Per client: answers it has not read yet. Over this it is disconnected.
    public var maxPendingOutputBytes = 8 << 20
    /// Told what the server cannot tell a client. From any thread.
    public var log: (@Sendable (String) -> Void)? = nil
    /// Told, on the event loop, that a client's connection closed.
    public var clientDisconnected: (@Sendable (Int) -> Void)? = nil

    public init(host: String? = "127.0.0.1", port: Int = 6600, socketPath: String? = nil) {
        self.host = host
        self.port = port
        self.socketPath = socketPath
    }
}

/// The MPD protocol's edge: TCP (and a Unix socket if asked), the greeting, request lines,
/// command lists, and `idle`/`noidle`; every other command goes to the handler, one request of
/// a client at a time, in order. Served on one loop of the group it is given.
///
/// The listeners are bound in `init`; `start` begins accepting; `stop` closes everything.
/// `changed` may be called from any thread.
public final class MPDServer: Sendable {
    public let options: MPDServerOptions
    private let loop: any EventLoop
    private let listeners: [any Channel]
    private let service: NIOLoopBoundBox<MPDService>
    private let status = ServerStatus()
    private let socketFile: UnixSocketFile?
    private let phase = Mutex(0)  // 0 bound, 1 serving, 2 stopped

    /// The protocol version in the greeting: Debian 12's mpd speaks it, and clients choose
    /// commands by it.
    public static let protocolVersion = "0.23.5"

    public init(options: MPDServerOptions, group: any EventLoopGroup,
                handler: @escaping @Sendable (MPDRequest, MPDReply) -> Void) throws(ControlError) {
        let loop = group.next()
        let service = NIOLoopBoundBox.makeBoxSendingValue(MPDService(options: options, status: status, handler: handler), eventLoop: loop)
        let bootstrap = makeStreamServerBootstrap(
            on: loop, name: "mpd", maxPendingOutputBytes: options.maxPendingOutputBytes, log: options.log
        ) { channel in
            try service.value.admit(channel)
        }
        var listeners: [any Channel] = []
        var socketFile: UnixSocketFile?
        do throws(ControlError) {
            if let host = options.host {
                let place = "\(host):\(options.port)"
                do {
                    // A restarted daemon takes its port back at once, whatever lingers in TIME_WAIT.
                    let listener = try bootstrap.serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                        .bind(host: host, port: options.port).wait()
                    listeners.append(listener)
                } catch {
                    throw ControlError(path: place, message: "cannot listen on \(place): \(error)")
                }
            }
            if let path = options.socketPath {
                let (socket, file) = try UnixSocketFile.bind(at: path, mode: options.socketMode)
                socketFile = file
                do {
                    listeners.append(try bootstrap.withBoundSocket(socket.rawValue).wait())
                } catch {
                    file.removeIfOurs()
                    throw ControlError(path: path, message: "cannot listen on \(path): \(error)")
                }
            }
        } catch {
            for listener in listeners { try? listener.close().wait() }
            throw error
        }
        self.options = options
        self.loop = loop
        self.service = service
        self.listeners = listeners
        self.socketFile = socketFile
    }

    deinit { stop() }

    /// Starts accepting clients. Once only.
    public func start() {
        phase.withLock { phase in
            precondition(phase == 0, "MPDServer.start() called twice or after stop()")
            phase = 1
        }
        for listener in listeners {
            listener.setOption(.autoRead, value: true).whenFailure { [options] error in
                options.log?("mpd: cannot start accepting clients: \(error)")
            }
        }
    }

    /// Closes the listeners and every connection, and removes the socket file. Not from the
    /// event loop. Idempotent.
    public func stop() {
        let previous = phase.withLock { phase in
            defer { phase = 2 }
            return phase
        }
        guard previous != 2 else { return }
        precondition(!loop.inEventLoop, "MPDServer.stop() called on its event loop")
        status.stopped.store(true, ordering: .relaxed)
        let (loop, listeners, service) = (loop, listeners, service)
        let closed = loop.flatSubmit {
            service.value.stopping = true
            let closing = listeners.map { $0.close() } + service.value.roster.clients.values.compactMap { $0.close() }
            return EventLoopFuture.andAllComplete(closing, on: loop)
        }
        try? closed.wait()
        socketFile?.removeIfOurs()
    }

    /// Subsystems that changed (MPD's names: "player", "playlist"…): every client's idle hears
    /// of them. From any thread; never waits.
    public func changed(_ subsystems: Set<String>) {
        guard !subsystems.isEmpty, !status.stopped.load(ordering: .relaxed) else { return }
        let service = service
        if loop.inEventLoop {
            service.value.changed(subsystems)
        } else {
            loop.execute { service.value.changed(subsystems) }
        }
    }

    /// Clients connected now.
    public var clientCount: Int { status.clientCount.load(ordering: .relaxed) }
}

/// The server's side on its loop: the clients, the handler.
final class MPDService {
    let options: MPDServerOptions
    let handler: @Sendable (MPDRequest, MPDReply) -> Void
    let status: ServerStatus
    let roster: ClientRoster<MPDConnection>
    var stopping = false

    init(options: MPDServerOptions, status: ServerStatus, handler: @escaping @Sendable (MPDRequest, MPDReply) -> Void) {
        precondition(options.maxClients > 0 && options.maxLineBytes > 0)
        self.options = options
        self.status = status
        self.handler = handler
        roster = ClientRoster(limit: options.maxClients, status: status)
    }

    /// A client over `maxClients` gets MPD's error line and is closed.
    func admit(_ channel: any Channel) throws {
        if stopping { throw ChannelError.ioOnClosedChannel }
        guard let connection = roster.admit({ MPDConnection(clientID: $0, service: self) }) else {
            let refusal = "ACK [\(MPDError.system)@0] {} too many clients: tonearmd serves at most \(roster.limit) at once\n"
            try channel.pipeline.syncOperations.addHandler(RefuseClient(line: ByteBuffer(string: refusal)))
            options.log?("mpd: refused a client: \(roster.limit) already connected")
            return
        }
        let id = connection.clientID
        channel.closeFuture.assumeIsolated().whenComplete { _ in self.closed(id) }
        try channel.pipeline.syncOperations.addHandlers([
            PendingOutputLimit(limit: options.maxPendingOutputBytes, client: "mpd: client \(id)", log: options.log),
            ByteToMessageHandler(LineFrameDecoder(maxLineBytes: options.maxLineBytes)),
            connection,
        ])
    }

    func closed(_ clientID: Int) {
        guard roster.remove(clientID) != nil, !stopping else { return }
        options.clientDisconnected?(clientID)
    }

    func changed(_ subsystems: Set<String>) {
        for connection in roster.clients.values { connection.changed(subsystems) }
    }
}

/// MPD's error numbers (its `ack.h`).
public enum MPDError {
    public static let notList = 1
    public static let argument = 2
    public static let password = 3
    public static let permission = 4
    public static let unknown = 5
    public static let noExist = 50
    public static let playlistMax = 51
    public static let system = 52
    public static let playlistLoad = 53
    public static let updateAlready = 54
    public static let playerSync = 55
    public static let exist = 56

    /// `ACK [code@index] {command} message`
    public static func line(_ code: Int, index: Int = 0, command: String, _ message: String) -> String {
        "ACK [\(code)@\(index)] {\(command)} \(message)\n"
    }
}
