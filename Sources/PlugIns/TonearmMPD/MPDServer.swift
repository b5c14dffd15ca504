#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOPosix
import Synchronization
import TonearmControl
import TonearmNetwork

/// One MPD command as a client sent it: its name and arguments, unquoted.
struct MPDCommand: Sendable, Equatable {
    var name: String
    var arguments: [String]

    init(_ name: String, _ arguments: [String] = []) {
        self.name = name
        self.arguments = arguments
    }
}

/// What a connection hands to the server's handler: one command, or a command list's.
struct MPDRequest: Sendable, Equatable {
    var clientID: Int
    var commands: [MPDCommand]
    /// In a list: true for `command_list_ok_begin` (a `list_OK` after each command's answer).
    var isList: Bool
    var listOK: Bool
    /// The client gave the password (or none is needed); if not, only `MPDCommands.openCommands`
    /// may be carried out.
    var authorized: Bool

    init(clientID: Int, commands: [MPDCommand], isList: Bool = false, listOK: Bool = false, authorized: Bool = true) {
        self.clientID = clientID
        self.commands = commands
        self.isList = isList
        self.listOK = listOK
        self.authorized = authorized
    }
}

/// The answer to an `MPDRequest`, from any thread: parts of a long answer as they are made
/// (`write`, which returns once the part is handed to the socket, so the answer never waits in
/// memory whole), then the rest once with its `OK` or `ACK` line (`send`). `close` closes the
/// connection once it is sent (the `close` command).
final class MPDReply: Sendable {
    private let deliver: @Sendable ([UInt8], Bool) -> Void
    private let part: @Sendable ([UInt8], @escaping @Sendable (Bool) -> Void) -> Void

    init(deliver: @escaping @Sendable ([UInt8], Bool) -> Void,
         part: @escaping @Sendable ([UInt8], @escaping @Sendable (Bool) -> Void) -> Void) {
        self.deliver = deliver
        self.part = part
    }

    func send(_ response: [UInt8], close: Bool = false) { deliver(response, close) }

    /// Sends part of the answer; false when the client is gone (stop making the rest).
    func write(_ bytes: [UInt8]) async -> Bool {
        await withCheckedContinuation { continuation in write(bytes) { continuation.resume(returning: $0) } }
    }

    /// Sends part of the answer; `done` is told once the socket took it, or false when it
    /// never will (the client is gone).
    func write(_ bytes: [UInt8], done: @escaping @Sendable (Bool) -> Void) { part(bytes, done) }
}

public struct MPDServerOptions: Sendable {
    /// Address and port for TCP; nil for none.
    public var host: String?
    public var port: Int = 6600
    /// A Unix socket's path; nil for none.
    public var socketPath: String?
    public var socketMode: mode_t = 0o666
    public var maxClients = 20
    /// At most this many from one IP address, so a few peers cannot take every place. The box's
    /// own clients (loopback, the Unix socket) are not counted: they are all one address, and
    /// `maxClients` alone bounds them.
    public var maxClientsPerAddress = 8
    /// Without it every client may use every command. With it, a client may use only
    /// `MPDCommands.openCommands` until it sends `password` (alone, not in a command list); a
    /// client that has not, when the server or its address is full, makes room for the next.
    public var password: String?
    /// A wrong password is answered after this, twice as long at each further one from the
    /// same address (up to `maxPasswordDelay`; forgotten 10 minutes after the last, or once the
    /// right one is given), and a right one after a wrong one waits as long…
    public var passwordDelay: TimeAmount = .milliseconds(500)
    public var maxPasswordDelay: TimeAmount = .seconds(30)
    /// …and a connection is closed at its this many wrong.
    public var maxPasswordFailures = 3
    /// A longer request line gets an error and closes the connection (as MPD does).
    public var maxLineBytes = 4096
    /// A command list holding more bytes closes the connection.
    public var maxCommandListBytes = 1 << 20
    /// A command list holding more commands closes the connection: what a list holds until
    /// its end is bounded by this as well (1 MiB of `setvol 50` is 100,000 commands, 9 MB).
    public var maxCommandListCommands = 1 << 15
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
/// command lists, `idle`/`noidle` and `password`; every other command goes to the handler, one
/// request of a client at a time, in order, saying whether the client gave the password. Served on one loop of the group it is given.
/// The handler is called on that loop, and may answer there at once or from anywhere later.
///
/// The listeners are bound in `init`; `start` begins accepting; `stop` closes everything.
/// `changed` may be called from any thread.
final class MPDServer: Sendable {
    let options: MPDServerOptions
    private let loop: any EventLoop
    private let listeners: [any Channel]
    private let service: NIOLoopBoundBox<MPDService>
    private let status = ServerStatus()
    private let socketFile: UnixSocketFile?
    private let phase = Mutex(0)  // 0 bound, 1 serving, 2 stopped

    /// The protocol version in the greeting: Debian 12's mpd speaks it, and clients choose
    /// commands by it.
    static let protocolVersion = "0.23.5"

    /// What one client's read may bring per turn of the loop: a line at most. A command list's
    /// lines are short (a 4 KiB read of `setvol 50` is 400 lines, each parsed on the loop), so
    /// a small read keeps a turn short and the other clients answered meanwhile.
    static let maxReadBytes = 4 << 10

    init(options: MPDServerOptions, group: any EventLoopGroup,
                handler: @escaping @Sendable (MPDRequest, MPDReply) -> Void) throws(ControlError) {
        let loop = group.next()
        let service = NIOLoopBoundBox.makeBoxSendingValue(MPDService(options: options, status: status, handler: handler), eventLoop: loop)
        let bootstrap = makeStreamServerBootstrap(
            on: loop, name: "mpd", maxPendingOutputBytes: options.maxPendingOutputBytes, maxReadBytes: Self.maxReadBytes, log: options.log
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
    func start() {
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
    func stop() {
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
    func changed(_ subsystems: Set<String>) {
        guard !subsystems.isEmpty, !status.stopped.load(ordering: .relaxed) else { return }
        let service = service
        if loop.inEventLoop {
            service.value.changed(subsystems)
        } else {
            loop.execute { service.value.changed(subsystems) }
        }
    }

    /// Clients connected now.
    var clientCount: Int { status.clientCount.load(ordering: .relaxed) }
}

/// The server's side on its loop: the clients, the handler.
final class MPDService {
    let options: MPDServerOptions
    let handler: @Sendable (MPDRequest, MPDReply) -> Void
    let status: ServerStatus
    let roster: ClientRoster<MPDConnection>
    var passwordFailures = PasswordFailures()
    var stopping = false

    init(options: MPDServerOptions, status: ServerStatus, handler: @escaping @Sendable (MPDRequest, MPDReply) -> Void) {
        precondition(options.maxClients > 0 && options.maxLineBytes > 0 && options.maxPasswordFailures > 0)
        self.options = options
        self.status = status
        self.handler = handler
        roster = ClientRoster(limit: options.maxClients, perAddressLimit: options.maxClientsPerAddress, status: status)
    }

    /// A client over `maxClients`, or over `maxClientsPerAddress` from its address, gets MPD's
    /// error line and is closed, unless a client that has not given the password can make room.
    func admit(_ channel: any Channel) throws {
        if stopping { throw ChannelError.ioOnClosedChannel }
        let address = channel.remoteAddress?.peerIP
        // The box's own clients are all one address: a limit per address would only lower
        // `maxClients` for them, and protects nobody.
        let counted = channel.remoteAddress?.isLoopback == true ? nil : address
        let make = { MPDConnection(clientID: $0, address: address, service: self) }
        var admission = roster.admit(from: counted, make)
        if let stranger = oldestStranger(making: admission) {
            stranger.makeRoom()
            closed(stranger.clientID)
            admission = roster.admit(from: counted, make)
        }
        let connection: MPDConnection
        switch admission {
        case .admitted(let admitted): connection = admitted
        case .full: return try refuse(channel, "tonearmd serves at most \(roster.limit) at once")
        case .fullFrom(let address): return try refuse(channel, "tonearmd serves at most \(options.maxClientsPerAddress) from \(address) at once")
        }
        let id = connection.clientID
        channel.closeFuture.assumeIsolated().whenComplete { _ in self.closed(id) }
        try channel.pipeline.syncOperations.addHandlers([
            PendingOutputLimit(limit: options.maxPendingOutputBytes, client: "mpd: client \(id)", log: options.log),
            ByteToMessageHandler(LineFrameDecoder(maxLineBytes: options.maxLineBytes)),
            connection,
        ])
    }

    private func refuse(_ channel: any Channel, _ why: String) throws {
        let line = MPDError(.system, "too many clients: \(why)").line(failed: "")
        try channel.pipeline.syncOperations.addHandler(RefuseClient(line: ByteBuffer(string: line)))
        options.log?("mpd: refused a client: \(why)")
    }

    /// The client longest connected without the password, from the address that is full if
    /// that is why (so a peer at its limit can only displace its own).
    private func oldestStranger(making refusal: ClientRoster<MPDConnection>.Admission) -> MPDConnection? {
        let from: String?
        switch refusal {
        case .admitted: return nil
        case .full: from = nil
        case .fullFrom(let address): from = address
        }
        return roster.clients.values.filter { connection in
            connection.isStranger && (from == nil || roster.address(of: connection.clientID) == from)
        }.min { $0.clientID < $1.clientID }
    }

    func closed(_ clientID: Int) {
        guard roster.remove(clientID) != nil, !stopping else { return }
        options.clientDisconnected?(clientID)
    }

    func changed(_ subsystems: Set<String>) {
        for connection in roster.clients.values { connection.changed(subsystems) }
    }
}

/// Wrong passwords lately, per peer address: a guesser's new connections, or answers it gave up
/// waiting for, do not start the slow-down over. What it holds is bounded: at most `capacity`
/// addresses, each forgotten `memory` after its last wrong password.
struct PasswordFailures {
    let memory: TimeAmount
    let capacity: Int
    private var byAddress: [String: (count: Int, last: NIODeadline)] = [:]

    init(memory: TimeAmount = .minutes(10), capacity: Int = 4096) {
        self.memory = memory
        self.capacity = capacity
    }

    /// How many were wrong from `address` lately.
    mutating func recent(from address: String, now: NIODeadline) -> Int {
        guard let entry = byAddress[address] else { return 0 }
        guard now - entry.last < memory else {
            byAddress[address] = nil
            return 0
        }
        return entry.count
    }

    /// One more wrong from `address`; how many now.
    mutating func failed(from address: String, now: NIODeadline) -> Int {
        let count = recent(from: address, now: now) + 1
        if byAddress[address] == nil, byAddress.count >= capacity {
            byAddress = byAddress.filter { now - $0.value.last < memory }
            if byAddress.count >= capacity, let oldest = byAddress.min(by: { $0.value.last < $1.value.last }) {
                byAddress[oldest.key] = nil
            }
        }
        byAddress[address] = (count, now)
        return count
    }

    /// The right one was given from `address`.
    mutating func forget(_ address: String) { byAddress[address] = nil }
}
