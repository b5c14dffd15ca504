import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// The write end of the pipe SIGTERM and SIGINT are told through: writing a byte to it is all a
/// signal handler may do. Set once, before the handlers are installed.
nonisolated(unsafe) private var stopSignalWriter: Int32 = -1

/// SIGTERM and SIGINT, the requests to stop, as calls on the event loop: each handler writes a
/// byte to a pipe the loop watches beside every socket. Nothing waits or polls for them.
public enum StopSignals {
    /// Calls `handler` on the event loop after each SIGTERM or SIGINT from now on (signals that
    /// come together make one call). Once in a process: the pipe stays open for its life, so a
    /// signal that comes late still finds a reader. Fails (with the system's words) when the
    /// pipe could not be made or watched.
    public static func watch(on group: EventLoopGroup, _ handler: @escaping @Sendable () -> Void) async throws -> Channel {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw PipeWatchError(reason: "cannot make the signals' pipe: \(String(cString: strerror(errno)))")
        }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        stopSignalWriter = ends[1]
        let channel = try await NIOPipeBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(SignalReader(handler)) }
            }
            .takingOwnershipOfDescriptor(input: ends[0])
            .get()
        // glibc's signal(): the handler stays installed and interrupted system calls go on.
        for number in [SIGTERM, SIGINT] {
            _ = signal(number) { _ in
                let saved = errno
                var one: UInt8 = 1
                _ = write(stopSignalWriter, &one, 1)
                errno = saved
            }
        }
        return channel
    }
}

private final class SignalReader: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let handler: @Sendable () -> Void

    init(_ handler: @escaping @Sendable () -> Void) { self.handler = handler }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    func channelReadComplete(context: ChannelHandlerContext) { handler() }
}
