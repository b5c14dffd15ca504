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
    public static let aliases: [String: CommandName] = [
        "toggle": .togglePlayPause, "next": .nextTrack, "previous": .previousTrack,
        "seek": .changePlaybackPosition, "skip": .skipForward, "repeat": .changeRepeatMode, "shuffle": .changeShuffleMode,
        "volume": .setVolume,
    ]

    /// A name or an alias.
    public init?(named name: String) {
        if let known = CommandName(rawValue: name) { self = known } else if let alias = Self.aliases[name] { self = alias } else { return nil }
    }

    /// Every name a profile may use, for error messages.
    public static var names: [String] { allCases.map(\.rawValue) }

    /// The remote command it is, if it is one.
    public var remote: RemoteCommand? { RemoteCommand(rawValue: rawValue) }

    /// What the argument is, for usage messages; nil when it takes none.
    public var argument: String? {
        switch self {
        case .skipForward, .skipBackward: "seconds, more than 0 (optional)"
        case .changePlaybackPosition: "a position in seconds, 0 or more"
        case .volumeUp, .volumeDown: "a step in percent, 1 to 100 (optional)"
        case .setVolume: "percent, 0 to 100"
        case .seekForward, .seekBackward: "begin or end (optional)"
        case .changeRepeatMode: "off, one or all (optional)"
        case .changeShuffleMode: "on or off (optional)"
        default: nil
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

    public static func parse(_ name: CommandName, argument: String?) -> Result<Command, CommandFailure> {
        func bad() -> Result<Command, CommandFailure> {
            let what = name.argument.map { "takes \($0)" } ?? "takes no argument"
            return .failure(CommandFailure(.badArgument, "\(name.rawValue) \(what), not '\(argument ?? "")'"))
        }
        let number = argument.flatMap { Double($0) }.flatMap { $0.isFinite ? $0 : nil }
        switch name {
        case .skipForward, .skipBackward:
            guard let remote = name.remote else { return bad() }
            if argument == nil { return .success(.remote(CommandRequest(remote))) }
            guard let number, number > 0 else { return bad() }
            return .success(.remote(CommandRequest(remote, interval: number)))
        case .changePlaybackPosition:
            guard let number, number >= 0 else { return bad() }
            return .success(.remote(CommandRequest(.changePlaybackPosition, position: number)))
        case .seekForward, .seekBackward:
            guard let remote = name.remote else { return bad() }
            if argument == nil { return .success(.remote(CommandRequest(remote, scanning: .begin))) }
            guard let phase = argument.flatMap(ScanPhase.init(rawValue:)) else { return bad() }
            return .success(.remote(CommandRequest(remote, scanning: phase)))
        case .changeRepeatMode:
            if argument == nil { return .success(.remote(CommandRequest(.changeRepeatMode))) }
            guard let mode = argument.flatMap(RepeatMode.init(rawValue:)) else { return bad() }
            return .success(.remote(CommandRequest(.changeRepeatMode, repeatMode: mode)))
        case .changeShuffleMode:
            if argument == nil { return .success(.remote(CommandRequest(.changeShuffleMode))) }
            guard argument == "on" || argument == "off" else { return bad() }
            return .success(.remote(CommandRequest(.changeShuffleMode, shuffle: argument == "on")))
        case .volumeUp, .volumeDown:
            let step = argument == nil ? 5 : number
            guard let step, step > 0, step <= 100 else { return bad() }
            return .success(.volume(.step(name == .volumeUp ? step : -step)))
        case .setVolume:
            guard let number, (0...100).contains(number) else { return bad() }
            return .success(.volume(.set(number)))
        case .toggleMute, .muteOn, .muteOff, .ignitionOn, .ignitionOff:
            guard argument == nil else { return bad() }
            return .success(simple(name))
        case .play, .pause, .togglePlayPause, .stop, .nextTrack, .previousTrack:
            guard argument == nil, let remote = name.remote else { return bad() }
            return .success(.remote(CommandRequest(remote)))
        }
    }

    private static func simple(_ name: CommandName) -> Command {
        switch name {
        case .toggleMute: .mute(.toggle)
        case .muteOn: .mute(.on)
        case .muteOff: .mute(.off)
        case .ignitionOn: .ignition(on: true)
        default: .ignition(on: false)
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
