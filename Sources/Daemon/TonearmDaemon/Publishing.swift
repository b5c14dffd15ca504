import TonearmAudio
import TonearmControlPlane
import TonearmPlayback
import TonearmPlayer
import TonearmSession

/// What has changed since the daemon last told its subscribers, and what they were last told
/// of each subsystem, so that a change is published once and a non-change never.
struct PendingChanges {
    var subsystems: Set<Subsystem> = []
    var publications: [NowPlayingPublication] = []
    var notices: [Notice] = []
    var last = Seen()
    /// The queue's version: bumped whenever what the queue holds differs from what was seen.
    var queueVersion = 0
    var queueSeen: [QueueItem] = []
    /// The queue version at which each item last moved or changed (MPD's `plchanges`).
    var itemVersions: [Int: Int] = [:]

    /// The parts of the state compared to find which subsystems changed.
    struct Seen: Equatable {
        var transport: TransportState = .stopped
        var nowPlaying = NowPlayingInfo()
        var enabled: [RemoteCommand: Bool] = [:]
        var volume: Double = -1
        var muted = false
        var repeatMode: RepeatMode = .off
        var shuffle = false
        var single: SingleMode = .off
        var consume = false
        var replayGain = ReplayGainSettings()
        var currentItemID: Int?
        var output = OutputState()
        var library = LibraryState()
        var saveFailure: String?
        var stream: StreamStatus?
        /// The link whose program owns Now Playing, and every link.
        var link: LinkState?
        var links: [LinkState] = []
    }
}

extension PlayerDaemon {
    /// Publishes what changed since the last call, as one batch. Called at the end of every
    /// entry into the actor (a command, an engine announcement, a timer).
    func flush() {
        if core.queue != changes.queueSeen {
            changes.queueVersion += 1
            var versions: [Int: Int] = [:]
            for (index, item) in core.queue.enumerated() {
                let same = index < changes.queueSeen.count && changes.queueSeen[index] == item
                versions[item.id] = same ? changes.itemVersions[item.id] ?? changes.queueVersion : changes.queueVersion
            }
            changes.itemVersions = versions
            changes.queueSeen = core.queue
            changes.subsystems.insert(.queue)
        }
        let seen = changes.last
        let view = nowPlayingView()
        let now = PendingChanges.Seen(
            transport: view.transport, nowPlaying: view.info, enabled: view.enabledCommands, volume: core.volume,
            muted: book.muted, repeatMode: core.repeatMode, shuffle: core.shuffle, single: core.single, consume: core.consume,
            replayGain: replayGain, currentItemID: core.currentItemID,
            output: outputState().withoutCounters, library: libraryState(), saveFailure: saveFailure,
            stream: streamStatus, link: view.link, links: links.states)
        nowPlayingPublications(view, seen: seen)
        if now != seen {
            if now.transport != seen.transport || now.nowPlaying != seen.nowPlaying || now.enabled != seen.enabled
                || now.currentItemID != seen.currentItemID || now.saveFailure != seen.saveFailure || now.link != seen.link
                || now.stream != seen.stream {
                changes.subsystems.insert(.player)
            }
            if now.links != seen.links { changes.subsystems.insert(.sessions) }
            if now.volume != seen.volume || now.muted != seen.muted { changes.subsystems.insert(.mixer) }
            if now.repeatMode != seen.repeatMode || now.shuffle != seen.shuffle || now.single != seen.single
                || now.consume != seen.consume || now.replayGain != seen.replayGain {
                changes.subsystems.insert(.options)
            }
            if now.output != seen.output { changes.subsystems.insert(.output) }
            if now.library != seen.library { changes.subsystems.insert(.library) }
            changes.last = now
        }
        if !changes.publications.isEmpty { changes.subsystems.insert(.player) }
        let batch = ChangeBatch(subsystems: changes.subsystems, publications: changes.publications, notices: changes.notices)
        changes.subsystems = []
        changes.publications = []
        changes.notices = []
        // Before the batch goes out: a subscriber woken by it reads the change in `published`.
        let state = state()
        lastPublished.withLock { $0 = state }
        feed.publish(batch)
        scheduleTimer()
    }

    /// The published state now.
    func state() -> ControlState {
        var state = ControlState()
        let view = nowPlayingView()
        state.transport = view.transport
        state.nowPlaying = view.info
        state.nowPlayingLink = view.link
        state.links = links.states
        state.queue = QueueState(version: changes.queueVersion, items: core.queue, currentItemID: core.currentItemID,
                                 currentIndex: core.currentIndex, itemVersions: changes.itemVersions)
        state.volume = core.volume
        state.muted = book.muted
        state.repeatMode = core.repeatMode
        state.shuffle = core.shuffle
        state.single = core.single
        state.consume = core.consume
        state.replayGain = replayGain
        state.enabledCommands = view.enabledCommands
        let eligibility = core.eligibility(categoryIsMixable: settings.categoryIsMixable)
        state.eligibility = Eligibility(eligible: eligibility.eligible, reason: eligibility.reason)
        state.sessions = sessionsState()
        state.output = outputState()
        state.library = libraryState()
        state.saveFailure = saveFailure
        state.stream = streamStatus
        return state
    }

    /// What `status` and `doctor` say while the state cannot be saved.
    var saveFailure: String? {
        saving.failure.map { "cannot save the player state in \(store.directory): \($0.reason)" }
    }

    func libraryState() -> LibraryState {
        guard let library else { return LibraryState(musicDirectory: settings.musicDirectory) }
        return LibraryState(musicDirectory: settings.musicDirectory, isIndexed: true, scan: library.progress,
                            totals: library.totals, unavailable: library.unavailable)
    }

    func outputState() -> OutputState {
        let device = engine.deviceStatus
        var output = OutputState()
        output.device = device.name
        output.enabled = engine.isOutputEnabled
        output.state = OutputState.DeviceState(rawValue: device.state.rawValue) ?? .closed
        // "device back, starting" from the reopen until frames flow.
        output.heard = device.interruption.map { device.state == .open ? "device back, starting" : $0.waiting } ?? "ok"
        output.error = device.interruption?.description
        output.sampleFormat = device.format?.sampleFormat.rawValue
        output.sampleRate = device.format?.sampleRate
        output.channels = device.format?.channels
        output.periodFrames = device.format?.periodFrames
        output.bufferFrames = device.format?.bufferFrames
        output.underruns = device.underruns
        output.losses = device.losses
        output.reopenIntervalMilliseconds = settings.playback.reopenIntervalMilliseconds
        let rewinds = engine.rewinds
        output.rewinds = rewinds.supported
        output.rewindCount = rewinds.count
        return output
    }

    /// Every session with the gain its output has now.
    func sessionsState() -> SessionsState {
        let reports = book.sessions.map { state in
            let output = book.outputs[state.id] ?? OutputGain(mixes: false)
            let stream = book.streams[state.id]
            let gain: Float
            if state.id == SessionsState.playerSession {
                gain = engine.appliedGain(slot: 0)
            } else if let stream {
                // A held stream is not heard, whatever gain it last sounded at.
                gain = engine.isStreamHeld(stream.handle) ? 0 : engine.appliedGain(stream.handle)
            } else {
                gain = output.linearGain(duckGain: SessionBook.duckLevel)
            }
            let playing: String? = if state.id == SessionsState.playerSession {
                "player"
            } else if let stream {
                stream.pcm.map { "pcm \($0)" } ?? "file"
            } else {
                nil
            }
            return SessionReport(state: state, output: output, gain: gain, stream: playing,
                                 ownsNowPlaying: book.nowPlayingOwner == state.id, name: book.names[state.id])
        }
        return SessionsState(muted: book.muted, nowPlayingOwner: book.nowPlayingOwner, sessions: reports)
    }
}

extension OutputState {
    /// Without the running counts, which change without the output changing.
    var withoutCounters: OutputState {
        var copy = self
        copy.underruns = 0
        copy.rewindCount = 0
        return copy
    }
}
