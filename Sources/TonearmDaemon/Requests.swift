import TonearmControl
import TonearmJSON
import TonearmLibrary
import TonearmPlayer
import TonearmSession

/// The control protocol's commands, answered by the daemon. Transport commands answer with
/// the remote command center's status (`success`, `disabled`, `noSuchContent`,
/// `noActionableNowPlayingItem`, `commandFailed`); a malformed request with an error.
extension PlayerDaemon {
    func answer(_ request: ControlRequest, _ reply: Reply) {
        do throws(ArgumentError) {
            try dispatch(request, reply)
        } catch {
            reply.fail(error)
        }
    }

    private func dispatch(_ request: ControlRequest, _ reply: Reply) throws(ArgumentError) {
        let now = Self.now()
        func command(_ request: CommandRequest) {
            let outcome = core.handle(request, now: now)
            apply(outcome)
            reply.succeed(.object([("status", .string(outcome.status.rawValue))]))
        }
        func edit(_ outcome: CommandOutcome) {
            apply(outcome)
            reply.succeed(.object([("status", .string(outcome.status.rawValue)), ("queueCount", .int(core.queue.count))]))
        }

        switch request.command {
        case "status":
            takeEngineEvents(now: now)
            reply.succeed(Reports.status(self, now: now))
        case "queue":
            reply.succeed(Reports.queue(core))
        case "nowPlaying":
            takeEngineEvents(now: now)
            reply.succeed(Reports.nowPlaying(core.nowPlaying, now: now))
        case "doctor":
            takeEngineEvents(now: now)
            reply.succeed(Reports.doctor(self, now: now))

        case "add":
            guard let paths = request["paths"]?.arrayValue?.compactMap(\.stringValue), !paths.isEmpty,
                  paths.count == request["paths"]?.arrayValue?.count else {
                throw ArgumentError(key: "paths", description: "'paths' must be a non-empty array of strings")
            }
            do throws(LibraryError) {
                let scan = try MusicLibrary.tracks(at: paths, musicDirectory: settings.musicDirectory)
                let outcome = core.add(scan.tracks.map { (path: $0.path, metadata: metadata(for: $0)) }, now: now)
                apply(outcome)
                upcoming.update(core)
                reply.succeed(.object([
                    ("status", .string(outcome.status.rawValue)),
                    ("added", .int(scan.tracks.count)),
                    ("skipped", .array(scan.skipped.map { .object([("path", .string($0.path)), ("reason", .string($0.reason))]) })),
                    ("queueCount", .int(core.queue.count)),
                ]))
                publishQueue()
            } catch {
                reply.fail(code: error.code, message: error.description)
            }
        case "clear":
            edit(core.clear(now: now))
            publishQueue()
        case "remove":
            edit(core.remove(itemID: try request.int("item"), now: now))
            publishQueue()
        case "move":
            edit(core.move(itemID: try request.int("item"), to: try request.int("to"), now: now))
            publishQueue()

        case "play": command(CommandRequest(.play))
        case "pause": command(CommandRequest(.pause))
        case "toggle": command(CommandRequest(.togglePlayPause))
        case "stop": command(CommandRequest(.stop))
        case "next": command(CommandRequest(.nextTrack))
        case "previous": command(CommandRequest(.previousTrack))
        case "seek":
            command(CommandRequest(.changePlaybackPosition, position: try request.double("position")))
        case "skip":
            let seconds = try request.double("seconds")
            command(CommandRequest(seconds < 0 ? .skipBackward : .skipForward, interval: abs(seconds)))
        case "repeat":
            guard let mode = RepeatMode(rawValue: try request.string("mode")) else {
                throw ArgumentError(key: "mode", description: "'mode' must be off, one or all")
            }
            command(CommandRequest(.changeRepeatMode, repeatMode: mode))
        case "shuffle":
            command(CommandRequest(.changeShuffleMode, shuffle: try request.bool("on")))
        case "volume":
            let percent = try request.double("percent")
            guard (0...100).contains(percent) else {
                throw ArgumentError(key: "percent", description: "'percent' must be between 0 and 100")
            }
            edit(core.setVolume(percent, now: now))
        case "command":
            // The generic form every command source can use: a remote command by name.
            let name = try request.string("name")
            guard let remote = RemoteCommand(rawValue: name) else {
                throw ArgumentError(key: "name", description: "unknown remote command '\(name)' (one of \(RemoteCommand.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            let phase = try request.optionalString("phase")
            let remoteRequest = CommandRequest(
                remote, interval: try request.optionalDouble("interval"), position: try request.optionalDouble("position"),
                repeatMode: try request.optionalString("mode").flatMap(RepeatMode.init(rawValue:)),
                shuffle: try request.optionalBool("on"), scanning: phase.flatMap(ScanPhase.init(rawValue:)))
            let (status, forwardedTo) = remoteCommand(remoteRequest, now: now)
            var answer: [(String, JSONValue)] = [("status", .string(status))]
            if let forwardedTo { answer.append(("forwardedTo", .int(forwardedTo.value))) }
            reply.succeed(.object(answer))
        case "artwork":
            let id = try request.string("artwork")
            guard let source = artworkSources[id] else {
                reply.fail(code: "notFound", message: "no artwork with id '\(id)'")
                return
            }
            do throws(LibraryError) {
                let bytes = try MusicLibrary.artworkBytes(source)
                reply.succeed(.object([
                    ("id", .string(id)), ("mimeType", .string(source.mimeType)), ("bytes", .int(bytes.count)),
                    ("data", .string(Base64.encode(bytes))),
                ]))
            } catch {
                reply.fail(code: error.code, message: error.description)
            }
        default:
            if try !answerSession(request, reply) { reply.failUnknownCommand() }
        }
    }

    /// A remote command from any source (the socket's `command`, a button, a key, a display),
    /// for the Now Playing owner: the player's core, or a client's session, whose client gets a
    /// `remoteCommand` event. The status, and the session it went to if not the player.
    func remoteCommand(_ request: CommandRequest, now: Double) -> (status: String, forwardedTo: SessionID?) {
        if let owner = book.nowPlayingOwner, owner != SessionBook.playerSession, let state = book.session(owner) {
            var fields: [(String, JSONValue)] = [("session", .int(owner.value)), ("name", .string(request.command.rawValue))]
            if let interval = request.interval { fields.append(("interval", .double(interval))) }
            if let position = request.position { fields.append(("position", .double(position))) }
            if let mode = request.repeatMode { fields.append(("mode", .string(mode.rawValue))) }
            if let on = request.shuffle { fields.append(("on", .bool(on))) }
            if let phase = request.scanning { fields.append(("phase", .string(phase.rawValue))) }
            tell(state.owner, "remoteCommand", fields)
            return (CommandStatus.success.rawValue, owner)
        }
        let outcome = core.handle(request, now: now)
        apply(outcome)
        return (outcome.status.rawValue, nil)
    }

    func publishQueue() {
        server?.publish(topic: "queue", event: Reports.queue(core))
    }
}

extension LibraryError {
    /// The protocol's error code for a library error.
    var code: String {
        switch self {
        case .notFound: "notFound"
        case .outsideMusicDirectory: "forbidden"
        case .notPlayable: "notPlayable"
        case .musicDirectoryUnavailable, .cannotAccess, .artworkUnavailable, .stateDirectoryUnavailable, .cannotSaveState: "unavailable"
        }
    }
}
