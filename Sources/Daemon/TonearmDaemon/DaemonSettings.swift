import TonearmAudio
import TonearmConfig
import TonearmLibrary
import TonearmPlayback
import TonearmSession

#if canImport(Glibc)
import Glibc
#endif

/// Everything the daemon runs with: the board profile, with command-line overrides applied
/// and the defaults that depend on how it runs (as a user, or as the system service) filled in.
public struct DaemonSettings: Sendable {
    public var playback = PlaybackOptions()
    public var mixerControl: String?
    public var mixerCard = "default"
    public var socketPath: String
    /// Where ALSA programs' audio comes in; nil for none. Beside the control socket unless the
    /// profile says otherwise: `pcm.sock` next to `control.sock`, `NAME-pcm.sock` next to
    /// `NAME.sock`.
    public var pcmSocketPath: String? {
        if let path = profile.daemon.pcmSocket { return path == "off" ? nil : path }
        var directory = socketPath, file = socketPath
        if let slash = socketPath.lastIndex(of: "/") {
            directory = String(socketPath[...slash])
            file = String(socketPath[socketPath.index(after: slash)...])
        } else {
            directory = ""
        }
        if file == "control.sock" { return directory + "pcm.sock" }
        let stem = file.hasSuffix(".sock") ? String(file.dropLast(5)) : file
        return directory + stem + "-pcm.sock"
    }
    public var stateDirectory: String
    /// Files that live while the daemon runs (the covers MPRIS names by URL).
    public var runtimeDirectory = Self.defaultRuntimeDirectory()
    public var musicDirectory: String?
    /// The library's index of the music directory; nil without one.
    public var library: MusicIndex.Settings? {
        guard let musicDirectory else { return nil }
        return MusicIndex.Settings(musicDirectory: musicDirectory,
                                   databasePath: profile.library.database ?? stateDirectory + "/library.db",
                                   playlistDirectory: profile.library.playlistDirectory, watch: profile.library.watch)
    }
    /// Scan the music directory for what changed at start (`[library] scan_on_start`).
    public var scanLibraryOnStart: Bool { profile.library.scanOnStart }
    /// After a restart: true resumes playing, false restores paused.
    public var resumePlaying = false
    public var saveIntervalSeconds: Double = 5
    public var skipForwardSeconds: Double = 15
    public var skipBackwardSeconds: Double = 15
    public var previousRestartsAfterSeconds: Double = 3
    public var initialVolume: Double = 100
    /// The built-in player's session: category, mode and options (`[player]`).
    public var playerSession: (category: SessionCategory, mode: SessionMode, options: SessionOptions) = (.playback, .default, [])
    public var boardName: String?
    /// The whole profile, for the board's controls and display.
    public var profile: DaemonConfig

    public init(config: DaemonConfig) {
        profile = config
        playback.device = config.output.device
        playback.periodFrames = config.output.periodFrames
        playback.bufferFrames = config.output.bufferFrames
        playback.bufferMilliseconds = config.output.bufferMilliseconds
        playback.rewindGuardMilliseconds = config.output.rewindGuardMilliseconds
        playback.resampleQuality = ResampleQuality(rawValue: config.output.resampleQuality) ?? .high
        playback.reopenIntervalMilliseconds = config.output.reopenIntervalMilliseconds
        playback.readAheadSeconds = config.output.readAheadSeconds
        playback.stream.bufferMilliseconds = config.player.streamBufferMilliseconds
        playback.stream.noDataTimeoutSeconds = config.player.streamTimeoutSeconds
        playback.stream.connectTimeoutMilliseconds = config.player.streamTimeoutSeconds * 1000
        playback.stream.caFile = config.player.streamCAFile
        mixerControl = config.output.mixerControl
        mixerCard = config.output.mixerCard
        socketPath = config.daemon.socket ?? Self.defaultSocketPath()
        stateDirectory = config.daemon.stateDirectory ?? Self.defaultStateDirectory()
        musicDirectory = config.daemon.musicDirectory
        resumePlaying = config.daemon.resume == .playing
        saveIntervalSeconds = config.daemon.saveIntervalSeconds
        skipForwardSeconds = config.player.skipForwardSeconds
        skipBackwardSeconds = config.player.skipBackwardSeconds
        previousRestartsAfterSeconds = config.player.previousRestartsAfterSeconds
        initialVolume = config.player.volume
        // Validated with the profile; the default stands only for a configuration never checked.
        if let session = try? config.player.sessionConfiguration() { playerSession = session }
        boardName = config.board.name
    }

    /// `$XDG_RUNTIME_DIR/tonearm.sock` for a user; `/run/tonearm/control.sock` for the
    /// service (which has no XDG_RUNTIME_DIR). The CLI uses the same rule.
    public static func defaultSocketPath() -> String {
        if let runtime = environment("XDG_RUNTIME_DIR"), !runtime.isEmpty { return runtime + "/tonearm.sock" }
        return "/run/tonearm/control.sock"
    }

    /// systemd's `RuntimeDirectory=` (`/run/tonearm`) for the service, `$XDG_RUNTIME_DIR/tonearm`
    /// for a user, else `/run/tonearm`.
    public static func defaultRuntimeDirectory() -> String {
        if let runtime = environment("RUNTIME_DIRECTORY"), !runtime.isEmpty { return runtime }
        if let runtime = environment("XDG_RUNTIME_DIR"), !runtime.isEmpty { return runtime + "/tonearm" }
        return "/run/tonearm"
    }

    /// `$XDG_STATE_HOME/tonearm`, `~/.local/state/tonearm`, or `/var/lib/tonearm` for the service.
    public static func defaultStateDirectory() -> String {
        if let state = environment("STATE_DIRECTORY"), !state.isEmpty { return state }  // systemd StateDirectory=
        if let state = environment("XDG_STATE_HOME"), !state.isEmpty { return state + "/tonearm" }
        if let home = environment("HOME"), !home.isEmpty, getuid() != 0 || environment("XDG_RUNTIME_DIR") != nil {
            return home + "/.local/state/tonearm"
        }
        return "/var/lib/tonearm"
    }

    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// A session that mixes with others cannot own Now Playing (seed core rule).
    public var categoryIsMixable: Bool {
        SessionState(id: 0, owner: 0, category: playerSession.category, options: playerSession.options).isMixable
    }
}
