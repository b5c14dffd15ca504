extension DaemonConfig {
    /// `[output]`: the ALSA device and how the output thread drives it.
    public struct Output: Sendable, Equatable {
        /// `device`: the ALSA PCM ("default", "hw:CARD=DAC", "plughw:1,0"), or "pipe:PATH", a
        /// named pipe such as Snapcast's.
        public var device = "default"
        /// `period_frames`: frames per ALSA period, the unit the output thread writes, when the
        /// buffer is given in frames, or in milliseconds to a device that cannot rewind.
        public var periodFrames = 256
        /// `buffer_frames`: frames in the ALSA buffer; at least two periods. When it holds
        /// 100 ms or more and the device can take back what it has not played, a command is
        /// heard within `rewind_guard_ms`; otherwise one buffer after it is made.
        public var bufferFrames = 1024
        /// `buffer_ms`: the ALSA buffer in milliseconds on a device that can take back what it
        /// has not played, with a period a quarter of it; a command to the player is heard
        /// within `rewind_guard_ms` all the same. A device that cannot rewind gets
        /// `period_frames` and `buffer_frames` instead. Not with `period_frames` or
        /// `buffer_frames` (the two ways exclude each other); nil (the default): frames.
        public var bufferMilliseconds: Int?
        /// `rewind_guard_ms`: what a rewind leaves the device to play — how late a command is
        /// heard, and the time the output thread has to write again.
        public var rewindGuardMilliseconds = 5
        /// `resample_quality`: how a file is resampled to a device that lacks its rate: quick,
        /// low, medium, high (transparent for 16 bits) or very_high (for 24 bits).
        public var resampleQuality = "high"
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
        public static let bufferMillisecondsRange = 20...2000
        public static let rewindGuardMillisecondsRange = 1...100
        public static let resampleQualities = ["quick", "low", "medium", "high", "very_high"]
        public static let minimumReopenIntervalMilliseconds = 10
        public static let readAheadSecondsRange = 0.1...60.0

        public init() {}
    }
}

extension DaemonConfig.Output: ConfigSection {
    static let tableName = "output"

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("device", into: &device)
        var period: Int?
        var buffer: Int?
        var milliseconds: Int?
        try table.read("period_frames", into: &period)
        try table.read("buffer_frames", into: &buffer)
        try table.read("buffer_ms", into: &milliseconds)
        try table.read("rewind_guard_ms", into: &rewindGuardMilliseconds)
        try table.read("resample_quality", into: &resampleQuality)
        try table.check.require(
            milliseconds == nil || (period == nil && buffer == nil), "buffer_ms",
            "and period_frames or buffer_frames are two ways to size the buffer: give one")
        periodFrames = period ?? periodFrames
        bufferFrames = buffer ?? bufferFrames
        bufferMilliseconds = milliseconds
        try table.read("mixer_control", into: &mixerControl)
        try table.read("mixer_card", into: &mixerCard)
        try table.read("reopen_interval_ms", into: &reopenIntervalMilliseconds)
        try table.read("read_ahead_seconds", into: &readAheadSeconds)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        try check.name("device", device)
        if let bufferMilliseconds { try check.range("buffer_ms", bufferMilliseconds, Self.bufferMillisecondsRange) }
        try check.range("rewind_guard_ms", rewindGuardMilliseconds, Self.rewindGuardMillisecondsRange)
        try check.require(
            Self.resampleQualities.contains(resampleQuality), "resample_quality",
            "must be one of \(Self.resampleQualities.joined(separator: ", ")), not '\(resampleQuality)'")
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
