/// The daemon's settings: a board profile read over the defaults, which suit a Raspberry Pi
/// with its default ALSA device.
///
/// Command-line flags override a profile by setting the properties; call `validate()` after
/// doing so. Each property's doc names its profile key.
public struct DaemonConfig: Sendable, Equatable {
    /// `[output]`
    public var output = Output()
    /// `[daemon]`
    public var daemon = Daemon()
    /// `[player]`
    public var player = Player()
    /// `[board]`
    public var board = Board()

    /// The defaults.
    public init() {}

    /// Reads the profile at `path`; errors name the file and line.
    public static func load(path: String) throws(ConfigError) -> DaemonConfig {
        let document: TOMLTable
        do {
            document = try TOMLTable.load(path: path)
        } catch {
            throw ConfigError(error)
        }
        return try DaemonConfig(document: document, fileName: path)
    }

    /// Reads a profile's text; `fileName` only goes into errors.
    public static func parse(_ text: String, fileName: String? = nil) throws(ConfigError) -> DaemonConfig {
        let document: TOMLTable
        do {
            document = try TOMLTable.parse(text, fileName: fileName)
        } catch {
            throw ConfigError(error)
        }
        return try DaemonConfig(document: document, fileName: fileName)
    }

    init(document: TOMLTable, fileName: String?) throws(ConfigError) {
        var root = ConfigTableReader(document: document, fileName: fileName)
        output = try root.section(Output.self)
        daemon = try root.section(Daemon.self)
        player = try root.section(Player.self)
        board = try root.section(Board.self)
        try root.rejectUnknownKeys()
    }

    /// Checks every range and rule again, for settings changed after loading (command-line
    /// overrides). Errors have no line: "output.period_frames must be between 16 and 65536, not 8".
    public func validate() throws(ConfigError) {
        let sections: [any ConfigSection] = [output, daemon, player, board]
        for section in sections {
            try section.validate(ConfigCheck(name: type(of: section).tableName))
        }
    }
}
