import ArgumentParser
import Logging
import TonearmConfig
import TonearmControlPlane
import TonearmNetwork
import TonearmDaemon
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

func printError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

/// The daemon's entry: all of its tasks run on the main thread (`TaskThread`), which sleeps
/// while nothing happens; the engine's and the devices' threads and the event loop are its own.
@main
enum Entry {
    static func main() {
        returnLargeAllocationsToTheSystem()
        TaskThread.install()
        Task {
            await Tonearmd.main()
            exit(0)
        }
        TaskThread.run()
    }
}

/// The Tonearm daemon: plays the queue, answers the control socket, keeps its state.
struct Tonearmd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tonearmd",
        abstract: "The Tonearm audio daemon.",
        discussion: """
            Plays the queue through ALSA and answers `tonearm` and other clients on a Unix \
            socket (JSON lines). The queue, position, volume, repeat and shuffle are saved on \
            every change and every few seconds while playing, and restored at start. SIGTERM or \
            SIGINT fades out, saves and exits 0. An output device that is lost, stops responding \
            or is not there yet is reopened every [output] reopen_interval_ms: the player stays \
            playing, but Now Playing's rate is 0 and elapsed holds what was heard until audio \
            flows again (tonearm status and doctor say why). Settings come from a board profile \
            (--config, TOML; see Board/) and these flags, which win over it.
            """
    )

    @Option(name: .shortAndLong, help: ArgumentHelp("Board profile (TOML).", valueName: "file"))
    var config: String?

    @Option(name: .shortAndLong, help: ArgumentHelp("ALSA PCM to play through, or pipe:PATH for a named pipe (Snapcast's pipe source: S16_LE 48 kHz stereo).", valueName: "pcm"))
    var device: String?

    @Option(help: ArgumentHelp("Control socket (default: $XDG_RUNTIME_DIR/tonearm.sock, or /run/tonearm/control.sock).", valueName: "path"))
    var socket: String?

    @Option(help: ArgumentHelp("Where the player state is kept (default: $XDG_STATE_HOME/tonearm, or /var/lib/tonearm).", valueName: "dir"))
    var stateDir: String?

    @Option(help: ArgumentHelp("Only files inside this directory may be queued; relative paths are resolved in it.", valueName: "dir"))
    var musicDir: String?

    @Option(help: ArgumentHelp("The music library's index, an SQLite file (default: library.db in the state directory).", valueName: "file"))
    var libraryDb: String?

    @Flag(help: "Do not scan the music directory for changes at start (tonearm update does).")
    var noInitialScan = false

    @Option(help: ArgumentHelp("The MPD protocol server's TCP port (default 6600; 0 turns it off).", valueName: "port"))
    var mpdPort: Int?

    @Option(help: ArgumentHelp("The address the MPD server listens on (default 127.0.0.1; 0.0.0.0 for every network).", valueName: "address"))
    var mpdBind: String?

    @Option(help: ArgumentHelp("The web remote's TCP port (default 8080; 0 turns it off).", valueName: "port"))
    var webPort: Int?

    @Option(help: ArgumentHelp("The address the web remote listens on (default 127.0.0.1; 0.0.0.0 for every network).", valueName: "address"))
    var webBind: String?

    @Flag(help: "Print the systemd drop-in that lets the service use the network as far as the profile's TCP listeners need (none, this machine, or the local network), and exit.")
    var networkDropIn = false

    @Option(help: ArgumentHelp("Publish Now Playing and take commands over MPRIS on D-Bus: session, system or off (default: [mpris] bus, off).", valueName: "bus"))
    var mpris: DaemonConfig.MPRIS.Bus?

    @Flag(help: "Check the board profile and exit.")
    var check = false

    @Flag(help: "On the board: check the ALSA device (with buffer_ms, whether it rewinds), GPIO chips and lines, input devices and serial port the profile names, print what was found, and exit (1 if anything is missing). Stop the service first.")
    var selftest = false

    @Option(help: ArgumentHelp("Log level: trace, debug, info, notice, warning, error, critical.", valueName: "level"))
    var logLevel: String = "info"

    func run() async throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: "tonearmd")
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        logger.logLevel = level

        var profile: DaemonConfig
        do {
            profile = try config.map { path throws(ConfigError) in try DaemonConfig.load(path: path) } ?? DaemonConfig()
            // Flags win over the profile, and are checked by the same rules.
            if let device { profile.output.device = device }
            if let socket { profile.daemon.socket = socket }
            if let stateDir { profile.daemon.stateDirectory = stateDir }
            if let musicDir { profile.daemon.musicDirectory = musicDir }
            if let libraryDb { profile.library.database = libraryDb }
            if noInitialScan { profile.library.scanOnStart = false }
            if let mpdPort { profile.mpd.port = mpdPort }
            if let mpdBind { profile.mpd.bind = mpdBind }
            if let mpris { profile.mpris.bus = mpris }
            if let webPort { profile.web.port = webPort }
            if let webBind { profile.web.bind = webBind }
            try profile.validate()
            try BoardSetup.check(profile)
        } catch let error as BoardSetupError {
            printError("tonearmd: \(config ?? "defaults"): \(error)")
            throw ExitCode(1)
        } catch {
            printError("tonearmd: \(error)")
            throw ExitCode(1)
        }
        if check {
            print("\(config ?? "defaults"): ok")
            return
        }
        if networkDropIn {
            print(NetworkDropIn.text(profile), terminator: "")
            return
        }
        if selftest {
            let findings = BoardSelfTest.run(profile)
            for finding in findings { print("\(finding.ok ? "ok  " : "FAIL") \(finding.text)") }
            let failed = findings.filter { !$0.ok }.count
            print(failed == 0 ? "\(config ?? "defaults"): everything the profile names is there" : "\(config ?? "defaults"): \(failed) problem\(failed == 1 ? "" : "s")")
            if failed > 0 { throw ExitCode(1) }
            return
        }
        let settings = DaemonSettings(config: profile)

        // One event-loop thread for every socket, the engine's doorbell and the timers.
        let eventLoop = NetworkEdge.makeEventLoopGroup()
        let doorbell = Doorbell()
        let daemon: PlayerDaemon
        let plugIns: [any PlugIn]
        do {
            daemon = try PlayerDaemon(settings: settings, logger: logger, loop: eventLoop.next(), notify: { doorbell.wake() })
            let log = PlugInLog(logger)
            plugIns = try PlugInRegistry.plugIns(for: settings, group: eventLoop, log: log)
        } catch {
            logger.critical("\(error)")
            throw ExitCode(1)
        }
        defer { eventLoop.shutdownGracefully { _ in } }
        do {
            try await DaemonServices.run(daemon: daemon, doorbell: doorbell, group: eventLoop, plugIns: plugIns, logger: logger)
        } catch {
            logger.critical("\(error)")
            throw ExitCode(1)
        }
    }
}

extension DaemonConfig.MPRIS.Bus: ExpressibleByArgument {}
