import TonearmControlPlane

// The board's controls and display: GPIO buttons, rotary encoders, the mute switch and the
// ignition-sense line, input-event devices, and the serial display. Each names commands as
// the control plane does (`CommandName`: the remote command center's names, the board's own
// such as volumeUp and toggleMute, and the socket's aliases), with an argument after a space
// where the command takes one ("skipForward 30"); the one parser (`Command.parse`) checks them
// when the profile is read.

/// A GPIO line as a profile names it: an offset (`17`) or a line name (`"GPIO17"`).
public enum GPIOLineName: Sendable, Equatable, CustomStringConvertible, ConfigValue {
    case offset(Int)
    case name(String)

    init?(toml: TOMLValue) {
        if let offset = toml.integer {
            self = .offset(offset)
        } else if let name = toml.string {
            self = .name(name)
        } else {
            return nil
        }
    }

    static var expectation: String { "a line offset (an integer) or a line name (a string such as \"GPIO17\")" }

    public var description: String {
        switch self {
        case .offset(let offset): "line \(offset)"
        case .name(let name): "line '\(name)'"
        }
    }
}

/// How a line is biased: `bias = "pull-up"`.
public enum GPIOBias: String, Sendable, CaseIterable, ConfigChoice {
    case asIs = "as-is", disabled, pullUp = "pull-up", pullDown = "pull-down"
}

/// A table of names to names: `[input.map]`, `[display.touch]`, `[display.components]`.
public struct ConfigMap: Sendable, Equatable, ConfigValue {
    /// In the order the profile wrote them.
    public var entries: [(key: String, value: String)]

    public init(_ entries: [(key: String, value: String)] = []) {
        self.entries = entries
    }

    init?(toml: TOMLValue) {
        guard let table = toml.table else { return nil }
        var entries: [(key: String, value: String)] = []
        for key in table.keys {
            guard let value = table[key]?.string else { return nil }
            entries.append((key, value))
        }
        self.entries = entries
    }

    static var expectation: String { "a table of strings ({ KEY = \"value\" })" }

    public subscript(key: String) -> String? { entries.first { $0.key == key }?.value }

    public static func == (lhs: ConfigMap, rhs: ConfigMap) -> Bool {
        lhs.entries.map(\.key) == rhs.entries.map(\.key) && lhs.entries.map(\.value) == rhs.entries.map(\.value)
    }
}

extension DaemonConfig {
    /// `[gpio]`: what every GPIO control takes unless it says otherwise.
    public struct GPIO: Sendable, Equatable {
        /// `chip`: a name ("gpiochip0"), a path or a label ("pinctrl-bcm2711").
        public var chip = "gpiochip0"
        /// `debounce_ms`
        public var debounceMilliseconds = 20
        /// `long_press_ms`
        public var longPressMilliseconds = 600

        public init() {}
    }

    /// `[[button]]`: a push button on a GPIO line.
    public struct Button: Sendable, Equatable {
        /// `name`: for logs ("next").
        public var name: String?
        /// `chip`: `[gpio] chip` when absent.
        public var chip: String?
        /// `line`
        public var line: GPIOLineName?
        /// `bias`: pull-up for a button to ground, the usual wiring.
        public var bias = GPIOBias.pullUp
        /// `active_low`: pressed reads low (a button to ground).
        public var activeLow = true
        /// `command`: sent on a press.
        public var command: String?
        /// `long_press_command`: sent instead when held `long_press_ms`.
        public var longPressCommand: String?
        /// `debounce_ms`, `long_press_ms`: `[gpio]`'s when absent.
        public var debounceMilliseconds: Int?
        public var longPressMilliseconds: Int?
        /// `repeat_ms`: hold-to-repeat (volume): the command again every so often while held,
        /// after `repeat_delay_ms`. A repeating button has no long press.
        public var repeatMilliseconds: Int?
        public var repeatDelayMilliseconds = 400
        /// `required`: the daemon refuses to start without this line (otherwise it starts and
        /// says which line is missing).
        public var required = false

        public init() {}
    }

    /// `[[encoder]]`: a rotary encoder on two GPIO lines (quadrature).
    public struct Encoder: Sendable, Equatable {
        public var name: String?
        public var chip: String?
        /// `line_a`, `line_b`
        public var lineA: GPIOLineName?
        public var lineB: GPIOLineName?
        public var bias = GPIOBias.pullUp
        public var activeLow = false
        /// `steps_per_detent`: quadrature steps per click (4 for most encoders, 2 or 1 for some).
        public var stepsPerDetent = 4
        /// `clockwise`, `counterclockwise`: commands per detent.
        public var clockwise = "volumeUp"
        public var counterclockwise = "volumeDown"
        /// `step_percent`: the volume step of volumeUp/volumeDown.
        public var stepPercent = 2.0
        public var required = false

        public init() {}
    }

    /// `[mute_switch]` and `[ignition]`: a level on a GPIO line. The mute switch drives the mute
    /// input; the ignition line going off pauses and saves (a car box loses power soon after).
    public struct Switch: Sendable, Equatable {
        public var chip: String?
        public var line: GPIOLineName?
        public var bias = GPIOBias.pullUp
        /// `active_low`: on reads low.
        public var activeLow = true
        public var debounceMilliseconds: Int?
        public var required = false

        public init() {}
    }

    /// `[[input]]`: Linux input-event devices (steering-wheel keys, remotes, media keyboards).
    public struct Input: Sendable, Equatable {
        /// `path`: a device ("/dev/input/event3") or a glob ("/dev/input/by-id/*-event-kbd").
        public var path = ""
        /// `map`: key names ("KEY_F1") or codes ("59") to commands, over the default media keys.
        public var map = ConfigMap()
        /// `grab`: take each device for the daemon alone (EVIOCGRAB), so its keys reach no
        /// console or other program (a keyboard whose Enter would otherwise log in somewhere).
        public var grab = false

        public init() {}
    }

    /// `[display]`: a serial display.
    public struct Display: Sendable, Equatable {
        public enum Driver: String, Sendable, CaseIterable, ConfigChoice {
            case line, hd44780, nextion
        }

        public enum FlowControl: String, Sendable, CaseIterable, ConfigChoice {
            case none, rtscts, xonxoff
        }

        public var driver = Driver.line
        /// `port`: "/dev/ttyAMA0", "/dev/serial/by-id/…".
        public var port = ""
        public var baud = 9600
        /// `flow_control`
        public var flowControl = FlowControl.none
        /// hd44780: 16×2 or 20×4.
        public var columns = 16
        public var rows = 2
        /// nextion: Now Playing fields to component names (`title = "t0"`).
        public var components = ConfigMap()
        /// nextion: touch events, "PAGE.COMPONENT" (decimal ids) to commands.
        public var touch = ConfigMap()

        public static let baudRates = [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115_200, 230_400]

        public init() {}
    }
}

extension DaemonConfig.GPIO: ConfigSection {
    static let tableName = "gpio"

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("chip", into: &chip)
        try table.read("debounce_ms", into: &debounceMilliseconds)
        try table.read("long_press_ms", into: &longPressMilliseconds)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        try check.name("chip", chip)
        try check.range("debounce_ms", debounceMilliseconds, DaemonConfig.debounceRange)
        try check.range("long_press_ms", longPressMilliseconds, DaemonConfig.longPressRange)
    }
}

extension DaemonConfig.Button: ConfigSection {
    static let tableName = "button"

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("name", into: &name)
        try table.read("chip", into: &chip)
        try table.read("line", into: &line)
        try table.read("bias", into: &bias)
        try table.read("active_low", into: &activeLow)
        try table.read("command", into: &command)
        try table.read("long_press_command", into: &longPressCommand)
        try table.read("debounce_ms", into: &debounceMilliseconds)
        try table.read("long_press_ms", into: &longPressMilliseconds)
        try table.read("repeat_ms", into: &repeatMilliseconds)
        try table.read("repeat_delay_ms", into: &repeatDelayMilliseconds)
        try table.read("required", into: &required)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        try check.name("chip", chip)
        try check.line("line", line)
        guard let command else { throw check.failure(.invalidValue, "command", "is required: what the button does") }
        try check.command("command", command)
        try check.command("long_press_command", longPressCommand)
        if let debounceMilliseconds { try check.range("debounce_ms", debounceMilliseconds, DaemonConfig.debounceRange) }
        if let longPressMilliseconds { try check.range("long_press_ms", longPressMilliseconds, DaemonConfig.longPressRange) }
        if let repeatMilliseconds {
            try check.range("repeat_ms", repeatMilliseconds, 20...5000)
            try check.require(longPressCommand == nil, "repeat_ms", "cannot go with long_press_command: a repeating button has no long press")
        }
        try check.range("repeat_delay_ms", repeatDelayMilliseconds, 0...5000)
    }
}

extension DaemonConfig.Encoder: ConfigSection {
    static let tableName = "encoder"

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("name", into: &name)
        try table.read("chip", into: &chip)
        try table.read("line_a", into: &lineA)
        try table.read("line_b", into: &lineB)
        try table.read("bias", into: &bias)
        try table.read("active_low", into: &activeLow)
        try table.read("steps_per_detent", into: &stepsPerDetent)
        try table.read("clockwise", into: &clockwise)
        try table.read("counterclockwise", into: &counterclockwise)
        try table.read("step_percent", into: &stepPercent)
        try table.read("required", into: &required)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        try check.name("chip", chip)
        try check.line("line_a", lineA)
        try check.line("line_b", lineB)
        try check.require(lineA != lineB, "line_b", "must differ from line_a")
        try check.require([1, 2, 4].contains(stepsPerDetent), "steps_per_detent", "must be 1, 2 or 4, not \(stepsPerDetent)")
        try check.command("clockwise", clockwise)
        try check.command("counterclockwise", counterclockwise)
        try check.range("step_percent", stepPercent, 0.1...50)
    }
}

/// Names the table of an optional switch section.
protocol SwitchTableName {
    static var name: String { get }
}

enum MuteSwitchTable: SwitchTableName { static let name = "mute_switch" }
enum IgnitionTable: SwitchTableName { static let name = "ignition" }

/// `[mute_switch]` or `[ignition]`: absent unless the profile has the table.
struct SwitchSection<Table: SwitchTableName>: ConfigSection {
    static var tableName: String { Table.name }
    var value: DaemonConfig.Switch?

    init() {}

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        var control = DaemonConfig.Switch()
        try control.read(from: &table)
        value = control
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) { try value?.validate(check) }
}

extension DaemonConfig.Switch {
    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("chip", into: &chip)
        try table.read("line", into: &line)
        try table.read("bias", into: &bias)
        try table.read("active_low", into: &activeLow)
        try table.read("debounce_ms", into: &debounceMilliseconds)
        try table.read("required", into: &required)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        try check.name("chip", chip)
        try check.line("line", line)
        if let debounceMilliseconds { try check.range("debounce_ms", debounceMilliseconds, DaemonConfig.debounceRange) }
    }
}

extension DaemonConfig.Input: ConfigSection {
    static let tableName = "input"

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        try table.read("path", into: &path)
        try table.read("map", into: &map)
        try table.read("grab", into: &grab)
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        try check.require(!path.isEmpty, "path", "is required: a device (/dev/input/event3) or a glob (/dev/input/by-id/*-event-kbd)")
        try check.path("path", path)
        for (key, command) in map.entries {
            try check.command("map.\(key)", command)
        }
    }
}

/// `[display]`
struct DisplaySection: ConfigSection {
    static let tableName = "display"
    var value: DaemonConfig.Display?

    init() {}

    mutating func read(from table: inout ConfigTableReader) throws(ConfigError) {
        var display = DaemonConfig.Display()
        try table.read("driver", into: &display.driver)
        try table.read("port", into: &display.port)
        try table.read("baud", into: &display.baud)
        try table.read("flow_control", into: &display.flowControl)
        try table.read("columns", into: &display.columns)
        try table.read("rows", into: &display.rows)
        try table.read("components", into: &display.components)
        try table.read("touch", into: &display.touch)
        value = display
    }

    func validate(_ check: ConfigCheck) throws(ConfigError) {
        guard let display = value else { return }
        try check.require(!display.port.isEmpty, "port", "is required: the serial port (/dev/ttyAMA0, /dev/ttyUSB0, /dev/serial/by-id/…)")
        try check.path("port", display.port)
        try check.require(
            DaemonConfig.Display.baudRates.contains(display.baud), "baud",
            "must be one of \(DaemonConfig.Display.baudRates.map(String.init).joined(separator: ", ")), not \(display.baud)")
        if display.driver == .hd44780 {
            try check.require([16, 20].contains(display.columns), "columns", "must be 16 or 20 (a 16×2 or 20×4 LCD), not \(display.columns)")
            try check.require([2, 4].contains(display.rows), "rows", "must be 2 or 4, not \(display.rows)")
        }
        for (key, command) in display.touch.entries {
            let parts = key.split(separator: ".", omittingEmptySubsequences: false)
            try check.require(
                parts.count == 2 && parts.allSatisfy { UInt8($0) != nil }, "touch.\(key)",
                "must be named PAGE.COMPONENT with two numbers from 0 to 255 (\"0.3\")")
            try check.command("touch.\(key)", command)
        }
    }
}

extension DaemonConfig {
    /// A command as a profile writes it: its name ("nextTrack", or an alias such as "next"),
    /// then, after a space, its argument where it takes one ("skipForward 30", "setVolume 40").
    public static func command(_ text: String) -> Result<Command, CommandFailure> {
        let words = text.split(separator: " ", maxSplits: 1).map(String.init)
        return Command.parse(words.first ?? "", argument: words.count > 1 ? words[1] : nil)
    }

    static let debounceRange = 0...500
    static let longPressRange = 100...10000
    /// The largest line offset accepted: no GPIO chip on a board has more lines.
    public static let lineOffsetRange = 0...511
}

extension ConfigCheck {
    /// A command a board control sends, with its argument if any: checked by the one parser.
    func command(_ key: String, _ value: String?) throws(ConfigError) {
        guard let value, case .failure(let failure) = DaemonConfig.command(value) else { return }
        let words = value.split(separator: " ", maxSplits: 1)
        guard let name = words.first, CommandName(named: String(name)) != nil else {
            throw self.failure(.invalidValue, key, "is '\(value)', which is not a command (one of \(CommandName.names.joined(separator: ", ")))")
        }
        throw self.failure(.invalidValue, key, "is '\(value)': \(failure.message)")
    }

    /// A line: required, and an offset a chip can have.
    func line(_ key: String, _ value: GPIOLineName?) throws(ConfigError) {
        switch value {
        case nil: throw failure(.invalidValue, key, "is required: a line offset (17) or name (\"GPIO17\")")
        case .offset(let offset): try range(key, offset, DaemonConfig.lineOffsetRange)
        case .name(let name): try self.name(key, name)
        }
    }
}
