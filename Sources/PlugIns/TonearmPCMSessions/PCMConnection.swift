#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import SystemPackage
import TonearmAudio
import TonearmControlPlane
import TonearmPlayer
import TonearmSession
import TonearmSystem

/// One program's open PCM: its session, and its audio into the session's stream. A thread of
/// its own reads the program (`run`), feeds the stream's inlet as it has room, and tells the
/// program where it is — what a sound card would: how much was taken, how much is still to be
/// heard, that it was interrupted or may resume.
///
/// Session changes go through the control plane as any client's do; the audio goes straight
/// into the inlet, never through the daemon's task thread.
final class PCMConnection: @unchecked Sendable {
    let socket: FileDescriptor
    let client: ClientID
    private let plane: any ControlPlane
    private let log: PlugInLog
    /// The plug-in hands notices over here (`deliver`) and posts `noticed`.
    private let notices = Mutex<[Notice]>([])
    private let noticed = Wakeup()
    private let answered = Wakeup()
    /// Set when the daemon stops: the connection ends without asking the control plane
    /// anything more.
    private let stopping = Atomic<Bool>(false)

    // The connection's thread alone uses what follows.
    private var name = "program"
    private var session: SessionID?
    private var notify = true
    private var epoch: UInt32 = 0
    private var format: PCMWire.Format?
    /// Frames of this epoch not yet in the stream: before `S`, or while it had no room.
    private var pending: [UInt8] = []
    private var pendingStart = 0
    private var inlet: (any StreamInlet)?
    private var started = false
    /// The session was activated by a start and not deactivated since. A drop stops the
    /// stream but not this: alsa-lib drops a running PCM before it closes it.
    private var activated = false
    private var draining = false
    private var ended = false
    private var paused = false
    private var accepted: UInt64 = 0
    private var buffer: UnsafeMutableRawBufferPointer

    init(socket: FileDescriptor, client: ClientID, plane: any ControlPlane, log: PlugInLog) {
        self.socket = socket
        self.client = client
        self.plane = plane
        self.log = log
        buffer = .allocate(byteCount: PCMWire.maxMessageBytes, alignment: 16)
    }

    deinit {
        buffer.deallocate()
        try? socket.close()
    }

    /// A notice for this connection's client (from the plug-in's task).
    func deliver(_ notice: Notice) {
        notices.withLock { $0.append(notice) }
        noticed.post()
    }

    /// Ends the connection without a word to the control plane: the daemon is stopping.
    func stop() {
        stopping.store(true, ordering: .releasing)
        _ = shutdown(socket.rawValue, Int32(SHUT_RDWR))
    }

    // MARK: The connection's thread

    func run() {
        while !stopping.load(ordering: .acquiring) {
            var fds = [pollfd(fd: socket.rawValue, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: noticed.descriptor, events: Int16(POLLIN), revents: 0)]
            if let inlet { fds.append(pollfd(fd: inlet.wakeDescriptor, events: Int16(POLLIN), revents: 0)) }
            guard poll(&fds, nfds_t(fds.count), -1) >= 0 || errno == EINTR else { break }
            if fds[1].revents != 0 {
                noticed.consume()
                guard handleNotices() else { break }
            }
            if fds.count > 2, fds[2].revents != 0 {
                inlet?.consumeWake()
                guard flowed() else { break }
            }
            if fds[0].revents != 0 {
                guard readMessages() else { break }
            }
        }
        // The program sees the end at once; the descriptor closes with the connection.
        _ = shutdown(socket.rawValue, Int32(SHUT_RDWR))
        end()
    }

    /// Reads what the program sent, a few messages at a time so notices and room are seen
    /// between them; false once it has gone or broke the rules.
    private func readMessages() -> Bool {
        for _ in 0..<16 {
            let count = recv(socket.rawValue, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT) | Int32(MSG_TRUNC))
            if count < 0 {
                if errno == EINTR { continue }
                return errno == EAGAIN || errno == EWOULDBLOCK
            }
            if count == 0 { return false }  // the program closed its PCM, or died
            guard count <= buffer.count else {
                return refuse("a message of \(count) bytes is longer than the \(buffer.count) a message may hold")
            }
            let message = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<count])
            guard let header = PCMWire.header(message) else { return refuse("a message of \(count) bytes has no header") }
            let body = UnsafeRawBufferPointer(rebasing: message[PCMWire.headerBytes...])
            guard handle(header, body) else { return false }
        }
        return true
    }

    private func handle(_ header: PCMWire.Header, _ body: UnsafeRawBufferPointer) -> Bool {
        guard let type = PCMWire.FromProgram(rawValue: header.type) else {
            return refuse("message type \(header.type) is not one the daemon knows")
        }
        if type == .open { return open(body) }
        guard session != nil else { return refuse("the first message must open the session") }
        if type == .format { return prepare(header.epoch, body) }
        // Whatever belongs to an earlier prepare is over.
        guard header.epoch == epoch, format != nil else { return true }
        switch type {
        case .open, .format:
            return true
        case .data:
            return take(body)
        case .start:
            return start()
        case .drain:
            draining = true
            if !started && pendingBytes > 0 { guard start() else { return false } }
            return flowed()
        case .drop:
            stopStream()
            return true
        case .pause:
            paused = header.flags & 1 != 0
            guard inlet != nil, let session else { return true }
            _ = call(.pauseStream(session, paused))
            // Paused, the delay stops moving: the program reads it exact from here.
            return reportPosition()
        }
    }

    private func open(_ body: UnsafeRawBufferPointer) -> Bool {
        guard session == nil else { return refuse("the session is open already") }
        let request: PCMWire.Open
        switch PCMWire.open(String(decoding: body, as: UTF8.self)) {
        case .success(let open): request = open
        case .failure(let error): return refuse(error.description)
        }
        name = request.name
        notify = request.notify
        let result = call(.open(request.setup, remoteCommands: request.remoteCommands, name: request.name))
        guard case .session(let report) = result.payload else {
            return refuse(result.failure?.message ?? "the daemon could not open the session")
        }
        session = report.state.id
        log.info("\(name) opened session \(report.state.id) (\(report.state.category), \(report.state.mode), options \(report.state.options))")
        return send(PCMWire.message(.opened, words: [UInt64(report.state.id.value)]))
    }

    /// A prepare: a new epoch, and what the previous one had is dropped.
    private func prepare(_ newEpoch: UInt32, _ body: UnsafeRawBufferPointer) -> Bool {
        stopStream()
        epoch = newEpoch
        switch PCMWire.format(body) {
        case .success(let taken):
            format = taken
            return send(PCMWire.message(.formatTaken, epoch: newEpoch))
        case .failure(let error):
            format = nil
            return send(PCMWire.message(.error, epoch: newEpoch, text: error.description))
        }
    }

    private var pendingBytes: Int { pending.count - pendingStart }

    /// Frames from the program: into the stream if it has room, kept otherwise. A program
    /// never has more than its buffer out: more is a broken plugin.
    private func take(_ body: UnsafeRawBufferPointer) -> Bool {
        guard let format, body.count % format.frameBytes == 0 else {
            return refuse("data of \(body.count) bytes is not whole frames")
        }
        var rest = body
        if let inlet, pendingBytes == 0, !ended {
            let frames = inlet.write(body)
            accepted += UInt64(frames)
            rest = UnsafeRawBufferPointer(rebasing: body[(frames * format.frameBytes)...])
        }
        if !rest.isEmpty {
            guard pendingBytes + rest.count <= format.bufferFrames * format.frameBytes else {
                return refuse("the program sent more than its buffer of \(format.bufferFrames) frames ahead of the daemon")
            }
            if pendingStart > 0 && pendingStart == pending.count {
                pending.removeAll(keepingCapacity: true)
                pendingStart = 0
            }
            pending.append(contentsOf: rest)
        }
        return inlet == nil || reportPosition()
    }

    /// The session activates and its stream starts with what came.
    private func start() -> Bool {
        guard !started, let format, let session else { return true }
        started = true
        let result = call(.openInlet(session, format.stream, encoding: format.encoding, backlogFrames: format.bufferFrames))
        guard case .inlet(let reference) = result.payload else {
            return refuse(result.failure?.message ?? "the daemon could not start the stream")
        }
        inlet = reference.inlet
        activated = true
        if paused { _ = call(.pauseStream(session, true)) }
        return flowed()
    }

    /// Room in the stream, a drain, or its end: what waits goes in, the program hears where it
    /// is, and a drained stream is answered.
    private func flowed() -> Bool {
        guard let inlet, let format else {
            if draining && pendingBytes == 0 { return drained() }
            return true
        }
        if pendingBytes > 0 && !ended {
            let frames = pending.withUnsafeBytes { inlet.write(UnsafeRawBufferPointer(rebasing: $0[pendingStart...])) }
            accepted += UInt64(frames)
            pendingStart += frames * format.frameBytes
            if pendingStart == pending.count {
                pending.removeAll(keepingCapacity: true)
                pendingStart = 0
            }
        }
        if draining && pendingBytes == 0 && !ended {
            inlet.end()
            ended = true
        }
        guard reportPosition() else { return false }
        if ended && inlet.isFinished { return drained() }
        return true
    }

    private func drained() -> Bool {
        let wasActivated = activated
        activated = false
        inlet = nil
        started = false
        draining = false
        ended = false
        guard send(PCMWire.message(.drained, epoch: epoch)) else { return false }
        if wasActivated, let session { _ = call(.deactivate(session, notifyOthers: notify)) }
        return true
    }

    private func reportPosition() -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nanoseconds = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
        let queued = Int64(inlet?.queuedFrames ?? 0)
        return send(PCMWire.message(.position, epoch: epoch, words: [accepted, UInt64(bitPattern: queued), nanoseconds]),
                    mayDrop: true)
    }

    /// A drop or a new prepare: the stream stops at once, what waits is dropped; the session
    /// stays active (a program that drops usually plays again at once).
    private func stopStream() {
        if inlet != nil, let session { _ = call(.stop(session)) }
        inlet = nil
        started = false
        draining = false
        ended = false
        accepted = 0
        pending.removeAll(keepingCapacity: true)
        pendingStart = 0
    }

    private func handleNotices() -> Bool {
        let taken = notices.withLock { list in
            defer { list.removeAll() }
            return list
        }
        for notice in taken {
            switch notice {
            case .interruptionBegan(let began) where began.session == session:
                guard send(PCMWire.message(.suspended)) else { return false }
            case .interruptionEnded(let ended) where ended.session == session && ended.shouldResume:
                guard send(PCMWire.message(.resumed)) else { return false }
            case .remoteCommand(_, let target, let request) where target == session:
                remoteCommand(request)
            default:
                break
            }
        }
        return true
    }

    /// A remote command for a program that owns Now Playing and has no player linked to it:
    /// pausing holds its stream (the program waits, as on a paused card), playing plays on.
    private func remoteCommand(_ request: CommandRequest) {
        guard let session, inlet != nil else { return }
        let hold: Bool
        switch request.command {
        case .pause, .stop: hold = true
        case .play: hold = false
        case .togglePlayPause: hold = !paused
        default: return
        }
        paused = hold
        _ = call(.pauseStream(session, hold))
    }

    /// The program has gone (or the daemon stops): its session deactivates — letting what it
    /// interrupted resume if it asked so — and closes.
    private func end() {
        guard !stopping.load(ordering: .acquiring) else { return }
        if let session {
            if activated { _ = call(.deactivate(session, notifyOthers: notify)) }
            log.info("\(name) closed session \(session)")
        }
        let plane = self.plane, client = self.client, done = answered
        Task {
            await plane.clientLeft(client)
            done.post()
        }
        answered.wait()
    }

    // MARK: Helpers

    /// A session command, carried out by the control plane on its own task; this thread waits
    /// for the answer.
    private func call(_ command: SessionCommand) -> CommandResult {
        let box = Mutex<CommandResult?>(nil)
        let plane = self.plane, source = CommandSource("program \(name)", client: client), done = answered
        Task {
            let result = await plane.send(.session(command), from: source)
            box.withLock { $0 = result }
            done.post()
        }
        while true {
            answered.wait()
            if let result = box.withLock({ $0 }) { return result }
        }
    }

    /// Sends one message. Positions may be dropped while the program is not reading (the next
    /// one says more); anything else waits up to a second, then the program is taken as stuck.
    private func send(_ message: [UInt8], mayDrop: Bool = false) -> Bool {
        var waited = false
        while true {
            let sent = message.withUnsafeBytes {
                Glibc.send(socket.rawValue, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if sent >= 0 { return true }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK:
                if mayDrop { return true }
                if waited {
                    log.warning("\(name) (session \(session.map { "\($0)" } ?? "-")) has not read what the daemon sent for a second: closing it")
                    return false
                }
                var entry = pollfd(fd: socket.rawValue, events: Int16(POLLOUT), revents: 0)
                _ = poll(&entry, 1, 1000)
                waited = true
            default:
                return false
            }
        }
    }

    /// Tells the program what it did wrong, and ends the connection.
    private func refuse(_ why: String) -> Bool {
        log.warning("\(name): \(why)")
        _ = send(PCMWire.message(.error, epoch: epoch, text: why))
        return false
    }
}
