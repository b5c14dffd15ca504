extension PlayerCore {
    /// Appends items with fresh ids. With shuffle on they are spread at random over what has not
    /// played yet.
    public mutating func add(_ items: [(path: String, metadata: TrackMetadata)], now: Double)
        -> CommandOutcome
    {
        guard !items.isEmpty else { return .noSuchContent }
        let before = upcomingID
        for (path, metadata) in items {
            let id = nextItemID
            nextItemID += 1
            queue.append(QueueItem(id: id, path: path, metadata: metadata))
            if shuffle {
                let start = currentItemID.flatMap { storedShuffleOrder.firstIndex(of: $0) }
                    .map { $0 + 1 } ?? 0
                let slot = start + generator.index(below: storedShuffleOrder.count - start + 1)
                storedShuffleOrder.insert(id, at: slot)
            }
        }
        return CommandOutcome(
            status: .success, actions: upcomingActions(before: before),
            publications: publish(.queueChanged))
    }

    /// Empties the queue and stops.
    /// Plays `itemID` from its start: MPD's `playid`, a tap on a queue row.
    public mutating func playItem(_ itemID: Int, now: Double) -> CommandOutcome {
        guard queue.contains(where: { $0.id == itemID }) else { return CommandOutcome(status: .noSuchContent) }
        state = .playing
        return moveTo(itemID, now: now)
    }

    public mutating func clear(now: Double) -> CommandOutcome {
        guard !queue.isEmpty else { return CommandOutcome(status: .success) }
        let wasStopped = state == .stopped
        let actions = stopTransport(now: now)
        queue = []
        currentItemID = nil
        storedShuffleOrder = []
        unplayableItemIDs = []
        return CommandOutcome(
            status: .success, actions: actions,
            publications: publish(wasStopped ? .queueChanged : .stopped))
    }

    /// Removes an item. Removing the current item moves on to what follows it, in the same
    /// transport state, or stops when nothing follows.
    public mutating func remove(itemID: Int, now: Double) -> CommandOutcome {
        guard let index = queue.firstIndex(where: { $0.id == itemID }) else {
            return .noSuchContent
        }
        guard itemID == currentItemID else {
            let before = upcomingID
            forget(at: index)
            return CommandOutcome(
                status: .success, actions: upcomingActions(before: before),
                publications: publish(.queueChanged))
        }
        let successor = following(itemID, wraps: repeatMode == .all).flatMap {
            $0 == itemID ? nil : $0
        }
        forget(at: index)
        if let successor { return moveTo(successor, now: now) }
        let wasStopped = state == .stopped
        let actions = stopTransport(now: now)
        currentItemID = nil
        return CommandOutcome(
            status: .success, actions: actions,
            publications: publish(wasStopped ? .queueChanged : .stopped))
    }

    private mutating func forget(at index: Int) {
        let id = queue.remove(at: index).id
        storedShuffleOrder.removeAll { $0 == id }
        unplayableItemIDs.remove(id)
    }

    /// Removes an item that is no longer current (consume).
    mutating func forget(_ itemID: Int) {
        guard let index = queue.firstIndex(where: { $0.id == itemID }) else { return }
        forget(at: index)
    }

    /// Puts the user's order of the items in `range` (the whole queue when nil) at random. The
    /// current item, when in the range, goes to the range's start and stays current; the play
    /// order with shuffle on does not change.
    public mutating func shuffleQueue(_ range: Range<Int>?, now: Double) -> CommandOutcome {
        let range = range ?? queue.indices
        guard range.lowerBound >= 0, range.upperBound <= queue.count else { return .failed }
        guard range.count > 1 else { return CommandOutcome(status: .success) }
        let before = upcomingID
        var items = Array(queue[range])
        if let current = currentItemID, let at = items.firstIndex(where: { $0.id == current }) {
            items.swapAt(0, at)
            var rest = Array(items.dropFirst())
            shuffleItems(&rest)
            items = [items[0]] + rest
        } else {
            shuffleItems(&items)
        }
        queue.replaceSubrange(range, with: items)
        return CommandOutcome(
            status: .success, actions: upcomingActions(before: before),
            publications: publish(.queueChanged))
    }

    private mutating func shuffleItems(_ items: inout [QueueItem]) {
        var order = Array(items.indices)
        generator.shuffle(&order)
        items = order.map { items[$0] }
    }

    /// Sets the priority of `itemIDs` (0…255). With shuffle on, what plays after the current
    /// item is ordered by priority, highest first, each priority keeping its shuffled order.
    public mutating func setPriority(_ priority: Int, of itemIDs: [Int], now: Double) -> CommandOutcome {
        guard QueueItem.priorities.contains(priority) else { return .failed }
        let indices = itemIDs.compactMap { id in queue.firstIndex { $0.id == id } }
        guard indices.count == itemIDs.count else { return .noSuchContent }
        let before = upcomingID
        for index in indices { queue[index].priority = priority }
        if shuffle { orderShuffleByPriority() }
        return CommandOutcome(status: .success, actions: upcomingActions(before: before))
    }

    /// The shuffle order after the current item, highest priority first (a stable sort).
    mutating func orderShuffleByPriority() {
        let start = currentItemID.flatMap { storedShuffleOrder.firstIndex(of: $0) }.map { $0 + 1 } ?? 0
        let priority = Dictionary(uniqueKeysWithValues: queue.map { ($0.id, $0.priority) })
        let ahead = storedShuffleOrder[start...].enumerated().sorted { a, b in
            let (pa, pb) = (priority[a.element] ?? 0, priority[b.element] ?? 0)
            return pa != pb ? pa > pb : a.offset < b.offset
        }.map(\.element)
        storedShuffleOrder.replaceSubrange(start..., with: ahead)
    }

    /// Plays only `range` of an item from its next play on (nil: all of it). The current item
    /// cannot be changed while the engine holds it, as in MPD.
    public mutating func setRange(_ range: PlayRange?, of itemID: Int, now: Double) -> CommandOutcome {
        guard let index = queue.firstIndex(where: { $0.id == itemID }) else { return .noSuchContent }
        if let range {
            guard range.start.isFinite, range.start >= 0, range.end.map({ $0.isFinite && $0 > range.start }) ?? true else {
                return .failed
            }
        }
        guard !(itemID == currentItemID && engineHoldsItem) else { return .disabled }
        let before = upcomingID
        queue[index].range = range
        // The item pre-queued to follow may now play another part.
        let actions: [EngineAction] = engineHoldsItem && upcomingID == itemID ? [.upcomingChanged] : upcomingActions(before: before)
        return CommandOutcome(status: .success, actions: actions)
    }

    /// Single: stop (or repeat, with repeat on) after the current item.
    public mutating func setSingle(_ mode: SingleMode) -> CommandOutcome {
        guard mode != single else { return CommandOutcome(status: .success) }
        let before = upcomingID
        single = mode
        return CommandOutcome(status: .success, actions: upcomingActions(before: before))
    }

    /// Consume: items leave the queue once played. The queue ahead is unchanged.
    public mutating func setConsume(_ on: Bool) -> CommandOutcome {
        consume = on
        return CommandOutcome(status: .success)
    }

    /// Moves an item to `index` in the user's order (0..<queue.count). With shuffle on the play
    /// order does not change.
    public mutating func move(itemID: Int, to index: Int, now: Double) -> CommandOutcome {
        guard let from = queue.firstIndex(where: { $0.id == itemID }) else {
            return .noSuchContent
        }
        guard queue.indices.contains(index) else { return .failed }
        guard from != index else { return CommandOutcome(status: .success) }
        let before = upcomingID
        queue.insert(queue.remove(at: from), at: index)
        return CommandOutcome(
            status: .success, actions: upcomingActions(before: before),
            publications: publish(.queueChanged))
    }

    /// Sets the volume, clamped to 0...100. The volume is not part of Now Playing.
    public mutating func setVolume(_ percent: Double, now: Double) -> CommandOutcome {
        guard !percent.isNaN else { return .failed }
        let clamped = min(max(percent, 0), 100)
        guard clamped != volume else { return CommandOutcome(status: .success) }
        volume = clamped
        return CommandOutcome(status: .success, actions: [.setVolume(clamped)])
    }

    /// Restores the state saved before a power loss. The outcome sets the volume and, with
    /// `resumePlaying`, plays the current item from `position`; otherwise the player is paused
    /// there with the engine idle (resuming is then a `.play` from the position). An unknown
    /// `currentItemID` leaves the player stopped; a `shuffleOrder` that is not a permutation of
    /// the queue is replaced by a fresh shuffle. Publishes one full replacement.
    public mutating func restore(
        queue items: [QueueItem], currentItemID: Int?, position: Double, volume: Double,
        repeatMode: RepeatMode, shuffle: Bool, shuffleOrder: [Int]?, resumePlaying: Bool,
        now: Double
    ) -> CommandOutcome {
        var seen = Set<Int>()
        queue = items.filter { seen.insert($0.id).inserted }
        nextItemID = max(nextItemID, (seen.max() ?? 0) + 1)
        self.currentItemID = currentItemID.flatMap { seen.contains($0) ? $0 : nil }
        self.repeatMode = repeatMode
        self.shuffle = shuffle
        scanRate = nil
        engineScanning = false
        engineHoldsItem = false
        pendingStartItemID = nil
        unplayableItemIDs = []
        if shuffle {
            if let shuffleOrder, shuffleOrder.count == seen.count, Set(shuffleOrder) == seen {
                storedShuffleOrder = shuffleOrder
            } else {
                storedShuffleOrder = makeShuffleOrder(first: self.currentItemID)
            }
        } else {
            storedShuffleOrder = []
        }
        if !volume.isNaN { self.volume = min(max(volume, 0), 100) }

        var actions: [EngineAction] = [.setVolume(self.volume)]
        let reason: PublicationReason
        if let item = currentItem {
            let start = position.isFinite ? position : 0
            setAnchor(min(max(start, 0), item.metadata.duration ?? .infinity), now: now)
            if resumePlaying {
                state = .playing
                actions += startEngine(item.id, from: anchorElapsed)
                reason = .playbackStarted
            } else {
                state = .paused
                reason = .paused
            }
        } else {
            state = .stopped
            setAnchor(0, now: now)
            reason = .stopped
        }
        return CommandOutcome(
            status: .success, actions: actions, publications: publish(reason, replaces: true))
    }
}
