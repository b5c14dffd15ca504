import ArgumentParser
import Logging
import Synchronization
import TonearmALSA
import TonearmAudio
import TonearmDecoding
import TonearmPlayback
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// Set by SIGINT/SIGTERM; the play loop stops cleanly when it sees it.
let interrupted = Atomic<Bool>(false)

struct Play: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play audio files through ALSA, or (with no FILE) tell the daemon to play.",
        discussion: """
            With FILE arguments, tonearm plays them itself, without the daemon. \
            Each file plays in its own format when the device takes it (bit-perfect at 100 % \
            volume); otherwise it is resampled with libsoxr and its channels mapped. Consecutive \
            files of one format play with no gap, and so does a file of fewer bits after more \
            at the same rate and channels (in the open device's format, still bit-perfect); any \
            other change of format reconfigures the device between them. An underrun is \
            recovered and counted (logged at most once a second); a device that fails or stops \
            consuming is closed and reopened every --reopen-interval milliseconds, and playback \
            continues where it stopped. A device that cannot be opened at all is an error. One \
            status line per track goes to standard error.
            Exit status: 0 when every file played, 1 when a file or the device failed, 130 on Ctrl-C.
            """
    )

    @Option(name: .shortAndLong, help: ArgumentHelp("ALSA PCM: default, hw:CARD=x,DEV=0, plughw:…, or a name from an ALSA config; or pipe:PATH, a named pipe (S16_LE 48 kHz stereo, paced by the clock).", valueName: "pcm"))
    var device = "default"

    @Option(help: ArgumentHelp("Frames per ALSA period.", valueName: "frames"))
    var periodFrames = 256

    @Option(help: ArgumentHelp("Frames in the ALSA buffer (rewound where the device can, when it holds 100 ms or more).", valueName: "frames"))
    var bufferFrames = 1024

    @Option(help: ArgumentHelp("The ALSA buffer in milliseconds instead, a period a quarter of it (on a device that can rewind; else --buffer-frames).", valueName: "ms"))
    var bufferMs: Int?

    @Option(help: ArgumentHelp("Software volume in percent (100 = unity, bit-perfect; dithered below that at 16 bits).", valueName: "percent"))
    var volume: Double = 100

    @Option(help: ArgumentHelp("Set this ALSA mixer control (e.g. PCM, Digital) to --volume instead of scaling in software.", valueName: "name"))
    var mixerControl: String?

    @Option(help: ArgumentHelp("The card whose mixer holds --mixer-control.", valueName: "card"))
    var mixerCard = "default"

    @Option(help: ArgumentHelp("Start the first file this many seconds in (sample-accurate).", valueName: "seconds"))
    var start: Double = 0

    @Option(help: ArgumentHelp("Seconds of audio the decoder keeps ahead of the device.", valueName: "seconds"))
    var readAhead: Double = 2

    @Option(help: ArgumentHelp("Milliseconds between attempts to reopen a lost device.", valueName: "ms"))
    var reopenInterval = 500

    @Option(help: ArgumentHelp("Milliseconds without a completed period after which the device counts as lost (default: 4 buffers, at least 1000).", valueName: "ms"))
    var stallTimeout: Int?

    @Option(help: ArgumentHelp("ReplayGain: off (bit-perfect), track, album, or auto (album while the files are one album in order).", valueName: "mode"))
    var replayGain: ReplayGainMode = .off

    @Option(parsing: .unconditional, help: ArgumentHelp("dB added to every file's ReplayGain (clipping is still prevented by the stored peak).", valueName: "dB"))
    var replayGainPreamp: Double = 0

    @Flag(name: .shortAndLong, help: "No status lines.")
    var quiet = false

    @OptionGroup var connection: Connection

    @Argument(help: "Audio files, played in order. None: start or resume the daemon's queue.")
    var files: [String] = []

    func validate() throws {
        guard (16...65536).contains(periodFrames) else { throw ValidationError("--period-frames must be between 16 and 65536") }
        guard bufferFrames >= 2 * periodFrames else { throw ValidationError("--buffer-frames must be at least two periods") }
        if let bufferMs, !(20...2000).contains(bufferMs) { throw ValidationError("--buffer-ms must be between 20 and 2000") }
        guard (0...100).contains(volume) else { throw ValidationError("--volume must be between 0 and 100") }
        guard start >= 0 else { throw ValidationError("--start must not be negative") }
        guard readAhead >= 0.1 && readAhead <= 60 else { throw ValidationError("--read-ahead must be between 0.1 and 60 seconds") }
        guard reopenInterval >= 10 else { throw ValidationError("--reopen-interval must be at least 10 ms") }
        guard (-15...15).contains(replayGainPreamp) else { throw ValidationError("--replay-gain-preamp must be between -15 and 15 dB") }
    }

    func run() throws {
        guard !files.isEmpty else {
            try connection.transport("play")
            return
        }
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: "tonearm")
        logger.logLevel = quiet ? .error : .notice

        // Every file is checked before a sample plays: a typo fails at once, not mid-album.
        var tracks: [TrackInfo] = []
        for path in files {
            do {
                tracks.append(try Decoders.open(path: path).info)
            } catch {
                printError("tonearm: \(error)")
                throw ExitCode(1)
            }
        }
        if let duration = tracks[0].duration, start > duration {
            printError("tonearm: \(tracks[0].path): --start \(fixed(start, 3)) is past the end (\(fixed(duration, 3)) s)")
            throw ExitCode(1)
        }

        var options = PlaybackOptions()
        options.device = device
        options.periodFrames = periodFrames
        options.bufferFrames = bufferFrames
        options.bufferMilliseconds = bufferMs
        options.readAheadSeconds = readAhead
        options.reopenIntervalMilliseconds = reopenInterval
        options.stallTimeoutMilliseconds = stallTimeout
        // Room for the most demanding file, resampled to 48 kHz or played at its own rate.
        options.readAheadSamplesPerSecond = tracks.map { max($0.format.sampleRate, 48000) * max($0.format.channels, 2) }.max()!
        if let mixerControl {
            do {
                try MixerControl(card: mixerCard, name: mixerControl).setVolume(percent: volume)
            } catch {
                printError("tonearm: \(error)")
                throw ExitCode(1)
            }
        } else {
            options.volumePercent = volume
        }

        // The queue is the command line: each file is followed by the next.
        let items = tracks.enumerated().map { index, track in
            EngineItem(id: index, path: track.path, albumInOrder: Self.albumInOrder(tracks, index))
        }
        let engine = PlaybackEngine(options: options) { id in id + 1 < items.count ? items[id + 1] : nil }

        signal(SIGINT) { _ in interrupted.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in interrupted.store(true, ordering: .relaxed) }

        let began = monotonicSeconds()
        engine.setReplayGain(ReplayGainSettings(mode: replayGain, preamp: replayGainPreamp))
        engine.start()
        engine.play(items[0], from: start)
        var failures = 0
        var deviceError: String?
        var started = false
        var finished = false
        var underrunLog = UnderrunLog(device: device)
        while !finished && deviceError == nil && !interrupted.load(ordering: .relaxed) {
            for event in engine.nextEvents(now: monotonicSeconds()) {
                switch event {
                case .itemStarted(let start):
                    started = true
                    if !quiet { printError(statusLine(start, of: tracks.count)) }
                case .itemFailed(_, let error):
                    printError("tonearm: \(error)")
                    failures += 1
                case .outputInterrupted(.unavailable(let error), _) where !started:
                    // A device that never opened is a mistake to report, not an outage to wait out.
                    deviceError = error.description
                case .outputInterrupted(let why, _):
                    logger.warning("\(why); reopening every \(reopenInterval) ms")
                case .deviceReopened(let format):
                    logger.notice("ALSA PCM '\(device)' is back (\(format)); continuing")
                case .outputResumed:
                    break
                case .underruns(let total):
                    underrunLog.record(total: total)
                case .realtimeRefused(let why):
                    logger.notice("output thread runs without SCHED_FIFO: \(why) (grant rtprio, e.g. LimitRTPRIO in the service unit)")
                case .memoryLockRefused(let why):
                    logger.notice("audio buffers are not locked in memory: \(why) (raise RLIMIT_MEMLOCK)")
                case .rewindRefused(let device, let format):
                    logger.notice("\(rewindRefusedLine(device: device, format))")
                case .endOfQueue:
                    finished = true
                case .streamFinished:
                    break  // it plays no session streams
                case .radio:
                    break  // a URL's titles and reconnections are the daemon's to show
                }
            }
            if let line = underrunLog.line(now: monotonicSeconds()) { logger.warning("\(line)") }
            if !finished { usleep(20_000) }
        }
        engine.shutdown()
        if let deviceError {
            printError("tonearm: \(deviceError)")
            throw ExitCode(1)
        }
        if interrupted.load(ordering: .relaxed) { throw ExitCode(130) }
        if !quiet {
            let seconds = monotonicSeconds() - began
            printError("played \(tracks.count) file\(tracks.count == 1 ? "" : "s") in \(fixed(seconds, 2)) s: \(engine.underruns) underruns, \(engine.deviceLosses) device losses")
        }
        if failures > 0 { throw ExitCode(1) }
    }

    func statusLine(_ start: ItemStart, of count: Int) -> String {
        let info = start.info
        let device = start.device
        var line = "[\(start.itemID + 1)/\(count)] "
        line += info.title ?? basename(info.path)
        if let artist = info.artist { line += " — \(artist)" }
        if let album = info.album { line += " · \(album)" }
        line += "  (" + (info.duration.map(clock) ?? "length unknown")
        line += ", \(info.codec) \(info.format) → \(device.sampleFormat) \(device.sampleRate) Hz \(device.channels) ch)"
        return line
    }
}

func basename(_ path: String) -> String {
    path.split(separator: "/").last.map(String.init) ?? path
}

extension Play {
    /// The file at `index` has the album of the file before or after it.
    static func albumInOrder(_ tracks: [TrackInfo], _ index: Int) -> Bool {
        guard let album = tracks[index].album else { return false }
        return (index > 0 && tracks[index - 1].album == album) || (index + 1 < tracks.count && tracks[index + 1].album == album)
    }
}

extension ReplayGainMode: ExpressibleByArgument {}
