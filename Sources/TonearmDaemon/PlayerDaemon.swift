import Logging
import Synchronization
import TonearmALSA
import TonearmControl
import TonearmJSON
import TonearmLibrary
import TonearmNetwork
import TonearmPlayback
import TonearmPlayer
import TonearmSystem

/// What follows each queue item, kept where the decoder thread can read it without waiting
/// for the actor. The actor rewrites it whenever the queue, repeat or shuffle change.
final class UpcomingTable: Sendable {
    private let next = Mutex<[Int: EngineItem]>([:])

    func update(_ core: PlayerCore) {
        var table: [Int: EngineItem] = [:]
        for item in core.queue {
            if let following = core.upcoming(after: item.id) {
                table[item.id] = EngineItem(id: following.id, path: following.path)
            }
        }
        next.withLock { $0 = table }
    }

    func after(_ id: Int) -> EngineItem? { next.withLock { $0[id] } }
}

/// The daemon: the player core (queue, transport, commands, Now Playing), the audio engine,
/// the saved state and the control socket, held together by one actor.
///
/// Every command source goes through `perform`, which asks the core (the remote command
/// center) and applies its engine actions and Now Playing publications. Publications go out
/// only when the core makes one — on start, pause, seek, track change and the like — never on
/// a timer; clients extrapolate `elapsed` from `rate` and `timestamp`.
public actor PlayerDaemon {
    public let settings: DaemonSettings
    let logger: Logger
    var core: PlayerCore
    let engine: PlaybackEngine
    let store: StateStore
    let upcoming: UpcomingTable
    var server: ControlServer?

    /// Where each artwork id's bytes come from, for `artwork` requests.
    var artworkSources: [String: ArtworkSource] = [:]
    /// Scanning (seekForward/seekBackward held, `core.scanRate`): when the last step was taken.
    var lastScanStep: Double = 0
    var lastSave: Double = 0
    /// The engine's number for the latest play or stop: starts it reports with a lower number
    /// describe audio queued before it (a late start of the previous play, a gapless step that
    /// a seek abandoned) and are not passed to the core.
    var latestRequest = 0
    var lastPublishedCommands: [RemoteCommand: Bool] = [:]
    var lastPublishedState: TransportState?
    var shuttingDown = false
    /// The audio sessions: the player's and the clients'.
    var book = SessionBook()
    /// The board's buttons, knobs, keys and displays.
    var board: BoardPlugIns
    var underrunLog: UnderrunLog

    /// Fails when the state directory is unusable or a board control marked `required` is
    /// missing; the error says which.
    public init(settings: DaemonSettings, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        var core = PlayerCore(preferredSkipInterval: settings.skipForwardSeconds,
                              previousRestartThreshold: settings.previousRestartsAfterSeconds)
        core.preferredSkipBackwardInterval = settings.skipBackwardSeconds
        self.core = core
        store = try StateStore(directory: settings.stateDirectory)
        let table = UpcomingTable()
        upcoming = table
        var playback = settings.playback
        playback.volumePercent = settings.mixerControl == nil ? settings.initialVolume : 100
        engine = PlaybackEngine(options: playback) { table.after($0) }
        underrunLog = UnderrunLog(device: playback.device)
        board = try BoardSetup.plugIns(for: settings.profile, log: logger)
    }

    static func now() -> Double { monotonicSeconds() }

    // MARK: Life cycle

    /// Restores the saved state, opens the control socket and runs until `shutdown()`.
    public func run(isShuttingDown: @Sendable () -> Bool) async throws {
        engine.start()
        openPlayerSession()
        restore()
        var options = ControlServerOptions(path: settings.socketPath, topics: PlayerDaemon.topics)
        let log = logger
        options.log = { log.warning("\($0)") }
        options.clientDisconnected = { [weak self] client in
            guard let self else { return }
            Task { await self.clientDisconnected(client) }
        }
        let network = NetworkEdge.makeEventLoopGroup()
        let server: ControlServer
        do {
            server = try ControlServer(options: options, group: network) { [weak self] request, reply in
                guard let self else { return }
                Task { await self.answer(request, reply) }
            }
        } catch {
            try? await network.shutdownGracefully()
            throw error
        }
        self.server = server
        server.start()
        startBoard()
        logger.info("tonearmd ready", metadata: [
            "socket": "\(settings.socketPath)", "device": "\(settings.playback.device)",
            "state": "\(settings.stateDirectory)", "music": "\(settings.musicDirectory ?? "(any)")",
        ])
        while !isShuttingDown() && !Task.isCancelled {
            tick()
            // A session's stream ending is noticed here; its owner waits for that to go on
            // (an announcement deactivates and the music comes back), so look more often then.
            try? await Task.sleep(for: .milliseconds(book.streams.isEmpty ? 50 : 10))
        }
        await stopGracefully()
        try? await network.shutdownGracefully()
    }

    /// SIGTERM/SIGINT: fade out (at most 50 ms), save, close the socket, stop the engine.
    func stopGracefully() async {
        stopBoard()
        if core.state == .playing {
            engine.pause()
            let deadline = Self.now() + 0.05
            while !engine.isPausedOrIdle && Self.now() < deadline {
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
        save()
        server?.stop()
        server = nil
        engine.shutdown()
        logger.info("tonearmd stopped")
    }

    /// The internal heartbeat: engine events into the core, scanning steps, periodic saves.
    /// Nothing is published from here unless an event calls for it.
    func tick() {
        let now = Self.now()
        takeEngineEvents(now: now)
        reapFinishedStreams()
        if let line = underrunLog.line(now: now) { logger.warning("\(line)") }
        if core.scanRate != nil && now - lastScanStep >= 0.25, let id = core.currentItemID,
           let item = core.queue.first(where: { $0.id == id }) {
            lastScanStep = now
            let target = max(0, core.position(at: now))
            if let duration = item.metadata.duration, target >= duration {
                apply(core.handle(CommandRequest(.seekForward, scanning: .end), now: now))
            } else {
                latestRequest = engine.play(EngineItem(id: id, path: item.path), from: target, resume: core.state == .playing)
            }
        }
        if core.state == .playing && now - lastSave >= settings.saveIntervalSeconds { save() }
    }

    /// What the engine has to tell, into the core. Reports take it first too, so that the
    /// Now Playing they show agrees with the device state beside it.
    func takeEngineEvents(now: Double) {
        for event in engine.nextEvents(now: now) { handle(event, now: now) }
    }

    func handle(_ event: PlaybackEvent, now: Double) {
        switch event {
        case .itemStarted(let start):
            guard start.request >= latestRequest else { return }
            publish(core.engineStartedItem(start.itemID, at: start.position, heardAt: start.heardAt, now: now))
            publishStatusChanges()
            save()
        case .itemFailed(let id, let error):
            logger.error("\(error)", metadata: ["item": "\(id)"])
            server?.publish(topic: "state", event: .object([("error", .string(error.description)), ("item", .int(id))]))
            switch error.reason {
            case .truncated, .decodeErrors, .formatChange:
                break  // it played (in part); the engine went on gaplessly with what follows
            default:
                // It never played: the core skips it and says what plays instead.
                apply(core.engineFailedItem(id, now: now))
            }
        case .endOfQueue:
            publish(core.engineReachedEndOfQueue(now: now))
            publishStatusChanges()
            save()
        case .outputInterrupted(let why, let position):
            // Nothing is heard: Now Playing stops the clock where the audio stopped.
            let retry = "\(why); reopening every \(settings.playback.reopenIntervalMilliseconds) ms"
            if case .unavailable = why { logger.error("\(retry)") } else { logger.warning("\(retry)") }
            publish(core.engineOutputStalled(itemID: position?.itemID, at: position?.seconds, now: now))
            showBoardState()
        case .deviceReopened(let format):
            logger.notice("ALSA PCM '\(settings.playback.device)' is back (\(format)); continuing")
        case .outputResumed(let position):
            publish(core.engineOutputResumed(itemID: position?.itemID, at: position?.seconds, now: now))
            showBoardState()
        case .underruns(let total):
            underrunLog.record(total: total)
        case .realtimeRefused(let why):
            logger.notice("output thread runs without SCHED_FIFO: \(why) (grant rtprio, e.g. LimitRTPRIO in the service unit)")
        case .memoryLockRefused(let why):
            logger.notice("audio buffers are not locked in memory: \(why) (raise LimitMEMLOCK)")
        }
    }

    // MARK: Applying what the core decided

    /// Carries out a command outcome: engine actions in order, then publications.
    func apply(_ outcome: CommandOutcome) {
        for action in outcome.actions { perform(action) }
        publish(outcome.publications)
        publishStatusChanges()
        save()
    }

    func perform(_ action: EngineAction) {
        switch action {
        case .play(let id, let from):
            guard let item = core.queue.first(where: { $0.id == id }) else { return }
            upcoming.update(core)
            latestRequest = engine.play(EngineItem(id: id, path: item.path), from: from)
        case .pause:
            engine.pause()
        case .resume:
            engine.resume()
        case .seek(let position):
            guard let id = core.currentItemID, let item = core.queue.first(where: { $0.id == id }) else { return }
            // A seek while paused readies the new place without making a sound.
            latestRequest = engine.play(EngineItem(id: id, path: item.path), from: position, resume: core.state == .playing)
        case .stop:
            latestRequest = engine.stop()
        case .setVolume(let percent):
            if let control = settings.mixerControl {
                do {
                    try MixerControl(card: settings.mixerCard, name: control).setVolume(percent: percent)
                } catch {
                    logger.error("\(error)")
                }
            } else {
                engine.setVolume(percent)
            }
        case .upcomingChanged:
            upcoming.update(core)
            engine.upcomingChanged()
        case .scan:
            lastScanStep = Self.now()
        }
    }

    /// `interruption`, `duck`, `stream` and `remoteCommand` carry events about a client's own
    /// sessions only.
    static let topics = ["nowPlaying", "state", "queue", "commands", "sessions", "interruption", "duck", "stream", "remoteCommand"]

    func publish(_ publications: [NowPlayingPublication]) {
        for publication in publications {
            server?.publish(topic: "nowPlaying", event: Reports.publication(publication))
        }
    }

    /// State, queue and command changes go to their own topics, again only when they change.
    func publishStatusChanges() {
        let commands = core.enabledCommands
        if commands != lastPublishedCommands {
            lastPublishedCommands = commands
            server?.publish(topic: "commands", event: Reports.commands(commands))
        }
        if core.state != lastPublishedState {
            lastPublishedState = core.state
            server?.publish(topic: "state", event: .object([("state", .string(core.state.rawValue))]))
        }
        syncPlayerSession()
        showBoardState()
    }

    // MARK: State that survives power loss

    func record() -> PlayerStateRecord {
        let now = Self.now()
        let ids = core.queue.map(\.id)
        return PlayerStateRecord(
            queue: core.queue.map(\.path),
            currentIndex: core.currentIndex,
            position: core.currentItemID == nil ? 0 : max(0, core.position(at: now)),
            volume: core.volume,
            repeatMode: core.repeatMode.rawValue,
            shuffle: core.shuffle,
            shuffleOrder: core.shuffle ? core.shuffleOrder.compactMap { ids.firstIndex(of: $0) } : nil,
            wasPlaying: core.state == .playing
        )
    }

    /// Writes the state (atomically: temp file, fsync, rename, fsync directory).
    func save() {
        do {
            try store.save(record())
            lastSave = Self.now()
        } catch {
            logger.error("\(error)")
        }
    }

    func restore() {
        let now = Self.now()
        switch store.load() {
        case .none:
            apply(core.setVolume(settings.initialVolume, now: now))
        case .setAside(let reason, let movedTo):
            logger.error("the saved state was unreadable (\(reason)); set aside as \(movedTo), starting empty")
            apply(core.setVolume(settings.initialVolume, now: now))
        case .restored(let saved):
            var items: [QueueItem] = []
            var indexMap: [Int: Int] = [:]  // saved index → restored index
            for (index, path) in saved.queue.enumerated() {
                guard let track = try? MusicLibrary.tracks(at: [path], musicDirectory: settings.musicDirectory).tracks.first else {
                    logger.warning("saved queue entry is gone: \(path)")
                    continue
                }
                indexMap[index] = items.count
                items.append(QueueItem(id: items.count + 1, path: track.path, metadata: metadata(for: track)))
            }
            let current = saved.currentIndex.flatMap { indexMap[$0] }.map { items[$0].id }
            let order = saved.shuffleOrder.map { $0.compactMap { indexMap[$0] }.map { items[$0].id } }
            let outcome = core.restore(queue: items, currentItemID: current, position: current == nil ? 0 : saved.position,
                                       volume: saved.volume, repeatMode: RepeatMode(rawValue: saved.repeatMode) ?? .off,
                                       shuffle: saved.shuffle, shuffleOrder: order,
                                       resumePlaying: saved.wasPlaying && settings.resumePlaying, now: now)
            upcoming.update(core)
            apply(outcome)
            logger.info("restored \(items.count) queued track\(items.count == 1 ? "" : "s")",
                        metadata: ["position": "\(saved.position)", "state": "\(core.state.rawValue)"])
        }
    }

    /// Core metadata for a scanned track; remembers where its artwork comes from.
    func metadata(for track: LibraryTrack) -> TrackMetadata {
        var artwork: Artwork?
        if let source = track.artwork {
            artworkSources[source.id] = source
            artwork = Artwork(id: source.id, mimeType: source.mimeType, width: source.width ?? 0,
                              height: source.height ?? 0, byteCount: source.byteCount)
        }
        return TrackMetadata(title: track.title, artist: track.artist, album: track.album, albumArtist: track.albumArtist,
                             trackNumber: track.trackNumber, discNumber: track.discNumber, duration: track.duration,
                             artwork: artwork)
    }
}
