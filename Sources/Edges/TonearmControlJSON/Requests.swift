import TonearmAudio
import TonearmControl
import TonearmControlPlane
import TonearmJSON
import TonearmPlayer
import TonearmSession

/// What a request line asks for: a command for the control plane, or a report read from one
/// snapshot. The protocol is documented in `TonearmControl/Protocol.swift`.
enum SocketRequest {
    case command(Command, answer: Answer)
    case report(Report)
    case library(LibraryRequest)

    /// How the result of a command is written back.
    enum Answer {
        /// `{"status":S}` (+ `forwardedTo`).
        case status
        /// `{"status":S,"queueCount":N}`.
        case queue
        /// `add`'s answer.
        case added
        /// `{"muted":B}`.
        case muted
        case artwork
        case session
    }

    enum Report: String {
        case status, queue, nowPlaying, doctor, sessions
    }

    /// The request's meaning, or why it has none (`nil`: no such command).
    static func parse(_ request: ControlRequest) throws(ArgumentError) -> SocketRequest? {
        if let report = Report(rawValue: request.command) { return .report(report) }
        if let library = try LibraryRequest.parse(request) { return .library(library) }
        switch request.command {
        case "add":
            guard let list = request["paths"]?.arrayValue, !list.isEmpty,
                  case let paths = list.compactMap(\.stringValue), paths.count == list.count else {
                throw ArgumentError(key: "paths", description: "'paths' must be a non-empty array of strings")
            }
            let position = try request.optionalInt("position")
            if let position, position < 0 { throw ArgumentError(key: "position", description: "'position' must be 0 or more") }
            return .command(.queue(.add(paths: paths, at: position)), answer: .added)
        case "clear":
            return .command(.queue(.clear), answer: .queue)
        case "remove":
            return .command(.queue(.remove(itemIDs: [try request.int("item")])), answer: .queue)
        case "playItem":
            return .command(.queue(.play(itemID: try request.int("item"))), answer: .status)
        case "move":
            return .command(.queue(.move(itemID: try request.int("item"), to: try request.int("to"))), answer: .queue)
        case "mute":
            return .command(.mute(try request.bool("on") ? .on : .off), answer: .muted)
        case "artwork":
            let size = try request.optionalInt("size")
            if let size, !ControlResponder.artworkSizes.contains(size) {
                throw ArgumentError(key: "size", description: "'size' must be \(ControlResponder.artworkSizes.lowerBound)…\(ControlResponder.artworkSizes.upperBound) pixels")
            }
            return .command(.artwork(id: try request.string("artwork"), fitting: size), answer: .artwork)
        case "single":
            let value = try request.string("mode")
            guard let mode = SingleMode(rawValue: value) else {
                throw ArgumentError(key: "mode", description: "'mode' must be off, on or oneshot")
            }
            return .command(.playerMode(.single(mode)), answer: .status)
        case "output":
            return .command(.output(enabled: try request.bool("on")), answer: .status)
        case "consume":
            return .command(.playerMode(.consume(try request.bool("on"))), answer: .status)
        case "replayGain":
            let mode = try request.optionalString("mode").map { (value: String) throws(ArgumentError) -> ReplayGainMode in
                guard let mode = ReplayGainMode(rawValue: value) else {
                    throw ArgumentError(key: "mode", description: "'mode' must be off, track, album or auto")
                }
                return mode
            }
            return .command(.playerMode(.replayGain(mode: mode, preamp: try request.optionalDouble("preamp"),
                                                    missingPreamp: try request.optionalDouble("missingPreamp"))), answer: .status)
        case "command":
            // The general form every command source may use: a command by name, its arguments
            // beside it.
            let name = try request.string("name")
            guard let known = CommandName(named: name) else {
                throw ArgumentError(key: "name", description: "unknown remote command '\(name)' (one of \(CommandName.names.joined(separator: ", ")))")
            }
            return .command(try command(known, request, strict: false), answer: known == .setVolume ? .queue : .status)
        default:
            if let known = CommandName(named: request.command) {
                // An alias keeps the arguments it has always required.
                let strict = CommandName(rawValue: request.command) == nil
                return .command(try command(known, request, strict: strict), answer: known == .setVolume ? .queue : .status)
            }
            if let session = try sessionCommand(request) { return .command(.session(session), answer: .session) }
            return nil
        }
    }

    /// A command of the vocabulary with its arguments from the request: `interval`,
    /// `position`, `mode`, `on`, `phase`, `percent`, `step`; `skip` takes `seconds` (±).
    private static func command(_ name: CommandName, _ request: ControlRequest, strict: Bool) throws(ArgumentError) -> Command {
        switch name {
        case .setVolume:
            let percent = try request.double("percent")
            guard (0...100).contains(percent) else {
                throw ArgumentError(key: "percent", description: "'percent' must be between 0 and 100")
            }
            return .volume(.set(percent))
        case .volumeUp, .volumeDown:
            let step = try request.optionalDouble("step") ?? 5
            guard step > 0 && step <= 100 else { throw ArgumentError(key: "step", description: "'step' must be more than 0 and at most 100") }
            return .volume(.step(name == .volumeUp ? step : -step))
        case .toggleMute: return .mute(.toggle)
        case .muteOn: return .mute(.on)
        case .muteOff: return .mute(.off)
        case .ignitionOn: return .ignition(on: true)
        case .ignitionOff: return .ignition(on: false)
        default: break
        }
        guard let remote = name.remote else { throw ArgumentError(key: "name", description: "'\(name.rawValue)' is not a remote command") }
        if request.command == "skip" {
            let seconds = try request.double("seconds")
            return .remote(CommandRequest(seconds < 0 ? .skipBackward : .skipForward, interval: abs(seconds)))
        }
        var modeValue = try request.optionalString("mode")
        if strict && remote == .changeRepeatMode { modeValue = try request.string("mode") }
        let mode = try modeValue.map { (value: String) throws(ArgumentError) -> RepeatMode in
            guard let mode = RepeatMode(rawValue: value) else { throw ArgumentError(key: "mode", description: "'mode' must be off, one or all") }
            return mode
        }
        let on = strict && remote == .changeShuffleMode ? try request.bool("on") : try request.optionalBool("on")
        let position = remote == .changePlaybackPosition ? try request.double("position") : try request.optionalDouble("position")
        let phase = try request.optionalString("phase").map { (value: String) throws(ArgumentError) -> ScanPhase in
            guard let phase = ScanPhase(rawValue: value) else { throw ArgumentError(key: "phase", description: "'phase' must be begin or end") }
            return phase
        }
        return .remote(CommandRequest(remote, interval: try request.optionalDouble("interval"), position: position,
                                      repeatMode: mode, shuffle: on, scanning: phase))
    }

    // MARK: Sessions

    private static func sessionCommand(_ request: ControlRequest) throws(ArgumentError) -> SessionCommand? {
        func session() throws(ArgumentError) -> SessionID { SessionID(try request.int("session")) }
        switch request.command {
        case "sessionOpen":
            return .open(try setup(request), remoteCommands: try request.optionalBool("remoteCommands") ?? false,
                         name: try request.optionalString("name"))
        case "sessionSetCategory":
            return .setCategory(try session(), try setup(request))
        case "sessionActivate":
            return .activate(try session())
        case "sessionDeactivate":
            return .deactivate(try session(), notifyOthers: try request.optionalBool("notifyOthers") ?? false)
        case "sessionClose":
            return .close(try session())
        case "sessionPlay":
            let id = try session()
            let path = try request.optionalString("path")
            let format = try pcmFormat(request)
            switch (path, format) {
            case (let path?, nil): return .playFile(id, path: path)
            case (nil, let format?): return .playPCM(id, format)
            default:
                throw ArgumentError(key: "path", description: "give either 'path' (a FLAC file) or 'format' (raw PCM), not both or neither")
            }
        case "sessionWrite":
            let id = try session()
            let text = try request.string("data")
            guard let bytes = Base64.decode(text) else {
                throw ArgumentError(key: "data", description: "'data' must be base64 (RFC 4648, padded)")
            }
            return .write(id, bytes: bytes)
        case "sessionEnd":
            return .end(try session())
        case "sessionStop":
            return .stop(try session())
        default:
            return nil
        }
    }

    /// `category`, `mode` and `options` of a request, by name.
    private static func setup(_ request: ControlRequest) throws(ArgumentError) -> SessionSetup {
        let categoryName = try request.optionalString("category") ?? SessionCategory.soloAmbient.rawValue
        guard let category = SessionCategory(rawValue: categoryName) else {
            throw ArgumentError(key: "category", description: "unknown category '\(categoryName)' (one of \(SessionCategory.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        let modeName = try request.optionalString("mode") ?? SessionMode.default.rawValue
        guard let mode = SessionMode(rawValue: modeName) else {
            throw ArgumentError(key: "mode", description: "unknown mode '\(modeName)' (one of \(SessionMode.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        var options: SessionOptions = []
        if let list = request["options"], !list.isNull {
            guard let names = list.arrayValue?.compactMap(\.stringValue), names.count == list.arrayValue?.count else {
                throw ArgumentError(key: "options", description: "'options' must be an array of option names")
            }
            for name in names {
                guard let option = SessionOptions(name: name) else {
                    throw ArgumentError(key: "options", description: "unknown option '\(name)' (one of \(SessionOptions.named.map(\.name).joined(separator: ", ")))")
                }
                options.insert(option)
            }
        }
        return SessionSetup(category: category, mode: mode, options: options)
    }

    private static func pcmFormat(_ request: ControlRequest) throws(ArgumentError) -> StreamFormat? {
        guard let format = request["format"], !format.isNull else { return nil }
        guard let rate = format["rate"]?.intValue, let channels = format["channels"]?.intValue,
              let bits = format["bits"]?.intValue else {
            throw ArgumentError(key: "format", description: "'format' must be {\"rate\":HZ,\"channels\":N,\"bits\":16|24|32} (signed little-endian, interleaved)")
        }
        return StreamFormat(sampleRate: rate, channels: channels, bitsPerSample: bits)
    }
}
