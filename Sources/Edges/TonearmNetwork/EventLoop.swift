import NIOPosix

/// The daemon's one event-loop thread: every socket it serves (the control socket now; the
/// MPD and HTTP servers later) runs on it.
public enum NetworkEdge {
    public static func makeEventLoopGroup() -> MultiThreadedEventLoopGroup {
        MultiThreadedEventLoopGroup(numberOfThreads: 1)
    }
}
