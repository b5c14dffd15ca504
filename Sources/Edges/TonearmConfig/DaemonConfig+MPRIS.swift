extension DaemonConfig {
    /// `[mpris]`: Now Playing and the remote commands on D-Bus (MPRIS 2.2), for desktop shells,
    /// playerctl and phones' desktop bridges.
    public struct MPRIS: Sendable, Equatable {
        public enum Bus: String, Sendable, CaseIterable, ConfigChoice {
            case session, system, off
        }

        /// `bus`: which bus to publish on; off by default.
        public var bus = Bus.off
        /// `name`: the last part of the bus name (`org.mpris.MediaPlayer2.NAME`), for a second
        /// instance.
        public var name = "tonearm"
        /// `avrcp_adapters`: the Bluetooth adapters ("hci0") the player is offered on to car
        /// head units (AVRCP, through BlueZ); left out: every adapter; `[]`: none.
        public var avrcpAdapters: [String]?

        public init() {}
    }
}

extension DaemonConfig.MPRIS: ConfigSection {
    static let tableName = "mpris"

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("bus", into: &bus)
        try table.read("name", into: &name)
        try table.read("avrcp_adapters", into: &avrcpAdapters)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        // D-Bus name elements: ASCII letters, digits and '_', none empty or starting with a
        // digit ("tonearm", or "tonearm.zone2" for a second instance, as MPRIS suggests).
        let valid = name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { element in
            let bytes = Array(element.utf8)
            return !bytes.isEmpty && !(48...57).contains(bytes[0])
                && bytes.allSatisfy { (65...90).contains($0) || (97...122).contains($0) || (48...57).contains($0) || $0 == 95 }
        }
        try check.require(valid, "name", "must be ASCII letters, digits and '_' (dots between parts), no part starting with a digit")
        // BlueZ names adapters by their kernel name (its object is /org/bluez/hci0).
        for adapter in avrcpAdapters ?? [] {
            let plain = !adapter.isEmpty && adapter.utf8.allSatisfy { (97...122).contains($0) || (48...57).contains($0) || $0 == 95 }
            try check.require(plain, "avrcp_adapters", "has '\(adapter)', which is not an adapter's name (such as \"hci0\")")
        }
    }
}
