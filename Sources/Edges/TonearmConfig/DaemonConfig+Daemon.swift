extension DaemonConfig {
    /// `[daemon]`: where the daemon keeps its socket and state, and what it does at start.
    ///
    /// Paths left out are chosen by the daemon: the socket at `$XDG_RUNTIME_DIR/tonearm.sock`
    /// (`/run/tonearm/control.sock` under the service), the state in `$XDG_STATE_HOME/tonearm`
    /// or `~/.local/state/tonearm` (`/var/lib/tonearm` under the service).
    public struct Daemon: Sendable, Equatable {
        /// What the player does with the saved queue when the daemon starts.
        public enum Resume: String, Sendable, CaseIterable, ConfigChoice {
            /// Restore the queue and position, paused: a box that powers up must not blast.
            case paused
            /// Carry on playing, as a car stereo does.
            case playing
        }

        /// `socket`: the control socket's path.
        public var socket: String?
        /// `pcm_socket`: where ALSA programs' audio comes in (the `tonearm` ALSA plugin);
        /// "off" for none. Default: beside the control socket (`/run/tonearm/pcm.sock`).
        public var pcmSocket: String?
        /// `pcm_group`: the group whose members may open sessions through the plugin.
        public var pcmGroup = "audio"
        /// `state_dir`: where the player state is saved.
        public var stateDirectory: String?
        /// `music_dir`: the music directory; files outside it are refused.
        public var musicDirectory: String?
        /// `resume`
        public var resume = Resume.paused
        /// `save_interval_seconds`: how often the playing position is saved.
        public var saveIntervalSeconds = 5.0

        public static let saveIntervalSecondsRange = 1.0...3600.0
        /// `sun_path` holds 108 bytes including the terminating NUL.
        public static let maximumSocketPathBytes = 107

        public init() {}
    }
}

extension DaemonConfig.Daemon: ConfigSection {
    static let tableName = "daemon"

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("socket", into: &socket)
        try table.read("pcm_socket", into: &pcmSocket)
        try table.read("pcm_group", into: &pcmGroup)
        try table.read("state_dir", into: &stateDirectory)
        try table.read("music_dir", into: &musicDirectory)
        try table.read("resume", into: &resume)
        try table.read("save_interval_seconds", into: &saveIntervalSeconds)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        try check.path("socket", socket)
        if let socket {
            let length = socket.utf8.count
            try check.require(
                length <= Self.maximumSocketPathBytes, "socket",
                "is \(length) bytes long; a Unix socket path has room for \(Self.maximumSocketPathBytes)")
        }
        if let pcmSocket, pcmSocket != "off" {
            try check.path("pcm_socket", pcmSocket)
            try check.require(pcmSocket.utf8.count <= Self.maximumSocketPathBytes, "pcm_socket",
                              "is \(pcmSocket.utf8.count) bytes long; a Unix socket path has room for \(Self.maximumSocketPathBytes)")
        }
        try check.require(!pcmGroup.isEmpty, "pcm_group", "must name a group")
        try check.path("state_dir", stateDirectory)
        try check.path("music_dir", musicDirectory)
        try check.range("save_interval_seconds", saveIntervalSeconds, Self.saveIntervalSecondsRange)
    }
}
