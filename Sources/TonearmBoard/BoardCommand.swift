/// What a board control asks of the daemon: a button, a knob, a steering-wheel key, a switch or
/// the serial display. Every one goes through the remote command center (or, for volume, mute
/// and ignition, the daemon's own handlers), exactly like a command from the control socket.
public struct BoardCommand: Hashable, Sendable, CustomStringConvertible {
    public enum Name: String, CaseIterable, Sendable {
        // The remote command center's (RemoteCommand).
        case play, pause, togglePlayPause, stop, nextTrack, previousTrack, skipForward, skipBackward
        case seekForward, seekBackward, changePlaybackPosition, changeRepeatMode, changeShuffleMode
        // The board's own.
        /// `value`: the step in percent (default 5).
        case volumeUp, volumeDown
        /// `value`: percent.
        case setVolume
        /// The mute input: toggled by a key, set by a switch.
        case toggleMute, muteOn, muteOff
        /// The ignition-sense line: off pauses and saves.
        case ignitionOn, ignitionOff
    }

    /// Press and release of a scanning command (seekForward/seekBackward held).
    public enum Phase: String, Sendable {
        case begin, end
    }

    public var name: Name
    /// Seconds for skipForward/skipBackward (an interval) and changePlaybackPosition (a
    /// position); percent for volumeUp/volumeDown (a step) and setVolume.
    public var value: Double?
    public var phase: Phase?
    /// changeRepeatMode: "off", "one" or "all"; changeShuffleMode: "on" or "off".
    public var mode: String?

    public init(_ name: Name, value: Double? = nil, phase: Phase? = nil, mode: String? = nil) {
        self.name = name
        self.value = value
        self.phase = phase
        self.mode = mode
    }

    /// The command a profile or a display names, or nil.
    public init?(named name: String) {
        guard let known = Name(rawValue: name) else { return nil }
        self.init(known)
    }

    /// Every name a profile may use, for error messages.
    public static var names: [String] { Name.allCases.map(\.rawValue) }

    /// "nextTrack", "skipForward 30", "seekForward begin", "changeRepeatMode all".
    public var description: String {
        var words = [name.rawValue]
        if let value { words.append(value == value.rounded() && abs(value) < 1e9 ? String(Int(value)) : String(value)) }
        if let phase { words.append(phase.rawValue) }
        if let mode { words.append(mode) }
        return words.joined(separator: " ")
    }
}
