extension DaemonConfig {
    /// `[mpd]`: the MPD protocol server, for MPD clients (phone apps, Home Assistant, ncmpcpp,
    /// mpc). On by default, on loopback.
    public struct MPD: Sendable, Equatable {
        /// `bind`: the address to listen on; "0.0.0.0" for every network the box is on.
        public var bind = "127.0.0.1"
        /// `port`: TCP port; 0 turns TCP off.
        public var port = 6600
        /// `socket`: a Unix socket besides, or instead (with port 0).
        public var socket: String?
        /// `password`: without it a client may only `ping`, `close`, `password`, `commands`,
        /// `notcommands` and `tagtypes`. Each wrong one makes the next answer to a password
        /// from that address wait twice as long (0.5 s to 30 s), and a connection's third
        /// closes it.
        public var password: String?
        /// `max_clients`: the next one is told so and closed (unless one that has not given the
        /// password can make room).
        public var maxClients = 20
        /// `max_clients_per_address`: at most this many from one IP address of the network;
        /// the box's own clients (loopback, the Unix socket) count only towards `max_clients`.
        public var maxClientsPerAddress = 8
        /// `connection_timeout`: seconds a client may say nothing (not counting `idle`).
        public var connectionTimeout = 60.0

        public init() {}

        /// Whether the server runs at all.
        public var isEnabled: Bool { port != 0 || socket != nil }
    }
}

extension DaemonConfig.MPD: ConfigSection {
    static let tableName = "mpd"

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("bind", into: &bind)
        try table.read("port", into: &port)
        try table.read("socket", into: &socket)
        try table.read("password", into: &password)
        try table.read("max_clients", into: &maxClients)
        try table.read("max_clients_per_address", into: &maxClientsPerAddress)
        try table.read("connection_timeout", into: &connectionTimeout)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        try check.range("port", port, 0...65535)
        try check.range("max_clients", maxClients, 1...1000)
        try check.range("max_clients_per_address", maxClientsPerAddress, 1...1000)
        try check.positive("connection_timeout", connectionTimeout)
        try check.require(!bind.isEmpty, "bind", "must be an address such as 127.0.0.1")
        try check.path("socket", socket)
        if let password { try check.require(!password.isEmpty && !password.contains("\n"), "password", "must be one line, not empty") }
    }
}
