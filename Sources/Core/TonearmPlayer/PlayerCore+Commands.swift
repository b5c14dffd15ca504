extension PlayerCore {
    /// Handles a remote command from any source. A disabled command answers `.disabled` and
    /// changes nothing.
    public mutating func handle(_ request: CommandRequest, now: Double) -> CommandOutcome {
        guard isEnabled(request.command) else { return .disabled }
        switch request.command {
        case .play: return play(now: now)
        case .pause: return pause(now: now)
        case .togglePlayPause: return state == .playing ? pause(now: now) : play(now: now)
        case .stop: return stop(now: now)
        case .nextTrack: return nextTrack(now: now)
        case .previousTrack: return previousTrack(now: now)
        case .skipForward:
            return skip(request.interval ?? preferredSkipForwardInterval, forward: true, now: now)
        case .skipBackward:
            return skip(request.interval ?? preferredSkipBackwardInterval, forward: false, now: now)
        case .seekForward: return scan(request.scanning, rate: Self.scanSpeed, now: now)
        case .seekBackward: return scan(request.scanning, rate: -Self.scanSpeed, now: now)
        case .changePlaybackPosition: return changePosition(request.position, now: now)
        case .changeRepeatMode: return changeRepeatMode(request.repeatMode)
        case .changeShuffleMode: return changeShuffleMode(request.shuffle, now: now)
        }
    }

    private mutating func play(now: Double) -> CommandOutcome {
        switch state {
        case .playing:
            // Already playing: a play only brings a scan back to normal speed.
            guard scanRate != nil else { return CommandOutcome(status: .success) }
            let actions = endScan(now: now, keepsPosition: true)
            return CommandOutcome(
                status: .success, actions: actions, publications: publish(.rateChanged))
        case .paused:
            var actions = endScan(now: now, keepsPosition: true)
            reanchor(now: now)
            state = .playing
            if engineHoldsItem {
                actions.append(.resume)
            } else if let current = currentItemID {
                actions += startEngine(current, from: anchorElapsed)
            }
            return CommandOutcome(
                status: .success, actions: actions, publications: publish(.resumed))
        case .stopped:
            // Stopped keeps the current item and starts it again from 0.
            guard let itemID = currentItemID ?? playOrder.first else { return .noActionableItem }
            currentItemID = itemID
            setAnchor(0, now: now)
            state = .playing
            let actions = startEngine(itemID, from: 0)
            return CommandOutcome(
                status: .success, actions: actions, publications: publish(.playbackStarted))
        }
    }

    private mutating func pause(now: Double) -> CommandOutcome {
        var actions = endScan(now: now, keepsPosition: true)
        reanchor(now: now)
        state = .paused
        actions.append(.pause)
        return CommandOutcome(status: .success, actions: actions, publications: publish(.paused))
    }

    private mutating func stop(now: Double) -> CommandOutcome {
        let actions = stopTransport(now: now)
        return CommandOutcome(status: .success, actions: actions, publications: publish(.stopped))
    }

    private mutating func nextTrack(now: Double) -> CommandOutcome {
        guard let current = currentItemID else { return .noActionableItem }
        // Repeat one does not hold `nextTrack` on the item; it only affects `upcoming(after:)`.
        guard let next = following(current, wraps: repeatMode == .all) else { return .disabled }
        // Consume: skipping on counts as having played the item.
        if consume, next != current { forget(current) }
        return moveTo(next, now: now)
    }

    private mutating func previousTrack(now: Double) -> CommandOutcome {
        guard let current = currentItemID else { return .noActionableItem }
        if state != .stopped, position(at: now) > previousRestartThreshold {
            return seek(to: 0, now: now)
        }
        if let previous = preceding(current, wraps: repeatMode == .all), previous != current {
            return moveTo(previous, now: now)
        }
        // At the first item with nothing before it: restart it.
        return state == .stopped ? CommandOutcome(status: .success) : seek(to: 0, now: now)
    }

    /// A track change by command: one full replacement.
    mutating func moveTo(_ itemID: Int, now: Double) -> CommandOutcome {
        let actions = changeItem(to: itemID, now: now)
        return CommandOutcome(
            status: .success, actions: actions,
            publications: publish(.trackChanged, replaces: true))
    }

    /// Skips by `interval` seconds (the carried interval, else the preferred one), clamped at 0.
    private mutating func skip(_ interval: Double, forward: Bool, now: Double) -> CommandOutcome {
        guard interval.isFinite, interval > 0, let item = currentItem else { return .failed }
        let target = position(at: now) + (forward ? interval : -interval)
        if forward, let duration = item.metadata.duration, target >= duration {
            // Past the end: what follows, or the end of the queue.
            if let next = following(item.id, wraps: repeatMode == .all) {
                return moveTo(next, now: now)
            }
            let actions = stopTransport(now: now)
            return CommandOutcome(
                status: .success, actions: actions, publications: publish(.stopped))
        }
        return seek(to: max(target, 0), now: now)
    }

    private mutating func changePosition(_ position: Double?, now: Double) -> CommandOutcome {
        guard let position, position.isFinite, position >= 0, let item = currentItem,
            position <= item.metadata.duration ?? .infinity
        else { return .failed }
        return seek(to: position, now: now)
    }

    mutating func seek(to position: Double, now: Double) -> CommandOutcome {
        var actions = endScan(now: now, keepsPosition: false)
        setAnchor(position, now: now)
        if engineHoldsItem {
            actions.append(.seek(to: position))
            // Until the engine confirms the new place, its reports describe audio queued before
            // the seek (a gapless step into the next item, the old position): stale.
            pendingStartItemID = currentItemID
        }
        return CommandOutcome(status: .success, actions: actions, publications: publish(.seek))
    }

    private mutating func scan(_ phase: ScanPhase?, rate: Double, now: Double) -> CommandOutcome {
        switch phase {
        case nil:
            return .failed
        case .begin:
            guard scanRate != rate else { return CommandOutcome(status: .success) }
            reanchor(now: now)
            scanRate = rate
            var actions: [EngineAction] = []
            if engineHoldsItem {
                engineScanning = true
                actions.append(.scan(rate: rate))
            }
            return CommandOutcome(
                status: .success, actions: actions, publications: publish(.rateChanged))
        case .end:
            // A release without a scan (it was ended by another command) is harmless.
            guard scanRate != nil else { return CommandOutcome(status: .success) }
            let actions = endScan(now: now, keepsPosition: true)
            return CommandOutcome(
                status: .success, actions: actions, publications: publish(.rateChanged))
        }
    }

    private mutating func changeRepeatMode(_ mode: RepeatMode?) -> CommandOutcome {
        guard let mode else { return .failed }
        let before = upcomingID
        repeatMode = mode
        // The repeat mode is not part of Now Playing: nothing to publish.
        return CommandOutcome(status: .success, actions: upcomingActions(before: before))
    }

    private mutating func changeShuffleMode(_ on: Bool?, now: Double) -> CommandOutcome {
        guard let on else { return .failed }
        guard on != shuffle else { return CommandOutcome(status: .success) }
        let before = upcomingID
        shuffle = on
        storedShuffleOrder = on ? makeShuffleOrder(first: currentItemID) : []
        if on { orderShuffleByPriority() }
        return CommandOutcome(
            status: .success, actions: upcomingActions(before: before),
            publications: publish(.queueChanged))
    }

    /// A random permutation of the queue with `first` (the current item) at its head.
    mutating func makeShuffleOrder(first: Int?) -> [Int] {
        var rest = queue.map(\.id).filter { $0 != first }
        generator.shuffle(&rest)
        return (first.map { [$0] } ?? []) + rest
    }
}
