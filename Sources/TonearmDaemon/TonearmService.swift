import ServiceLifecycle
import Synchronization

/// The daemon as a swift-service-lifecycle service: runs until the group shuts down
/// gracefully (SIGTERM, SIGINT), then fades out, saves and exits.
public struct TonearmService: Service {
    let daemon: PlayerDaemon

    public init(daemon: PlayerDaemon) { self.daemon = daemon }

    public func run() async throws {
        let shutdown = ShutdownFlag()
        try await withGracefulShutdownHandler {
            try await daemon.run { shutdown.isSet }
        } onGracefulShutdown: {
            shutdown.set()
        }
    }
}

final class ShutdownFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .acquiring) }
    func set() { flag.store(true, ordering: .releasing) }
}
