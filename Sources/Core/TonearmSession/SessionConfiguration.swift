/// What a session is for, as AVAudioSession's categories (the seeds' category table).
public enum SessionCategory: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case ambient, soloAmbient, playback, record, playAndRecord, multiRoute

    public var description: String { rawValue }
}

/// A specialisation of a category, as AVAudioSession's modes. Only `spokenAudio` changes the
/// policy (an `interruptSpokenAudioAndMixWithOthers` session interrupts it); the others are
/// carried for routing and shown by `tonearm sessions`.
public enum SessionMode: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case `default`, spokenAudio, voicePrompt, voiceChat, videoChat, gameChat, measurement,
        moviePlayback, videoRecording

    public var description: String { rawValue }
}

/// Category options, as AVAudioSession's. `duckOthers` and
/// `interruptSpokenAudioAndMixWithOthers` each imply `mixWithOthers`: a validated session holds
/// all the options that are in effect, so `[.duckOthers]` is stored as
/// `[.mixWithOthers, .duckOthers]`.
public struct SessionOptions: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8

    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    /// Sound together with the other active sessions instead of interrupting them.
    public static let mixWithOthers = SessionOptions(rawValue: 1 << 0)
    /// Lower every other session's output while this one is active.
    public static let duckOthers = SessionOptions(rawValue: 1 << 1)
    /// Interrupt sessions in mode `spokenAudio` (a podcast) and mix with the rest.
    public static let interruptSpokenAudioAndMixWithOthers = SessionOptions(rawValue: 1 << 2)

    /// Every option, in the order they are named.
    public static let all: SessionOptions = [
        .mixWithOthers, .duckOthers, .interruptSpokenAudioAndMixWithOthers,
    ]

    /// Each option with its name as the CLI and the control protocol spell it.
    public static let named: [(name: String, option: SessionOptions)] = [
        ("mixWithOthers", .mixWithOthers),
        ("duckOthers", .duckOthers),
        ("interruptSpokenAudioAndMixWithOthers", .interruptSpokenAudioAndMixWithOthers),
    ]

    /// The single option called `name`, or nil.
    public init?(name: String) {
        guard let match = Self.named.first(where: { $0.name == name }) else { return nil }
        self = match.option
    }

    /// The names of the options held, in declaration order.
    public var names: [String] {
        Self.named.filter { contains($0.option) }.map(\.name)
    }

    /// The options with their implications added (`duckOthers` and
    /// `interruptSpokenAudioAndMixWithOthers` both mean `mixWithOthers` too).
    public var withImplications: SessionOptions {
        isDisjoint(with: [.duckOthers, .interruptSpokenAudioAndMixWithOthers])
            ? self : union(.mixWithOthers)
    }

    /// "[mixWithOthers, duckOthers]"; "[]" when empty.
    public var description: String { "[" + names.joined(separator: ", ") + "]" }
}
