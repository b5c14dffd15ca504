import ArgumentParser
import Logging
import Synchronization
import TonearmFLAC
import TonearmPlayback

#if canImport(Glibc)
import Glibc
#endif

let shutdownRequested = Atomic<Bool>(false)

/// The daemon, minimal for now: it owns the output device and plays what it is given until
/// the list ends or SIGTERM/SIGINT arrives. The queue, control socket and Now Playing build on
/// this process.
@main
struct Tonearmd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tonearmd",
        abstract: "The Tonearm audio daemon.",
        discussion: "Plays FILE... through the output device, then waits for SIGTERM or SIGINT (with --stay), logging to standard error."
    )

    @Option(name: .shortAndLong, help: ArgumentHelp("ALSA PCM to play through.", valueName: "pcm"))
    var device = "default"

    @Option(help: ArgumentHelp("Frames per ALSA period.", valueName: "frames"))
    var periodFrames = 256

    @Option(help: ArgumentHelp("Frames in the ALSA buffer.", valueName: "frames"))
    var bufferFrames = 1024

    @Flag(help: "Keep running after the files have played, until SIGTERM or SIGINT.")
    var stay = false

    @Argument(help: "FLAC files to play.")
    var files: [String] = []

    func run() throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: "tonearmd")
        logger.logLevel = .info
        signal(SIGINT) { _ in shutdownRequested.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in shutdownRequested.store(true, ordering: .relaxed) }

        var tracks: [TrackInfo] = []
        for path in files {
            do {
                tracks.append(try FLACDecoder(path: path).info)
            } catch {
                logger.error("\(error)")
            }
        }
        logger.info("tonearmd started", metadata: ["device": "\(device)", "files": "\(tracks.count)"])
        if !tracks.isEmpty {
            var options = PlaybackOptions()
            options.device = device
            options.periodFrames = periodFrames
            options.bufferFrames = bufferFrames
            let items = tracks.enumerated().map { EngineItem(id: $0.offset, path: $0.element.path) }
            let engine = PlaybackEngine(options: options) { id in id + 1 < items.count ? items[id + 1] : nil }
            engine.start()
            engine.play(items[0])
            var done = false
            while !done && !shutdownRequested.load(ordering: .relaxed) {
                for event in engine.nextEvents() {
                    switch event {
                    case .itemStarted(let start):
                        logger.info("now playing", metadata: [
                            "title": "\(start.info.title ?? start.info.path)", "artist": "\(start.info.artist ?? "")",
                            "device": "\(start.device)",
                        ])
                    case .itemFailed(_, let error): logger.error("\(error)")
                    case .deviceUnavailable(let error): logger.error("\(error); retrying")
                    case .realtimeRefused(let why): logger.notice("output thread runs without SCHED_FIFO: \(why)")
                    case .memoryLockRefused(let why): logger.notice("audio buffers are not locked in memory: \(why)")
                    case .deviceLost(let name): logger.warning("ALSA PCM '\(name)' lost; reopening")
                    case .deviceReopened(let format): logger.notice("ALSA PCM back: \(format)")
                    case .endOfQueue: done = true
                    }
                }
                if !done { usleep(20_000) }
            }
            engine.shutdown()
        }
        while stay && !shutdownRequested.load(ordering: .relaxed) { usleep(100_000) }
        logger.info("tonearmd stopped")
    }
}
