extension DaemonConfig {
    /// `[web]`: the web remote, a page any phone or kiosk browser opens. On by default, on
    /// loopback: a box that serves its network says so with `bind`.
    public struct Web: Sendable, Equatable {
        /// `bind`: the address to listen on; "0.0.0.0" for every network the box is on.
        public var bind = "127.0.0.1"
        /// `port`: TCP port; 0 turns the web remote off.
        public var port = 8080
        /// `token`: when set, everything but the page's own files needs it (the API, the
        /// WebSocket, the covers); the page asks for it once and logs in, a script sends
        /// `Authorization: Bearer TOKEN`.
        public var token: String?
        /// `allowed_hosts`: names (or addresses) the box is reached by besides its hostname,
        /// NAME.local, its addresses and localhost, such as a name a reverse proxy or a router's
        /// DNS gives it. A request naming any other `Host` is refused (DNS rebinding).
        public var allowedHosts: [String] = []
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
        try table.read("allowed_hosts", into: &allowedHosts)
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
        for host in allowedHosts {
            try check.require(Self.isHostName(host), "allowed_hosts",
                              "has '\(host)', which is not a host name or address (such as \"music.home.arpa\", \"192.168.1.20\" or \"[fd00::20]\"; no scheme, port or path)")
        }
    }

    /// A name of letters, digits, '-', '_' and dots, or an address (IPv6 in brackets), as the
    /// `Host` of a URL writes it, without a port.
    static func isHostName(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        if bytes.first == UInt8(ascii: "[") {
            guard bytes.count > 2, bytes.last == UInt8(ascii: "]") else { return false }
            return bytes.dropFirst().dropLast().allSatisfy { isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }
        }
        let name = text.hasSuffix(".") ? Array(bytes.dropLast()) : bytes
        guard !name.isEmpty, name.count <= 253, name.first != UInt8(ascii: "."), !text.contains("..") else { return false }
        return name.allSatisfy { isHexDigit($0) || (0x61...0x7A).contains($0 | 0x20) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte | 0x20)
    }
}
