import Logging
import NIOCore
import TonearmControlPlane
import TonearmNetwork
import TonearmPlayback
import TonearmSystem

/// The daemon's life. The player starts (it restores the state), the engine's announcements
/// are watched on the event loop (its doorbell) and every plug-in runs, all at once. On SIGTERM
/// or SIGINT, or when a required plug-in fails, they stop in reverse order: the plug-ins, the
/// last first, then the doorbell, then the player, which fades out, saves and stops the engine.
public enum DaemonServices {
    enum Stop {
        case signal
        case failed(any Error)
    }

    /// Runs until SIGTERM or SIGINT, then returns; or until a required plug-in fails, then
    /// throws its error, once everything has stopped.
    public static func run(daemon: PlayerDaemon, doorbell: Doorbell, group: EventLoopGroup, plugIns: [any PlugIn],
                           logger: Logger) async throws {
        let (stops, stop) = AsyncStream<Stop>.makeStream()
        _ = try await StopSignals.watch(on: group) { stop.yield(.signal) }
        let player = Task { await daemon.start() }
        let engine: Channel
        do {
            engine = try await doorbell.watch(on: group) { [daemon] in
                Task { await daemon.engineAnnounced() }
            }
        } catch {
            await player.value
            await daemon.stop()
            throw error
        }
        let running = plugIns.map { plugIn in
            Task {
                do {
                    try await PlugInService(plugIn: plugIn, plane: daemon, logger: logger).run()
                } catch {
                    stop.yield(.failed(error))
                }
            }
        }
        var failure: (any Error)?
        for await reason in stops {
            if case .failed(let error) = reason { failure = error }
            break
        }
        for plugIn in running.reversed() {
            plugIn.cancel()
            await plugIn.value
        }
        try? await engine.close()
        await player.value
        await daemon.stop()
        if let failure { throw failure }
    }
}

/// One plug-in, run until its task is cancelled. One that fails is logged in one line and
/// started again after a back-off (1 s, doubling to 30 s; back to 1 s after it ran a minute)
/// while playback goes on; a required one that fails stops the daemon (`run` throws).
struct PlugInService {
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
                try await plugIn.run(plane, log: log)
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
                    try await Task.sleep(for: .seconds(wait))
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
