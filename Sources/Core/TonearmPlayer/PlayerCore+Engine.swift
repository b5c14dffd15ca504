extension PlayerCore {
    /// The engine reports that `itemID` is heard from `position` at `heardAt` (the time its first
    /// frame reaches the listener, on the clock of `now`; it may still lie ahead): either a
    /// `.play` took effect, or a gapless transition moved on by itself. `now` is when the report
    /// was collected, which says nothing about when it was heard.
    ///
    /// While a `.play` is outstanding only the report of that item counts; others describe what
    /// played before it and are ignored, as is every report while the engine holds nothing. The
    /// `.play` was published when it was asked for, as if heard at once; its report moves the
    /// anchor to `(position, heardAt)` when that disagrees by more than `playStartTolerance`
    /// (published as a seek): the device took that long to open, fill and start. A report of
    /// another item, with no `.play` outstanding, is a track change: one full replacement,
    /// anchored when it is heard. With repeat one, the current item reported again from near its
    /// start is a new play of it, also a replacement. While scanning, reports of the current
    /// item are the daemon's own steps and change nothing.
    public mutating func engineStartedItem(
        _ itemID: Int, at position: Double, heardAt reportedHeardAt: Double, now: Double
    ) -> [NowPlayingPublication] {
        guard engineHoldsItem, state != .stopped, let item = item(itemID) else { return [] }
        let reported = min(
            max(position.isFinite ? position : 0, 0), item.metadata.duration ?? .infinity)
        let heardAt = reportedHeardAt.isFinite ? reportedHeardAt : now
        if let pending = pendingStartItemID {
            guard pending == itemID else { return [] }
            pendingStartItemID = nil
            unplayableItemIDs.remove(itemID)
            return follow(reported, heardAt: heardAt, tolerance: Self.playStartTolerance)
        }
        unplayableItemIDs.remove(itemID)
        if itemID == currentItemID {
            // While scanning the daemon steps the engine itself; these are its own steps.
            guard scanRate == nil else { return [] }
            let expected = self.position(at: heardAt)
            if repeatsItem, reported + Self.engineReportTolerance < expected {
                setAnchor(reported, now: heardAt)
                // Single oneshot repeats once; what follows is the queue's next item again.
                if single == .oneshot { single = .off }
                return publish(.trackChanged, replaces: true)
            }
            return follow(reported, heardAt: heardAt, tolerance: Self.engineReportTolerance)
        }
        let finished = currentItemID
        currentItemID = itemID
        setAnchor(reported, now: heardAt)
        if consume, let finished, finished != itemID { forget(finished) }
        return publish(.trackChanged, replaces: true)
    }

    /// Moves the anchor to what the engine reports when it disagrees beyond `tolerance`. While
    /// scanning the daemon steps the engine to the anchor, not the other way round.
    private mutating func follow(_ reported: Double, heardAt: Double, tolerance: Double)
        -> [NowPlayingPublication]
    {
        guard scanRate == nil,
            abs(position(at: heardAt) - reported) > tolerance
        else { return [] }
        setAnchor(reported, now: heardAt)
        return publish(.seek)
    }

    /// The engine's output stopped being heard: the device was lost or stopped responding, or
    /// could not be opened when playback wanted it. Nobody paused, so the transport stays as it
    /// is; but while playing, Now Playing is published with rate 0 and the elapsed time actually
    /// heard, so no display runs on through the outage (seed pattern 4: a rate change is
    /// published; consumers extrapolate elapsed + rate × (now − timestamp)).
    ///
    /// `itemID` and `position` are where the engine's output stopped; they set the anchor when
    /// they describe the current item and no `.play` is outstanding. With a `.play` outstanding
    /// nothing of it has been heard, so the anchor stays at the place it starts from.
    public mutating func engineOutputStalled(itemID: Int?, at position: Double?, now: Double)
        -> [NowPlayingPublication]
    {
        guard !outputStalled else { return [] }
        guard state == .playing else {
            // Nothing moves while paused or stopped; the rate stays 0 when playing starts again.
            outputStalled = true
            return []
        }
        if let heard = heardPosition(itemID: itemID, position) {
            setAnchor(heard, now: now)
        } else if pendingStartItemID != nil {
            setAnchor(anchorElapsed, now: now)
        } else {
            reanchor(now: now)
        }
        outputStalled = true
        return publish(.rateChanged)
    }

    /// The engine's output is heard again (the device reopened and frames flow): published with
    /// rate 1 and the elapsed time it carries on from.
    public mutating func engineOutputResumed(itemID: Int?, at position: Double?, now: Double)
        -> [NowPlayingPublication]
    {
        guard outputStalled else { return [] }
        guard state == .playing else {
            outputStalled = false
            return []
        }
        if let heard = heardPosition(itemID: itemID, position) {
            setAnchor(heard, now: now)
        } else {
            reanchor(now: now)
        }
        outputStalled = false
        return publish(.rateChanged)
    }

    /// An engine position that describes the current item as it plays: not while a `.play` is
    /// outstanding (it describes audio queued before it), nor while scanning (the daemon steps
    /// the engine to the anchor). Clamped to the item.
    private func heardPosition(itemID: Int?, _ position: Double?) -> Double? {
        guard engineHoldsItem, pendingStartItemID == nil, scanRate == nil, let itemID,
            itemID == currentItemID, let position, position.isFinite, let item = item(itemID)
        else { return nil }
        return min(max(position, 0), item.metadata.duration ?? .infinity)
    }

    /// The engine played out the last item with nothing queued after it: stopped, keeping the
    /// queue and the current item. Ignored while a `.play` is outstanding (it is stale).
    public mutating func engineReachedEndOfQueue(now: Double) -> [NowPlayingPublication] {
        guard engineHoldsItem, pendingStartItemID == nil, state != .stopped else { return [] }
        scanRate = nil
        engineScanning = false
        engineHoldsItem = false
        state = .stopped
        setAnchor(0, now: now)
        if single == .oneshot { single = .off }
        if consume, let finished = currentItemID {
            // The last item played: it goes, and with it the current item.
            forget(finished)
            currentItemID = nil
        }
        return publish(.stopped)
    }

    /// The engine could not play `itemID` (unreadable, or not a format it plays). Automatic transitions skip
    /// it from now on, until it plays. If it is the current item the player moves on to the next
    /// playable item in the same transport state, or stops; if it was pre-queued, the outcome
    /// says `.upcomingChanged`.
    /// Items that could not be played may play again (the medium holding them is back): they
    /// are no longer passed over.
    public mutating func markPlayable(_ itemIDs: [Int]) {
        for id in itemIDs { unplayableItemIDs.remove(id) }
    }

    public mutating func engineFailedItem(_ itemID: Int, now: Double) -> CommandOutcome {
        guard item(itemID) != nil else { return .noSuchContent }
        let before = upcomingID
        unplayableItemIDs.insert(itemID)
        guard engineHoldsItem, itemID == currentItemID,
            pendingStartItemID == nil || pendingStartItemID == itemID
        else {
            return CommandOutcome(status: .success, actions: upcomingActions(before: before))
        }
        // The engine holds nothing any more.
        var actions = endScan(now: now, keepsPosition: false)
        engineHoldsItem = false
        pendingStartItemID = nil
        if let next = nextPlayable(after: itemID) {
            currentItemID = next
            setAnchor(0, now: now)
            if state == .playing { actions += startEngine(next, from: 0) }
            return CommandOutcome(
                status: .success, actions: actions,
                publications: publish(.trackChanged, replaces: true))
        }
        state = .stopped
        setAnchor(0, now: now)
        actions.append(.stop)
        return CommandOutcome(status: .success, actions: actions, publications: publish(.stopped))
    }

    /// The next item after `itemID` in play order that is not known to be unplayable, wrapping
    /// with repeat all; never `itemID` itself.
    private func nextPlayable(after itemID: Int) -> Int? {
        let order = playOrder
        guard let index = order.firstIndex(of: itemID) else { return nil }
        var candidates = Array(order[(index + 1)...])
        if repeatMode == .all { candidates += order[..<index] }
        return candidates.first { !unplayableItemIDs.contains($0) }
    }

    /// New metadata for an item (tags read late, artwork resolved). For the current item this is
    /// one merged partial update: `.artworkChanged` when only the artwork changed, else
    /// `.metadataChanged`. Nothing is published for other items.
    public mutating func updateMetadata(itemID: Int, _ metadata: TrackMetadata, now: Double)
        -> [NowPlayingPublication]
    {
        guard let index = queue.firstIndex(where: { $0.id == itemID }) else { return [] }
        let old = queue[index].metadata
        guard old != metadata else { return [] }
        let isCurrent = itemID == currentItemID
        let elapsed = isCurrent && old.duration != metadata.duration ? position(at: now) : nil
        queue[index].metadata = metadata
        guard isCurrent else { return [] }
        if let elapsed {
            // A new duration moves the clamp: re-anchor so `elapsed` stays within it.
            setAnchor(min(elapsed, metadata.duration ?? .infinity), now: now)
        }
        var withOldArtwork = metadata
        withOldArtwork.artwork = old.artwork
        let onlyArtwork = withOldArtwork == old
        return publish(onlyArtwork ? .artworkChanged : .metadataChanged)
    }
}
