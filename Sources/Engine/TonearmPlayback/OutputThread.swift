import Synchronization
import TonearmALSA
import TonearmAudio
import TonearmSystem

/// The output thread ("tonearm-output"): the mixer and the ALSA device.
///
/// It owns the device. Each turn of its loop takes the cuts the producers published, opens the
/// device when something wants it, decides what the next period holds — the player, sessions'
/// streams, or nothing, and then it sleeps until something may play — takes back what the
/// device holds when the mix has changed since it was rendered, and renders and writes a
/// period; then it publishes what the device holds and settles what the write left to do.
/// Between the marked lines it makes no allocation, takes no lock and makes no system call but
/// the PCM's wait and write, and the read that takes its doorbell's wake-up.
///
/// On a device that can rewind (`bufferMilliseconds`), a change to the mix — a gain target, a
/// stream that starts, a seek — wakes it from its wait on the device. Between two periods its
/// `Rewinder` takes back what the device has not played beyond the guard and moves the mixer
/// back to where it rendered that from (`Mixer.rewind`); the loop renders it again. The buffer
/// can then be large, and the thread wakes a few times a second, while a command is still
/// heard within the guard.
///
/// It takes no lock anywhere. What it is told comes through the rings, atomics and its doorbell;
/// what happens to it goes out as events, in order (`OutputEventQueue`), its state through
/// atomics, `currentFormat` (sequence-locked with this thread its only writer, so it never
/// waits) and `interruptions` (a hand-off, why it is not heard), then `announce`. Opening a
/// device, draining it and wording an interruption allocate, and alsa-lib and malloc lock inside;
/// none of that is on the render path.
struct OutputThread {
    private let engine: PlaybackEngine
    private let ring: SPSCRing
    private let mixer: Mixer
    private var link = Link.closed
    /// What the device should be opened as.
    private var request: OutputRequest?
    private var period: Period
    private var mix = Mix.silent
    private var hearing = Hearing.heard
    /// What the device has not played, taken back when the mix changes.
    private var rewinder: Rewinder
    /// Frames in the device buffer still to play, as of the last write.
    private var deviceFill = 0
    /// Frames written since the device last started (opened, or recovered from an underrun).
    private var writtenSinceStart = 0
    /// Whether the device plays faster than real time (`null`, a file): started, it has taken
    /// everything written by the time there is room again, and no underrun was reported.
    private var unpaced = false
    /// The oldest item start not yet reached, and whether one has been reached and not yet
    /// announced.
    private var nextStart: QueuedStart?
    private var startReached = false
    /// The start of the item heard now, for its ReplayGain level.
    private var heardStart: QueuedStart?
    /// ReplayGain as last read, and the generation it was read at.
    private var replayGain = ReplayGainSettings()
    private var replayGainSeen = 0
    /// The last end of queue (`endsToTell`) this thread announced; mirrors `outputIdle`.
    private var toldEnd = 0
    private var reportedIdle = true
    /// Whether locking the render path's memory was refused, and told (once).
    private var memoryLockRefused = false

    /// The device as this thread holds it.
    private enum Link {
        /// Not opened yet, or closed for a new format.
        case closed
        case open(any OutputDevice, DeviceFormat)
        /// Gone (an error, or no period for the stall timeout); reopened every reopen interval.
        case lost

        var device: (any OutputDevice)? { if case .open(let device, _) = self { device } else { nil } }
        var format: DeviceFormat? { if case .open(_, let format) = self { format } else { nil } }
    }

    /// What the periods being written hold.
    private enum Mix: Equatable {
        /// Nothing: the device idles (paused and faded out, at the end of the queue, or before
        /// anything played).
        case silent
        /// The player, with any sessions' streams.
        case player
        /// Sessions' streams alone: the player is paused or at its end (`playerIdle`), or its
        /// decoder is behind.
        case streamsOnly(playerIdle: Bool)

        var playerIdle: Bool {
            switch self {
            case .silent: true
            case .player: false
            case .streamsOnly(let idle): idle
            }
        }
    }

    /// Whether what is written is heard: not since a loss or a failed open, until the reopened
    /// device has taken enough frames to start (it starts once its buffer is full).
    private enum Hearing {
        case heard
        case interrupted(writtenSinceOpen: Int)
    }

    /// The period being written: rendered once the device has room, written until ALSA has
    /// taken all of it.
    private struct Period {
        var buffer: UnsafeMutableRawPointer
        var bytes: Int
        /// Frames rendered, not yet taken; the first is at `offset`.
        var pending = 0
        var offset = 0
    }

    /// What a write leaves to do once off the render path.
    private enum Aftermath {
        case none
        /// Frames flow again after an interruption.
        case resumed
        /// The device ran dry and was prepared again: what it held is gone.
        case underrun
        /// The device went: 0 for a stall, or the error.
        case lost(Int32)
    }

    init(engine: PlaybackEngine) {
        self.engine = engine
        ring = engine.ring
        mixer = engine.mixer
        rewinder = Rewinder(mixer: engine.mixer, guardMilliseconds: engine.options.rewindGuardMilliseconds)
        let bytes = engine.options.periodFrames * 8 * 4
        period = Period(buffer: .allocate(byteCount: bytes, alignment: 16), bytes: bytes)
    }

    mutating func run() {
        defer { period.buffer.deallocate() }
        let refused = requestRealtimePriority(engine.options.realtimePriority)
        if refused > 0 { engine.tell(.realtimeRefused(refused)) }
        lockMemory()

        while !engine.stopRequested.load(ordering: .relaxed) {
            takeReplayGain()
            takeStreamCuts()
            if takePlayerCut() { continue }
            guard engine.outputEnabled.load(ordering: .acquiring) else {
                standBy()
                continue
            }
            if openDeviceIfWanted() { continue }
            guard let (device, format) = nextPeriod() else { continue }
            // What the device holds is rendered again when the mix has changed since.
            takeMixChange(device, format)
            if rewinder.cutWaiting {
                // A seek's old audio plays on until its new audio is there to take its place.
                awaitSeekAudio(device, format)
                continue
            }
            // ── Render path begins (see Mixer.render) ──
            guard let outcome = renderAndWrite(device, format) else { continue }
            let aftermath = account(outcome, format)
            // ── Render path ends ──
            if case .wrote = outcome { publishDeviceQueue(device) }
            settle(aftermath, format)
        }
        link.device?.drop()
        link = .closed
        setDeviceState(.closed)
        engine.outputFinished.store(true, ordering: .releasing)
    }

    // MARK: The render path

    /// Once the device has room for a period, renders one (nil when the mixer has nothing) —
    /// what is rendered is written at once, so a change of gain (duck, pause, volume) is heard
    /// one buffer after it is made — and writes what is pending of it.
    @inline(__always)
    private mutating func renderAndWrite(_ device: any OutputDevice, _ format: DeviceFormat) -> PCMDevice.WriteOutcome? {
        let timeout = engine.stallTimeout(format)
        if period.pending == 0 {
            let outcome = device.waitForRoom(format.periodFrames, timeoutMilliseconds: timeout,
                                             wake: engine.outputBell.descriptor)
            if let outcome {
                if outcome == .woken { engine.outputBell.consume() }
                return outcome
            }
            deviceFill = max(0, format.bufferFrames - device.availableFrames)
            unpaced = deviceFill == 0 && writtenSinceStart >= format.bufferFrames
            rewinder.devicePlayed(holding: deviceFill)
            let frames = rewinder.refill(periodLength(format), format)
            period.pending = mixer.render(into: period.buffer, frames: frames)
            period.offset = 0
            if period.pending == 0 { return nil }
        }
        return device.write(period.buffer + period.offset * format.bytesPerFrame, count: period.pending,
                            timeoutMilliseconds: timeout)
    }

    /// A period, cut short where the next item starts while ReplayGain is on, and the start it
    /// begins at taken first: an item's level then changes on its first sample.
    @inline(__always)
    private mutating func periodLength(_ format: DeviceFormat) -> Int {
        guard replayGain.mode != .off, mix == .player else { return format.periodFrames }
        let channels = max(1, format.channels)
        // What is written is read before the starts: the decoder queues an item's start before
        // it writes the item's first sample, so no sample read here has a start not yet seen.
        let readable = ring.readableSamples / channels
        takeReachedStarts()
        guard let start = nextStart?.sample else { return min(format.periodFrames, readable) }
        let ahead = (start - ring.samplesRead) / channels
        return min(format.periodFrames, readable, ahead > 0 ? ahead : Int.max)
    }

    /// Counts what the device took and publishes what is heard: atomics only.
    @inline(__always)
    private mutating func account(_ outcome: PCMDevice.WriteOutcome, _ format: DeviceFormat) -> Aftermath {
        switch outcome {
        case .wrote(let n):
            period.pending -= n
            period.offset += n
            engine.framesWritten.add(n, ordering: .relaxed)
            deviceFill += n
            rewinder.wrote(n)
            writtenSinceStart += n
            // What is heard now: the player's frames read, less those still in the device or
            // not yet written. Periods without the player hold none of its frames.
            let read = ring.samplesRead
            engine.heardSample.store(mix == .player ? read - (deviceFill + period.pending) * format.channels : read,
                                     ordering: .releasing)
            guard case .interrupted(let written) = hearing else { return .none }
            // Heard again once the device has taken enough to start.
            guard written + n >= format.bufferFrames - format.bufferFrames % max(1, format.periodFrames) else {
                hearing = .interrupted(writtenSinceOpen: written + n)
                return .none
            }
            hearing = .heard
            engine.outputInterrupted.store(false, ordering: .releasing)
            return .resumed
        case .recoveredUnderrun:
            writtenSinceStart = 0
            engine.underrunCount.add(1, ordering: .relaxed)
            return .underrun
        case .woken:
            return .none
        case .stalled:
            return .lost(0)
        case .failed(let code):
            return .lost(code)
        }
    }

    // MARK: Between two periods

    /// Between two periods on a device that rewinds: its rehearsal once it is full, then a change
    /// to the mix since the last period (or a seek's new audio, once it is there) rendered again
    /// over what the device has not played (`Rewinder`).
    private mutating func takeMixChange(_ device: any OutputDevice, _ format: DeviceFormat) {
        guard rewinder.isOn, period.pending == 0 else { return }
        if rewinder.rehearsalDue(writtenSinceStart: writtenSinceStart, format) {
            let taken = rewinder.rehearse(device, format, scratch: period.buffer, heard: heard, paced: !unpaced)
            tookBack(taken, counted: false)
        }
        guard rewinder.takeMixChange(engine.mixGeneration.load(ordering: .acquiring)) else { return }
        if rewinder.cutWaiting && !rewinder.seekAudioReady(device, format, readableSamples: ring.readableSamples,
                                                            queueEnded: engine.queueEnd.load(ordering: .acquiring) != Int.max) {
            return
        }
        switch rewinder.rewind(device, format, heard: heard, paced: !unpaced) {
        case .unchanged: break
        case .tookBack(let frames): tookBack(frames, counted: true)
        case .seekAbandoned: dropDevice(device)
        }
    }

    /// Sleeps, rendering nothing, until a seek's new audio is ready or the device comes near
    /// its lead (the decoder rings when it writes); past the lead, until any of it is there.
    /// Another command ends it too.
    private mutating func awaitSeekAudio(_ device: any OutputDevice, _ format: DeviceFormat) {
        let (left, wanted) = rewinder.seekWait(delay: device.delayFrames() ?? 0, format)
        let ready = { [ring, engine] in
            ring.readableSamples >= wanted || engine.queueEnd.load(ordering: .acquiring) != Int.max
                || ring.reachedCut != nil || engine.stopRequested.load(ordering: .relaxed)
        }
        if left > 0 {
            engine.outputBell.sleep(milliseconds: max(1, left * 1000 / max(1, format.sampleRate)), awaiting: wanted, unless: ready)
        } else {
            engine.outputBell.sleep(awaiting: wanted, unless: ready)
        }
    }

    /// Frames the device took back are frames not written: what it holds and the counts go
    /// down as a write's went up. A rehearsal's is no rewind to count.
    private mutating func tookBack(_ frames: Int?, counted: Bool) {
        guard let frames else { return }
        deviceFill = max(0, deviceFill - frames)
        writtenSinceStart -= frames
        engine.framesWritten.subtract(frames, ordering: .relaxed)
        if counted {
            engine.rewindCount.add(1, ordering: .relaxed)
            engine.rewoundFrames.add(frames, ordering: .relaxed)
        }
    }

    /// Whether what is written is heard (not since a loss or a failed open, until it starts).
    private var heard: Bool {
        if case .heard = hearing { true } else { false }
    }

    /// Stops the device at once, discarding what it holds, and forgets the mixer's history.
    private mutating func dropDevice(_ device: any OutputDevice) {
        device.drop()
        forgetHistory()
    }

    /// Nothing in the device will be rendered again (dropped, drained, played out, underrun):
    /// the rings let go of their history, and the producers waiting for room are rung.
    private mutating func forgetHistory() {
        rewinder.forget(pending: period.pending)
        engine.decoderBell.ring(having: ring.freeSamples)
        var index = 0
        while index < engine.streamSlots.count {
            let slot = engine.streamSlots[index]
            slot.bell.ring(having: slot.ring.freeSamples)
            index += 1
        }
    }

    // MARK: Around it

    /// What the device holds and what is rendered but not yet written, just after a write, and
    /// when: a stream's delay (`streamQueuedFrames`) is the truth at any moment until the next.
    /// The device is asked afresh: `deviceFill` is as of the wait for room, and the device has
    /// played on while the period was rendered (milliseconds for a large one).
    private func publishDeviceQueue(_ device: any OutputDevice) {
        engine.deviceQueuedFrames.store((device.delayFrames() ?? deviceFill) + period.pending, ordering: .relaxed)
        engine.deviceQueuedAt.store(Int(monotonicSeconds() * 1e9), ordering: .releasing)
    }

    /// After a write: a device that went is closed (what was rendered but not taken is kept
    /// and written first to the next), what happened is announced, and the producers waiting
    /// for room in their rings are rung.
    private mutating func settle(_ aftermath: Aftermath, _ format: DeviceFormat) {
        switch aftermath {
        case .none:
            break
        case .resumed:
            engine.tell(.resumed)
        case .underrun:
            forgetHistory()
            engine.tell(.underrun)
        case .lost(let code):
            // Gone (error) or wedged (no period completes): close and reopen later.
            link = .lost
            engine.lossCount.add(1, ordering: .relaxed)
            setDeviceState(.lost)
            let device = engine.options.device
            interrupt(code == 0 ? .stalled(device: device, milliseconds: Int(engine.stallTimeout(format)))
                                : .lost(ALSAError(device: device, operation: "write to", code: code)))
        }
        announceReachedStarts()
        engine.decoderBell.ring(having: ring.freeSamples)
        guard engine.busySlots.load(ordering: .acquiring) > 0 else { return }
        var index = 0
        while index < engine.streamSlots.count {
            let slot = engine.streamSlots[index]
            slot.bell.ring(having: slot.ring.freeSamples)
            index += 1
        }
    }

    /// A new ReplayGain mode or pre-amp: the item heard now ramps to its new level, and the
    /// starts reached from now on take it.
    private mutating func takeReplayGain() {
        let generation = engine.replayGainGeneration.load(ordering: .acquiring)
        guard generation != replayGainSeen, let settings = engine.replayGain.load() else { return }
        replayGainSeen = generation
        replayGain = settings
        engine.playerInput.level = level(heardStart)
    }

    /// A session's new stream clears what its slot's last stream left.
    private func takeStreamCuts() {
        guard engine.busySlots.load(ordering: .acquiring) > 0 else { return }
        var index = 0
        while index < engine.streamSlots.count {
            let slot = engine.streamSlots[index]
            if slot.ring.reachedCut != nil {
                slot.ring.takeCut()
                slot.bell.ring()
            }
            index += 1
        }
    }

    /// A cut: a seek or skip (drop what is queued) or a track boundary (play it out), perhaps
    /// with a new format (reconfigure). Taken even while paused. True when it was taken.
    private mutating func takePlayerCut() -> Bool {
        guard let cut = ring.reachedCut, period.pending == 0 || !cut.playsOut else { return false }
        let reconfigures = cut.format.map { !keepsDevice(for: $0) } ?? false
        if !cut.playsOut {
            // What is queued is abandoned; the new item starts bit-exact at once: where the
            // device can rewind, after the guard once its audio is there, else now.
            period.pending = 0
            if rewinder.isOn && !reconfigures, case .heard = hearing, link.device != nil {
                rewinder.awaitSeekAudio()
            } else if let device = link.device {
                dropDevice(device)
            }
        } else {
            // What is before a boundary is played out, never rendered again without it.
            mixer.markBarrier()
        }
        if let next = cut.format, reconfigures {
            if let device = link.device {
                if cut.playsOut { device.drain(timeoutMilliseconds: drainTimeout(device.format)) }
                link = .closed
            }
            rewinder.closed()
            request = engine.outputRequest(for: next)
            setDeviceState(.closed)
        } else if let next = cut.format {
            request?.stream = next
        }
        // The decoder converts to the device's rate and channels: a cut with a format is taken
        // only once the device is open and they are known.
        guard cut.format == nil || link.device != nil else { return false }
        ring.takeCut()
        if rewinder.cutWaiting, let format = link.format {
            // The new audio is heard once a rewind leaves the device its guard: a start told
            // before then (the read position is at it already) is heard after the guard, not
            // after what the device holds of the old.
            engine.heardSample.store(ring.samplesRead - rewinder.guardFrames(format) * format.channels,
                                     ordering: .releasing)
        }
        engine.decoderBell.ring()
        // The new item's start is taken as its first period is rendered, after the rewind.
        if !rewinder.cutWaiting { takeReachedStarts() }
        return true
    }

    /// Whether the open device plays `next` as it is: the rate and channels it was asked for,
    /// in a sample format that holds every bit of it. So a run of fewer bits after more (a
    /// 16-bit album after a 24-bit one) follows it gaplessly, bit-exact, with no reopen; one of
    /// more bits than the device's format holds reopens it, as a new rate or channel count does.
    private func keepsDevice(for next: StreamFormat) -> Bool {
        guard let asked = request?.stream else { return false }
        if next == asked { return true }
        guard let format = link.format else { return false }
        return next.sampleRate == asked.sampleRate && next.channels == asked.channels
            && next.bitsPerSample <= format.sampleFormat.significantBits
    }

    /// Opens the device when something wants it: the player's format, or, before anything
    /// played, a stream's. True when it tried.
    private mutating func openDeviceIfWanted() -> Bool {
        if request == nil, let wanted = engine.streamDeviceRequest.load() {
            request = engine.outputRequest(for: wanted)
        }
        guard link.device == nil, var wanted = request else { return false }
        do {
            var device = try engine.openOutputDevice(wanted)
            // Whatever unit the buffer was given in, its length and the device decide whether
            // it is rewound.
            let probed = device.format.isRewoundWherePossible && !engine.rewindRefused.load(ordering: .relaxed)
            rewinder.isOn = probed && device.canRewind()
            let refused = probed && !rewinder.isOn
            if probed {
                engine.rewindProbed.store(true, ordering: .releasing)
            }
            if refused {
                engine.rewindRefused.store(true, ordering: .releasing)
            }
            if refused && engine.options.bufferMilliseconds != nil {
                // A buffer in milliseconds is sized for rewinding; without it, the frame sizes,
                // and commands heard a (small) buffer late.
                engine.outputEvents.push(.rewindRefused)
                wanted = engine.outputRequest(for: wanted.stream)
                request = wanted
                device.drop()
                device = try engine.openOutputDevice(wanted)
            }
            adopt(device)
            if refused { engine.announce() }
            if case .interrupted = hearing { engine.tell(.reopened) }
        } catch {
            // The first failure of an outage interrupts; a lost device's failed reopens only go
            // on waiting for it.
            if case .heard = hearing { interrupt(.unavailable(error)) }
            if case .closed = link { setDeviceState(.unavailable) }
            nap()
        }
        return true
    }

    private mutating func adopt(_ device: any OutputDevice) {
        let f = device.format
        if f.periodFrames * f.bytesPerFrame > period.bytes {
            period.buffer.deallocate()
            period.bytes = f.periodFrames * f.bytesPerFrame
            period.buffer = .allocate(byteCount: period.bytes, alignment: 16)
            lockMemory()
        }
        mixer.configure(format: f, maxFrames: f.periodFrames)
        rewinder.opened(f, pending: period.pending)
        link = .open(device, f)
        writtenSinceStart = 0
        unpaced = false
        engine.currentFormat.store(f)
        engine.deviceRate.store(f.sampleRate, ordering: .relaxed)
        engine.deviceChannels.store(f.channels, ordering: .relaxed)
        engine.deviceGeneration.add(1, ordering: .releasing)
        setDeviceState(.open)
        if case .interrupted = hearing { hearing = .interrupted(writtenSinceOpen: 0) }
        // Streams waiting for a device convert for this one.
        for slot in engine.streamSlots { slot.bell.ring() }
    }

    /// Decides what the next period holds, and returns the device to write it to; nil when
    /// there is nothing to write now (the thread slept, or waited for the decoder).
    private mutating func nextPeriod() -> (any OutputDevice, DeviceFormat)? {
        let pauseWanted = engine.pauseRequested.load(ordering: .acquiring)
        engine.playerInput.gain = pauseWanted ? 0 : Float(bitPattern: engine.volumeBits.load(ordering: .relaxed))

        var next = mix
        if period.pending == 0 {
            guard let chosen = chooseMix(pauseWanted: pauseWanted) else { return nil }
            next = chosen
            // A disabled primary input lets the mixer render periods of the other inputs.
            engine.playerInput.isEnabled = chosen == .player
        }
        guard case .open(let device, let format) = link else {
            engine.outputBell.sleep(awaiting: 1) { request != nil || engine.streamDeviceRequest.load() != nil }
            return nil
        }
        mix = next
        publishIdle(mix.playerIdle)
        return (device, format)
    }

    /// What the next period holds; nil when it holds nothing: the device idles and the thread
    /// sleeps, or the decoder is behind and the thread waits for it.
    private mutating func chooseMix(pauseWanted: Bool) -> Mix? {
        let (playerSilent, streamsWant) = demand(pauseWanted: pauseWanted)
        if playerSilent && !streamsWant {
            idle(pauseWanted: pauseWanted)
            return nil
        }
        if playerSilent { return .streamsOnly(playerIdle: true) }
        guard ring.readableSamples == 0 else { return .player }
        // The decoder is behind (start-up, a seek, a slow disk): wait for it, or let the
        // sessions' streams go on without the player until it catches up. On a device that
        // plays faster than real time, the decoder is always behind and nobody hears a delay:
        // wait until it is half a read-ahead ahead (or ends, or a command comes) rather than
        // wake for every block it writes.
        guard streamsWant else {
            let wanted = unpaced ? ring.capacity / 2 : 1
            if !unpaced, engine.readingLive.load(ordering: .acquiring), let device = link.device,
               let delay = device.delayFrames(), delay > 0 {
                waitOrPlayOut(device, delay: delay)
                return nil
            }
            engine.outputBell.sleep(awaiting: wanted) { decoderCaughtUp(wanted) }
            return nil
        }
        return .streamsOnly(playerIdle: mix.playerIdle)
    }

    /// A station's decoder is behind while the device plays (its network gone): the thread
    /// waits for it until the device is down to its last period, then lets that play out and
    /// stops the device, rather than let it run dry — an underrun, which some hardware fills by
    /// repeating what it last played. The next audio starts it again. (A file's decoder is
    /// behind for moments, a slow disk: the device runs on, and recovers if it ran dry.)
    private mutating func waitOrPlayOut(_ device: any OutputDevice, delay: Int) {
        let format = device.format
        let rate = max(1, format.sampleRate)
        let last = max(1, format.periodFrames)
        if delay > last {
            engine.outputBell.sleep(milliseconds: max(1, (delay - last) * 1000 / rate), awaiting: 1) { decoderCaughtUp(1) }
            return
        }
        guard !decoderCaughtUp(1) else { return }
        device.drain(timeoutMilliseconds: 2 * last * 1000 / rate + 10)
        forgetHistory()
    }

    /// Whether the decoder has `wanted` samples in the ring, or something else is to be done.
    private func decoderCaughtUp(_ wanted: Int) -> Bool {
        ring.readableSamples >= wanted || ring.reachedCut != nil
            || engine.queueEnd.load(ordering: .acquiring) != Int.max || streamsWantOutput()
    }

    /// Whether the player is silent (paused, once faded out, or at the end of the queue) and
    /// whether sessions' streams have audio to play now.
    private func demand(pauseWanted: Bool) -> (playerSilent: Bool, streamsWant: Bool) {
        let atEnd = ring.readableSamples == 0 && ring.samplesRead >= engine.queueEnd.load(ordering: .acquiring)
        let playerSilent = (pauseWanted && (mix == .silent || mixer.isSilent(engine.playerInput))) || atEnd
        return (playerSilent, streamsWantOutput())
    }

    /// Nothing to play: what the device holds plays out (a pause's fade, the end of the queue, a
    /// session's stream) unless something comes to play first, then the device idles and the
    /// thread sleeps until something may play.
    private mutating func idle(pauseWanted: Bool) {
        if mix != .silent, let device = link.device {
            if rewinder.isOn && pauseWanted && mix == .player, let format = link.format,
               let frames = rewinder.takeBack(device, format, silent: true, heard: heard, paced: !unpaced) {
                tookBack(frames, counted: true)
                // What was read after the fade is read again on resume: it plays on from
                // where it went silent, not a period later.
                engine.heardSample.store(ring.samplesRead - deviceFill * format.channels, ordering: .releasing)
            }
            if playOut(device) { return }
            dropDevice(device)
        }
        mix = .silent
        publishIdle(true)
        engine.outputBell.sleep(awaiting: 1) {
            // No period follows to hold a start reached (a seek while paused): tell it now.
            announceReachedStarts()
            takeStreamCuts()
            let (playerSilent, streamsWant) = demand(pauseWanted: engine.pauseRequested.load(ordering: .acquiring))
            return !playerSilent || streamsWant || engine.stopRequested.load(ordering: .relaxed)
        }
    }

    /// Lets the device play what it holds, sleeping meanwhile; true when something came to play
    /// first (a resume, a new item, a stream) while the device still holds enough to write
    /// after: it plays on, and what follows is rendered after what it holds — or over it, by a
    /// rewind. False when it played out, or nearly: it is to be dropped, not to run dry just
    /// as it is written to again.
    private mutating func playOut(_ device: any OutputDevice) -> Bool {
        device.startIfPrepared()
        let rate = max(1, device.format.sampleRate)
        // At most a buffer and a little more: a device whose delay does not go down (some
        // plugins) is dropped then, as one that has played out.
        let deadline = monotonicSeconds() + Double(device.format.bufferFrames) / Double(rate) + 0.05
        while monotonicSeconds() < deadline, let delay = device.delayFrames(), delay > 0 {
            var came = false
            engine.outputBell.sleep(milliseconds: max(1, delay * 1000 / rate)) {
                // A stream's producer may be waiting for its cut to be taken.
                takeStreamCuts()
                let (playerSilent, streamsWant) = demand(pauseWanted: engine.pauseRequested.load(ordering: .acquiring))
                came = !playerSilent || streamsWant || engine.stopRequested.load(ordering: .relaxed)
                    || ring.reachedCut != nil || !engine.outputEnabled.load(ordering: .acquiring)
                return came
            }
            if came { return (device.delayFrames() ?? 0) > rewinder.seekLeadFrames(device.format) }
        }
        return false
    }

    /// The output is turned off: the device is closed (what was rendered and not taken waits
    /// for the next), nothing is heard, and the thread sleeps until it is turned on.
    private mutating func standBy() {
        if let device = link.device {
            dropDevice(device)
            link = .closed
            setDeviceState(.closed)
            mix = .silent
            publishIdle(true)
        }
        if case .heard = hearing { interrupt(.disabled(device: engine.options.device)) }
        announceReachedStarts()
        engine.outputBell.sleep(awaiting: 1) {
            engine.outputEnabled.load(ordering: .acquiring) || engine.stopRequested.load(ordering: .relaxed)
        }
    }

    /// Waits a reopen interval; a shutdown ends it.
    private mutating func nap() {
        // No period follows for a while to hold a start reached (a skip while the device is gone).
        announceReachedStarts()
        let until = monotonicSeconds() + Double(engine.options.reopenIntervalMilliseconds) / 1000
        while !engine.stopRequested.load(ordering: .relaxed) {
            let left = Int(((until - monotonicSeconds()) * 1000).rounded(.up))
            guard left > 0 else { return }
            engine.outputBell.sleep(milliseconds: left) { engine.stopRequested.load(ordering: .relaxed) }
        }
    }

    /// The output stops being heard.
    private mutating func interrupt(_ why: OutputInterruption) {
        hearing = .interrupted(writtenSinceOpen: 0)
        engine.interruptions.give(why)
        engine.outputInterrupted.store(true, ordering: .releasing)
        engine.tell(.interrupted)
    }

    /// Whether the player is idle (paused and faded out, or at the end of its queue), for
    /// `isPausedOrIdle` and the end of queue, which falling idle there announces.
    private mutating func publishIdle(_ idle: Bool) {
        guard idle != reportedIdle else { return }
        reportedIdle = idle
        engine.outputIdle.store(idle, ordering: .releasing)
        guard idle else { return }
        // Against the decoder's check in `endQueue`: one of the two sees the other.
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        let ends = engine.endsToTell.load(ordering: .acquiring)
        if ends > toldEnd && ring.samplesRead >= engine.queueEnd.load(ordering: .acquiring) {
            toldEnd = ends
            engine.announce()
        }
    }

    /// Takes from the decoder's queue the item starts the reader has reached, and sets the
    /// ReplayGain level of the last. Arithmetic and atomics only: it runs in the render path.
    @inline(__always)
    private mutating func takeReachedStarts() {
        let read = ring.samplesRead
        while true {
            if nextStart == nil { nextStart = engine.starts.pop() }
            guard let start = nextStart, start.sample <= read else { return }
            nextStart = nil
            startReached = true
            // A rewind never takes the reader back over a start whose level it has taken (it is
            // taken where it begins, before the period that holds it is rendered).
            if replayGain.mode != .off { mixer.markBarrier() }
            heardStart = start
            engine.playerInput.snapLevel(level(start))
        }
    }

    /// The ReplayGain level of the item starting at `start`: 1 while off, or with no item.
    private func level(_ start: QueuedStart?) -> Float {
        guard let start else { return 1 }
        return Float(replayGain.scale(start.gain, albumInOrder: start.albumInOrder))
    }

    /// Announces the starts reached: after the write of the period that holds one, so that its
    /// `heardAt` is exact, or when no period follows.
    private mutating func announceReachedStarts() {
        takeReachedStarts()
        guard startReached else { return }
        startReached = false
        engine.announce()
    }

    /// Some session's stream has audio to play now. No lock, no allocation.
    @inline(__always)
    private func streamsWantOutput() -> Bool {
        guard let format = link.format, engine.busySlots.load(ordering: .acquiring) > 0 else { return false }
        let periodSamples = format.periodFrames * format.channels
        var index = 0
        while index < engine.streamSlots.count {
            if engine.streamSlots[index].wantsOutput(periodSamples: periodSamples) { return true }
            index += 1
        }
        return false
    }

    private func setDeviceState(_ state: DeviceStatus.State) {
        let index = switch state {
        case .closed: 0
        case .open: 1
        case .lost: 2
        case .unavailable: 3
        }
        engine.deviceState.store(index, ordering: .relaxed)
    }

    private func drainTimeout(_ format: DeviceFormat) -> Int {
        1000 + format.bufferFrames * 1000 / format.sampleRate
    }

    /// Locks what the render path touches in memory, and says if that was refused. A stream
    /// slot's ring is locked when the slot is first claimed.
    private mutating func lockMemory() {
        let regions = [ring.storageRegion, UnsafeMutableRawBufferPointer(start: period.buffer, count: period.bytes)]
            + mixer.scratchRegions
        let error = engine.lockMemoryRegions(regions)
        guard error > 0, !memoryLockRefused else { return }
        memoryLockRefused = true
        engine.tell(.memoryLockRefused(error))
    }
}

extension PlaybackEngine {
    /// A device that completes no period for this long is taken as gone.
    func stallTimeout(_ format: DeviceFormat) -> Int32 {
        if let t = options.stallTimeoutMilliseconds { return Int32(t) }
        return Int32(max(1000, 4 * format.bufferFrames * 1000 / max(1, format.sampleRate)))
    }
}
