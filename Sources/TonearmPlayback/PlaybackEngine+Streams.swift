import Synchronization
import TonearmAudio
import TonearmFLAC
import TonearmSystem

/// Sessions' streams: files played into mixer slots beside the player (issue 4, "play into a
/// session a file"). The control plane calls these from any thread.
extension PlaybackEngine {
    /// Starts playing the FLAC file at `path` in a free slot, at `gain` (volume) and `fade`;
    /// `fade: 0` then `setStream(_:duck:fade: 1)` fades it in. Converted to the device's rate
    /// and channels; when nothing has played yet the device opens at the file's own format.
    public func startStream(path: String, gain: Float = 1, fade: Float = 1) throws(PlaybackError) -> StreamHandle {
        let decoder: FLACDecoder
        do throws(FLACError) {
            decoder = try FLACDecoder(path: path)
        } catch {
            throw .file(error)
        }
        let format = decoder.info.format
        let claimed = streamClaims.withLock { _ -> StreamHandle? in
            guard let slot = streamSlots.first(where: { !$0.busy.load(ordering: .acquiring) }) else { return nil }
            slot.thread?.join()
            slot.busy.store(true, ordering: .relaxed)
            slot.complete.store(false, ordering: .relaxed)
            slot.finished.store(false, ordering: .relaxed)
            slot.stopWanted.store(false, ordering: .relaxed)
            let serial = slot.serial.add(1, ordering: .releasing).newValue
            nonisolated(unsafe) let owned = decoder
            slot.thread = NamedThread(name: "tonearm-stream") { [self] in
                runStream(slot, decoder: owned, gain: gain, fade: fade)
            }
            return StreamHandle(slot: slot.index, serial: serial)
        }
        guard let claimed else { throw .noFreeStreamSlot(path: path, slots: streamSlots.count) }
        streamDeviceRequest.withLock { if $0 == nil { $0 = format } }
        outputWakeup.post()
        return claimed
    }

    /// Fades the stream out (30 ms) and frees its slot.
    public func stopStream(_ handle: StreamHandle) {
        guard let slot = current(handle) else { return }
        slot.stopWanted.store(true, ordering: .releasing)
        slot.input.fade = 0
    }

    /// Ramps the stream's duck and fade factors (nil leaves one as it is).
    public func setStream(_ handle: StreamHandle, duck: Float?, fade: Float?) {
        guard let slot = current(handle) else { return }
        if let duck { slot.input.duckLevel = duck }
        if let fade, !slot.stopWanted.load(ordering: .acquiring) { slot.input.fade = fade }
    }

    /// Ducks the player (1 = not ducked; 0.1778 is −15 dB); ramps.
    public func setPlayerDuck(_ level: Float) { playerInput.duckLevel = level }

    /// Fades the player out (0) or back in (1); ramps. Unlike `pause`, it keeps reading.
    public func setPlayerFade(_ level: Float) { playerInput.fade = level }

    /// True once everything the stream had has been heard (or it was stopped and faded out).
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

    /// The slot still playing `handle`'s stream, nil once the slot has moved on.
    private func current(_ handle: StreamHandle) -> StreamSlot? {
        guard handle.slot >= 1, handle.slot <= streamSlots.count else { return nil }
        let slot = streamSlots[handle.slot - 1]
        return slot.serial.load(ordering: .acquiring) == handle.serial ? slot : nil
    }

    // MARK: Stream producer thread

    private func runStream(_ slot: StreamSlot, decoder: FLACDecoder, gain: Float, fade: Float) {
        let ring = slot.ring
        let source = decoder.info.format
        var converter: StreamConverter?
        var convertedFor = 0  // the device generation `converter` converts for
        var pending = UnsafeBufferPointer<Int32>(start: nil, count: 0)
        var decoded = false
        var attached = false

        func stopping() -> Bool {
            stopRequested.load(ordering: .relaxed) || slot.stopWanted.load(ordering: .acquiring)
        }

        /// Drops what the ring holds (the slot's last stream, or audio converted for a device
        /// that has since changed); the output thread takes such a cut at once.
        func clearRing() -> Bool {
            let generation = ring.cutNow(format: nil)
            outputWakeup.post()
            while !ring.cutTaken(generation) {
                if stopping() { return false }
                sleepMilliseconds(2)
            }
            return true
        }

        produce: while !stopping() {
            let generation = deviceGeneration.load(ordering: .acquiring)
            if generation == 0 {
                // The device is not open yet (it opens at this stream's format, or the player's).
                sleepMilliseconds(5)
                continue
            }
            if generation != convertedFor, let conv = converter,
               conv.deviceRate == deviceRate.load(ordering: .acquiring),
               conv.deviceChannels == deviceChannels.load(ordering: .acquiring) {
                convertedFor = generation  // reopened as it was (after a loss): carry on
            }
            if generation != convertedFor {
                guard clearRing() else { break }
                do throws(PlaybackError) {
                    converter = try StreamConverter(source: source, deviceRate: deviceRate.load(ordering: .acquiring),
                                                    deviceChannels: deviceChannels.load(ordering: .acquiring))
                } catch {
                    break
                }
                convertedFor = generation
                pending = UnsafeBufferPointer(start: nil, count: 0)
                if !attached {
                    slot.input.attach(gain: gain, duckLevel: 1, fade: fade)
                    attached = true
                }
            }
            guard let conv = converter else { break }
            if pending.count == 0 {
                if decoded { break }
                do throws(FLACError) {
                    if let block = try decoder.nextBlock() {
                        pending = conv.convert(block)
                    } else {
                        pending = conv.flush()
                        decoded = true
                    }
                } catch {
                    // Corrupt or truncated: what was decoded plays out.
                    decoded = true
                }
                continue
            }
            let n = ring.write(pending, frameSize: conv.deviceChannels)
            pending = UnsafeBufferPointer(rebasing: pending[n...])
            if n > 0 { outputWakeup.post() }
            if pending.count > 0 { sleepMilliseconds(5) }
        }

        if stopping() {
            // Fade out, unless nothing is rendering it any more.
            slot.input.fade = 0
            var waited = 0
            while waited < 200, slot.input.appliedGain != 0, !ring.isEmpty, !stopRequested.load(ordering: .relaxed) {
                sleepMilliseconds(2)
                waited += 2
            }
        } else {
            slot.complete.store(true, ordering: .releasing)
            outputWakeup.post()
            while !ring.isEmpty && !stopping() { sleepMilliseconds(2) }
        }
        slot.input.isEnabled = false
        slot.finished.store(true, ordering: .releasing)
        slot.busy.store(false, ordering: .releasing)
    }
}
