import TonearmPlayer

/// The keys a command's arguments go by, as the control socket and the web API name them
/// (`{"command":"setVolume","percent":40}`). A profile's or a display's word ("setVolume 40")
/// goes under the one key its command takes (`CommandName.argumentKey`).
public enum ArgumentKey: String, CaseIterable, Sendable {
    /// skipForward, skipBackward: seconds, more than 0.
    case interval
    /// changePlaybackPosition: seconds, 0 or more.
    case position
    /// seekForward, seekBackward: `ScanPhase`.
    case phase
    /// changeRepeatMode: `RepeatMode`.
    case mode
    /// changeShuffleMode.
    case on
    /// volumeUp, volumeDown: percent, more than 0 and at most 100.
    case step
    /// setVolume: 0 to 100.
    case percent
    /// The `skip` alias: seconds, below 0 to skip backward.
    case seconds
}

/// An argument as its source has it.
public enum ArgumentValue: Sendable, Equatable {
    case number(Double)
    case string(String)
    case bool(Bool)
    /// A word as a profile or a display writes it, read as what its key takes: "30", "all", "on".
    case word(String)
    /// Of no kind a command takes (a JSON array or object).
    case other
}

/// A command's arguments by key: what the JSON edge finds in a request, or the word a profile
/// or a display writes after the command's name, under the key the command takes.
public struct CommandArguments: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public var values: [ArgumentKey: ArgumentValue]

    public init(_ values: [ArgumentKey: ArgumentValue] = [:]) {
        self.values = values
    }

    public init(dictionaryLiteral elements: (ArgumentKey, ArgumentValue)...) {
        self.init(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    /// The word form: `word` under the key `name` takes. Nil when the command takes no argument
    /// and a word was given. A bare seekForward is a held control's press: it begins.
    public init?(word: String?, for name: CommandName) {
        self.init()
        if let word {
            guard let key = name.argumentKey else { return nil }
            values[key] = .word(word)
        } else if name.argumentKey == .phase {
            values[.phase] = .word(ScanPhase.begin.rawValue)
        }
    }

    public subscript(key: ArgumentKey) -> ArgumentValue? {
        get { values[key] }
        set { values[key] = newValue }
    }
}

/// An argument a command cannot take: missing where it is required, of another kind, or out of
/// range. The description is the keyed form's message ("'percent' must be between 0 and 100");
/// the word form names the whole argument instead (`CommandName.argument`). It reaches the
/// caller as a `CommandFailure` (`badArgument`) that carries it.
public struct ArgumentProblem: Sendable, Equatable, CustomStringConvertible {
    public enum Problem: Sendable, Equatable {
        case missing, wrongKind, outOfRange
    }

    public var key: ArgumentKey
    public var problem: Problem
    /// The kind the key takes ("a number") when missing or of another kind; what it must be
    /// ("between 0 and 100", "off, one or all") when out of range.
    public var expected: String

    public init(_ key: ArgumentKey, _ problem: Problem, _ expected: String) {
        self.key = key
        self.problem = problem
        self.expected = expected
    }

    public var description: String {
        problem == .missing ? "'\(key.rawValue)' is required (\(expected))" : "'\(key.rawValue)' must be \(expected)"
    }
}

extension CommandFailure {
    /// A bad argument, saying which.
    public init(_ argument: ArgumentProblem) {
        self.init(.badArgument, argument.description)
        self.argument = argument
    }
}

extension CaseIterable where Self: RawRepresentable, RawValue == String {
    /// The cases' names as a sentence lists them: "off, one or all", "begin or end".
    public static var choices: String {
        let names = allCases.map(\.rawValue)
        guard let last = names.last, names.count > 1 else { return names.first ?? "" }
        return names.dropLast().joined(separator: ", ") + " or " + last
    }
}

/// A switch's two positions, as a word form writes a flag ("changeShuffleMode on") and the CLI
/// takes one.
public enum OnOff: String, CaseIterable, Sendable {
    case on, off

    public var isOn: Bool { self == .on }
}

extension Command {
    /// The command `name` with its arguments by key, or the first argument that is wrong: the
    /// one place the arguments of the vocabulary's commands are checked. A key the command does
    /// not take is not looked at.
    public static func parse(_ name: CommandName, arguments: CommandArguments) -> Result<Command, CommandFailure> {
        do throws(CommandFailure) {
            return .success(try command(name, arguments))
        } catch {
            return .failure(error)
        }
    }

    /// A command by one of the control socket's aliases, which keeps the arguments it has always
    /// required: `seek` a `position`, `volume` a `percent`, `repeat` a `mode`, `shuffle` an `on`;
    /// `skip` takes `seconds`, below 0 to skip backward.
    public static func parse(_ alias: CommandAlias, arguments: CommandArguments) -> Result<Command, CommandFailure> {
        do throws(CommandFailure) {
            switch alias {
            case .skip:
                let seconds = try arguments.required(.seconds, arguments.number(.seconds, "a number other than 0") { $0 != 0 })
                return .success(try command(seconds < 0 ? .skipBackward : .skipForward, [.interval: .number(abs(seconds))]))
            case .repeat:
                _ = try arguments.required(.mode, arguments[.mode], kind: ArgumentKind.string)
            case .shuffle:
                _ = try arguments.required(.on, arguments[.on], kind: ArgumentKind.flag)
            case .toggle, .next, .previous, .seek, .volume:
                break
            }
            return .success(try command(alias.command, arguments))
        } catch {
            return .failure(error)
        }
    }

    /// A command by its name or an alias, as a keyed request names it; nil when it is neither.
    public static func parse(named name: String, arguments: CommandArguments) -> Result<Command, CommandFailure>? {
        if let known = CommandName(rawValue: name) { return parse(known, arguments: arguments) }
        if let alias = CommandAlias(rawValue: name) { return parse(alias, arguments: arguments) }
        return nil
    }

    private static func command(_ name: CommandName, _ arguments: CommandArguments) throws(CommandFailure) -> Command {
        if let remote = name.remote { return .remote(try request(remote, arguments)) }
        switch name {
        case .volumeUp, .volumeDown:
            let step = try arguments.number(.step, "more than 0 and at most 100") { $0 > 0 && $0 <= 100 } ?? 5
            return .volume(.step(name == .volumeUp ? step : -step))
        case .setVolume:
            return .volume(.set(try arguments.required(.percent, arguments.number(.percent, "between 0 and 100") { (0...100).contains($0) })))
        case .toggleMute: return .mute(.toggle)
        case .muteOn: return .mute(.on)
        case .muteOff: return .mute(.off)
        case .ignitionOn: return .ignition(on: true)
        case .ignitionOff: return .ignition(on: false)
        default: preconditionFailure("\(name.rawValue) is a remote command")
        }
    }

    private static func request(_ remote: RemoteCommand, _ arguments: CommandArguments) throws(CommandFailure) -> CommandRequest {
        var request = CommandRequest(remote)
        switch remote {
        case .play, .pause, .togglePlayPause, .stop, .nextTrack, .previousTrack:
            break
        case .skipForward, .skipBackward:
            request.interval = try arguments.number(.interval, "more than 0") { $0 > 0 }
        case .changePlaybackPosition:
            request.position = try arguments.required(.position, arguments.number(.position, "0 or more") { $0 >= 0 })
        case .seekForward, .seekBackward:
            request.scanning = try arguments.choice(.phase, ScanPhase.self)
        case .changeRepeatMode:
            request.repeatMode = try arguments.choice(.mode, RepeatMode.self)
        case .changeShuffleMode:
            request.shuffle = try arguments.flag(.on)
        }
        return request
    }
}

extension CommandFailure {
    fileprivate static func argument(_ key: ArgumentKey, _ problem: ArgumentProblem.Problem, _ expected: String) -> CommandFailure {
        CommandFailure(ArgumentProblem(key, problem, expected))
    }
}

/// What a key holds, as its messages name it.
private enum ArgumentKind {
    static let number = "a number"
    static let string = "a string"
    static let flag = "true or false"
}

extension CommandArguments {
    /// The number under `key`, nil when there is none; it must be finite and `valid`.
    fileprivate func number(_ key: ArgumentKey, _ range: String, _ valid: (Double) -> Bool) throws(CommandFailure) -> Double? {
        let value: Double
        switch self[key] {
        case nil: return nil
        case .number(let number): value = number
        case .word(let word):
            guard let number = Double(word) else { throw CommandFailure.argument(key, .wrongKind, ArgumentKind.number) }
            value = number
        case .string, .bool, .other: throw CommandFailure.argument(key, .wrongKind, ArgumentKind.number)
        }
        guard value.isFinite, valid(value) else { throw CommandFailure.argument(key, .outOfRange, range) }
        return value
    }

    /// The case of `Choice` named under `key`, nil when there is none.
    fileprivate func choice<Choice: CaseIterable & RawRepresentable<String>>(
        _ key: ArgumentKey, _: Choice.Type
    ) throws(CommandFailure) -> Choice? {
        switch self[key] {
        case nil: return nil
        case .string(let name), .word(let name):
            guard let choice = Choice(rawValue: name) else { throw CommandFailure.argument(key, .outOfRange, Choice.choices) }
            return choice
        case .number, .bool, .other: throw CommandFailure.argument(key, .wrongKind, ArgumentKind.string)
        }
    }

    /// The flag under `key` (a word says on or off), nil when there is none.
    fileprivate func flag(_ key: ArgumentKey) throws(CommandFailure) -> Bool? {
        switch self[key] {
        case nil: return nil
        case .bool(let on): return on
        case .word(let word):
            guard let position = OnOff(rawValue: word) else { throw CommandFailure.argument(key, .outOfRange, OnOff.choices) }
            return position.isOn
        case .number, .string, .other: throw CommandFailure.argument(key, .wrongKind, ArgumentKind.flag)
        }
    }

    /// `value`, which must be there.
    fileprivate func required(_ key: ArgumentKey, _ value: Double?) throws(CommandFailure) -> Double {
        guard let value else { throw CommandFailure.argument(key, .missing, ArgumentKind.number) }
        return value
    }

    fileprivate func required(_ key: ArgumentKey, _ value: ArgumentValue?, kind: String) throws(CommandFailure) -> ArgumentValue {
        guard let value else { throw CommandFailure.argument(key, .missing, kind) }
        return value
    }
}
