import CALSA
import TonearmAudio

#if canImport(Glibc)
import Glibc
#endif

/// What the player would like the device to be.
public struct OutputRequest: Sendable, Equatable {
    public var stream: StreamFormat
    public var periodFrames: Int
    public var bufferFrames: Int

    public init(stream: StreamFormat, periodFrames: Int, bufferFrames: Int) {
        self.stream = stream
        self.periodFrames = periodFrames
        self.bufferFrames = bufferFrames
    }

    /// A buffer of `milliseconds` at the stream's rate, in four periods (`[output] buffer_ms`).
    public init(stream: StreamFormat, bufferMilliseconds milliseconds: Int) {
        let buffer = max(64, stream.sampleRate * milliseconds / 1000)
        self.init(stream: stream, periodFrames: max(16, buffer / 4), bufferFrames: buffer)
    }
}

/// One open ALSA playback PCM, opened non-blocking and configured once.
///
/// Negotiation keeps the source's rate, channel count and a container that holds its bit depth
/// whenever the device takes them; ALSA's own resampler is switched off, so a rate the device
/// lacks comes back as the nearest rate it has and the caller resamples (with libsoxr).
/// One thread uses it at a time: it is handed to the output thread, which then owns it.
public final class PCMDevice: @unchecked Sendable {
    public let name: String
    public let format: DeviceFormat
    private let pcm: OpaquePointer
    /// Frames of room found by the last `waitForRoom` that found enough: what the device buffer
    /// lacked then (`bufferFrames` minus this is what it still had to play, as ALSA's delay is
    /// without the hardware's own FIFO). Read by the owning thread to tell what is heard.
    public private(set) var availableFrames = 0
    /// The PCM's poll descriptors, then one slot for the caller's wake-up descriptor.
    private let pollSlots: UnsafeMutablePointer<pollfd>
    private let pcmDescriptors: Int

    public static let maxChannels = 8

    public init(name: String, request: OutputRequest) throws(ALSAError) {
        self.name = name
        silenceALSADiagnostics()
        var handle: OpaquePointer?
        var rc = snd_pcm_open(&handle, name, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK)
        guard rc == 0, let handle else { throw ALSAError(device: name, operation: "open", code: rc) }
        pcm = handle
        do {
            format = try Self.configure(pcm: handle, name: name, request: request)
        } catch {
            snd_pcm_close(handle)
            throw error
        }
        rc = snd_pcm_prepare(handle)
        if rc < 0 {
            snd_pcm_close(handle)
            throw ALSAError(device: name, operation: "prepare", code: rc)
        }
        let count = max(0, Int(snd_pcm_poll_descriptors_count(handle)))
        pollSlots = .allocate(capacity: count + 1)
        pollSlots.initialize(repeating: pollfd(fd: -1, events: 0, revents: 0), count: count + 1)
        pcmDescriptors = count > 0 ? Int(snd_pcm_poll_descriptors(handle, pollSlots, UInt32(count))) : 0
    }

    deinit {
        snd_pcm_close(pcm)
        pollSlots.deallocate()
    }

    private static func configure(pcm: OpaquePointer, name: String, request: OutputRequest) throws(ALSAError) -> DeviceFormat {
        var hwp: OpaquePointer?
        snd_pcm_hw_params_malloc(&hwp)
        guard let hw = hwp else { throw ALSAError(device: name, operation: "allocate parameters for", code: -ENOMEM) }
        defer { snd_pcm_hw_params_free(hw) }

        func check(_ rc: Int32, _ what: String) throws(ALSAError) {
            if rc < 0 { throw ALSAError(device: name, operation: what, code: rc) }
        }
        try check(snd_pcm_hw_params_any(pcm, hw), "query")
        try check(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "set interleaved access on")
        // Resampling is ours to do, with a real resampler; ALSA's plug would use linear.
        _ = snd_pcm_hw_params_set_rate_resample(pcm, hw, 0)

        let candidates = DeviceSampleFormat.preferenceOrder(forBits: request.stream.bitsPerSample)
        guard let sampleFormat = candidates.first(where: { snd_pcm_hw_params_test_format(pcm, hw, $0.alsa) == 0 }) else {
            throw ALSAError(device: name, operation: "find a supported sample format (S16_LE, S24_3LE, S24_LE, S32_LE, FLOAT_LE) on", code: -EINVAL)
        }
        try check(snd_pcm_hw_params_set_format(pcm, hw, sampleFormat.alsa), "set format \(sampleFormat) on")

        var channels = UInt32(request.stream.channels)
        if snd_pcm_hw_params_test_channels(pcm, hw, channels) != 0 {
            // Prefer stereo, then whatever is nearest: the channel map folds into it.
            channels = snd_pcm_hw_params_test_channels(pcm, hw, 2) == 0 ? 2 : channels
            try check(snd_pcm_hw_params_set_channels_near(pcm, hw, &channels), "set \(request.stream.channels) channels on")
            if channels > UInt32(maxChannels) {
                channels = UInt32(maxChannels)
                try check(snd_pcm_hw_params_set_channels(pcm, hw, channels), "set \(channels) channels on")
            }
        } else {
            try check(snd_pcm_hw_params_set_channels(pcm, hw, channels), "set \(channels) channels on")
        }

        var rate = UInt32(request.stream.sampleRate)
        var dir: Int32 = 0
        try check(snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &dir), "set rate \(request.stream.sampleRate) Hz on")

        var period = snd_pcm_uframes_t(request.periodFrames)
        try check(snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, &dir), "set period of \(request.periodFrames) frames on")
        var bufferSize = snd_pcm_uframes_t(max(request.bufferFrames, Int(period) * 2))
        try check(snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &bufferSize), "set buffer of \(request.bufferFrames) frames on")
        try check(snd_pcm_hw_params(pcm, hw), "apply parameters to")
        snd_pcm_hw_params_get_period_size(hw, &period, &dir)
        snd_pcm_hw_params_get_buffer_size(hw, &bufferSize)

        var swp: OpaquePointer?
        snd_pcm_sw_params_malloc(&swp)
        guard let sw = swp else { throw ALSAError(device: name, operation: "allocate parameters for", code: -ENOMEM) }
        defer { snd_pcm_sw_params_free(sw) }
        try check(snd_pcm_sw_params_current(pcm, sw), "query software parameters of")
        // Start once the buffer is full: the first period cannot underrun while the rest fill.
        try check(snd_pcm_sw_params_set_start_threshold(pcm, sw, bufferSize - (bufferSize % period)), "set start threshold on")
        try check(snd_pcm_sw_params_set_avail_min(pcm, sw, period), "set wake-up threshold on")
        try check(snd_pcm_sw_params(pcm, sw), "apply software parameters to")

        return DeviceFormat(sampleFormat: sampleFormat, sampleRate: Int(rate), channels: Int(channels),
                            periodFrames: Int(period), bufferFrames: Int(bufferSize))
    }

    /// What one write attempt came to.
    public enum WriteOutcome: Equatable {
        /// Frames accepted (possibly fewer than offered).
        case wrote(Int)
        /// An underrun (or suspend) happened and was recovered; nothing written.
        case recoveredUnderrun
        /// No room appeared within the timeout: the device stopped consuming.
        case stalled
        /// The wake-up descriptor became readable before there was room.
        case woken
        /// The device failed with this (negative) code.
        case failed(Int32)
    }

    /// Writes interleaved frames, waiting at most `timeoutMilliseconds` for room. Makes no
    /// allocation and takes no lock: it is called from the render path.
    @inline(__always)
    public func write(_ frames: UnsafeRawPointer, count: Int, timeoutMilliseconds: Int32) -> WriteOutcome {
        let n = snd_pcm_writei(pcm, frames, snd_pcm_uframes_t(count))
        if n >= 0 { return .wrote(Int(n)) }
        let code = Int32(n)
        if code == -EAGAIN {
            let ready = snd_pcm_wait(pcm, timeoutMilliseconds)
            if ready == 0 { return .stalled }
            if ready > 0 { return .wrote(0) }
            return recover(ready)
        }
        return recover(code)
    }

    /// Waits until the device has room for `frames` (nil), so that a period is rendered as
    /// late as possible: a change of gain then reaches the device one buffer after it is made,
    /// not a buffer and a period. `.stalled` when no room came within the timeout; an underrun
    /// is recovered as by `write`.
    /// `wake`, when not -1, is a descriptor that ends the wait when it becomes readable
    /// (`.woken`): the caller's doorbell, for a command that must not wait for the device.
    @inline(__always)
    public func waitForRoom(_ frames: Int, timeoutMilliseconds: Int32, wake: Int32 = -1) -> WriteOutcome? {
        let avail = snd_pcm_avail_update(pcm)
        if avail >= frames {
            availableFrames = Int(avail)
            return nil
        }
        if avail < 0 { return recover(Int32(avail)) }
        if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED {
            // Not started, and less room than a period: what was written (a short period, the
            // decoder's first blocks) stops short of the start threshold, and waiting would
            // wait for ever. The buffer is as full as whole periods make it: start.
            let started = snd_pcm_start(pcm)
            if started < 0 { return recover(started) }
        }
        guard wake >= 0, pcmDescriptors > 0 else {
            let ready = snd_pcm_wait(pcm, timeoutMilliseconds)
            if ready == 0 { return .stalled }
            if ready > 0 {
                // Woken at the wake-up threshold (a period): that much room, to within a period.
                availableFrames = frames
                return nil
            }
            return recover(ready)
        }
        pollSlots[pcmDescriptors] = pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(pollSlots, nfds_t(pcmDescriptors + 1), timeoutMilliseconds)
            if ready == 0 { return .stalled }
            if ready < 0 {
                if errno == EINTR { continue }
                return .failed(-errno)
            }
            if pollSlots[pcmDescriptors].revents != 0 { return .woken }
            var events: UInt16 = 0
            let rc = snd_pcm_poll_descriptors_revents(pcm, pollSlots, UInt32(pcmDescriptors), &events)
            if rc < 0 { return .failed(rc) }
            if events & UInt16(POLLERR) != 0 {
                // An xrun or a suspend; a device gone says so on the next call.
                let state = snd_pcm_state(pcm)
                return recover(state == SND_PCM_STATE_SUSPENDED ? -ESTRPIPE : (state == SND_PCM_STATE_DISCONNECTED ? -ENODEV : -EPIPE))
            }
            if events & UInt16(POLLOUT) != 0 {
                availableFrames = frames
                return nil
            }
        }
    }

    // MARK: Taking back what is written

    /// Frames written and not yet played that the device can give back now (0 when it cannot
    /// rewind at all).
    @inline(__always)
    public func rewindableFrames() -> Int {
        // Where the device is now, not as of the last wake-up.
        _ = snd_pcm_hwsync(pcm)
        return max(0, Int(snd_pcm_rewindable(pcm)))
    }

    /// Moves the write position back by up to `frames` frames; the frames taken back.
    @inline(__always)
    public func rewind(_ frames: Int) -> Int {
        max(0, Int(snd_pcm_rewind(pcm, snd_pcm_uframes_t(frames))))
    }

    /// Moves the write position forward over what is there (after a rewind undone).
    @inline(__always)
    public func forward(_ frames: Int) -> Int {
        max(0, Int(snd_pcm_forward(pcm, snd_pcm_uframes_t(frames))))
    }

    /// Frames written and not yet played; 0 when not running, nil when the device failed.
    public func delayFrames() -> Int? {
        var delay: snd_pcm_sframes_t = 0
        let state = snd_pcm_state(pcm)
        guard state == SND_PCM_STATE_RUNNING || state == SND_PCM_STATE_DRAINING else { return 0 }
        guard snd_pcm_delay(pcm, &delay) == 0 else { return nil }
        return max(0, Int(delay))
    }

    /// The kernel sound card behind the PCM, through whatever plugins; -1 when there is none.
    public var card: Int32 {
        var info: OpaquePointer?
        guard snd_pcm_info_malloc(&info) == 0, let info else { return -1 }
        defer { snd_pcm_info_free(info) }
        return snd_pcm_info(pcm, info) == 0 ? snd_pcm_info_get_card(info) : -1
    }

    /// Starts a device that has frames but fewer than its start threshold.
    public func startIfPrepared() {
        if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED, snd_pcm_avail_update(pcm) < format.bufferFrames {
            snd_pcm_start(pcm)
        }
    }

    /// Whether the device takes back what it has not played: it is a kernel sound card's, and
    /// a frame of silence written is taken back. Before anything else is written, on a device
    /// just opened. A PCM of no card — a sound server's plugin (JACK's, PipeWire's), `null` —
    /// is not rewound: a server takes audio from the buffer in blocks of its own, ahead of
    /// where the plugin says it is (JACK's underran after rewinds that left it 12 ms).
    public func canRewind() -> Bool {
        guard card >= 0 else { return false }
        let silence = [UInt8](repeating: 0, count: format.bytesPerFrame * 64)
        let written = silence.withUnsafeBytes { Int(snd_pcm_writei(pcm, $0.baseAddress, 64)) }
        guard written > 0 else { return false }
        let rewindable = rewindableFrames()
        let taken = rewind(min(written, rewindable))
        let whole = taken == written
        if !whole {
            // Started over: nothing of the probe is left.
            drop()
        }
        return whole
    }

    @inline(__always)
    private func recover(_ code: Int32) -> WriteOutcome {
        if code == -EPIPE || code == -ESTRPIPE || code == -EINTR {
            // A recovery that fails says why (an unplugged device: ENODEV), not the xrun.
            let recovered = snd_pcm_recover(pcm, code, 1)
            return recovered == 0 ? .recoveredUnderrun : .failed(recovered)
        }
        return .failed(code)
    }

    /// Lets what was written play out, for at most `timeoutMilliseconds`.
    public func drain(timeoutMilliseconds: Int) {
        if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED {
            // Fewer frames than the start threshold were written: start explicitly.
            snd_pcm_start(pcm)
        }
        var waited = 0
        while waited < timeoutMilliseconds {
            let state = snd_pcm_state(pcm)
            guard state == SND_PCM_STATE_RUNNING else { break }
            var delay: snd_pcm_sframes_t = 0
            if snd_pcm_delay(pcm, &delay) < 0 || delay <= 0 { break }
            let wait = max(1, min(50, Int(delay) * 1000 / max(1, format.sampleRate)))
            usleep(UInt32(wait * 1000))
            waited += wait
        }
        drop()
    }

    /// Stops at once, discarding what is queued; the device is ready for the next write.
    public func drop() {
        snd_pcm_drop(pcm)
        snd_pcm_prepare(pcm)
    }
}

extension DeviceSampleFormat {
    var alsa: snd_pcm_format_t {
        switch self {
        case .s16LE: SND_PCM_FORMAT_S16_LE
        case .s24_3LE: SND_PCM_FORMAT_S24_3LE
        case .s24LE: SND_PCM_FORMAT_S24_LE
        case .s32LE: SND_PCM_FORMAT_S32_LE
        case .floatLE: SND_PCM_FORMAT_FLOAT_LE
        }
    }
}
