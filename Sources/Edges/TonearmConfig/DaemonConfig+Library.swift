extension DaemonConfig {
    /// `[library]`: the index of the music directory (`[daemon] music_dir`), which the library
    /// queries of every client read. Without a music directory there is no library.
    public struct Library: Sendable, Equatable {
        /// `database`: the index's SQLite file (default: `library.db` in the state directory).
        public var database: String?
        /// `playlist_dir`: where stored playlists (`NAME.m3u`) are kept.
        public var playlistDirectory: String?
        /// `scan_on_start`: scan for what changed when the daemon starts.
        public var scanOnStart = true
        /// `watch`: watch the music directory (inotify) and the mounts, and index what changes
        /// within seconds.
        public var watch = true

        public init() {}
    }
}

extension DaemonConfig.Library: ConfigSection {
    static let tableName = "library"

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("database", into: &database)
        try table.read("playlist_dir", into: &playlistDirectory)
        try table.read("scan_on_start", into: &scanOnStart)
        try table.read("watch", into: &watch)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        try check.path("database", database)
        try check.path("playlist_dir", playlistDirectory)
    }
}
