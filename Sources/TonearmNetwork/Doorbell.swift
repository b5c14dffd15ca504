import NIOCore
import NIOPosix
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// Lets a thread that must never wait on a lock (the audio output thread) wake the control
/// plane: `ring` writes one byte to a pipe, and the event loop, which watches the pipe beside
/// every socket, calls the handler. Rings coalesce while the handler has not run.
public final class Doorbell: Sendable {
    private let pipe = WakePipe()

    public init() {}

    /// From any thread: a `write(2)`, no lock, no allocation.
    public func ring() { pipe.wake() }

    /// Calls `handler` on the event loop each time the bell has rung since the last call.
    /// Fails (with the system's words) when the pipe could not be made or watched.
    public func watch(on group: EventLoopGroup, _ handler: @escaping @Sendable () -> Void) async throws -> Channel {
        if let failure = pipe.failure { throw DoorbellError(reason: "cannot make the engine's wake-up pipe: \(failure)") }
        let reader = dup(pipe.descriptor)
        guard reader >= 0 else { throw DoorbellError(reason: "cannot watch the engine's wake-up pipe: \(String(cString: strerror(errno)))") }
        return try await NIOPipeBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Ringing(handler)) }
            }
            .takingOwnershipOfDescriptor(input: reader)
            .get()
    }

    private final class Ringing: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let handler: @Sendable () -> Void

        init(_ handler: @escaping @Sendable () -> Void) { self.handler = handler }

        // The bytes themselves mean nothing; one call per read burst.
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
        func channelReadComplete(context: ChannelHandlerContext) { handler() }
    }
}

public struct DoorbellError: Error, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}
