extension DaemonConfig {
    /// `[web]`: the web remote, a page any phone or kiosk browser opens. On by default, on
    /// loopback: a box that serves its network says so with `bind`.
    public struct Web: Sendable, Equatable {
        /// `bind`: the address to listen on; "0.0.0.0" for every network the box is on.
        public var bind = "127.0.0.1"
        /// `port`: TCP port; 0 turns the web remote off.
        public var port = 8080
        /// `token`: when set, every command needs it (`Authorization: Bearer TOKEN`); the page
        /// asks for it once.
        public var token: String?
        /// `max_clients`: connections at once, pages' WebSockets included.
        public var maxClients = 64

        public init() {}

        public var isEnabled: Bool { port != 0 }
    }
}

extension DaemonConfig.Web: ConfigSection {
    static let tableName = "web"

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("bind", into: &bind)
        try table.read("port", into: &port)
        try table.read("token", into: &token)
        try table.read("max_clients", into: &maxClients)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        try check.range("port", port, 0...65535)
        try check.range("max_clients", maxClients, 2...1000)
        try check.require(!bind.isEmpty, "bind", "must be an address such as 127.0.0.1")
        if let token {
            try check.require(token.count >= 8 && token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), "token",
                              "must be at least 8 printable ASCII characters, without spaces")
        }
    }
}
