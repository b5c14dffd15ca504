extension DaemonConfig {
    /// `[[link]]`: the audio sessions of a name — an ALSA program's, opened through Tonearm's
    /// plugin — linked to that program's MPRIS player. While such a session owns Now Playing,
    /// the player's title, artist, album, cover and position are Tonearm's Now Playing, and
    /// every remote command goes to the player's MPRIS methods.
    public struct Link: Sendable, Equatable {
        public enum Bus: String, Sendable, CaseIterable, ConfigChoice {
            case system, session
        }

        /// `session`: the sessions' name, the program's own unless its PCM says otherwise
        /// ("shairport-sync", "bluealsa-aplay").
        public var session = ""
        /// `mpris`: the player's bus name ("org.mpris.MediaPlayer2.ShairportSync").
        public var mpris = ""
        /// `bus`: where the player is. The system bus by default: the service has no session
        /// bus, and shairport-sync publishes its player there unless told otherwise. A player
        /// of a user's login (spotifyd, BlueZ's mpris-proxy) is on that user's session bus,
        /// which only a tonearmd run as that user can reach.
        public var bus = Bus.system

        public init() {}

        public init(session: String, mpris: String, bus: Bus = .system) {
            self.session = session
            self.mpris = mpris
            self.bus = bus
        }

        /// Every MPRIS player's bus name starts so.
        public static let mprisPrefix = "org.mpris.MediaPlayer2."
    }
}

extension DaemonConfig.Link: ConfigSection {
    static let tableName = "link"

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("session", into: &session)
        try table.read("mpris", into: &mpris)
        try table.read("bus", into: &bus)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        try check.require(!session.isEmpty, "session", "is required: the name of the sessions to link (the program's, such as \"shairport-sync\")")
        try check.name("session", session)
        try check.require(session.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F }, "session",
                          "must not contain control characters")
        try check.require(!mpris.isEmpty, "mpris", "is required: the player's bus name (such as \"org.mpris.MediaPlayer2.ShairportSync\")")
        try check.require(Self.isMPRISName(mpris), "mpris",
                          "must be an MPRIS player's bus name, \(Self.mprisPrefix)NAME (as busctl list shows it), not '\(mpris)'")
    }

    /// `org.mpris.MediaPlayer2.` and one or more elements of a D-Bus name: ASCII letters,
    /// digits, '_' and '-', none empty or starting with a digit; 255 bytes at most.
    static func isMPRISName(_ name: String) -> Bool {
        guard name.hasPrefix(mprisPrefix), name.utf8.count <= 255 else { return false }
        return name.dropFirst(mprisPrefix.count).split(separator: ".", omittingEmptySubsequences: false).allSatisfy { element in
            let bytes = Array(element.utf8)
            return !bytes.isEmpty && !(48...57).contains(bytes[0]) && bytes.allSatisfy {
                (65...90).contains($0) || (97...122).contains($0) || (48...57).contains($0) || $0 == 95 || $0 == 45
            }
        }
    }
}

extension DaemonConfig {
    /// One link per session name; and not to Tonearm's own player, which would send every
    /// command round in a circle.
    func checkLinks(fileName: String?, document: TOMLTable?) throws(ConfigError) {
        for (index, link) in links.enumerated() {
            let key = "link[\(index + 1)]"
            let line = document?["link"]?.array?[index].table
            if let earlier = links[..<index].firstIndex(where: { $0.session == link.session }) {
                throw ConfigError(kind: .outOfRange, message: "\(key).session '\(link.session)' is linked already, by link[\(earlier + 1)]",
                                  key: key + ".session", fileName: fileName, line: line?.line(of: "session"))
            }
            let own = Link.mprisPrefix + mpris.name
            let ownBus: Link.Bus? = switch mpris.bus {
            case .system: .system
            case .session: .session
            case .off: nil
            }
            if link.mpris == own, link.bus == ownBus {
                throw ConfigError(kind: .outOfRange, message: "\(key).mpris is Tonearm's own player ([mpris]); link another program's",
                                  key: key + ".mpris", fileName: fileName, line: line?.line(of: "mpris"))
            }
        }
    }
}
