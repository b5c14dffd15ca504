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
    /// `[library]`
    public var library = Library()
    /// `[mpd]`
    public var mpd = MPD()
    /// `[mpris]`
    public var mpris = MPRIS()
    /// `[[link]]`
    public var links: [Link] = []
    /// `[web]`
    public var web = Web()
    /// `[board]`
    public var board = Board()
    /// `[gpio]`
    public var gpio = GPIO()
    /// `[[button]]`
    public var buttons: [Button] = []
    /// `[[encoder]]`
    public var encoders: [Encoder] = []
    /// `[mute_switch]`
    public var muteSwitch: Switch?
    /// `[ignition]`
    public var ignition: Switch?
    /// `[[input]]`
    public var inputs: [Input] = []
    /// `[display]`
    public var display: Display?

    /// The defaults.
    public init() {}

    /// Where the packaged board profiles are: `profile = "generic"` reads generic.toml here.
    public static let profileDirectory = "/usr/share/tonearm/boards"

    /// Reads the profile at `path` (over the profile it names, if it names one); errors name
    /// the file and line.
    public static func load(path: String, profileDirectory: String = profileDirectory) throws(ConfigError) -> DaemonConfig {
        let document: TOMLTable
        do {
            document = try TOMLTable.load(path: path)
        } catch {
            throw ConfigError(error)
        }
        return try DaemonConfig(document: document, fileName: path, profileDirectory: profileDirectory)
    }

    /// Reads a profile's text; `fileName` goes into errors, and a relative `profile` path is
    /// read from its folder.
    public static func parse(_ text: String, fileName: String? = nil, profileDirectory: String = profileDirectory) throws(ConfigError) -> DaemonConfig {
        let document: TOMLTable
        do {
            document = try TOMLTable.parse(text, fileName: fileName)
        } catch {
            throw ConfigError(error)
        }
        return try DaemonConfig(document: document, fileName: fileName, profileDirectory: profileDirectory)
    }

    /// `document` read over the profile it names: errors in a key the profile wrote name the
    /// profile's file and line.
    init(document: TOMLTable, fileName: String?, profileDirectory: String) throws(ConfigError) {
        guard let overlay = try ProfileOverlay(document: document, fileName: fileName, directory: profileDirectory) else {
            try self.init(document: document, fileName: fileName)
            return
        }
        do {
            try self.init(document: overlay.document, fileName: fileName)
        } catch {
            var error = error
            if let key = error.key, error.line != nil { error.fileName = overlay.file(of: key) }
            throw error
        }
    }

    init(document: TOMLTable, fileName: String?) throws(ConfigError) {
        var root = ConfigTableReader(document: document, fileName: fileName)
        output = try root.section(Output.self)
        daemon = try root.section(Daemon.self)
        player = try root.section(Player.self)
        library = try root.section(Library.self)
        mpd = try root.section(MPD.self)
        mpris = try root.section(MPRIS.self)
        links = try root.sections(Link.self)
        web = try root.section(Web.self)
        board = try root.section(Board.self)
        gpio = try root.section(GPIO.self)
        buttons = try root.sections(Button.self)
        encoders = try root.sections(Encoder.self)
        muteSwitch = try root.section(SwitchSection<MuteSwitchTable>.self).value
        ignition = try root.section(SwitchSection<IgnitionTable>.self).value
        inputs = try root.sections(Input.self)
        display = try root.section(DisplaySection.self).value
        try root.rejectUnknownKeys()
        try checkLinesUsedOnce(fileName: fileName, document: document)
        try checkLinks(fileName: fileName, document: document)
    }

    /// Checks every range and rule again, for settings changed after loading (command-line
    /// overrides). Errors have no line: "output.period_frames must be between 16 and 65536, not 8".
    public func validate() throws(ConfigError) {
        let sections: [any ConfigSection] = [output, daemon, player, library, mpd, mpris, web, board, gpio]
        for section in sections {
            try section.validate(ConfigCheck(name: type(of: section).tableName))
        }
        for (index, link) in links.enumerated() { try link.validate(ConfigCheck(name: "link[\(index + 1)]")) }
        for (index, button) in buttons.enumerated() { try button.validate(ConfigCheck(name: "button[\(index + 1)]")) }
        for (index, encoder) in encoders.enumerated() { try encoder.validate(ConfigCheck(name: "encoder[\(index + 1)]")) }
        try muteSwitch?.validate(ConfigCheck(name: "mute_switch"))
        try ignition?.validate(ConfigCheck(name: "ignition"))
        for (index, input) in inputs.enumerated() { try input.validate(ConfigCheck(name: "input[\(index + 1)]")) }
        var display = DisplaySection()
        display.value = self.display
        try display.validate(ConfigCheck(name: "display"))
        try checkLinesUsedOnce(fileName: nil, document: nil)
        try checkLinks(fileName: nil, document: nil)
    }

    /// Every GPIO line the profile uses, with who uses it ("button[2]", "encoder[1].line_b").
    public var gpioLines: [(user: String, chip: String, line: GPIOLineName)] {
        var lines: [(user: String, chip: String, line: GPIOLineName)] = []
        for (index, button) in buttons.enumerated() {
            if let line = button.line { lines.append(("button[\(index + 1)]", button.chip ?? gpio.chip, line)) }
        }
        for (index, encoder) in encoders.enumerated() {
            if let line = encoder.lineA { lines.append(("encoder[\(index + 1)].line_a", encoder.chip ?? gpio.chip, line)) }
            if let line = encoder.lineB { lines.append(("encoder[\(index + 1)].line_b", encoder.chip ?? gpio.chip, line)) }
        }
        if let line = muteSwitch?.line { lines.append(("mute_switch", muteSwitch?.chip ?? gpio.chip, line)) }
        if let line = ignition?.line { lines.append(("ignition", ignition?.chip ?? gpio.chip, line)) }
        return lines
    }

    /// A line can be requested once: two controls on one line is a wiring mistake.
    private func checkLinesUsedOnce(fileName: String?, document: TOMLTable?) throws(ConfigError) {
        let lines = gpioLines
        for (index, entry) in lines.enumerated() {
            guard let earlier = lines[..<index].first(where: { $0.chip == entry.chip && $0.line == entry.line }) else { continue }
            throw ConfigError(
                kind: .outOfRange,
                message: "\(entry.user) uses \(entry.line) on chip '\(entry.chip)', which \(earlier.user) already uses",
                key: entry.user, fileName: fileName, line: document.flatMap { Self.line(of: entry.user, in: $0) })
        }
    }

    /// The line a control's line key was written on: "encoder[1].line_b" → `line_b` in the
    /// first `[[encoder]]`; "mute_switch" → `line` in `[mute_switch]`.
    private static func line(of user: String, in document: TOMLTable) -> Int? {
        let parts = user.split(separator: ".", maxSplits: 1).map(String.init)
        let field = parts.count == 2 ? parts[1] : "line"
        guard let open = parts[0].firstIndex(of: "["), let number = Int(parts[0][parts[0].index(after: open)...].dropLast()) else {
            return document[parts[0]]?.table?.line(of: field)
        }
        let table = document[String(parts[0][..<open])]?.array?[number - 1].table
        return table?.line(of: field)
    }
}
