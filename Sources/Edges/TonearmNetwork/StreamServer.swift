#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOPosix
import Synchronization

// What every server on the edge does, whatever it speaks: the listener and its clients on one
// loop, fair reads, a limit on clients, a limit on output a client has not read, half-closed
// input kept until the answers are out, and accepting that pauses when the process is out of
// descriptors.

/// A server bootstrap for the edge. Everything runs on `loop`, the listener and every client.
/// Accepting waits for `autoRead` to be set on the listener (see `ControlServer.start`), so a
/// socket can be bound and claimed before the daemon is ready to answer. Each client gets one
/// read (at most `maxReadBytes`) per turn of the loop, so one that floods cannot starve the
/// others, and what one read makes the loop do is bounded. A
/// client may half-close (`shutdown(SHUT_WR)` after its last request) and still get its
/// answers: the protocol handler sees `ChannelEvent.inputClosed` and closes when it is done.
/// Over `maxPendingOutputBytes` of unread output a client's channel turns unwritable, which
/// `PendingOutputLimit` acts on. An accept that fails for want of descriptors or memory
/// pauses accepting (`AcceptPause`). A client's read buffer starts at 256 bytes and grows with
/// what it sends: NIO keeps each channel's last one for its next read, and most clients are
/// idle ones that sent a line (2,048 bytes kept for each of 100 idle MPD clients was 0.18 MB).
public func makeStreamServerBootstrap(
    on loop: any EventLoop, name: String, maxPendingOutputBytes: Int, maxReadBytes: Int = 64 << 10,
    log: (@Sendable (String) -> Void)?, initializeClient: @escaping @Sendable (any Channel) throws -> Void
) -> ServerBootstrap {
    ServerBootstrap(group: loop, childGroup: loop)
        .serverChannelOption(.autoRead, value: false)
        .serverChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(AcceptPause(name: name, log: log))
            }
        }
        .childChannelOption(.maxMessagesPerRead, value: 1)
        .childChannelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(
            minimum: 64, initial: min(256, maxReadBytes), maximum: maxReadBytes))
        .childChannelOption(.allowRemoteHalfClosure, value: true)
        .childChannelOption(.writeBufferWaterMark, value: PendingOutputLimit.waterMark(limit: maxPendingOutputBytes))
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture { try initializeClient(channel) }
        }
}

/// Stops accepting for a second when an accept fails for want of descriptors or memory, and
/// says so once per pause. The waiting connection stays in the backlog and keeps the listener
/// readable, so retrying at once would spin the loop. NIO's `AcceptBackoffHandler`, which
/// every `ServerBootstrap` installs, only delays the next `read`, and a listener whose read is
/// still pending stays registered for readability: it spun (60 000 failed accepts in 0.6 s).
/// Turning `autoRead` off takes the listener out of the poll set until it is turned back on.
final class AcceptPause: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    private let name: String
    private let log: (@Sendable (String) -> Void)?
    private let pause: TimeAmount
    private var resumption: Scheduled<Void>?

    init(name: String, log: (@Sendable (String) -> Void)?, pause: TimeAmount = .seconds(1)) {
        self.name = name
        self.log = log
        self.pause = pause
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let exhausted = [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains((error as? IOError)?.errnoCode)
        if !exhausted {
            log?("\(name): cannot accept a client: \(error)")
        } else if resumption == nil, let options = context.channel.syncOptions, (try? options.getOption(.autoRead)) == true {
            try? options.setOption(.autoRead, value: false)
            log?("\(name): cannot accept a client: \(error); accepting again in \(pause.nanoseconds / 1_000_000) ms")
            let channel = NIOLoopBound(context.channel, eventLoop: context.eventLoop)
            resumption = context.eventLoop.assumeIsolated().scheduleTask(in: pause) {
                self.resumption = nil
                try? channel.value.syncOptions?.setOption(.autoRead, value: true)
            }
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        resumption?.cancel()
        resumption = nil
        context.fireChannelInactive()
    }
}

/// The clients of one server, on its loop: numbered from 1, never reused while the server
/// lives, at most `limit` at once, and at most `perAddressLimit` from one peer address, so a
/// few peers cannot take every place. Clients of a Unix socket have no address and count only
/// towards `limit`. Their count is kept in `ServerStatus` for other threads.
public final class ClientRoster<Client> {
    public let limit: Int
    public let perAddressLimit: Int?
    public private(set) var clients: [Int: Client] = [:]
    private var addresses: [Int: String] = [:]
    private var countByAddress: [String: Int] = [:]
    private var nextID = 1
    private let status: ServerStatus

    /// A new client, or why there is no place for it.
    public enum Admission {
        case admitted(Client)
        /// `limit` are connected.
        case full
        /// `perAddressLimit` are connected from this address.
        case fullFrom(String)
    }

    public init(limit: Int, perAddressLimit: Int? = nil, status: ServerStatus) {
        precondition(limit > 0 && (perAddressLimit ?? 1) > 0)
        self.limit = limit
        self.perAddressLimit = perAddressLimit
        self.status = status
    }

    /// A number for a new client from `address` (nil: a Unix socket's), or why not.
    public func admit(from address: String?, _ make: (Int) throws -> Client) rethrows -> Admission {
        guard clients.count < limit else { return .full }
        if let address, let perAddressLimit, countByAddress[address, default: 0] >= perAddressLimit {
            return .fullFrom(address)
        }
        let id = nextID
        let client = try make(id)
        nextID += 1
        clients[id] = client
        if let address {
            addresses[id] = address
            countByAddress[address, default: 0] += 1
        }
        status.clientCount.store(clients.count, ordering: .relaxed)
        return .admitted(client)
    }

    /// A number for a new client, or nil when `limit` are connected (for servers whose clients
    /// have no address).
    public func admit(_ make: (Int) throws -> Client) rethrows -> Client? {
        guard case .admitted(let client) = try admit(from: nil, make) else { return nil }
        return client
    }

    /// The peer address a client came from; nil for a Unix socket's.
    public func address(of id: Int) -> String? { addresses[id] }

    public func remove(_ id: Int) -> Client? {
        defer { status.clientCount.store(clients.count, ordering: .relaxed) }
        if let address = addresses.removeValue(forKey: id) {
            let left = countByAddress[address, default: 1] - 1
            countByAddress[address] = left > 0 ? left : nil
        }
        return clients.removeValue(forKey: id)
    }
}

extension SocketAddress {
    /// The peer's IP address ("192.0.2.7", "::1"); nil for a Unix socket's. An IPv4 peer on a
    /// dual-stack socket ("::ffff:192.0.2.7") is itself.
    public var peerIP: String? {
        guard let ip = ipAddress else { return nil }
        return ip.hasPrefix("::ffff:") && ip.contains(".") ? String(ip.dropFirst(7)) : ip
    }

    /// A peer on this machine: 127.0.0.0/8 or ::1.
    public var isLoopback: Bool {
        guard let ip = peerIP else { return false }
        return ip == "::1" || ip.hasPrefix("127.")
    }
}

/// What other threads may know of a server on the loop.
public final class ServerStatus: Sendable {
    public let clientCount = Atomic<Int>(0)
    /// Set first thing by `stop`: from then on nothing more is handed to the loop (which may
    /// be shut down after the server stops).
    public let stopped = Atomic<Bool>(false)

    public init() {}
}

/// Says why in one line, once the client is connected, then closes: a client over the limit.
/// What it sends is dropped.
public final class RefuseClient: ChannelInboundHandler {
    public typealias InboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private let line: ByteBuffer

    public init(line: ByteBuffer) { self.line = line }

    /// Added to a channel already connected, or before it is.
    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { refuse(context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        refuse(context)
        context.fireChannelActive()
    }

    private func refuse(_ context: ChannelHandlerContext) {
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(line)).whenComplete { _ in channel.close(promise: nil) }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
