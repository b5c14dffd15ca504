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
                throw ArgumentError(key: "mode", description: "'mode' must be \(SingleMode.choices)")
            }
            return .command(.playerMode(.single(mode)), answer: .status)
        case "output":
            return .command(.output(enabled: try request.bool("on")), answer: .status)
        case "consume":
            return .command(.playerMode(.consume(try request.bool("on"))), answer: .status)
        case "replayGain":
            let mode = try request.optionalString("mode").map { (value: String) throws(ArgumentError) -> ReplayGainMode in
                guard let mode = ReplayGainMode(rawValue: value) else {
                    throw ArgumentError(key: "mode", description: "'mode' must be \(ReplayGainMode.choices)")
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
            return try vocabulary(Command.parse(known, arguments: CommandArguments(request)))
        default:
            // A name of the vocabulary, or an alias with the arguments it has always required.
            if let parsed = Command.parse(named: request.command, arguments: CommandArguments(request)) {
                return try vocabulary(parsed)
            }
            if let session = try sessionCommand(request) { return .command(.session(session), answer: .session) }
            return nil
        }
    }

    /// A command of the vocabulary as the one parser read it, answered with its status
    /// (`setVolume` with the queue's count too).
    private static func vocabulary(_ parsed: Result<Command, CommandFailure>) throws(ArgumentError) -> SocketRequest {
        let command = try parsed.mapError(ArgumentError.init).get()
        return .command(command, answer: command.name == .setVolume ? .queue : .status)
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

extension CommandArguments {
    /// The request's arguments under the keys commands take, as the JSON has them.
    init(_ request: ControlRequest) {
        self.init()
        for key in ArgumentKey.allCases {
            self[key] = switch request[key.rawValue] {
            case nil, .null?: nil
            case .bool(let on)?: .bool(on)
            case .int(let number)?: .number(Double(number))
            case .double(let number)?: .number(number)
            case .string(let text)?: .string(text)
            case .array?, .object?: .other
            }
        }
    }
}

extension ArgumentError {
    init(_ failure: CommandFailure) {
        self.init(key: failure.argument?.key.rawValue ?? "name", description: failure.message)
    }
}
