/// The remote commands, as on iOS's command center, that every source can send.
public enum RemoteCommand: String, Sendable, CaseIterable {
    case play, pause, togglePlayPause, stop, nextTrack, previousTrack, skipForward, skipBackward,
        seekForward, seekBackward, changePlaybackPosition, changeRepeatMode, changeShuffleMode
}

/// The answer to a command, as a command handler's status on iOS.
public enum CommandStatus: String, Sendable {
    case success
    /// The item named does not exist (remove/move of an unknown id, add of nothing, an engine
    /// report about an item no longer in the queue).
    case noSuchContent
    /// The command needs a current item and there is none.
    case noActionableNowPlayingItem
    /// A required argument is missing or out of range.
    case commandFailed
    /// The command is disabled in this state; nothing changed.
    case disabled
}

/// Press and release of a scanning command.
public enum ScanPhase: String, Sendable, CaseIterable {
    case begin, end
}

/// A command as a source sends it: the control socket, GPIO, keys, a display, later MPRIS/MPD.
public struct CommandRequest: Sendable, Equatable {
    public var command: RemoteCommand
    /// skipForward/skipBackward: an interval carried by the request wins over the preferred one
    /// (as Siri's carried interval does on iOS).
    public var interval: Double?
    /// changePlaybackPosition: seconds.
    public var position: Double?
    /// changeRepeatMode.
    public var repeatMode: RepeatMode?
    /// changeShuffleMode.
    public var shuffle: Bool?
    /// seekForward/seekBackward: `.begin` or `.end`.
    public var scanning: ScanPhase?

    public init(
        _ command: RemoteCommand, interval: Double? = nil, position: Double? = nil,
        repeatMode: RepeatMode? = nil, shuffle: Bool? = nil, scanning: ScanPhase? = nil
    ) {
        self.command = command
        self.interval = interval
        self.position = position
        self.repeatMode = repeatMode
        self.shuffle = shuffle
        self.scanning = scanning
    }
}

/// What the daemon must make the audio engine do, in order.
public enum EngineAction: Sendable, Equatable {
    /// Start this item at this position (seconds); replaces whatever plays. Report it with
    /// `PlayerCore.engineStartedItem(_:at:heardAt:now:)` once it reaches the device, or with
    /// `engineFailedItem(_:now:)`.
    case play(itemID: Int, from: Double)
    /// Fade out and hold the position.
    case pause
    case resume
    /// Within the current item.
    case seek(to: Double)
    /// Silence; forget the current item.
    case stop
    /// Percent, 0...100.
    case setVolume(Double)
    /// The item after the current one changed: re-ask `PlayerCore.upcoming(after:)`.
    case upcomingChanged
    /// Scanning at this rate; 0 ends it. While scanning the daemon steps the engine itself, by
    /// seeking to `PlayerCore.position(at:)` a few times a second.
    case scan(rate: Double)
}

/// What a call did: its status, the engine actions in order, and at most one publication.
public struct CommandOutcome: Sendable, Equatable {
    public var status: CommandStatus
    public var actions: [EngineAction]
    public var publications: [NowPlayingPublication]

    public init(
        status: CommandStatus, actions: [EngineAction] = [],
        publications: [NowPlayingPublication] = []
    ) {
        self.status = status
        self.actions = actions
        self.publications = publications
    }

    static let disabled = CommandOutcome(status: .disabled)
    static let failed = CommandOutcome(status: .commandFailed)
    static let noSuchContent = CommandOutcome(status: .noSuchContent)
    static let noActionableItem = CommandOutcome(status: .noActionableNowPlayingItem)
}
