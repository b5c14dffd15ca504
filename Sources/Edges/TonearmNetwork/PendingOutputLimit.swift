import NIOCore

/// Disconnects a client that stopped reading, for any server on the edge. Output the client
/// has not taken yet waits in the channel, up to the channel's high-water mark (set with
/// `waterMark(limit:)`); when it goes over, the channel is no longer writable, and this
/// closes it and says why rather than buffer more or wait. So a server never waits for a
/// client, and what one client makes it hold is bounded.
public final class PendingOutputLimit: ChannelInboundHandler {
    public typealias InboundIn = NIOAny

    private let limit: Int
    /// "control: client 3"
    private let client: String
    private let log: (@Sendable (String) -> Void)?

    public init(limit: Int, client: String, log: (@Sendable (String) -> Void)?) {
        self.limit = limit
        self.client = client
        self.log = log
    }

    /// The channel option that makes a channel unwritable once more than `limit` bytes wait.
    public static func waterMark(limit: Int) -> ChannelOptions.Types.WriteBufferWaterMark {
        ChannelOptions.Types.WriteBufferWaterMark(low: limit / 2, high: limit)
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        if !context.channel.isWritable && context.channel.isActive {
            let pending = (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)).map { "\($0) bytes" } ?? "output"
            log?("\(client) disconnected: \(pending) pending, over the limit of \(limit) (it stopped reading)")
            context.close(promise: nil)
        }
        context.fireChannelWritabilityChanged()
    }
}
