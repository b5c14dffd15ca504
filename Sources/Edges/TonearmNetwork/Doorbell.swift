import NIOCore
import NIOPosix
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// The control plane's side of a doorbell that a thread which must never wait on a lock (the
/// audio output thread) wakes: the event loop watches its pipe beside every socket and calls
/// the handler. Wakes coalesce while the handler has not run.
extension Doorbell {
    /// Calls `handler` on the event loop each time the bell was woken since the last call.
    /// Fails (with the system's words) when the pipe could not be made or watched.
    public func watch(on group: EventLoopGroup, _ handler: @escaping @Sendable () -> Void) async throws -> Channel {
        if let failure { throw PipeWatchError(reason: "cannot make the engine's wake-up pipe: \(failure)") }
        let reader = dup(descriptor)
        guard reader >= 0 else { throw PipeWatchError(reason: "cannot watch the engine's wake-up pipe: \(String(cString: strerror(errno)))") }
        return try await NIOPipeBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Ringing(self, handler)) }
            }
            .takingOwnershipOfDescriptor(input: reader)
            .get()
    }
}

private final class Ringing: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let doorbell: Doorbell
    let handler: @Sendable () -> Void

    init(_ doorbell: Doorbell, _ handler: @escaping @Sendable () -> Void) {
        self.doorbell = doorbell
        self.handler = handler
    }

    // The bytes themselves mean nothing; one call per read burst, after the wake is taken
    // (a wake meanwhile writes again, and is read again).
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    func channelReadComplete(context: ChannelHandlerContext) {
        doorbell.consume()
        handler()
    }
}

/// A pipe the event loop could not make or watch (the engine's doorbell's, the stop signals'),
/// in the system's words.
public struct PipeWatchError: Error, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}
