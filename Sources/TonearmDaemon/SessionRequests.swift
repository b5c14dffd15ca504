import TonearmAudio
import TonearmControl
import TonearmFLAC
import TonearmJSON
import TonearmPlayback
import TonearmSession

#if canImport(Glibc)
import Glibc
#endif

/// The session commands of the control protocol (see `Protocol.swift`): a client opens
/// sessions, activates and deactivates them, and plays a file or raw PCM into them; events about
/// them (`interruption`, `duck`, `stream`) go to that client alone.
extension PlayerDaemon {
    /// Answers a session command; false when `request` is not one.
    func answerSession(_ request: ControlRequest, _ reply: Reply) throws(ArgumentError) -> Bool {
        let client = ClientID(request.clientID)
        switch request.command {
        case "sessions":
            reply.succeed(Reports.sessions(self))
        case "mute":
            let on = try request.bool("on")
            try? change(.setMute(on))
            reply.succeed(.object([("muted", .bool(book.muted))]))
        case "sessionOpen":
            let (category, mode, options) = try configuration(request, defaultCategory: .soloAmbient)
            let id = SessionID(book.nextID)
            let remoteCommands = try request.optionalBool("remoteCommands") ?? false
            do throws(SessionError) {
                try change(.open(id, owner: client, category: category, mode: mode, options: options,
                                 hasEnabledCommand: remoteCommands))
            } catch {
                reply.fail(code: ControlErrorCode.badArgument, message: error.description)
                return true
            }
            book.nextID += 1
            reply.succeed(sessionAnswer(id))
        case "sessionSetCategory":
            let id = try ownSession(request, client)
            let (category, mode, options) = try configuration(request, defaultCategory: .soloAmbient)
            do throws(SessionError) {
                try change(.setCategory(id, category, mode: mode, options: options))
                reply.succeed(sessionAnswer(id))
            } catch {
                reply.fail(code: ControlErrorCode.badArgument, message: error.description)
            }
        case "sessionActivate":
            let id = try ownSession(request, client)
            try? change(.activate(id))
            reply.succeed(sessionAnswer(id))
        case "sessionDeactivate":
            let id = try ownSession(request, client)
            let notify = try request.optionalBool("notifyOthers") ?? false
            stopSessionStream(id)
            try? change(.deactivate(id, notifyOthers: notify))
            reply.succeed(sessionAnswer(id))
        case "sessionClose":
            let id = try ownSession(request, client)
            closeSession(id)
            reply.succeed(.object([("session", .int(id.value)), ("closed", .bool(true))]))
        case "sessionPlay":
            let id = try ownSession(request, client)
            playIntoSession(id, request, reply)
        case "sessionWrite":
            let id = try ownSession(request, client)
            let text = try request.string("data")
            guard let stream = book.streams[id], let format = stream.pcm, !stream.ended else {
                reply.fail(code: "notStreaming", message: "session \(id) has no raw PCM stream open for writing (sessionPlay with a format first)")
                return true
            }
            guard let bytes = Base64.decode(text) else {
                throw ArgumentError(key: "data", description: "'data' must be base64 (RFC 4648, padded)")
            }
            let frameBytes = format.channels * format.bitsPerSample / 8
            guard bytes.count % frameBytes == 0 else {
                throw ArgumentError(key: "data", description: "'data' holds \(bytes.count) bytes, not a whole number of \(frameBytes)-byte frames (\(format))")
            }
            let samples = PCMBytes.samples(bytes, bitsPerSample: format.bitsPerSample)
            if engine.feedStream(stream.handle, samples: samples) {
                reply.succeed(.object([("accepted", .int(bytes.count / frameBytes)),
                                       ("backlogFrames", .int(engine.streamBacklogFrames(stream.handle)))]))
            } else {
                reply.fail(code: "busy", message: "session \(id)'s stream holds \(engine.streamBacklogFrames(stream.handle)) frames not yet played; send again shortly")
            }
        case "sessionEnd":
            let id = try ownSession(request, client)
            guard let stream = book.streams[id], stream.pcm != nil else {
                reply.fail(code: "notStreaming", message: "session \(id) has no raw PCM stream open")
                return true
            }
            engine.endStream(stream.handle)
            book.streams[id]?.ended = true
            reply.succeed(sessionAnswer(id))
        case "sessionStop":
            let id = try ownSession(request, client)
            stopSessionStream(id)
            reply.succeed(sessionAnswer(id))
        default:
            return false
        }
        return true
    }

    /// `category`, `mode` and `options` of a request, by name.
    private func configuration(_ request: ControlRequest, defaultCategory: SessionCategory)
        throws(ArgumentError) -> (SessionCategory, SessionMode, SessionOptions)
    {
        let categoryName = try request.optionalString("category") ?? defaultCategory.rawValue
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
        return (category, mode, options)
    }

    /// The request's `session`, which must be one the client opened.
    private func ownSession(_ request: ControlRequest, _ client: ClientID) throws(ArgumentError) -> SessionID {
        let id = SessionID(try request.int("session"))
        guard let state = book.session(id), state.owner == client else {
            let why = book.session(id) == nil ? "no open session \(id)" : "session \(id) belongs to another client"
            throw ArgumentError(key: "session", description: why)
        }
        return id
    }

    private func sessionAnswer(_ id: SessionID) -> JSONValue {
        guard let state = book.session(id) else { return .object([("session", .int(id.value))]) }
        let output = book.outputs[id] ?? OutputGain(mixes: false)
        return .object([
            ("session", .int(id.value)), ("category", .string(state.category.rawValue)), ("mode", .string(state.mode.rawValue)),
            ("options", .array(state.options.names.map { .string($0) })), ("active", .bool(state.active)),
            ("interrupted", .bool(state.interrupted)), ("ducked", .bool(output.ducked)),
        ])
    }

    /// `sessionPlay`: a FLAC file (`path`) or, with `format` (`rate`, `channels`, `bits`), raw
    /// PCM the client sends with `sessionWrite` and ends with `sessionEnd`. An inactive session
    /// is activated first, as playing does on iOS; an interrupted one starts held.
    private func playIntoSession(_ id: SessionID, _ request: ControlRequest, _ reply: Reply) {
        do throws(ArgumentError) {
            let path = try request.optionalString("path")
            let format = try pcmFormat(request)
            guard (path == nil) != (format == nil) else {
                throw ArgumentError(key: "path", description: "give either 'path' (a FLAC file) or 'format' (raw PCM), not both or neither")
            }
            guard book.session(id)?.category != .record else {
                reply.fail(code: ControlErrorCode.badArgument, message: "session \(id) is in category record, which has no output")
                return
            }
            if let path, access(path, R_OK) != 0 {
                let why = String(cString: strerror(errno))
                reply.fail(code: errno == ENOENT ? "notFound" : "unavailable", message: "cannot read \(path): \(why)")
                return
            }
            stopSessionStream(id)
            if book.session(id)?.active == false { try? change(.activate(id)) }
            let output = book.outputs[id] ?? OutputGain(mixes: false)
            let handle: StreamHandle
            do throws(PlaybackError) {
                let fade: Float = output.silencedByMute ? 0 : 1
                if let path {
                    handle = try engine.startStream(path: path, fade: fade)
                } else {
                    handle = try engine.startStream(format: format!, fade: fade)
                }
            } catch {
                let code: String = switch error {
                case .file: "notPlayable"
                case .noFreeStreamSlot: "busy"
                default: ControlErrorCode.badArgument
                }
                reply.fail(code: code, message: error.description)
                return
            }
            if output.ducked { engine.setStream(handle, duck: SessionBook.duckLevel, fade: nil) }
            book.streams[id] = SessionStream(handle: handle, pcm: format)
            if book.session(id)?.interrupted == true { engine.holdStream(handle) }
            reply.succeed(sessionAnswer(id))
            server?.publish(topic: "sessions", event: Reports.sessions(self))
        } catch {
            reply.fail(error)
        }
    }

    private func pcmFormat(_ request: ControlRequest) throws(ArgumentError) -> StreamFormat? {
        guard let format = request["format"], !format.isNull else { return nil }
        guard let rate = format["rate"]?.intValue, let channels = format["channels"]?.intValue,
              let bits = format["bits"]?.intValue else {
            throw ArgumentError(key: "format", description: "'format' must be {\"rate\":HZ,\"channels\":N,\"bits\":16|24|32} (signed little-endian, interleaved)")
        }
        return StreamFormat(sampleRate: rate, channels: channels, bitsPerSample: bits)
    }
}

/// Raw PCM as clients send it: signed little-endian, interleaved, 8 to 32 bits in whole bytes.
enum PCMBytes {
    /// Left-justified Int32 samples, as the engine carries them.
    static func samples(_ bytes: [UInt8], bitsPerSample: Int) -> [Int32] {
        let width = bitsPerSample / 8
        let count = bytes.count / width
        return [Int32](unsafeUninitializedCapacity: count) { buffer, initialized in
            for index in 0..<count {
                var value: UInt32 = 0
                for byte in 0..<width {
                    value |= UInt32(bytes[index * width + byte]) << (8 * (byte + 4 - width))
                }
                buffer[index] = Int32(bitPattern: value)
            }
            initialized = count
        }
    }
}
