import Logging
import NIOCore
import NIOPosix
import Synchronization
import TonearmALSA
import TonearmAudio
import TonearmControlPlane
import TonearmLibrary
import TonearmPlayback
import TonearmPlayer
import TonearmSession
import TonearmSystem

/// What follows each queue item, kept where the decoder thread can read it without waiting
/// for the actor. The actor rewrites it whenever the queue, repeat or shuffle change.
final class UpcomingTable: Sendable {
    private let next = Mutex<[Int: EngineItem]>([:])

    func update(_ core: PlayerCore) {
        var table: [Int: EngineItem] = [:]
        for item in core.queue {
            if let following = core.upcoming(after: item.id) { table[item.id] = core.engineItem(following) }
        }
        next.withLock { $0 = table }
    }

    func after(_ id: Int) -> EngineItem? { next.withLock { $0[id] } }
}

extension PlayerCore {
    /// A queue item as the engine plays it.
    func engineItem(_ item: QueueItem) -> EngineItem {
        EngineItem(id: item.id, path: item.path, albumInOrder: albumInOrder(item.id), start: item.start, end: item.range?.end)
    }
}

extension WorkerPool {
    /// Stored playlists' edits, one at a time.
    static let playlists = WorkerPool(name: "playlists", threads: 1)
    /// The sound card's mixer, set in the order the volume changed.
    static let mixer = WorkerPool(name: "mixer", threads: 1)
}

/// The daemon: the player core (queue, transport, commands, Now Playing), the audio sessions,
/// the audio engine and the saved state, held together by one actor that is the control plane
/// every plug-in talks to (`PlayerDaemon+ControlPlane.swift`).
///
/// Nothing here runs on a timer while nothing happens: commands come from plug-ins, engine
/// reports ring a doorbell (`engineAnnounced`), and the only timers are the periodic save
/// while playing and the steps of a held seek (`Timers.swift`). Publications go out only when
/// the core makes one — on start, pause, seek, track change and the like; clients extrapolate
/// `elapsed` from `rate` and `timestamp`.
public actor PlayerDaemon {
    public let settings: DaemonSettings
    let logger: Logger
    var core: PlayerCore
    let engine: PlaybackEngine
    let store: StateStore
    /// Writes the state off the command path; `save()` hands it each new record.
    let writer: StateWriter
    let upcoming: UpcomingTable
    /// ReplayGain as the profile or a client last set it.
    var replayGain: ReplayGainSettings
    /// Where every change goes; plug-ins subscribe to it.
    let feed = ChangeFeed()
    /// The state as of the last flush, for `published`.
    let lastPublished = Mutex(ControlState())
    let clients = Atomic<Int>(1)

    /// Where each artwork id's bytes come from, for `artwork` commands.
    var artworkSources: [String: ArtworkSource] = [:]
    /// Covers at the sizes clients ask for.
    lazy var scaledArtwork = ScaledArtwork(directory: settings.runtimeDirectory + "/art")
    /// Scanning (seekForward/seekBackward held, `core.scanRate`): when the last step was taken.
    var lastScanStep: Double = 0
    var lastSave: Double = 0
    /// Whether a save may be tried now, and why saves fail when they do.
    var saving = SaveSchedule()
    /// Set by `stop`: nothing more is scheduled on the event loop, which stops after the daemon.
    var stopped = false
    /// The engine's number for the latest play or stop: starts it reports with a lower number
    /// describe audio queued before it (a late start of the previous play, a gapless step that
    /// a seek abandoned) and are not passed to the core.
    var latestRequest = 0
    /// The audio sessions: the player's and the clients'.
    var book = SessionBook()
    /// The sessions other programs' clients speak for (`LinkCommand`).
    var links = LinkBook()
    /// The ignition went off while playing: it plays again when the ignition comes back.
    var pausedByIgnition = false
    var underrunLog: UnderrunLog
    /// What has changed since the last `flush()`, and what subscribers last saw.
    var changes = PendingChanges()
    var timer: Scheduled<Void>?
    /// Where the timers run: the daemon's event loop.
    let timerLoop: any EventLoop
    var timerDeadline: Double?
    var started = false
    /// The music library's index; nil without a music directory, or when it cannot be used.
    let library: MusicIndex?
    /// The library's unmounted directories as last seen.
    var lastUnavailable: [String] = []
    /// The http(s) item whose stream last reported, and what it said.
    var radio: RadioItem?

    /// Fails when the state directory is unusable; the error says which. `notify` is rung by
    /// the engine's threads when they have something to tell; timers run on `loop`.
    public init(settings: DaemonSettings, logger: Logger, loop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next(),
                notify: @escaping @Sendable () -> Void = {}) throws {
        timerLoop = loop
        self.settings = settings
        self.logger = logger
        var core = PlayerCore(preferredSkipInterval: settings.skipForwardSeconds,
                              previousRestartThreshold: settings.previousRestartsAfterSeconds)
        core.preferredSkipBackwardInterval = settings.skipBackwardSeconds
        self.core = core
        store = try StateStore(directory: settings.stateDirectory)
        writer = StateWriter(store: store, settle: Self.saveSettleSeconds, notify: notify)
        let table = UpcomingTable()
        upcoming = table
        var playback = settings.playback
        playback.volumePercent = settings.mixerControl == nil ? settings.initialVolume : 100
        engine = PlaybackEngine(options: playback, notify: notify) { table.after($0) }
        replayGain = settings.profile.player.replayGainSettings
        underrunLog = UnderrunLog(device: playback.device)
        if let index = settings.library {
            do {
                library = try MusicIndex(index, log: PlugInLog(logger), notify: notify)
            } catch {
                logger.error("\(error); the library is off until it is fixed")
                library = nil
            }
        } else {
            library = nil
        }
    }

    static func now() -> Double { monotonicSeconds() }

    // MARK: Life cycle

    /// Starts the engine, opens the player's session and restores the saved state.
    public func start() {
        guard !started else { return }
        started = true
        engine.start()
        openPlayerSession()
        restore()
        engine.setReplayGain(replayGain)
        if settings.scanLibraryOnStart { library?.scan() }
        logger.info("tonearmd ready", metadata: [
            "socket": "\(settings.socketPath)", "device": "\(settings.playback.device)",
            "state": "\(settings.stateDirectory)", "music": "\(settings.musicDirectory ?? "(any)")",
        ])
        flush()
    }

    /// SIGTERM/SIGINT: fade out (at most 50 ms), save, stop the engine, end every subscription.
    public func stop() async {
        stopped = true
        timer?.cancel()
        if core.state == .playing {
            engine.pause()
            let deadline = Self.now() + 0.05
            while !engine.isPausedOrIdle && Self.now() < deadline {
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
        for outcome in writer.finish(record()) { saved(outcome) }
        engine.shutdown()
        library?.stop()
        feed.finish()
        logger.info("tonearmd stopped")
    }

    /// The engine rang: its events into the core, then whatever that changed out to the
    /// subscribers.
    public func engineAnnounced() {
        takeEngineEvents(now: Self.now())
        followLibrary()
        flush()
    }

    /// A medium back: the queue's items on it are no longer passed over.
    func followLibrary() {
        guard let library else { return }
        let unavailable = library.unavailable
        guard unavailable != lastUnavailable else { return }
        let back = lastUnavailable.filter { !unavailable.contains($0) }
        lastUnavailable = unavailable
        guard !back.isEmpty else { return }
        let roots = back.map { $0.isEmpty ? library.root : library.root + "/" + $0 }
        let items = core.queue.filter { item in roots.contains { item.path == $0 || item.path.hasPrefix($0 + "/") } }.map(\.id)
        core.markPlayable(items)
        upcoming.update(core)
        logger.info("back: \(roots.joined(separator: ", ")); \(items.count) queue item\(items.count == 1 ? "" : "s") on it play again")
    }

    /// The unmounted directory (as the library marks it) holding `path`, nil when none does.
    func unmountedMedium(holding path: String) -> String? {
        guard let library else { return nil }
        for relative in library.unavailable {
            let root = relative.isEmpty ? library.root : library.root + "/" + relative
            if path == root || path.hasPrefix(root + "/") { return root }
        }
        return nil
    }

    /// What the engine has to tell, into the core. Snapshots take it first too, so that the
    /// Now Playing they show agrees with the device state beside it.
    func takeEngineEvents(now: Double) {
        for event in engine.nextEvents(now: now) { handle(event, now: now) }
        for outcome in writer.takeOutcomes() { saved(outcome) }
    }

    func handle(_ event: PlaybackEvent, now: Double) {
        switch event {
        case .itemStarted(let start):
            guard start.request >= latestRequest else { return }
            publish(core.engineStartedItem(start.itemID, at: start.position, heardAt: start.heardAt, now: now))
            syncPlayerSession()
            save()
        case .itemFailed(let id, let error):
            var message = error.description
            if let path = core.queue.first(where: { $0.id == id })?.path, let medium = unmountedMedium(holding: path) {
                message = "\(path) is skipped: the medium holding it (\(medium)) is not mounted; it plays again once it is"
            }
            logger.error("\(message)", metadata: ["item": "\(id)"])
            changes.notices.append(.itemFailed(itemID: id, message: message))
            switch error.reason {
            case .truncated, .decodeErrors, .formatChange:
                break  // it played (in part); the engine went on gaplessly with what follows
            default:
                // It never played: the core skips it and says what plays instead.
                apply(core.engineFailedItem(id, now: now))
            }
        case .endOfQueue:
            publish(core.engineReachedEndOfQueue(now: now))
            syncPlayerSession()
            save()
        case .outputInterrupted(let why, let position):
            // Nothing is heard: Now Playing stops the clock where the audio stopped.
            let retry = "\(why); reopening every \(settings.playback.reopenIntervalMilliseconds) ms"
            switch why {
            case .unavailable: logger.error("\(retry)")
            case .disabled: logger.notice("\(why): the device is closed until the output is turned on")
            case .lost, .stalled: logger.warning("\(retry)")
            }
            publish(core.engineOutputStalled(itemID: position?.itemID, at: position?.seconds, now: now))
        case .deviceReopened(let format):
            logger.notice("\(settings.playback.device.hasPrefix("pipe:") ? "pipe" : "ALSA PCM") '\(settings.playback.device)' is back (\(format)); continuing")
        case .outputResumed(let position):
            publish(core.engineOutputResumed(itemID: position?.itemID, at: position?.seconds, now: now))
        case .underruns(let total):
            underrunLog.record(total: total)
            if let line = underrunLog.line(now: now) { logger.warning("\(line)") }
        case .streamFinished(let handle):
            streamFinished(handle)
        case .radio(let itemID, let report):
            radioReported(itemID, report, now: now)
        case .realtimeRefused(let why):
            logger.notice("output thread runs without SCHED_FIFO: \(why) (grant rtprio, e.g. LimitRTPRIO in the service unit)")
        case .memoryLockRefused(let why):
            logger.notice("audio buffers are not locked in memory: \(why) (raise LimitMEMLOCK)")
        case .rewindRefused(let device, let format):
            logger.notice("\(rewindRefusedLine(device: device, format))")
        }
    }

    // MARK: Applying what the core decided

    /// Carries out a command outcome: engine actions in order, then publications.
    func apply(_ outcome: CommandOutcome) {
        for action in outcome.actions { perform(action) }
        publish(outcome.publications)
        syncPlayerSession()
        save()
    }

    func perform(_ action: EngineAction) {
        switch action {
        case .play(let id, let from):
            guard let item = core.queue.first(where: { $0.id == id }) else { return }
            upcoming.update(core)
            latestRequest = engine.play(core.engineItem(item), from: from)
        case .pause:
            engine.pause()
        case .resume:
            engine.resume()
        case .seek(let position):
            guard let id = core.currentItemID, let item = core.queue.first(where: { $0.id == id }) else { return }
            // A seek while paused readies the new place without making a sound.
            latestRequest = engine.play(core.engineItem(item), from: position, resume: core.state == .playing)
        case .stop:
            latestRequest = engine.stop()
        case .setVolume(let percent):
            if let control = settings.mixerControl {
                // The card's mixer, on a thread of its own: the steps reach it in order.
                let (card, logger) = (settings.mixerCard, logger)
                WorkerPool.mixer.submit(for: "player") {
                    do {
                        try MixerControl(card: card, name: control).setVolume(percent: percent)
                    } catch {
                        logger.error("\(error)")
                    }
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

    func publish(_ publications: [NowPlayingPublication]) {
        changes.publications += publications
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
            wasPlaying: core.state == .playing,
            single: core.single.rawValue,
            consume: core.consume,
            replayGain: replayGain.mode.rawValue,
            replayGainPreamp: replayGain.preamp,
            replayGainMissingPreamp: replayGain.missingPreamp,
            outputEnabled: engine.isOutputEnabled
        )
    }

    /// How long a change waits to be saved with those that follow it: a burst of volume steps
    /// is one save, and a power cut loses at most this much.
    static let saveSettleSeconds = 0.25

    /// Hands the state to the writer, unless saves are failing and their back-off has not
    /// passed. `urgent`: written at once (the ignition went off, a timer's save).
    func save(urgent: Bool = false) {
        let now = Self.now()
        guard saving.mayTry(at: now) else { return }
        saving.handedOver()
        lastSave = now
        writer.submit(record(), urgent: urgent, now: now)
    }

    /// How a save went, as the writer tells it: said in the log when it says something new.
    func saved(_ outcome: StateWriter.Outcome) {
        if let reason = outcome.failure {
            if let line = saving.failed(reason, at: outcome.at, directory: store.directory) { logger.error("\(line)") }
        } else if let line = saving.succeeded(at: outcome.at, directory: store.directory) {
            logger.notice("\(line)")
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
            _ = core.setSingle(saved.single.flatMap(SingleMode.init(rawValue:)) ?? .off)
            _ = core.setConsume(saved.consume ?? false)
            if saved.outputEnabled == false {
                engine.setOutputEnabled(false)
                logger.notice("the output stays turned off, as a client left it (tonearm output on, MPD's enableoutput 0)")
            }
            if let mode = saved.replayGain.flatMap(ReplayGainMode.init(rawValue:)) { replayGain.mode = mode }
            if let preamp = saved.replayGainPreamp, ReplayGainSettings.preampRange.contains(preamp) { replayGain.preamp = preamp }
            if let preamp = saved.replayGainMissingPreamp, ReplayGainSettings.preampRange.contains(preamp) {
                replayGain.missingPreamp = preamp
            }
            var items: [QueueItem] = []
            var indexMap: [Int: Int] = [:]  // saved index → restored index
            for (index, path) in saved.queue.enumerated() {
                if PlaybackEngine.isStreamURL(path) {
                    indexMap[index] = items.count
                    items.append(QueueItem(id: items.count + 1, path: path, metadata: TrackMetadata(isLiveStream: true)))
                    continue
                }
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

    /// A scanned track's metadata with its cover, whose source is remembered for the clients
    /// that ask for the picture.
    func metadata(for track: LibraryTrack) -> TrackMetadata {
        var metadata = track.metadata
        if let source = track.artwork {
            artworkSources[source.id] = source
            metadata.artwork = Artwork(id: source.id, mimeType: source.mimeType, width: source.width ?? 0,
                                       height: source.height ?? 0, byteCount: source.byteCount)
        }
        return metadata
    }
}
