/// One row of the category table: how sessions of a category behave.
public struct CategoryRules: Sendable, Equatable {
    /// Sounds together with other sessions without `mixWithOthers`. A non-mixable session
    /// interrupts the other non-mixable ones when it activates.
    public var mixableByDefault: Bool
    /// The mute input (the iOS silent switch) silences its output.
    public var silencedByMute: Bool
    /// The options it may be given; any other option is an error.
    public var acceptedOptions: SessionOptions
    /// Activating it, while it is non-mixable, interrupts every other active non-mixable
    /// session.
    public var interruptsOthers: Bool
    /// It captures audio.
    public var input: Bool
    /// It plays audio (and so has a mixer input and an output gain).
    public var output: Bool

    public init(
        mixableByDefault: Bool, silencedByMute: Bool, acceptedOptions: SessionOptions,
        interruptsOthers: Bool, input: Bool, output: Bool
    ) {
        self.mixableByDefault = mixableByDefault
        self.silencedByMute = silencedByMute
        self.acceptedOptions = acceptedOptions
        self.interruptsOthers = interruptsOthers
        self.input = input
        self.output = output
    }
}

extension SessionPolicy {
    /// The category table: the seeds' table (002) as AVAudioSession documents it.
    ///
    /// Where the seed and Apple differ, Apple wins: playAndRecord and multiRoute are
    /// non-mixable unless given mixWithOthers (the seed marks them mixable). Options follow the
    /// seed's option table: mixWithOthers, duckOthers and interruptSpokenAudioAndMixWithOthers
    /// apply to playback, playAndRecord and multiRoute only. record is input only, so it
    /// interrupts non-mixable playback but never sounds.
    public static func rules(for category: SessionCategory) -> CategoryRules {
        switch category {
        //                        mixable  silenced  options  interrupts  input  output
        case .ambient:       row(true,    true,     [],      false,      false, true)
        case .soloAmbient:   row(false,   true,     [],      true,       false, true)
        case .playback:      row(false,   false,    .all,    true,       false, true)
        case .record:        row(false,   false,    [],      true,       true,  false)
        case .playAndRecord: row(false,   false,    .all,    true,       true,  true)
        case .multiRoute:    row(false,   false,    .all,    true,       false, true)
        }
    }

    private static func row(
        _ mixable: Bool, _ silenced: Bool, _ options: SessionOptions, _ interrupts: Bool,
        _ input: Bool, _ output: Bool
    ) -> CategoryRules {
        CategoryRules(
            mixableByDefault: mixable, silencedByMute: silenced, acceptedOptions: options,
            interruptsOthers: interrupts, input: input, output: output)
    }

    /// The mode table: the categories each mode may be used with, as AVAudioSession documents
    /// them (voiceChat "only valid with playAndRecord", and so on). Modes Apple does not
    /// restrict go with every category.
    public static func categories(for mode: SessionMode) -> Set<SessionCategory> {
        switch mode {
        case .default, .spokenAudio, .voicePrompt: Set(SessionCategory.allCases)
        case .voiceChat, .videoChat, .gameChat: [.playAndRecord]
        case .measurement: [.playback, .record, .playAndRecord]
        case .moviePlayback: [.playback]
        case .videoRecording: [.record, .playAndRecord]
        }
    }

    /// The options a session with this configuration holds (implied `mixWithOthers` added),
    /// or the error that names what is not allowed. Options are checked before the mode.
    public static func validate(
        category: SessionCategory, mode: SessionMode, options: SessionOptions
    ) throws(SessionError) -> SessionOptions {
        let refused = options.subtracting(rules(for: category).acceptedOptions)
        guard refused.isEmpty else { throw .optionsNotAccepted(category, refused) }
        guard categories(for: mode).contains(category) else {
            throw .modeNotAccepted(mode, category)
        }
        return options.withImplications
    }
}
