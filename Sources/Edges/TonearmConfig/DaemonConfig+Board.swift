extension DaemonConfig {
    /// `[board]`: free text about the board, for people and for `tonearm doctor`.
    public struct Board: Sendable, Equatable {
        /// `name`: "Raspberry Pi 4 + HiFiBerry DAC+".
        public var name: String?
        /// `description`
        public var description: String?

        public init() {}
    }
}

extension DaemonConfig.Board: ConfigSection {
    static let tableName = "board"

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("name", into: &name)
        try table.read("description", into: &description)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {}
}
