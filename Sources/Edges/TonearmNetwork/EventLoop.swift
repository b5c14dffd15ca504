import NIOPosix

/// The daemon's one event-loop thread: every socket it serves (the control socket, MPD, the web
/// remote) runs on it.
public enum NetworkEdge {
    public static func makeEventLoopGroup() -> MultiThreadedEventLoopGroup {
        MultiThreadedEventLoopGroup(numberOfThreads: 1)
    }
}
