import Logging
import NIOCore
import ServiceLifecycle
import TonearmControlPlane
import TonearmNetwork
import TonearmPlayback
import TonearmSystem

/// The daemon as swift-service-lifecycle services, started in order and stopped in reverse
/// (SIGTERM, SIGINT): the player (restores the state; on the way out fades, saves and stops
/// the engine), the engine's doorbell on the event loop, then every plug-in.
public enum DaemonServices {
    public static func make(daemon: PlayerDaemon, doorbell: Doorbell, group: EventLoopGroup, plugIns: [any PlugIn],
                            logger: Logger) -> [ServiceGroupConfiguration.ServiceConfiguration] {
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: PlayerService(daemon: daemon), successTerminationBehavior: .gracefullyShutdownGroup),
            .init(service: DoorbellService(daemon: daemon, doorbell: doorbell, group: group)),
        ]
        for plugIn in plugIns {
            services.append(.init(service: PlugInService(plugIn: plugIn, plane: daemon, logger: logger),
                                  failureTerminationBehavior: .gracefullyShutdownGroup))
        }
        return services
    }
}

/// The player: starts with the group, and on shutdown fades out, saves and stops the engine.
struct PlayerService: Service {
    let daemon: PlayerDaemon

    func run() async throws {
        await daemon.start()
        try? await gracefulShutdown()
        await daemon.stop()
    }
}

/// The engine's announcements, watched on the event loop: each ring hands its events to the
/// player. Nothing polls.
struct DoorbellService: Service {
    let daemon: PlayerDaemon
    let doorbell: Doorbell
    let group: EventLoopGroup

    func run() async throws {
        let channel = try await doorbell.watch(on: group) { [daemon] in
            Task { await daemon.engineAnnounced() }
        }
        try? await gracefulShutdown()
        try? await channel.close()
    }
}

/// One plug-in as a service. One that fails is logged in one line and started again after a
/// back-off (1 s, doubling to 30 s; back to 1 s after it ran a minute) while playback goes on;
/// a required one that fails stops the daemon.
struct PlugInService: Service {
    let plugIn: any PlugIn
    let plane: any ControlPlane
    let logger: Logger
    var firstDelay = 1.0
    var longestDelay = 30.0

    func run() async throws {
        var logger = logger
        logger[metadataKey: "plugIn"] = "\(plugIn.name)"
        let log = PlugInLog(logger)
        var delay = firstDelay
        while !Task.isCancelled {
            let started = ContinuousClock.now
            do {
                try await cancelWhenGracefulShutdown { try await plugIn.run(plane, log: log) }
                return
            } catch is CancellationError {
                return
            } catch {
                if plugIn.isRequired {
                    logger.critical("\(plugIn.name) failed: \(error); it is required, so tonearmd stops")
                    throw error
                }
                if ContinuousClock.now - started > .seconds(60) { delay = firstDelay }
                logger.error("\(plugIn.name) failed: \(error); starting it again in \(delay) s")
                let wait = delay
                do {
                    try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(wait)) }
                } catch {
                    return
                }
                delay = min(delay * 2, longestDelay)
            }
        }
    }
}

extension PlugInLog {
    /// A plug-in log that writes to `logger`.
    public init(_ logger: Logger) {
        self.init { level, message in
            switch level {
            case .debug: logger.debug("\(message)")
            case .info: logger.info("\(message)")
            case .notice: logger.notice("\(message)")
            case .warning: logger.warning("\(message)")
            case .error: logger.error("\(message)")
            }
        }
    }
}
