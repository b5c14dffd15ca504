import TonearmControlPlane
import TonearmPlayer

/// Which key sends which command: the media keys every remote and steering-wheel adapter has,
/// plus what a profile's `[[input]]` map adds or changes.
public struct InputKeyMap: Sendable, Equatable {
    /// The media keys, by their codes in `input-event-codes.h`.
    public static let defaults: [UInt16: Command] = [
        164: .remote(CommandRequest(.togglePlayPause)),  // KEY_PLAYPAUSE
        207: .remote(CommandRequest(.play)),  // KEY_PLAY
        119: .remote(CommandRequest(.pause)),  // KEY_PAUSE
        128: .remote(CommandRequest(.stop)),  // KEY_STOP
        166: .remote(CommandRequest(.stop)),  // KEY_STOPCD
        163: .remote(CommandRequest(.nextTrack)),  // KEY_NEXTSONG
        165: .remote(CommandRequest(.previousTrack)),  // KEY_PREVIOUSSONG
        208: .remote(CommandRequest(.seekForward, scanning: .begin)),  // KEY_FASTFORWARD
        168: .remote(CommandRequest(.seekBackward, scanning: .begin)),  // KEY_REWIND
        115: .volume(.step(5)),  // KEY_VOLUMEUP
        114: .volume(.step(-5)),  // KEY_VOLUMEDOWN
        113: .mute(.toggle),  // KEY_MUTE
    ]

    /// Every key this map answers, by code.
    public private(set) var commands: [UInt16: Command]

    /// The defaults with `codes` added; a code in both takes the command from `codes`.
    public init(codes: [UInt16: Command] = [:]) {
        commands = Self.defaults.merging(codes) { _, profile in profile }
    }

    /// The defaults with a profile's map added: keys are names (`KEY_F1`, `BTN_LEFT`) or
    /// decimal codes (see `InputKeyCodes.code(named:)`). A profile entry for a key the defaults
    /// already have replaces the default. Two entries for one code (`KEY_F1` and `59`) are
    /// refused, since only one can win.
    public init(profile: [String: Command]) throws(InputError) {
        var codes: [UInt16: Command] = [:]
        var spelled: [UInt16: String] = [:]
        // Sorted, so the same profile always reports the same clash.
        for key in profile.keys.sorted() {
            let code = try InputKeyCodes.code(named: key)
            if let earlier = spelled[code] {
                throw InputError(key: key, description: "'\(earlier)' and '\(key)' in the input map are the same key (code \(code))")
            }
            spelled[code] = key
            codes[code] = profile[key]
        }
        self.init(codes: codes)
    }

    public func command(for code: UInt16) -> Command? { commands[code] }
}

/// Turns key events into commands, one device's worth (it remembers which scans are held).
///
/// - volumeUp and volumeDown are sent on press and on every autorepeat, so holding the key
///   keeps turning the volume.
/// - seekForward and seekBackward are held commands: `begin` on press, `end` on release,
///   nothing on autorepeat.
/// - Everything else is sent once per press; release and autorepeat send nothing.
/// - Events other than EV_KEY (EV_SYN, EV_MSC, EV_REL…) and unmapped keys are ignored.
public struct InputKeyInterpreter: Sendable {
    public let map: InputKeyMap
    /// Scans begun and not yet ended, by key code.
    private var heldScans: [UInt16: Command] = [:]

    public init(map: InputKeyMap) { self.map = map }

    public mutating func command(for event: InputEvent) -> Command? {
        guard event.type == InputEvent.key, let command = map.command(for: event.code) else { return nil }
        switch (command.name, event.value) {
        case (.seekForward, InputEvent.KeyValue.pressed), (.seekBackward, InputEvent.KeyValue.pressed):
            let begin = command.scanning(.begin)
            heldScans[event.code] = begin
            return begin
        case (.seekForward, InputEvent.KeyValue.released), (.seekBackward, InputEvent.KeyValue.released):
            // A release whose press came before the device was opened has nothing to end.
            return heldScans.removeValue(forKey: event.code)?.scanning(.end)
        case (.seekForward, _), (.seekBackward, _):
            return nil
        case (.volumeUp, InputEvent.KeyValue.pressed), (.volumeUp, InputEvent.KeyValue.autorepeat),
            (.volumeDown, InputEvent.KeyValue.pressed), (.volumeDown, InputEvent.KeyValue.autorepeat):
            return command
        case (_, InputEvent.KeyValue.pressed):
            return command
        default:
            return nil
        }
    }

    /// Ends every scan still held: the device went away with a fast-forward key down, and its
    /// release will never come.
    public mutating func releaseHeld() -> [Command] {
        let ended = heldScans.keys.sorted().map { heldScans[$0]!.scanning(.end) }
        heldScans = [:]
        return ended
    }
}
