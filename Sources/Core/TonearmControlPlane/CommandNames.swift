import TonearmPlayer

/// The names of commands, as a board profile, a serial display's line protocol and the control
/// socket write them: the remote command center's (`togglePlayPause`, `nextTrack`,
/// `skipForward`…), the board's own (`volumeUp`, `toggleMute`, `ignitionOff`…), and the short
/// aliases the socket has always accepted (`toggle`, `next`, `skip`…).
public enum CommandName: String, CaseIterable, Sendable {
    // The remote command center's (RemoteCommand).
    case play, pause, togglePlayPause, stop, nextTrack, previousTrack, skipForward, skipBackward
    case seekForward, seekBackward, changePlaybackPosition, changeRepeatMode, changeShuffleMode
    // The board's own.
    /// Argument: the step in percent (default 5).
    case volumeUp, volumeDown
    /// Argument: percent.
    case setVolume
    case toggleMute, muteOn, muteOff
    case ignitionOn, ignitionOff

    /// The short names of the control socket, each for a command of this vocabulary.
    public static let aliases: [String: CommandName] = Dictionary(
        uniqueKeysWithValues: CommandAlias.allCases.map { ($0.rawValue, $0.command) })

    /// A name or an alias.
    public init?(named name: String) {
        if let known = CommandName(rawValue: name) { self = known } else if let alias = Self.aliases[name] { self = alias } else { return nil }
    }

    /// Every name a profile may use, for error messages.
    public static var names: [String] { allCases.map(\.rawValue) }

    /// The remote command it is, if it is one.
    public var remote: RemoteCommand? { RemoteCommand(rawValue: rawValue) }

    /// The key of the one argument the command takes, where a profile's or a display's word
    /// goes; nil when it takes none.
    public var argumentKey: ArgumentKey? {
        switch self {
        case .skipForward, .skipBackward: .interval
        case .changePlaybackPosition: .position
        case .seekForward, .seekBackward: .phase
        case .changeRepeatMode: .mode
        case .changeShuffleMode: .on
        case .volumeUp, .volumeDown: .step
        case .setVolume: .percent
        case .play, .pause, .togglePlayPause, .stop, .nextTrack, .previousTrack,
             .toggleMute, .muteOn, .muteOff, .ignitionOn, .ignitionOff: nil
        }
    }

    /// What the argument is, for usage messages; nil when it takes none.
    public var argument: String? {
        switch argumentKey {
        case .interval: "seconds, more than 0 (optional)"
        case .position: "a position in seconds, 0 or more"
        case .step: "a step in percent, 1 to 100 (optional)"
        case .percent: "percent, 0 to 100"
        case .phase: "\(ScanPhase.choices) (optional)"
        case .mode: "\(RepeatMode.choices) (optional)"
        case .on: "\(OnOff.choices) (optional)"
        case .seconds, nil: nil
        }
    }
}

/// The control socket's short names of earlier versions, each for a command of the vocabulary;
/// each keeps the arguments it has always required (`Command.parse(_:arguments:)`).
public enum CommandAlias: String, CaseIterable, Sendable {
    case toggle, next, previous, seek, skip, `repeat`, shuffle, volume

    public var command: CommandName {
        switch self {
        case .toggle: .togglePlayPause
        case .next: .nextTrack
        case .previous: .previousTrack
        case .seek: .changePlaybackPosition
        case .skip: .skipForward
        case .repeat: .changeRepeatMode
        case .shuffle: .changeShuffleMode
        case .volume: .setVolume
        }
    }
}

extension Command {
    /// The command `name` with its argument, as a profile or a display writes it
    /// ("skipForward" + "30", "changeRepeatMode" + "all", "seekForward" + "begin"), or why not.
    public static func parse(_ name: String, argument: String? = nil) -> Result<Command, CommandFailure> {
        guard let known = CommandName(named: name) else {
            return .failure(CommandFailure(.badArgument, "unknown command '\(name)' (one of \(CommandName.names.joined(separator: ", ")))"))
        }
        return parse(known, argument: argument)
    }

    /// The word goes under the key the command takes (`CommandArguments(word:for:)`), and the
    /// keyed parser checks it; a failure names the whole argument the command takes.
    public static func parse(_ name: CommandName, argument: String?) -> Result<Command, CommandFailure> {
        let refusal = CommandFailure(.badArgument, "\(name.rawValue) takes \(name.argument ?? "no argument"), not '\(argument ?? "")'")
        guard let arguments = CommandArguments(word: argument, for: name) else { return .failure(refusal) }
        return parse(name, arguments: arguments).mapError { failure in
            var named = refusal
            named.argument = failure.argument
            return named
        }
    }

    /// The name a command goes by, for logs and for showing which commands are enabled.
    public var name: CommandName? {
        switch self {
        case .remote(let request): CommandName(rawValue: request.command.rawValue)
        case .volume(.set): .setVolume
        case .volume(.step(let step)): step < 0 ? .volumeDown : .volumeUp
        case .mute(.toggle): .toggleMute
        case .mute(.on): .muteOn
        case .mute(.off): .muteOff
        case .ignition(let on): on ? .ignitionOn : .ignitionOff
        default: nil
        }
    }

    /// The same command pressed or released, for a held scanning control (seekForward held).
    public func scanning(_ phase: ScanPhase) -> Command {
        guard case .remote(var request) = self, request.command == .seekForward || request.command == .seekBackward else { return self }
        request.scanning = phase
        return .remote(request)
    }
}

extension Command: CustomStringConvertible {
    /// "nextTrack", "skipForward 30", "seekForward begin", "changeRepeatMode all", "volumeUp 5".
    public var description: String {
        func number(_ value: Double) -> String {
            value == value.rounded() && abs(value) < 1e9 ? String(Int(value)) : String(value)
        }
        switch self {
        case .remote(let request):
            var words = [request.command.rawValue]
            if let interval = request.interval { words.append(number(interval)) }
            if let position = request.position { words.append(number(position)) }
            if let phase = request.scanning { words.append(phase.rawValue) }
            if let mode = request.repeatMode { words.append(mode.rawValue) }
            if let shuffle = request.shuffle { words.append(shuffle ? "on" : "off") }
            return words.joined(separator: " ")
        case .volume(.set(let percent)): return "setVolume \(number(percent))"
        case .volume(.step(let step)): return "\(step < 0 ? "volumeDown" : "volumeUp") \(number(abs(step)))"
        case .mute, .ignition: return name?.rawValue ?? "?"
        case .queue(let edit): return "queue \(edit)"
        case .artwork(let id, _): return "artwork \(id)"
        case .picture(let path, let embedded): return "\(embedded ? "picture" : "cover") \(path)"
        case .updateLibrary(let path): return path.map { "update \($0)" } ?? "update"
        case .session(let command): return "session \(command)"
        case .link(.publish(let linked)): return "link \(linked.sessionName) \(linked.playing == nil ? "absent" : "published")"
        case .link(.release(let name)): return "link \(name) released"
        case .output(let enabled): return "output \(enabled ? "on" : "off")"
        case .playlist(let edit): return "playlist \(edit)"
        case .playerMode(.single(let mode)): return "single \(mode.rawValue)"
        case .playerMode(.consume(let on)): return "consume \(on ? "on" : "off")"
        case .playerMode(.replayGain(let mode, let preamp, let missing)):
            var words = ["replayGain"]
            if let mode { words.append(mode.rawValue) }
            if let preamp { words.append("preamp \(number(preamp)) dB") }
            if let missing { words.append("missing \(number(missing)) dB") }
            return words.joined(separator: " ")
        }
    }
}
