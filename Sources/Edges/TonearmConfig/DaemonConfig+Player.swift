import TonearmAudio
import TonearmSession

extension DaemonConfig {
    /// `[player]`: the built-in player's session and remote commands.
    public struct Player: Sendable, Equatable {
        /// The audio-session categories of the seeds (AVAudioSession.Category).
        public enum Category: String, Sendable, CaseIterable, ConfigChoice {
            case ambient, soloAmbient, playback, record, playAndRecord, multiRoute
        }

        /// The audio-session modes (AVAudioSession.Mode).
        public enum Mode: String, Sendable, CaseIterable, ConfigChoice {
            case `default`, gameChat, measurement, moviePlayback, spokenAudio, videoChat, videoRecording, voiceChat, voicePrompt
        }

        /// `skip_forward_seconds`: the skipForward command's interval.
        public var skipForwardSeconds = 15.0
        /// `skip_backward_seconds`: the skipBackward command's interval.
        public var skipBackwardSeconds = 15.0
        /// `previous_restarts_after_seconds`: past this point in a track, previousTrack goes back
        /// to its start instead of to the track before.
        public var previousRestartsAfterSeconds = 3.0
        /// `volume`: percent, used when there is no saved state.
        public var volume = 100.0
        /// `category`
        public var category = Category.playback
        /// `mode`
        public var mode = Mode.default
        /// `options`: category options by name (`mixWithOthers`, `duckOthers`,
        /// `interruptSpokenAudioAndMixWithOthers`), as the session rules accept them.
        public var options: [String] = []
        /// `replay_gain`: off (bit-perfect), track, album, or auto (album while the queue plays
        /// an album in order). A client's change (MPD's `replay_gain_mode`, `tonearm
        /// replaygain`) is kept in the saved state and wins over this at the next start.
        public var replayGain = ReplayGainMode.off
        /// `replay_gain_preamp`: dB added to every file's gain.
        public var replayGainPreamp = 0.0
        /// `replay_gain_missing_preamp`: dB for files without ReplayGain tags, while it is on.
        public var replayGainMissingPreamp = 0.0
        /// `replay_gain_limit`: keep each file's peak within full scale.
        public var replayGainLimit = true
        /// `stream_buffer_ms`: how much of an internet radio stream is gathered before it
        /// plays and kept ahead of the decoder, in milliseconds at the stream's bitrate.
        public var streamBufferMilliseconds = 2000
        /// `stream_timeout_seconds`: a station that sends nothing for this long is dropped and
        /// connected to again (also the connect timeout).
        public var streamTimeoutSeconds = 10
        /// `stream_ca_file`: a CA certificate (PEM) trusted for https stations besides the
        /// system's store, for a station with a certificate of its own.
        public var streamCAFile: String?

        public static let volumeRange = 0.0...100.0
        public static let preampRange = ReplayGainSettings.preampRange

        /// ReplayGain as this section sets it.
        public var replayGainSettings: ReplayGainSettings {
            ReplayGainSettings(mode: replayGain, preamp: replayGainPreamp, missingPreamp: replayGainMissingPreamp,
                               preventsClipping: replayGainLimit)
        }

        public init() {}
    }
}

extension DaemonConfig.Player: ConfigSection {
    static let tableName = "player"

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("skip_forward_seconds", into: &skipForwardSeconds)
        try table.read("skip_backward_seconds", into: &skipBackwardSeconds)
        try table.read("previous_restarts_after_seconds", into: &previousRestartsAfterSeconds)
        try table.read("volume", into: &volume)
        try table.read("category", into: &category)
        try table.read("mode", into: &mode)
        try table.read("options", into: &options)
        try table.read("replay_gain", into: &replayGain)
        try table.read("replay_gain_preamp", into: &replayGainPreamp)
        try table.read("replay_gain_missing_preamp", into: &replayGainMissingPreamp)
        try table.read("replay_gain_limit", into: &replayGainLimit)
        try table.read("stream_buffer_ms", into: &streamBufferMilliseconds)
        try table.read("stream_timeout_seconds", into: &streamTimeoutSeconds)
        try table.read("stream_ca_file", into: &streamCAFile)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        try check.positive("skip_forward_seconds", skipForwardSeconds)
        try check.positive("skip_backward_seconds", skipBackwardSeconds)
        // 0: previousTrack always restarts the track; inf: it never does.
        try check.atLeast("previous_restarts_after_seconds", previousRestartsAfterSeconds, 0)
        try check.range("volume", volume, Self.volumeRange)
        try check.range("replay_gain_preamp", replayGainPreamp, Self.preampRange)
        try check.range("replay_gain_missing_preamp", replayGainMissingPreamp, Self.preampRange)
        try check.range("stream_buffer_ms", streamBufferMilliseconds, 100...60_000)
        try check.range("stream_timeout_seconds", streamTimeoutSeconds, 1...600)
        _ = try sessionConfiguration(check)
    }

    /// The built-in player's session category, mode and options, checked by the session rules.
    public func sessionConfiguration() throws(ConfigError) -> (SessionCategory, SessionMode, SessionOptions) {
        try sessionConfiguration(ConfigCheck(name: Self.tableName))
    }

    func sessionConfiguration(_ check: ConfigCheck) throws(ConfigError) -> (SessionCategory, SessionMode, SessionOptions) {
        let sessionCategory = SessionCategory(rawValue: category.rawValue)!
        let sessionMode = SessionMode(rawValue: mode.rawValue)!
        var held: SessionOptions = []
        for name in options {
            guard let option = SessionOptions(name: name) else {
                let known = SessionOptions.named.map { "'\($0.name)'" }.joined(separator: ", ")
                throw check.failure(.wrongType, "options", "has '\(name)', which is not an option (one of \(known))")
            }
            held.insert(option)
        }
        do throws(SessionError) {
            held = try SessionPolicy.validate(category: sessionCategory, mode: sessionMode, options: held)
        } catch {
            if case .modeNotAccepted = error { throw check.failure(.outOfRange, "mode", "\(error)") }
            throw check.failure(.outOfRange, "options", "\(error)")
        }
        return (sessionCategory, sessionMode, held)
    }
}

extension ReplayGainMode: ConfigChoice {}
