import TonearmAudio
import TonearmPlayer
import TonearmSession

/// What every client sees: one consistent snapshot of the daemon, read with
/// `ControlPlane.snapshot()` after a change of the subsystems the client follows.
public struct ControlState: Sendable, Equatable {
    /// The Now Playing owner's transport: the built-in player's, or a linked program's
    /// (`nowPlayingLink`).
    public var transport: TransportState = .stopped
    /// The Now Playing dictionary; `elapsed(at:)` extrapolates it (nothing is published on a
    /// timer). The player's, or while `nowPlayingLink` is set, the linked program's.
    public var nowPlaying = NowPlayingInfo()
    /// Set while a session spoken for by another program's client owns Now Playing
    /// (`LinkCommand`): `transport`, `nowPlaying` and `enabledCommands` are then that
    /// program's, and the queue is not what plays.
    public var nowPlayingLink: LinkState?
    /// Every link a client holds: sessions of a name, the program spoken for, and whether it
    /// is there.
    public var links: [LinkState] = []
    public var queue = QueueState()
    /// Percent.
    public var volume: Double = 100
    /// The mute input: silences ambient and soloAmbient sessions.
    public var muted = false
    public var repeatMode: RepeatMode = .off
    public var shuffle = false
    public var single: SingleMode = .off
    public var consume = false
    public var replayGain = ReplayGainSettings()
    /// The remote command center's enabled flags (the Now Playing owner's, as `transport`).
    public var enabledCommands: [RemoteCommand: Bool] = [:]
    /// Whether the player may own Now Playing, and why.
    public var eligibility = Eligibility(eligible: false, reason: "")
    public var sessions = SessionsState()
    public var output = OutputState()
    public var library = LibraryState()
    /// Why the player's state cannot be saved now (a full or read-only card: a power cut would
    /// lose the queue and the position); nil while saves succeed.
    public var saveFailure: String?
    /// The current item's network stream, when it is one: its connection and station.
    public var stream: StreamStatus?

    public init() {}

    /// Whether `name` would be carried out now: the remote commands by the command center,
    /// volume, mute and ignition always.
    public func isEnabled(_ name: CommandName) -> Bool {
        guard let remote = name.remote else { return true }
        return enabledCommands[remote] ?? false
    }
}

/// The queue as clients see it. `version` changes on every change of the queue (an item added,
/// removed, moved, its metadata changed, the queue cleared or restored), and item ids stay the
/// same across moves: what the MPD protocol's playlist version, song ids and `plchanges` need.
public struct QueueState: Sendable, Equatable {
    public var version = 0
    public var items: [QueueItem] = []
    public var currentItemID: Int?
    /// The current item's position in `items` (the queue's order, shuffled or not).
    public var currentIndex: Int?
    /// The version at which each item (by id) last moved or changed; items not in it are
    /// taken as changed in the current version.
    public var itemVersions: [Int: Int]

    public init(version: Int = 0, items: [QueueItem] = [], currentItemID: Int? = nil, currentIndex: Int? = nil,
                itemVersions: [Int: Int] = [:]) {
        self.version = version
        self.items = items
        self.currentItemID = currentItemID
        self.currentIndex = currentIndex
        self.itemVersions = itemVersions
    }

    /// The positions whose item moved or changed after `version` (all of them for a version
    /// this queue never had).
    public func positionsChanged(since version: Int) -> [Int] {
        guard version >= 0, version <= self.version else { return Array(items.indices) }
        return items.indices.filter { (itemVersions[items[$0].id] ?? self.version) > version }
    }
}

public struct Eligibility: Sendable, Equatable {
    public var eligible: Bool
    public var reason: String

    public init(eligible: Bool, reason: String) {
        self.eligible = eligible
        self.reason = reason
    }
}

/// The audio sessions: the player's (session 1, owned by the player) and the clients'.
public struct SessionsState: Sendable, Equatable {
    public var muted = false
    public var nowPlayingOwner: SessionID?
    public var sessions: [SessionReport] = []

    public init(muted: Bool = false, nowPlayingOwner: SessionID? = nil, sessions: [SessionReport] = []) {
        self.muted = muted
        self.nowPlayingOwner = nowPlayingOwner
        self.sessions = sessions
    }

    /// The built-in player's session.
    public static let playerSession: SessionID = 1
    /// The built-in player as a session owner; clients are numbered from 1.
    public static let playerOwner: ClientID = 0

    public func session(_ id: SessionID) -> SessionReport? { sessions.first { $0.state.id == id } }
}

/// One session: what the policy says of it, and what its output does now.
public struct SessionReport: Sendable, Equatable {
    public var state: SessionState
    public var output: OutputGain
    /// The gain applied to its output now (ramps included).
    public var gain: Float
    /// "player", "file", "pcm 48000 Hz, 2 ch, 16-bit", or nil when nothing plays in it.
    public var stream: String?
    public var ownsNowPlaying: Bool
    /// What its client called it ("player" for the player's); nil when it gave no name.
    public var name: String?

    public init(state: SessionState, output: OutputGain, gain: Float, stream: String?, ownsNowPlaying: Bool,
                name: String? = nil) {
        self.name = name
        self.state = state
        self.output = output
        self.gain = gain
        self.stream = stream
        self.ownsNowPlaying = ownsNowPlaying
    }
}

/// An http(s) item's stream as `status` shows it.
public struct StreamStatus: Sendable, Equatable {
    /// "connecting", "playing", "reconnecting" or "failed".
    public var state: String
    /// While reconnecting: the attempt coming, and what ended the last connection.
    public var attempt: Int?
    public var error: String?
    /// The station's `icy-name`, `icy-genre` and content type.
    public var station: String?
    public var genre: String?
    public var contentType: String?

    public init(state: String, attempt: Int? = nil, error: String? = nil, station: String? = nil, genre: String? = nil,
                contentType: String? = nil) {
        self.state = state
        self.attempt = attempt
        self.error = error
        self.station = station
        self.genre = genre
        self.contentType = contentType
    }
}

/// The output device: whether what plays is heard, and how the device is set up.
public struct OutputState: Sendable, Equatable {
    public enum DeviceState: String, Sendable { case closed, open, lost, unavailable }

    public var device = ""
    /// False while a client has turned the output off.
    public var enabled = true
    public var state: DeviceState = .closed
    /// "ok" while what plays is heard; otherwise what the output waits for ("device lost,
    /// waiting for it", "device stopped responding, waiting for it", "waiting for the device",
    /// "device back, starting").
    public var heard = "ok"
    /// What happened to it ("ALSA PCM 'hw:X' lost: No such device"); nil while it is fine.
    public var error: String?
    public var sampleFormat: String?
    public var sampleRate: Int?
    public var channels: Int?
    public var periodFrames: Int?
    public var bufferFrames: Int?
    public var underruns = 0
    public var losses = 0
    public var reopenIntervalMilliseconds = 0
    /// Whether the device takes back what it has not played, so that commands are heard at once
    /// (nil: no device opened yet).
    public var rewinds: Bool?
    /// Rewinds made so far.
    public var rewindCount = 0

    public init() {}
}

/// The music the daemon may play.
public struct LibraryState: Sendable, Equatable {
    /// Only files inside it may be queued; nil when any file may.
    public var musicDirectory: String?
    /// Whether there is an index (a music directory is configured and its database opened).
    public var isIndexed: Bool
    /// The current or last scan.
    public var scan: ScanProgress
    public var totals: LibraryTotals
    /// Directories (relative to the music directory, "" for itself) whose medium is not
    /// mounted: their songs are kept, marked unavailable.
    public var unavailable: [String]

    public init(musicDirectory: String? = nil, isIndexed: Bool = false, scan: ScanProgress = ScanProgress(),
                totals: LibraryTotals = LibraryTotals(), unavailable: [String] = []) {
        self.musicDirectory = musicDirectory
        self.isIndexed = isIndexed
        self.scan = scan
        self.totals = totals
        self.unavailable = unavailable
    }
}
