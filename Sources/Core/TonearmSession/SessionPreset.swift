/// The named setups a program asks for by one word (`tonearm:nav` in ALSA): each is a
/// category, mode and options, and whether the session takes remote commands (and so may own
/// Now Playing when it does not mix).
public enum SessionPreset: String, Sendable, CaseIterable, CustomStringConvertible {
    /// A music player: playback, non-mixable; interrupts the others and owns Now Playing.
    case media
    /// Navigation prompts: spoken over the others, which duck meanwhile.
    case nav
    /// A phone call: playAndRecord in voiceChat; interrupts the others.
    case call
    /// Chimes and notification sounds: ambient, mixed in, silenced by the mute input.
    case chime

    public var category: SessionCategory {
        switch self {
        case .media, .nav: .playback
        case .call: .playAndRecord
        case .chime: .ambient
        }
    }

    public var mode: SessionMode {
        switch self {
        case .media, .chime: .default
        case .nav: .voicePrompt
        case .call: .voiceChat
        }
    }

    public var options: SessionOptions {
        switch self {
        case .nav: [.duckOthers, .interruptSpokenAudioAndMixWithOthers]
        case .media, .call, .chime: []
        }
    }

    /// Whether the session takes remote commands (and so may own Now Playing).
    public var takesRemoteCommands: Bool { self == .media }

    public var description: String { rawValue }
}
