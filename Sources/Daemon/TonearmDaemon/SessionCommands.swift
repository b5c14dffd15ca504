import TonearmAudio
import TonearmControlPlane
import TonearmPlayback
import TonearmSession
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// A client's own audio sessions: it opens them, activates and deactivates them, and plays a
/// file or raw PCM into them; what happens to them (`interruption`, `duck`, a stream heard to
/// its end) is told to that client alone.
extension PlayerDaemon {
    func session(_ command: SessionCommand, client: ClientID) -> CommandResult {
        do throws(CommandFailure) {
            return try carryOut(command, client: client)
        } catch {
            return CommandResult(status: .commandFailed, failure: error)
        }
    }

    private func carryOut(_ command: SessionCommand, client: ClientID) throws(CommandFailure) -> CommandResult {
        switch command {
        case .open(let setup, let remoteCommands, let name):
            let id = SessionID(book.nextID)
            try policy(.open(id, owner: client, category: setup.category, mode: setup.mode, options: setup.options,
                             hasEnabledCommand: remoteCommands))
            book.nextID += 1
            book.names[id] = name
            return answer(id)
        case .setCategory(let id, let setup):
            try own(id, client)
            try policy(.setCategory(id, setup.category, mode: setup.mode, options: setup.options))
            return answer(id)
        case .activate(let id):
            try own(id, client)
            try? change(.activate(id))
            return answer(id)
        case .deactivate(let id, let notifyOthers):
            try own(id, client)
            stopSessionStream(id)
            try? change(.deactivate(id, notifyOthers: notifyOthers))
            return answer(id)
        case .close(let id):
            try own(id, client)
            closeSession(id)
            return CommandResult(status: .success, payload: .sessionClosed(id))
        case .playFile(let id, let path):
            try own(id, client)
            guard access(path, R_OK) == 0 else {
                let code: CommandFailure.Code = errno == ENOENT ? .notFound : .unavailable
                throw CommandFailure(code, "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            try play(into: id, path: path, format: nil)
            return answer(id)
        case .playPCM(let id, let format):
            try own(id, client)
            try play(into: id, path: nil, format: format)
            return answer(id)
        case .write(let id, let bytes):
            try own(id, client)
            guard let stream = book.streams[id], let format = stream.pcm, !stream.ended else {
                throw CommandFailure(.notStreaming, "session \(id) has no raw PCM stream open for writing (sessionPlay with a format first)")
            }
            let frameBytes = format.channels * format.bitsPerSample / 8
            guard bytes.count % frameBytes == 0 else {
                throw CommandFailure(.badArgument, "'data' holds \(bytes.count) bytes, not a whole number of \(frameBytes)-byte frames (\(format))")
            }
            guard engine.feedStream(stream.handle, samples: PCMBytes.samples(bytes, bitsPerSample: format.bitsPerSample)) else {
                throw CommandFailure(.busy, "session \(id)'s stream holds \(engine.streamBacklogFrames(stream.handle)) frames not yet played; send again shortly")
            }
            return CommandResult(status: .success, payload: .accepted(frames: bytes.count / frameBytes,
                                                                      backlogFrames: engine.streamBacklogFrames(stream.handle)))
        case .end(let id):
            try own(id, client)
            guard let stream = book.streams[id], stream.pcm != nil else {
                throw CommandFailure(.notStreaming, "session \(id) has no raw PCM stream open")
            }
            engine.endStream(stream.handle)
            book.streams[id]?.ended = true
            return answer(id)
        case .stop(let id):
            try own(id, client)
            stopSessionStream(id)
            return answer(id)
        case .openInlet(let id, let format, let encoding, let backlogFrames):
            try own(id, client)
            let room = Wakeup()
            let handle = try play(into: id, path: nil, format: format, backlog: (backlogFrames, room))
            let inlet = EngineInlet(engine: engine, handle: handle, format: format, encoding: encoding, room: room)
            return CommandResult(status: .success, payload: .inlet(InletReference(inlet)))
        case .pauseStream(let id, let paused):
            try own(id, client)
            guard book.streams[id] != nil else {
                throw CommandFailure(.notStreaming, "session \(id) has no stream to pause")
            }
            book.streams[id]?.paused = paused
            holdOrRelease(id)
            return answer(id)
        }
    }

    /// A policy request whose refusal is the client's mistake ("category ambient does not
    /// accept option mixWithOthers …").
    private func policy(_ request: SessionRequest) throws(CommandFailure) {
        do throws(SessionError) {
            try change(request)
        } catch {
            throw CommandFailure(.badArgument, error.description)
        }
    }

    /// Only the client that opened a session may change it.
    private func own(_ id: SessionID, _ client: ClientID) throws(CommandFailure) {
        guard let state = book.session(id), state.owner == client else {
            throw CommandFailure(.badArgument, book.session(id) == nil ? "no open session \(id)" : "session \(id) belongs to another client")
        }
    }

    private func answer(_ id: SessionID) -> CommandResult {
        let report = sessionsState().session(id)
        return CommandResult(status: .success, payload: report.map { .session($0) } ?? .sessionClosed(id))
    }

    /// An audio file or raw PCM into a session. An inactive session is activated first, as
    /// playing does on iOS; an interrupted one starts held.
    @discardableResult
    private func play(into id: SessionID, path: String?, format: StreamFormat?,
                      backlog: (frames: Int, room: Wakeup)? = nil) throws(CommandFailure) -> StreamHandle {
        guard book.session(id)?.category != .record else {
            throw CommandFailure(.badArgument, "session \(id) is in category record, which has no output")
        }
        stopSessionStream(id)
        if book.session(id)?.active == false { try? change(.activate(id)) }
        let output = book.outputs[id] ?? OutputGain(mixes: false)
        let handle: StreamHandle
        do throws(PlaybackError) {
            let fade: Float = output.silencedByMute ? 0 : 1
            if let format {
                handle = try engine.startStream(format: format, fade: fade, backlogFrames: backlog?.frames, room: backlog?.room)
            } else {
                handle = try engine.startStream(path: path ?? "", fade: fade)
            }
        } catch {
            let code: CommandFailure.Code = switch error {
            case .file: .notPlayable
            case .noFreeStreamSlot: .busy
            default: .badArgument
            }
            throw CommandFailure(code, error.description)
        }
        if output.ducked { engine.setStream(handle, duck: SessionBook.duckLevel, fade: nil) }
        book.streams[id] = SessionStream(handle: handle, pcm: format)
        if book.session(id)?.interrupted == true { engine.holdStream(handle) }
        changes.subsystems.insert(.sessions)
        return handle
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

/// A session's stream as a program writes it (`openInlet`): frames go straight to the engine's
/// feed, from the thread that reads the program, never past the backlog the program's buffer
/// allows.
final class EngineInlet: StreamInlet {
    let engine: PlaybackEngine
    let handle: StreamHandle
    let format: StreamFormat
    let encoding: DeviceSampleFormat
    private let room: Wakeup

    init(engine: PlaybackEngine, handle: StreamHandle, format: StreamFormat, encoding: DeviceSampleFormat, room: Wakeup) {
        self.engine = engine
        self.handle = handle
        self.format = format
        self.encoding = encoding
        self.room = room
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        let frameBytes = format.channels * encoding.bytesPerSample
        let frames = min(bytes.count / frameBytes, engine.streamRoomFrames(handle))
        guard frames > 0, let base = bytes.baseAddress else { return 0 }
        let count = frames * format.channels
        let samples = [Int32](unsafeUninitializedCapacity: count) { buffer, initialized in
            SampleConversion.unpack(base, count: count, format: encoding, into: buffer.baseAddress!)
            initialized = count
        }
        return engine.feedStream(handle, samples: samples) ? frames : 0
    }

    var wakeDescriptor: Int32 { room.descriptor }
    func consumeWake() { room.consume() }
    var queuedFrames: Int { engine.streamQueuedFrames(handle) }
    func end() { engine.endStream(handle) }
    var isFinished: Bool { engine.streamFinished(handle) }
}
