import Synchronization
import TonearmALSA
import TonearmAudio
import TonearmFLAC

/// Settings of the playback engine; the CLI and the board profile fill them.
public struct PlaybackOptions: Sendable {
    /// ALSA PCM name: `default`, `hw:CARD=x,DEV=0`, `plughw:…`, or one from an ALSA config.
    public var device = "default"
    /// Frames per ALSA period. 256 frames at 48 kHz is 5.3 ms: low latency, easy for a Pi.
    public var periodFrames = 256
    /// Frames in the ALSA buffer (4 periods by default).
    public var bufferFrames = 1024
    /// Software volume in percent of full scale (100 = unity, bit-perfect).
    public var volumePercent: Double = 100
    /// How far the decoder runs ahead of the output, in seconds of audio.
    public var readAheadSeconds: Double = 2
    /// Pause between attempts to reopen a device that went away.
    public var reopenIntervalMilliseconds = 500
    /// A device that completes no period for this long is treated as gone; nil means four
    /// buffer lengths, and never less than a second.
    public var stallTimeoutMilliseconds: Int?
    /// SCHED_FIFO priority asked for by the output thread.
    public var realtimePriority: Int32 = 70

    public init() {}
}

/// A track reaching the output, as the control plane sees it.
public struct TrackStart: Sendable {
    public var index: Int
    public var info: TrackInfo
    /// First frame of the track that plays (non-zero after a start offset).
    public var firstFrame: Int
    /// Ring sample index at which the track's first sample sits.
    public var ringSample: Int
    /// The device configuration the track plays through.
    public var device: DeviceFormat
}

/// Something the control plane should tell the user or react to.
public enum PlaybackEvent: Sendable {
    case trackStarted(TrackStart)
    case fileFailed(FLACError)
    case realtimeRefused(String)
    case memoryLockRefused(String)
    case deviceLost(String)
    case deviceReopened(DeviceFormat)
    case finished
}

/// FLAC files → decoder thread → SPSC ring → output thread (mixer, ALSA).
///
/// The decoder thread reads ahead; the output thread runs the render path and owns the PCM.
/// The two share only the ring and atomics. The control plane (the caller's thread) watches
/// progress with `nextEvents()`, which reads atomics and a small locked list the decoder
/// thread appends to; the output thread takes no lock.
public final class PlaybackEngine: @unchecked Sendable {
    public let options: PlaybackOptions

    private let ring: SPSCRing
    private let playerInput: MixerInput
    private let mixer: Mixer
    private let tracks: [TrackInfo]
    private let startFrame: Int

    // Output-thread state, published through atomics.
    private let stopRequested = Atomic<Bool>(false)
    private let outputFinished = Atomic<Bool>(false)
    private let underrunCount = Atomic<Int>(0)
    private let lossCount = Atomic<Int>(0)
    private let reopenCount = Atomic<Int>(0)
    private let realtimeErrno = Atomic<Int32>(-1)  // -1 not yet tried, 0 granted
    private let memlockErrno = Atomic<Int32>(-1)
    private let framesWritten = Atomic<Int>(0)
    /// Device rate and channels, published by the output thread before it acknowledges a
    /// segment change, read by the decoder thread after.
    private let deviceRate = Atomic<Int>(0)
    private let deviceChannels = Atomic<Int>(0)
    /// The device format as of the last (re)configuration, for the control plane.
    private let currentFormat: Mutex<DeviceFormat>

    // Decoder-thread → control-plane reports (the control side may lock).
    private let reports = Mutex<(starts: [TrackStart], errors: [FLACError])>(([], []))

    // Control-plane bookkeeping.
    private var announcedStarts = 0
    private var announcedErrors = 0
    private var announcedLosses = 0
    private var announcedReopens = 0
    private var announcedRealtime = false
    private var announcedMemlock = false
    private var threads: [NamedThread] = []
    private nonisolated(unsafe) var initialDevice: PCMDevice?

    /// Opens the device for the first track; throws at once when it cannot be used.
    /// `tracks` come from `FLACDecoder.info` (the CLI has already checked every file).
    public init(tracks: [TrackInfo], startFrame: Int = 0, options: PlaybackOptions) throws(PlaybackError) {
        precondition(!tracks.isEmpty)
        self.options = options
        self.tracks = tracks
        self.startFrame = startFrame
        let first = tracks[0].format
        let device: PCMDevice
        do {
            device = try PCMDevice(name: options.device, request: Self.request(for: first, options))
        } catch {
            throw .device(error)
        }
        initialDevice = device
        currentFormat = Mutex(device.format)
        deviceRate.store(device.format.sampleRate, ordering: .relaxed)
        deviceChannels.store(device.format.channels, ordering: .relaxed)
        // Room for the read-ahead of the most demanding track, at the device rate or source
        // rate, whichever is higher.
        let perSecond = tracks.map { max($0.format.sampleRate, device.format.sampleRate) * max($0.format.channels, device.format.channels) }.max()!
        ring = SPSCRing(capacity: Int(Double(perSecond) * options.readAheadSeconds))
        playerInput = MixerInput(ring: ring, gain: Float(max(0, min(100, options.volumePercent)) / 100))
        mixer = Mixer(inputs: [playerInput], format: device.format, maxFrames: device.format.periodFrames)
    }

    static func request(for format: StreamFormat, _ options: PlaybackOptions) -> OutputRequest {
        OutputRequest(stream: format, periodFrames: options.periodFrames, bufferFrames: options.bufferFrames)
    }

    /// Starts the decoder and output threads.
    public func start() {
        guard initialDevice != nil else { return }
        let decoderThread = NamedThread(name: "tonearm-decoder") { [self] in decodeAll() }
        // The output thread takes the device over: no other reference may outlive its close
        // (libjack, for one, crashes when a dead client is closed after a new one opened).
        let outputThread = NamedThread(name: "tonearm-output") { [self] in
            let device = initialDevice.take()!
            runOutput(device)
        }
        threads = [decoderThread, outputThread]
    }

    /// Asks both threads to stop; the output drops what is queued at once.
    public func stop() { stopRequested.store(true, ordering: .releasing) }

    /// Waits for both threads to end.
    public func join() {
        for thread in threads { thread.join() }
        threads = []
    }

    public var isFinished: Bool { outputFinished.load(ordering: .acquiring) }
    public var underruns: Int { underrunCount.load(ordering: .relaxed) }
    public var deviceLosses: Int { lossCount.load(ordering: .relaxed) }
    public var deviceFormat: DeviceFormat { currentFormat.withLock { $0 } }
    /// Frames handed to ALSA since the start.
    public var writtenFrames: Int { framesWritten.load(ordering: .relaxed) }
    public var fileErrors: [FLACError] { reports.withLock { $0.errors } }

    /// What happened since the last call, oldest first.
    public func nextEvents() -> [PlaybackEvent] {
        var events: [PlaybackEvent] = []
        let rt = realtimeErrno.load(ordering: .relaxed)
        if rt > 0 && !announcedRealtime {
            announcedRealtime = true
            events.append(.realtimeRefused(String(cString: strerror(rt))))
        }
        let ml = memlockErrno.load(ordering: .relaxed)
        if ml > 0 && !announcedMemlock {
            announcedMemlock = true
            events.append(.memoryLockRefused(String(cString: strerror(ml))))
        }
        let losses = lossCount.load(ordering: .relaxed)
        if losses > announcedLosses {
            announcedLosses = losses
            events.append(.deviceLost(options.device))
        }
        let reopens = reopenCount.load(ordering: .relaxed)
        if reopens > announcedReopens {
            announcedReopens = reopens
            events.append(.deviceReopened(deviceFormat))
        }
        let consumed = ring.samplesRead
        let (starts, errors) = reports.withLock { ($0.starts, $0.errors) }
        while announcedErrors < errors.count {
            events.append(.fileFailed(errors[announcedErrors]))
            announcedErrors += 1
        }
        while announcedStarts < starts.count && starts[announcedStarts].ringSample <= consumed {
            events.append(.trackStarted(starts[announcedStarts]))
            announcedStarts += 1
        }
        if isFinished { events.append(.finished) }
        return events
    }

    // MARK: Decoder thread

    private func decodeAll() {
        defer { ring.finish() }
        var segmentSource = tracks[0].format
        var converter: StreamConverter
        do {
            converter = try StreamConverter(source: segmentSource, deviceRate: deviceRate.load(ordering: .acquiring),
                                            deviceChannels: deviceChannels.load(ordering: .acquiring))
        } catch {
            return
        }
        for (index, track) in tracks.enumerated() {
            if stopRequested.load(ordering: .relaxed) { return }
            do throws(FLACError) {
                let decoder = try FLACDecoder(path: track.path)
                let firstFrame = index == 0 ? startFrame : 0
                if firstFrame > 0 { try decoder.seek(toFrame: firstFrame) }
                let format = decoder.info.format
                if format != segmentSource {
                    // A new format: finish the old run, let the output reconfigure, go on.
                    guard push(converter.flush(), channels: converter.deviceChannels) else { return }
                    let generation = ring.endSegment(with: format)
                    while !ring.segmentTaken(generation) {
                        if stopRequested.load(ordering: .relaxed) { return }
                        sleepMilliseconds(5)
                    }
                    segmentSource = format
                    do {
                        converter = try StreamConverter(source: format, deviceRate: deviceRate.load(ordering: .acquiring),
                                                        deviceChannels: deviceChannels.load(ordering: .acquiring))
                    } catch {
                        return
                    }
                }
                let start = TrackStart(index: index, info: decoder.info, firstFrame: firstFrame,
                                       ringSample: ring.samplesWritten, device: deviceFormat)
                reports.withLock { $0.starts.append(start) }
                while let block = try decoder.nextBlock() {
                    guard push(converter.convert(block), channels: converter.deviceChannels) else { return }
                }
            } catch {
                reports.withLock { $0.errors.append(error) }
            }
        }
        _ = push(converter.flush(), channels: converter.deviceChannels)
    }

    /// Writes all of `samples` into the ring, waiting while it is full; false when stopped.
    private func push(_ samples: UnsafeBufferPointer<Int32>, channels: Int) -> Bool {
        guard var base = samples.baseAddress else { return true }
        var remaining = samples.count
        while remaining > 0 {
            let n = ring.write(UnsafeBufferPointer(start: base, count: remaining), frameSize: channels)
            remaining -= n
            base += n
            if remaining > 0 {
                if stopRequested.load(ordering: .relaxed) { return false }
                // The ring holds seconds; a few milliseconds' nap costs nothing.
                sleepMilliseconds(10)
            }
        }
        return true
    }

    // MARK: Output thread

    private func stallTimeout(_ format: DeviceFormat) -> Int32 {
        if let t = options.stallTimeoutMilliseconds { return Int32(t) }
        return Int32(max(1000, 4 * format.bufferFrames * 1000 / max(1, format.sampleRate)))
    }

    private func runOutput(_ initial: consuming PCMDevice) {
        realtimeErrno.store(requestRealtimePriority(options.realtimePriority), ordering: .relaxed)

        var format = initial.format
        var device: PCMDevice? = consume initial
        var request = Self.request(for: tracks[0].format, options)
        var periodBuffer = UnsafeMutableRawPointer.allocate(byteCount: format.periodFrames * format.bytesPerFrame, alignment: 16)
        var periodBytes = format.periodFrames * format.bytesPerFrame
        defer { periodBuffer.deallocate() }
        lockMemory(periodBuffer, periodBytes)

        var pending = 0  // frames rendered into periodBuffer, not yet accepted by ALSA
        var offset = 0
        var lost = false  // the device went away (as opposed to being closed for a new format)

        func adopt(_ newDevice: PCMDevice) {
            format = newDevice.format
            if format.periodFrames * format.bytesPerFrame > periodBytes {
                periodBuffer.deallocate()
                periodBytes = format.periodFrames * format.bytesPerFrame
                periodBuffer = .allocate(byteCount: periodBytes, alignment: 16)
                lockMemory(periodBuffer, periodBytes)
            }
            mixer.configure(format: format, maxFrames: format.periodFrames)
            currentFormat.withLock { $0 = format }
            deviceRate.store(format.sampleRate, ordering: .relaxed)
            deviceChannels.store(format.channels, ordering: .relaxed)
        }

        while !stopRequested.load(ordering: .relaxed) {
            guard let dev = device else {
                // Lost, or closed for a new format: open (again), napping between attempts.
                if let opened = try? PCMDevice(name: options.device, request: request) {
                    adopt(opened)
                    device = opened
                    if lost {
                        lost = false
                        reopenCount.add(1, ordering: .relaxed)
                    }
                    // The decoder converts to the device's rate and channels: it may go on
                    // only once they are known.
                    if ring.reachedSegmentChange != nil { ring.takeSegmentChange() }
                } else {
                    var slept = 0
                    while slept < options.reopenIntervalMilliseconds && !stopRequested.load(ordering: .relaxed) {
                        sleepMilliseconds(min(50, options.reopenIntervalMilliseconds - slept))
                        slept += 50
                    }
                }
                continue
            }
            if pending == 0 {
                if let next = ring.reachedSegmentChange {
                    // Track boundary with a new format: play out, close, reopen for it.
                    dev.drain(timeoutMilliseconds: 1000 + format.bufferFrames * 1000 / format.sampleRate)
                    device = nil
                    request = Self.request(for: next, options)
                    continue
                }
                if ring.isDrained {
                    dev.drain(timeoutMilliseconds: 1000 + format.bufferFrames * 1000 / format.sampleRate)
                    break
                }
                // ── Render path (see Mixer.render) ──
                pending = mixer.render(into: periodBuffer, frames: format.periodFrames)
                offset = 0
                if pending == 0 {
                    // The decoder is behind (start-up, or a slow disk): wait for it.
                    sleepMilliseconds(1)
                    continue
                }
            }
            switch dev.write(periodBuffer + offset * format.bytesPerFrame, count: pending, timeoutMilliseconds: stallTimeout(format)) {
            case .wrote(let n):
                pending -= n
                offset += n
                framesWritten.add(n, ordering: .relaxed)
            case .recoveredUnderrun:
                underrunCount.add(1, ordering: .relaxed)
            case .stalled, .failed:
                // Gone (error) or wedged (no period completes): close and reopen later. What
                // was rendered but not accepted is kept and written first.
                device = nil
                lost = true
                lossCount.add(1, ordering: .relaxed)
            }
            // ── Render path ends ──
        }
        if stopRequested.load(ordering: .relaxed) { device?.drop() }
        device = nil
        outputFinished.store(true, ordering: .releasing)
    }

    private func lockMemory(_ buffer: UnsafeMutableRawPointer, _ bytes: Int) {
        let regions = [ring.storageRegion, UnsafeMutableRawBufferPointer(start: buffer, count: bytes)] + mixer.scratchRegions
        let error = lockRegions(regions)
        if memlockErrno.load(ordering: .relaxed) <= 0 { memlockErrno.store(error, ordering: .relaxed) }
    }
}

#if canImport(Glibc)
import Glibc
#endif
