import TonearmSession

/// What a plug-in gets, and all it gets: send a command and await its result, read a
/// consistent snapshot, follow changes by subsystem. The daemon is the one implementation;
/// tests drive plug-ins with their own.
public protocol ControlPlane: AnyObject, Sendable {
    /// Carries out `command` from `source`. Remote commands go to the Now Playing owner,
    /// whatever the source.
    func send(_ command: Command, from source: CommandSource) async -> CommandResult
    func snapshot() async -> ControlState
    /// The state as of the last change published, read at once from any thread: what a front
    /// end answers a poll with (MPD's `status`) on its network thread, where two turns of
    /// other executors would cost more than the answer. It is `snapshot()` less any engine
    /// news the daemon has not yet been woken for; a command's change is in it before the
    /// command's result is returned.
    var published: ControlState { get }
    /// Changes of `subsystems` from now on (subscribe first, then read the snapshot, and
    /// nothing is missed).
    func subscribe(_ subsystems: Set<Subsystem>) -> ChangeSubscription
    /// A new client id, never reused: sessions belong to the client that opened them.
    func newClient() -> ClientID
    /// The client went away: its sessions close.
    func clientLeft(_ client: ClientID) async
    /// The music library's queries; nil without a music directory.
    var catalog: (any LibraryCatalog)? { get }
}

extension ControlPlane {
    public var catalog: (any LibraryCatalog)? { nil }
}

/// A client of the control plane: the JSON-lines socket, the board's controls and displays,
/// and next MPD, MPRIS and the web page. The daemon builds plug-ins from the profile through
/// its registry and runs each as a service: one that fails is logged and started again with
/// back-off while playback goes on, unless it is `required`.
public protocol PlugIn: Sendable {
    /// For logs: "control socket /run/tonearm/control.sock", "GPIO controls".
    var name: String { get }
    /// A required plug-in that fails stops the daemon.
    var isRequired: Bool { get }
    /// Runs until cancelled (the daemon stops) or until it fails.
    func run(_ plane: any ControlPlane, log: PlugInLog) async throws
}

extension PlugIn {
    public var isRequired: Bool { false }
}

/// A plug-in's log, kept apart from the daemon's logger type so plug-in modules need nothing
/// but this module.
public struct PlugInLog: Sendable {
    public enum Level: Sendable { case debug, info, notice, warning, error }

    private let write: @Sendable (Level, String) -> Void

    public init(_ write: @escaping @Sendable (Level, String) -> Void) { self.write = write }

    public func callAsFunction(_ level: Level, _ message: String) { write(level, message) }
    public func info(_ message: String) { write(.info, message) }
    public func notice(_ message: String) { write(.notice, message) }
    public func warning(_ message: String) { write(.warning, message) }
    public func error(_ message: String) { write(.error, message) }

    /// Drops everything (tests).
    public static let silent = PlugInLog { _, _ in }
}
