import Synchronization
import TonearmAudio
import TonearmDecoding
import TonearmSystem

/// Sessions' streams played into mixer slots beside the player: a file played into a
/// session, or raw PCM a client sends. The control plane calls these from any
/// thread.
extension PlaybackEngine {
    /// Starts playing the audio file at `path` in a free slot, at `gain` (volume) and `fade`;
    /// `fade: 0` then `setStream(_:duck:fade: 1)` fades it in. Converted to the device's rate
    /// and channels; when nothing has played yet the device opens at the file's own format.
    public func startStream(path: String, gain: Float = 1, fade: Float = 1) throws(PlaybackError) -> StreamHandle {
        let decoder: any AudioDecoder
        do throws(DecodeError) {
            decoder = try Decoders.open(path: path)
        } catch {
            throw .file(error)
        }
        return try claimSlot(for: .file(decoder), naming: "'\(path)'", gain: gain, fade: fade)
    }

    /// Starts a stream of raw PCM in `format` that the control plane feeds (`feedStream`) and
    /// ends (`endStream`); otherwise like a file's stream, `gain`, `fade` and conversion alike.
    /// Rates of 8 to 384 kHz, 1 to 8 channels, 8 to 32 bits; the device opens at `format` when
    /// nothing has played yet. `backlogFrames` bounds what `feedStream` takes ahead of the
    /// producer (2 s by default); `room` is posted each time the producer takes some of it, and
    /// when the stream ends.
    public func startStream(format: StreamFormat, gain: Float = 1, fade: Float = 1, backlogFrames: Int? = nil,
                            room: Wakeup? = nil) throws(PlaybackError) -> StreamHandle {
        if let problem = PCMFeed.problem(with: format) { throw .unsupportedStreamFormat(format, problem: problem) }
        let feed = PCMFeed(format: format, backlogFrames: backlogFrames, room: room)
        return try claimSlot(for: .feed(feed), naming: "raw PCM in \(format)", gain: gain, fade: fade)
    }

    /// Queues interleaved samples in the stream's format, left-justified as the decoders
    /// gives them (a 16-bit sample `s` is `Int32(s) << 16`); `samples.count` must be a whole
    /// number of frames (callers check what clients send). False, taking nothing, while about
    /// 2 s of audio already waits (send again shortly), after `endStream` or `stopStream`, once
    /// the stream is over, or for a file's stream.
    public func feedStream(_ handle: StreamHandle, samples: [Int32]) -> Bool {
        guard let feed = feed(handle), feed.feed(samples) else { return false }
        streamSlots[handle.slot - 1].bell.wake()
        return true
    }

    /// No more samples will come: what was fed plays out, then the stream is finished.
    public func endStream(_ handle: StreamHandle) {
        guard let feed = feed(handle) else { return }
        feed.end()
        streamSlots[handle.slot - 1].bell.wake()
    }

    /// Frames fed but not yet written to the slot's ring (0 for a file's stream), for flow
    /// control: a client keeps it at a second or so.
    public func streamBacklogFrames(_ handle: StreamHandle) -> Int { feed(handle)?.backlogFrames ?? 0 }

    /// Frames `feedStream` takes now without going over the stream's backlog limit (0 once it
    /// has ended).
    public func streamRoomFrames(_ handle: StreamHandle) -> Int { feed(handle)?.roomFrames ?? 0 }

    /// Frames of a raw PCM stream fed but not yet heard, at the stream's rate: its backlog, what
    /// its ring holds, and what the device holds ahead of the listener (so a stream mixed in
    /// less than a device buffer ago counts a little more than it has there). 0 once the
    /// stream has finished.
    public func streamQueuedFrames(_ handle: StreamHandle) -> Int {
        guard let feed = feed(handle), let slot = current(handle) else { return 0 }
        let rate = deviceRate.load(ordering: .acquiring)
        let channels = deviceChannels.load(ordering: .acquiring)
        guard rate > 0, channels > 0 else { return feed.backlogFrames }
        // The block the producer took last is counted where its samples are now: converted and
        // waiting for room, in the ring, or in the device — each frame once.
        let afterFeed = (slot.pendingSamples.load(ordering: .relaxed) + slot.ring.readableSamples) / channels
            + deviceFramesAhead(rate: rate)
        return feed.waitingFrames + afterFeed * feed.format.sampleRate / rate
    }

    /// What the device holds ahead of the listener now: as of the last write, less what it
    /// has played since (a large buffer is written a period at a time, a period apart).
    private func deviceFramesAhead(rate: Int) -> Int {
        let at = deviceQueuedAt.load(ordering: .acquiring)
        let frames = deviceQueuedFrames.load(ordering: .relaxed)
        guard at > 0 else { return frames }
        let played = Int((monotonicSeconds() - Double(at) / 1e9) * Double(rate))
        return max(0, frames - max(0, played))
    }

    /// Fades the stream out (30 ms) and frees its slot; a held stream is freed at once.
    public func stopStream(_ handle: StreamHandle) {
        withStream(handle) { slot in
            slot.stopWanted.store(true, ordering: .releasing)
            slot.input.fade = 0
            slot.feed(serial: handle.serial)?.close()
            slot.bell.wake()
        }
        mixChanged()
    }

    /// Ramps the stream's duck and fade factors (nil leaves one as it is). A stopped or held
    /// stream keeps its fade at 0.
    public func setStream(_ handle: StreamHandle, duck: Float?, fade: Float?) {
        withStream(handle) { slot in
            if let duck { slot.input.duckLevel = duck }
            if let fade, !slot.stopWanted.load(ordering: .acquiring), !slot.holdWanted.load(ordering: .acquiring) {
                slot.input.fade = fade
            }
        }
        mixChanged()
    }

    /// Holds the stream for an interruption: fades it out (30 ms), then the mixer stops reading
    /// it, so what was still to play waits, kept, until `releaseStream`. A held stream does not
    /// finish.
    public func holdStream(_ handle: StreamHandle) {
        withStream(handle) { slot in
            guard !slot.stopWanted.load(ordering: .acquiring) else { return }
            slot.holdWanted.store(true, ordering: .releasing)
            slot.input.fade = 0
            slot.bell.wake()
        }
        mixChanged()
    }

    /// Plays a held stream on from where it stopped, fading it in (fade 1).
    public func releaseStream(_ handle: StreamHandle) {
        withStream(handle) { slot in
            guard slot.holdWanted.load(ordering: .acquiring), !slot.stopWanted.load(ordering: .acquiring) else { return }
            slot.holdWanted.store(false, ordering: .releasing)
            slot.input.fade = 1
            slot.bell.wake()
        }
        mixChanged()
    }

    /// True once a held stream has faded out and the mixer no longer reads it.
    public func isStreamHeld(_ handle: StreamHandle) -> Bool {
        guard let slot = current(handle) else { return false }
        return slot.holdWanted.load(ordering: .acquiring) && slot.held.load(ordering: .acquiring)
    }

    /// Ducks the player (1 = not ducked; 0.1778 is −15 dB); ramps.
    public func setPlayerDuck(_ level: Float) {
        playerInput.duckLevel = level
        mixChanged()
    }

    /// Fades the player out (0) or back in (1); ramps. Unlike `pause`, it keeps reading.
    public func setPlayerFade(_ level: Float) {
        playerInput.fade = level
        mixChanged()
    }

    /// True once everything the stream had has been heard (or it was stopped and faded out); the
    /// engine also announces it (`PlaybackEvent.streamFinished`).
    public func streamFinished(_ handle: StreamHandle) -> Bool {
        guard let slot = current(handle) else { return true }
        return slot.finished.load(ordering: .acquiring)
    }

    /// `volume × duck × fade` as applied to the last frame rendered from mixer input `slot`
    /// (0 is the player).
    public func appliedGain(slot: Int) -> Float {
        slot == 0 ? playerInput.appliedGain : streamSlots[slot - 1].input.appliedGain
    }

    public func appliedGain(_ handle: StreamHandle) -> Float { appliedGain(slot: handle.slot) }

    // MARK: Slots

    /// Claims a free slot for `source` and starts its producer; `stream` names the source in
    /// the error when every slot is busy.
    private func claimSlot(for source: StreamSource, naming stream: String, gain: Float,
                           fade: Float) throws(PlaybackError) -> StreamHandle {
        let format = source.format
        let claimed = streamClaims.withLock { _ -> StreamHandle? in
            guard let slot = streamSlots.first(where: { !$0.busy.load(ordering: .acquiring) }) else { return nil }
            slot.thread?.join()
            if !slot.memoryLocked {
                // A refusal is told once, by the output thread, for the player's own memory.
                slot.memoryLocked = lockMemoryRegions([slot.ring.storageRegion]) == 0
            }
            let feed: PCMFeed? = if case .feed(let feed) = source { feed } else { nil }
            let serial = slot.claim(feed: feed, gain: gain, fade: fade)
            busySlots.add(1, ordering: .releasing)
            // The producer alone uses the source from here on.
            nonisolated(unsafe) let owned = source
            slot.thread = NamedThread(name: "tonearm-stream") { [self] in runStream(slot, source: owned) }
            // Written under the claim lock: one writer at a time.
            if streamDeviceRequest.load() == nil { streamDeviceRequest.store(format) }
            return StreamHandle(slot: slot.index, serial: serial)
        }
        guard let claimed else { throw .noFreeStreamSlot(stream: stream, slots: streamSlots.count) }
        outputBell.wake()
        return claimed
    }

    /// The slot still playing `handle`'s stream, nil once the slot has moved on.
    private func current(_ handle: StreamHandle) -> StreamSlot? {
        guard handle.slot >= 1, handle.slot <= streamSlots.count else { return nil }
        let slot = streamSlots[handle.slot - 1]
        return slot.serial.load(ordering: .acquiring) == handle.serial ? slot : nil
    }

    /// Runs `body` on the slot still playing `handle`'s stream, under the slot's control lock.
    private func withStream(_ handle: StreamHandle, _ body: (StreamSlot) -> Void) {
        guard handle.slot >= 1, handle.slot <= streamSlots.count else { return }
        let slot = streamSlots[handle.slot - 1]
        slot.controls.withLock { _ in
            if slot.serial.load(ordering: .acquiring) == handle.serial { body(slot) }
        }
    }

    /// The PCM feed of `handle`'s stream while it takes samples.
    private func feed(_ handle: StreamHandle) -> PCMFeed? {
        guard handle.slot >= 1, handle.slot <= streamSlots.count else { return nil }
        return streamSlots[handle.slot - 1].feed(serial: handle.serial)
    }

    // MARK: Stream producer thread

    /// A stream's producer ("tonearm-stream"): the producer loop over its source, then, once
    /// all of it is in the ring, the wait until it has been heard (or stopped and faded out).
    private func runStream(_ slot: StreamSlot, source: StreamSource) {
        let ring = slot.ring
        var producer = Producer(ring: ring, bell: slot.bell, output: outputBell)
        // A stream's first samples, and its first after a wait, are mixed in at once.
        producer.audioAfterSilence = { [self] in mixChanged() }
        producer.pendingChanged = { slot.pendingSamples.store($0, ordering: .relaxed) }
        var stream = StreamProduction(engine: self, slot: slot, source: source)
        producer.run(&stream)

        if !stream.stopping {
            // All of it is in the ring: it plays out. A held stream waits, kept, until it is
            // released (or stopped).
            slot.complete.store(true, ordering: .releasing)
            outputBell.wake()
            // Heard to its end once the output has let go of all of it: read, and played (with a
            // large buffer, a rewind may read it again until the device has played it).
            while !stream.stopping && (ring.freeSamples < ring.capacity || stream.isHeld || slot.holdWanted.load(ordering: .acquiring)) {
                stream.followHold()
                // The output rings once it has let go of the ring's last sample.
                producer.sleep(for: stream, room: ring.capacity) {
                    ring.freeSamples == ring.capacity && !stream.isHeld && !slot.holdWanted.load(ordering: .acquiring)
                }
            }
        }
        if stream.stopping {
            // Fade out, unless nothing is rendering it any more.
            slot.input.fade = 0
            var waited = 0
            while waited < 200, !stream.isHeld, slot.input.appliedGain != 0, !ring.isEmpty, !stopRequested.load(ordering: .relaxed) {
                sleepMilliseconds(2)
                waited += 2
            }
        }
        slot.input.isEnabled = false
        slot.dropFeed()
        slot.held.store(false, ordering: .releasing)
        slot.finished.store(true, ordering: .releasing)
        slot.finishedSerial.store(slot.serial.load(ordering: .acquiring), ordering: .releasing)
        slot.busy.store(false, ordering: .releasing)
        busySlots.subtract(1, ordering: .releasing)
        // A feeder waiting for room learns the stream is over.
        if case .feed(let feed) = source { feed.room?.post() }
        announce()
    }
}

/// A stream producer's policy: its source, converted afresh for each device configuration, and
/// the hold an interruption asks for.
private struct StreamProduction: ProducerPolicy {
    let engine: PlaybackEngine
    let slot: StreamSlot
    let source: StreamSource
    /// The device generation the converter converts for.
    var convertedFor = 0
    /// The source has ended and the converter has been flushed.
    var drained = false
    var attached = false
    /// Mirrors `slot.held`.
    var isHeld = false
    /// The applied gain last seen while fading out for a hold, and since when.
    var holdGain = Float.nan
    var holdGainSince = 0.0

    init(engine: PlaybackEngine, slot: StreamSlot, source: StreamSource) {
        self.engine = engine
        self.slot = slot
        self.source = source
    }

    var stopping: Bool {
        engine.stopRequested.load(ordering: .relaxed) || slot.stopWanted.load(ordering: .acquiring)
    }

    /// A stop, a release, or a new device configuration.
    func needsAttention() -> Bool {
        stopping || (isHeld && !slot.holdWanted.load(ordering: .acquiring))
            || engine.deviceGeneration.load(ordering: .acquiring) != convertedFor
    }

    /// While fading out for a hold it watches the applied gain, which nobody rings for.
    var sleepLimit: Int? { slot.holdWanted.load(ordering: .acquiring) && !isHeld ? 2 : nil }

    mutating func attend(_ producer: inout Producer) -> Bool {
        while !stopping {
            followHold()
            let generation = engine.deviceGeneration.load(ordering: .acquiring)
            if generation == 0 {
                // The device is not open yet (it opens at this stream's format, or the player's).
                producer.sleep(for: self) { false }
                continue
            }
            let rate = engine.deviceRate.load(ordering: .acquiring)
            let channels = engine.deviceChannels.load(ordering: .acquiring)
            if generation != convertedFor, let conv = producer.converter, conv.deviceRate == rate, conv.deviceChannels == channels {
                convertedFor = generation  // reopened as it was (after a loss): carry on
            }
            if generation != convertedFor {
                // Drop what the ring holds (the slot's last stream, or audio converted for a
                // device that has since changed); the output, or its mixer, takes such a cut at
                // once.
                guard producer.awaitCut(slot.ring.cutNow(format: nil), afterWrites: true, stopped: { stopping }) else { return false }
                do throws(PlaybackError) {
                    producer.converter = try StreamConverter(source: source.format, deviceRate: rate, deviceChannels: channels,
                                                             quality: engine.options.resampleQuality)
                } catch {
                    return false
                }
                convertedFor = generation
                producer.pending = UnsafeBufferPointer(start: nil, count: 0)
                if !attached {
                    // From the factors as the control plane last set them (a hold included).
                    slot.controls.withLock { _ in
                        let input = slot.input
                        input.attach(gain: input.gain, duckLevel: input.duckLevel, fade: input.fade)
                        // A hold asked since `followHold` looked (it takes this lock too): not
                        // one sample of the stream is read until it is released.
                        if isHeld || slot.holdWanted.load(ordering: .acquiring) { input.isEnabled = false }
                    }
                    attached = true
                }
            }
            return producer.converter != nil
        }
        return false
    }

    mutating func nextBlock() -> SourceBlock {
        drained ? .ended : source.next()
    }

    /// What the source had plays out, a failed file's included (corrupt or truncated: what was
    /// decoded plays); then the resampler's tail.
    mutating func sourceEnded(_ producer: inout Producer, failure: DecodeError?) -> Bool {
        guard !drained, let conv = producer.converter else { return false }
        producer.pending = conv.flush()
        drained = true
        return true
    }

    /// Carries out `holdStream` and `releaseStream` (which set the fade): the input is
    /// disabled once nothing of it sounds, so the ring keeps what is left, and enabled again
    /// on release. The producer meanwhile keeps writing what fits.
    mutating func followHold() {
        guard slot.holdWanted.load(ordering: .acquiring) else {
            holdGain = .nan
            // Held, or released before this thread saw the hold it attached under.
            if isHeld || (attached && !slot.input.isEnabled) {
                if attached { slot.input.isEnabled = true }
                isHeld = false
                slot.held.store(false, ordering: .releasing)
                engine.outputBell.wake()
            }
            return
        }
        guard !isHeld else { return }
        let applied = slot.input.appliedGain
        let now = monotonicSeconds()
        if applied != holdGain {
            holdGain = applied
            holdGainSince = now
        }
        // The mixer publishes the gain every period it renders the input; one that has not
        // moved for a few periods is not being rendered (no stream wants the device, or it
        // is being reopened), so nothing of the stream sounds.
        let periods = 4 * Double(engine.options.periodFrames) / Double(max(8000, engine.deviceRate.load(ordering: .relaxed)))
        let unrendered = now - holdGainSince > max(0.1, periods)
        // Faded out, or nothing left the mixer could read (only this thread adds to it).
        guard !attached || applied == 0 || slot.ring.readableSamples == 0 || unrendered else { return }
        if attached { slot.input.isEnabled = false }
        isHeld = true
        slot.held.store(true, ordering: .releasing)
    }
}

/// Where a stream's audio comes from.
enum StreamSource {
    /// An audio file, decoded block by block.
    case file(any AudioDecoder)
    /// Raw PCM the control plane feeds.
    case feed(PCMFeed)

    var format: StreamFormat {
        switch self {
        case .file(let decoder): decoder.info.format
        case .feed(let feed): feed.format
        }
    }

    /// The next block of interleaved samples (valid until the next call), or why there is none.
    func next() -> SourceBlock {
        switch self {
        case .file(let decoder):
            do throws(DecodeError) {
                guard let block = try decoder.nextBlock() else { return .ended }
                return .samples(block)
            } catch {
                return .failed(error)
            }
        case .feed(let feed):
            return feed.take()
        }
    }
}
