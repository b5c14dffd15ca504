/// The player: queue, transport, remote command center and Now Playing, as one value.
///
/// Nothing here reads a clock or touches a device. The daemon's actor calls a method with `now`
/// and carries out what comes back: `EngineAction`s on the audio engine, in order, and
/// `NowPlayingPublication`s to subscribers.
///
/// Position is kept the way Now Playing keeps it: an anchor (`elapsed` at `timestamp`) and a
/// rate. The anchor moves only when something happens (play, pause, seek, a track change, a scan
/// beginning or ending, an engine report that disagrees), so `nowPlaying` is always exactly the
/// last publication and `position(at:)` never needs a timer.
public struct PlayerCore: Sendable {
    public internal(set) var state: TransportState = .stopped
    /// In the user's order.
    public internal(set) var queue: [QueueItem] = []
    /// Nil only while stopped: before anything was played, or after the current item was removed
    /// with nothing to follow it.
    public internal(set) var currentItemID: Int?
    public internal(set) var repeatMode: RepeatMode = .off
    public internal(set) var shuffle = false
    /// Stop (or, with repeat, repeat) after the current item.
    public internal(set) var single: SingleMode = .off
    /// Items are removed from the queue once they have played.
    public internal(set) var consume = false
    /// Percent, 0...100.
    public internal(set) var volume: Double = 100
    public var preferredSkipForwardInterval: Double
    public var preferredSkipBackwardInterval: Double
    /// `previousTrack` restarts the current item when more than this many seconds have played.
    public let previousRestartThreshold: Double
    /// The last published Now Playing dictionary.
    public internal(set) var nowPlaying = NowPlayingInfo()
    /// ±4 while scanning, nil otherwise.
    public internal(set) var scanRate: Double?
    /// True while the engine says its output is not heard: the device was lost, stopped
    /// responding, or could not be opened. The transport stays as the user left it, but the
    /// rate is 0 while playing, so subscribers stop extrapolating (seed pattern 4: play state is
    /// read from the rate).
    public internal(set) var outputStalled = false

    /// How far the heard start of a `.play` (a play, seek, skip or track command) may disagree
    /// with what was published when it was asked for before it is re-published as a seek.
    /// Published elapsed time is to be within 50 ms of the frames played; a device that opens,
    /// fills and starts quicker than this is not worth a publication.
    public static let playStartTolerance = 0.04
    /// How far a report of the current item that no `.play` asked for may disagree with the
    /// anchor before it is re-published as a seek, and how far back it must be to be a repeat
    /// one restart rather than a report of where the item is. These reports follow the audio
    /// the engine chose itself (a gapless step onto the same item), so only a jump counts.
    public static let engineReportTolerance = 0.5
    /// The rate of `seekForward` (and, negated, `seekBackward`).
    public static let scanSpeed = 4.0

    var anchorElapsed = 0.0
    var anchorTime = 0.0
    /// The permutation of item ids, current first when shuffle was turned on; empty when off.
    var storedShuffleOrder: [Int] = []
    var generator: ShuffleGenerator
    var nextItemID = 1
    /// True while the engine holds the current item (after a `.play`, until a `.stop` or a
    /// failure). Paused after a track change, or after a restore, it holds nothing, and resuming
    /// is a `.play` from the position.
    var engineHoldsItem = false
    /// True while the engine was told to scan.
    var engineScanning = false
    /// The item of the last `.play` the engine has not yet reported. Until it does, other engine
    /// reports are stale (they describe what played before the `.play`) and are ignored.
    var pendingStartItemID: Int?
    /// Items the engine could not play; automatic transitions skip them.
    var unplayableItemIDs: Set<Int> = []
    /// The current item of the last publication, to tell a replacement from a partial update.
    var publishedItemID: Int?

    /// - Parameter randomSeed: seeds the shuffle; nil takes one from the system generator.
    public init(
        preferredSkipInterval: Double = 15, previousRestartThreshold: Double = 3,
        randomSeed: UInt64? = nil
    ) {
        preferredSkipForwardInterval = preferredSkipInterval
        preferredSkipBackwardInterval = preferredSkipInterval
        self.previousRestartThreshold = previousRestartThreshold
        generator = ShuffleGenerator(seed: randomSeed ?? UInt64.random(in: .min ... .max))
    }

    // MARK: Reading

    /// Index of the current item in `queue`.
    public var currentIndex: Int? {
        currentItemID.flatMap { id in queue.firstIndex { $0.id == id } }
    }

    /// Item ids in play order when shuffle is on, to persist; empty when shuffle is off.
    public var shuffleOrder: [Int] { shuffle ? storedShuffleOrder : [] }

    /// Extrapolated elapsed seconds of the current item; 0 without one or while stopped.
    public func position(at now: Double) -> Double {
        guard let item = currentItem else { return 0 }
        return NowPlayingInfo.extrapolate(
            anchorElapsed, rate: effectiveRate, from: anchorTime, to: now,
            duration: item.metadata.duration)
    }

    /// Whether a command would do anything now. Disabled commands answer `.disabled` and change
    /// nothing; the daemon shows them greyed out (seed pattern 2: a command needs a handler AND
    /// `isEnabled`).
    public func isEnabled(_ command: RemoteCommand) -> Bool {
        let hasQueue = !queue.isEmpty
        switch command {
        case .play, .togglePlayPause, .previousTrack, .changeRepeatMode, .changeShuffleMode:
            return hasQueue
        case .pause:
            return state == .playing
        case .stop:
            return state != .stopped
        case .nextTrack:
            guard hasQueue else { return false }
            // Without a current item the command is enabled and answers
            // noActionableNowPlayingItem.
            guard let current = currentItemID else { return true }
            return following(current, wraps: repeatMode == .all) != nil
        case .skipForward, .skipBackward, .seekForward, .seekBackward, .changePlaybackPosition:
            // A live stream has no position to go to (MPNowPlayingInfoPropertyIsLiveStream).
            return currentItemID != nil && state != .stopped && currentItem?.metadata.isLiveStream != true
        }
    }

    public var enabledCommands: [RemoteCommand: Bool] {
        var result: [RemoteCommand: Bool] = [:]
        for command in RemoteCommand.allCases { result[command] = isEnabled(command) }
        return result
    }

    /// Now Playing eligibility: "non-mixable category + one enabled command = eligible" (seed,
    /// core philosophy, WWDC 2022/110338).
    public func eligibility(categoryIsMixable: Bool) -> (eligible: Bool, reason: String) {
        let hasEnabledCommand = RemoteCommand.allCases.contains { isEnabled($0) }
        switch (categoryIsMixable, hasEnabledCommand) {
        case (false, true): return (true, "eligible")
        case (true, true): return (false, "mixable category")
        case (false, false): return (false, "no enabled command")
        case (true, false): return (false, "mixable category, no enabled command")
        }
    }

    /// The item that plays after `itemID` when it ends, by play order, repeat and shuffle,
    /// skipping items the engine could not play; nil at the end. With repeat one it is `itemID`
    /// itself. The daemon pre-queues it for a gapless transition.
    public func upcoming(after itemID: Int) -> QueueItem? {
        if repeatsItem, !unplayableItemIDs.contains(itemID), let item = item(itemID) {
            return item
        }
        // Single without repeat: the queue ends after this item.
        if single != .off { return nil }
        let order = playOrder
        guard let index = order.firstIndex(of: itemID) else { return nil }
        var candidates = Array(order[(index + 1)...])
        if repeatMode == .all { candidates += order[...index] }
        return candidates.first { !unplayableItemIDs.contains($0) }.flatMap(item)
    }

    /// Whether `itemID` plays within an album heard in order: shuffle is off and the item
    /// before or after it in the queue is from the same album. ReplayGain's `auto` then takes
    /// the album's gain, so the album's own dynamics survive.
    public func albumInOrder(_ itemID: Int) -> Bool {
        guard !shuffle, let index = queue.firstIndex(where: { $0.id == itemID }),
            let album = queue[index].metadata.album
        else { return false }
        return (index > 0 && queue[index - 1].metadata.album == album)
            || (index + 1 < queue.count && queue[index + 1].metadata.album == album)
    }

    // MARK: Internals shared by the extensions

    /// The current item plays again when it ends: repeat one, or single with repeat.
    var repeatsItem: Bool { repeatMode == .one || (single != .off && repeatMode == .all) }

    var playOrder: [Int] { shuffle ? storedShuffleOrder : queue.map(\.id) }

    func item(_ id: Int) -> QueueItem? { queue.first { $0.id == id } }

    var currentItem: QueueItem? { currentItemID.flatMap(item) }

    /// The rate the anchor moves at.
    var effectiveRate: Double {
        switch state {
        case .stopped: return 0
        case .paused: return scanRate ?? 0
        case .playing: return outputStalled ? 0 : scanRate ?? 1
        }
    }

    /// The item after `itemID` for `nextTrack`: play order, wrapping only when asked. With one
    /// item and wrapping this is the item itself (a restart).
    func following(_ itemID: Int, wraps: Bool) -> Int? {
        let order = playOrder
        guard let index = order.firstIndex(of: itemID) else { return nil }
        if index + 1 < order.count { return order[index + 1] }
        return wraps ? order.first : nil
    }

    /// The item before `itemID` for `previousTrack`.
    func preceding(_ itemID: Int, wraps: Bool) -> Int? {
        let order = playOrder
        guard let index = order.firstIndex(of: itemID) else { return nil }
        if index > 0 { return order[index - 1] }
        return wraps ? order.last : nil
    }

    var upcomingID: Int? { currentItemID.flatMap { upcoming(after: $0)?.id } }

    /// `.upcomingChanged` when the engine holds an item and the one after it is no longer
    /// `before`.
    func upcomingActions(before: Int?) -> [EngineAction] {
        engineHoldsItem && upcomingID != before ? [.upcomingChanged] : []
    }

    mutating func setAnchor(_ elapsed: Double, now: Double) {
        anchorElapsed = elapsed
        anchorTime = now
    }

    /// Moves the anchor to `now` without moving the position; call before the rate changes.
    mutating func reanchor(now: Double) {
        setAnchor(position(at: now), now: now)
    }

    mutating func startEngine(_ itemID: Int, from position: Double) -> [EngineAction] {
        engineHoldsItem = true
        pendingStartItemID = itemID
        return [.play(itemID: itemID, from: position)]
    }

    mutating func releaseEngine() -> [EngineAction] {
        pendingStartItemID = nil
        guard engineHoldsItem else { return [] }
        engineHoldsItem = false
        return [.stop]
    }

    /// Ends a scan at the scanned position. `keepsPosition` adds a seek there, for when nothing
    /// else will move the engine.
    mutating func endScan(now: Double, keepsPosition: Bool) -> [EngineAction] {
        guard scanRate != nil else { return [] }
        reanchor(now: now)
        scanRate = nil
        guard engineScanning else { return [] }
        engineScanning = false
        return keepsPosition ? [.scan(rate: 0), .seek(to: anchorElapsed)] : [.scan(rate: 0)]
    }

    /// Makes `itemID` current from 0, keeping the transport state: playing plays it, paused and
    /// stopped only select it.
    mutating func changeItem(to itemID: Int, now: Double) -> [EngineAction] {
        var actions = endScan(now: now, keepsPosition: false)
        currentItemID = itemID
        let start = item(itemID)?.start ?? 0
        setAnchor(start, now: now)
        if state == .playing {
            actions += startEngine(itemID, from: start)
        } else {
            actions += releaseEngine()
        }
        return actions
    }

    mutating func stopTransport(now: Double) -> [EngineAction] {
        var actions = endScan(now: now, keepsPosition: false)
        actions += releaseEngine()
        state = .stopped
        setAnchor(0, now: now)
        return actions
    }

    /// The Now Playing dictionary for the state as it is.
    var composedNowPlaying: NowPlayingInfo {
        guard let item = currentItem else {
            return NowPlayingInfo(queueCount: queue.count, timestamp: anchorTime)
        }
        let metadata = item.metadata
        return NowPlayingInfo(
            title: metadata.title, artist: metadata.artist, album: metadata.album,
            albumArtist: metadata.albumArtist, trackNumber: metadata.trackNumber,
            duration: metadata.duration, elapsed: anchorElapsed, rate: effectiveRate,
            defaultRate: 1, queueIndex: playOrder.firstIndex(of: item.id),
            queueCount: queue.count, isLiveStream: metadata.isLiveStream || metadata.duration == nil,
            artwork: metadata.artwork, timestamp: anchorTime)
    }

    /// Publishes the dictionary if it changed, as one publication: a replacement when the
    /// current item changed (or `replaces`), else a merged partial update.
    mutating func publish(_ reason: PublicationReason, replaces: Bool = false)
        -> [NowPlayingPublication]
    {
        let info = composedNowPlaying
        let isReplacement = replaces || publishedItemID != currentItemID
        guard isReplacement || info != nowPlaying else { return [] }
        let artworkChanged = info.artwork?.id != nowPlaying.artwork?.id
        nowPlaying = info
        publishedItemID = currentItemID
        return [
            NowPlayingPublication(
                reason: reason, info: info, isReplacement: isReplacement,
                artworkChanged: artworkChanged)
        ]
    }
}
