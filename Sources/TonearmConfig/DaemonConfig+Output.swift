extension DaemonConfig {
    /// `[output]`: the ALSA device and how the output thread drives it.
    public struct Output: Sendable, Equatable {
        /// `device`: the ALSA PCM ("default", "hw:CARD=DAC", "plughw:1,0"), or "pipe:PATH", a
        /// named pipe such as Snapcast's.
        public var device = "default"
        /// `period_frames`: frames per ALSA period, the unit the output thread writes.
        public var periodFrames = 256
        /// `buffer_frames`: frames in the ALSA buffer; at least two periods.
        public var bufferFrames = 1024
        /// `mixer_control`: a hardware volume control (an ALSA simple mixer element such as
        /// "PCM" or "Digital"); nil when volume is applied in software.
        public var mixerControl: String?
        /// `mixer_card`: the ALSA card (control device) `mixerControl` belongs to.
        public var mixerCard = "default"
        /// `reopen_interval_ms`: how often to try to open a device that went away.
        public var reopenIntervalMilliseconds = 500
        /// `read_ahead_seconds`: decoded audio kept ready ahead of the output.
        public var readAheadSeconds = 2.0

        public static let periodFramesRange = 16...65536
        public static let minimumReopenIntervalMilliseconds = 10
        public static let readAheadSecondsRange = 0.1...60.0

        public init() {}
    }
}

extension DaemonConfig.Output: ConfigSection {
    static let tableName = "output"

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("device", into: &device)
        try table.read("period_frames", into: &periodFrames)
        try table.read("buffer_frames", into: &bufferFrames)
        try table.read("mixer_control", into: &mixerControl)
        try table.read("mixer_card", into: &mixerCard)
        try table.read("reopen_interval_ms", into: &reopenIntervalMilliseconds)
        try table.read("read_ahead_seconds", into: &readAheadSeconds)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        try check.name("device", device)
        try check.range("period_frames", periodFrames, Self.periodFramesRange)
        // Two periods at least, so one can be written while the other plays.
        try check.require(
            bufferFrames >= 2 * periodFrames, "buffer_frames",
            "must be at least two periods (\(2 * periodFrames) frames), not \(bufferFrames)")
        try check.name("mixer_control", mixerControl)
        try check.name("mixer_card", mixerCard)
        try check.atLeast("reopen_interval_ms", reopenIntervalMilliseconds, Self.minimumReopenIntervalMilliseconds)
        try check.range("read_ahead_seconds", readAheadSeconds, Self.readAheadSecondsRange)
    }
}
