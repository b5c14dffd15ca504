import Synchronization
import TonearmALSA
import TonearmAudio
import TonearmFLAC
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

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
    /// The stream the read-ahead is sized for (rate × channels, at the device): 96 kHz stereo
    /// by default; a larger stream gets proportionally less read-ahead.
    public var readAheadSamplesPerSecond = 96_000 * 2
    /// Pause between attempts to reopen a device that went away.
    public var reopenIntervalMilliseconds = 500
    /// A device that completes no period for this long is treated as gone; nil means four
    /// buffer lengths, and never less than a second.
    public var stallTimeoutMilliseconds: Int?
    /// SCHED_FIFO priority asked for by the output thread.
    public var realtimePriority: Int32 = 70
    /// Mixer slots for sessions' streams besides the player (`startStream`).
    public var streamSlots = 3
    /// Samples each stream slot's ring holds: 0.5 s at 48 kHz stereo. Small, so several slots
    /// keep the daemon's resident size down; the producer refills it every few milliseconds.
    public var streamRingSamples = 48_000

    public init() {}
}

/// One thing to play: the player's queue item id and the file.
public struct EngineItem: Sendable, Equatable {
    public var id: Int
    public var path: String

    public init(id: Int, path: String) {
        self.id = id
        self.path = path
    }
}

/// An item reaching the device.
public struct ItemStart: Sendable {
    public var itemID: Int
    public var info: TrackInfo
    /// Position in the item where it starts playing, in seconds.
    public var position: Double
    /// The device configuration it plays through.
    public var device: DeviceFormat
    /// The number of the `play` (or `stop`) call this start follows from; a gapless step
    /// inherits it. A start numbered below the latest call describes audio queued before that
    /// call, so it is stale.
    public var request: Int
    /// When the item's first frame is heard, in seconds on the clock `nextEvents(now:)` is given
    /// (the daemon's monotonic clock): in the past when the device has played it already, in
    /// the future while it still waits in the device buffer. Exact to within a period; a play's
    /// start comes after the device was opened, prepared and filled, and a gapless step after
    /// everything before it in the buffer, none of which the time of a command or of the
    /// collection of events says. Set when the start is announced.
    public var heardAt: Double = 0
}

/// Something the control plane should know about, oldest first.
public enum PlaybackEvent: Sendable {
    case itemStarted(ItemStart)
    /// The item could not be played (or only partly, for truncated or corrupt audio); the
    /// engine went on with what follows it.
    case itemFailed(itemID: Int, FLACError)
    /// Everything up to the end of the queue has been heard; the engine is idle.
    case endOfQueue
    /// The output stopped being heard: the device failed or stopped responding, or could not
    /// be opened when something wanted to play. `position` is where the player's audio stopped
    /// being heard (frames the device played, not what was decoded or written); nil before
    /// anything reached it. The
    /// engine keeps reopening the device every `reopenIntervalMilliseconds`.
    case outputInterrupted(OutputInterruption, position: PlaybackPosition?)
    /// The device opened again after an interruption (or for the first time after it could
    /// not be opened at all); audio follows.
    case deviceReopened(DeviceFormat)
    /// Frames flow to the device again after an interruption: `position` is what is heard at
    /// the time given to `nextEvents(now:)` (nil while the player plays nothing).
    case outputResumed(position: PlaybackPosition?)
    /// The device underran (the output thread fell behind) at least once since the last
    /// events; `total` is the running count.
    case underruns(total: Int)
    /// A session's stream has been heard to its end.
    case streamFinished(StreamHandle)
    case realtimeRefused(String)
    case memoryLockRefused(String)
}

/// Why the output is not heard.
public enum OutputInterruption: Sendable, CustomStringConvertible {
    /// alsa-lib reported an error: the device is gone (a USB DAC unplugged: ENODEV, EBADFD).
    case lost(ALSAError)
    /// No period completed within the stall timeout: the device wedged, or the server behind
    /// it died, with no error at all.
    case stalled(device: String, milliseconds: Int)
    /// The device could not be opened: not there (yet), busy, or misnamed.
    case unavailable(ALSAError)

    public var description: String {
        switch self {
        case .lost(let error): "ALSA PCM '\(error.device)' lost: \(error.reason)"
        case .stalled(let device, let ms): "ALSA PCM '\(device)' stopped responding (no period in \(ms) ms)"
        case .unavailable(let error): error.description
        }
    }

    /// What the output is doing about it, in a few words for `status`.
    public var waiting: String {
        switch self {
        case .lost: "device lost, waiting for it"
        case .stalled: "device stopped responding, waiting for it"
        case .unavailable: "waiting for the device"
        }
    }
}

/// Where playback is, as heard (to within the device buffer).
public struct PlaybackPosition: Sendable, Equatable {
    public var itemID: Int
    public var seconds: Double
}

/// What the output device is doing, for status and diagnostics.
public struct DeviceStatus: Sendable {
    public enum State: String, Sendable { case closed, open, lost, unavailable }
    public var name: String
    public var state: State
    public var format: DeviceFormat?
    public var underruns: Int
    public var losses: Int
    /// Why the output is not heard, from the moment it stopped until frames flow again; nil
    /// while it is heard (or nothing plays).
    public var interruption: OutputInterruption?
}

/// FLAC files → decoder thread → SPSC ring → output thread (mixer, ALSA).
///
/// The control plane tells the engine what to play (`play`, `stop`, `pause`, `resume`,
/// `setVolume`) and answers, through `upcoming`, what follows an item; the decoder thread asks
/// it at the end of each file and goes straight on, so consecutive files are gapless. Pause,
/// resume and volume act at the mixer, so they reach the speaker within the ALSA buffer, not
/// after the read-ahead. The two threads share only the ring and atomics; the output thread
/// takes no lock. The control plane learns what happened with `nextEvents()`.
///
/// Sessions' streams (`startStream`) play beside the player through the mixer's other slots,
/// each fed by its own producer thread; the output keeps running for them while the player is
/// paused or idle, with the player's input disabled so the mixer renders whole periods of them.
public final class PlaybackEngine: @unchecked Sendable {
    public let options: PlaybackOptions
    /// What follows an item in the queue; called on the decoder thread.
    private let upcoming: @Sendable (Int) -> EngineItem?

    private let ring: SPSCRing
    let playerInput: MixerInput
    /// Sessions' streams, mixer inputs 1…; created once, reused.
    let streamSlots: [StreamSlot]
    let streamClaims = Mutex<Void>(())
    private let mixer: Mixer

    // Control → decoder thread.
    private enum DecoderCommand {
        case play(EngineItem, from: Double, request: Int)
        case stop
        case upcomingChanged
    }
    private let commands = Mutex<[DecoderCommand]>([])
    /// Numbers `play` and `stop` calls, so the control plane can tell stale starts.
    private let requests = Atomic<Int>(0)

    /// Wake the decoder (new command) and the output thread (new command, cut or audio).
    private let decoderWakeup = Wakeup()
    let outputWakeup = Wakeup()
    /// Ring sample index where the queue ends; `Int.max` while more is coming. Decoder → output.
    /// 0 before anything plays: an engine with nothing queued is at its end, and its output
    /// thread sleeps instead of waiting for a decoder that has nothing to decode.
    private let queueEnd = Atomic<Int>(0)

    // Control → output thread.
    let stopRequested = Atomic<Bool>(false)
    private let pauseRequested = Atomic<Bool>(false)
    private let volumeBits = Atomic<UInt32>(Float(1).bitPattern)

    // Output thread → control, published through atomics.
    private let outputFinished = Atomic<Bool>(false)
    private let outputIdle = Atomic<Bool>(true)
    private let underrunCount = Atomic<Int>(0)
    private let lossCount = Atomic<Int>(0)
    /// Counts interruptions (a loss, or the first failed open of an outage), the opens that
    /// ended one, and the returns of frames flowing after one; `outputInterrupted` says
    /// whether the last interruption is still on.
    private let interruptionCount = Atomic<Int>(0)
    private let reopenCount = Atomic<Int>(0)
    private let resumeCount = Atomic<Int>(0)
    private let outputInterrupted = Atomic<Bool>(false)
    private let realtimeErrno = Atomic<Int32>(-1)  // -1 not yet tried, 0 granted
    private let memlockErrno = Atomic<Int32>(-1)
    private let framesWritten = Atomic<Int>(0)
    /// The player's ring sample being heard as of the last write: what the mixer read, less the
    /// frames waiting in the device buffer and those rendered but not yet written. Output →
    /// control, to tell when a mark is (or will be) heard.
    private let heardSample = Atomic<Int>(0)
    private let deviceState = Atomic<Int>(0)  // DeviceStatus.State, by index
    /// Device rate and channels, published by the output thread before it takes a cut with a
    /// new format, read by the decoder thread after.
    let deviceRate = Atomic<Int>(0)
    let deviceChannels = Atomic<Int>(0)
    /// Bumped each time the device is (re)configured, after the rate and channels; a stream's
    /// producer converts afresh when it changes.
    let deviceGeneration = Atomic<Int>(0)
    /// The format to open the device at when a stream starts before anything has played.
    let streamDeviceRequest = Mutex<StreamFormat?>(nil)
    /// The device format as of the last (re)configuration and the last reason the output
    /// stopped being heard, for the control plane (the output thread writes them outside the
    /// render path).
    private let currentFormat = Mutex<DeviceFormat?>(nil)
    private let lastInterruption = Mutex<OutputInterruption?>(nil)

    /// Where each item starts in the ring, and where the queue ends; decoder thread → control.
    private struct Mark {
        /// Counts marks: two may share a ring index (a play replaced before a sample was written).
        var serial: Int
        var start: ItemStart
        var ringSample: Int
        var sourceRate: Int
        var deviceRate: Int
        var channels: Int
    }
    private struct Timeline {
        var marks: [Mark] = []
        var endOfQueue: Int?
        /// Counts the ends set, so each is told once: an end replaced by the next before the
        /// control plane looked is still told.
        var endSerial = 0
        var markSerial = 0
        var errors: [(Int, FLACError)] = []
    }
    private let timeline = Mutex(Timeline())

    // Control-plane bookkeeping (the control plane calls from one thread or actor).
    private var announcedMark = 0  // serial of the last mark announced
    private var announcedEnd = 0  // serial of the last end of queue announced
    private var announcedErrors = 0
    private var announcedInterruptions = 0
    private var announcedReopens = 0
    private var announcedResumes = 0
    private var announcedUnderruns = 0
    private var announcedRealtime = false
    private var announcedMemlock = false
    private var threads: [NamedThread] = []

    public init(options: PlaybackOptions, upcoming: @escaping @Sendable (Int) -> EngineItem?, notify: @escaping @Sendable () -> Void = {}) {
        self.options = options
        self.upcoming = upcoming
        ring = SPSCRing(capacity: Int(Double(options.readAheadSamplesPerSecond) * options.readAheadSeconds))
        let volume = Float(max(0, min(100, options.volumePercent)) / 100)
        volumeBits.store(volume.bitPattern, ordering: .relaxed)
        playerInput = MixerInput(ring: ring, gain: volume)
        streamSlots = (0..<max(0, options.streamSlots)).map {
            StreamSlot(index: $0 + 1, ringSamples: max(1024, options.streamRingSamples))
        }
        // Sized for the defaults; `configure` grows it for the device actually opened.
        mixer = Mixer(inputs: [playerInput] + streamSlots.map(\.input),
                      format: DeviceFormat(sampleFormat: .s16LE, sampleRate: 48000, channels: 2,
                                           periodFrames: options.periodFrames, bufferFrames: options.bufferFrames),
                      maxFrames: options.periodFrames)
    }

    /// Starts the decoder and output threads; the device opens with the first item played.
    public func start() {
        guard threads.isEmpty else { return }
        threads = [
            NamedThread(name: "tonearm-decoder") { [self] in runDecoder() },
            NamedThread(name: "tonearm-output") { [self] in runOutput() },
        ]
    }

    /// Stops both threads (dropping what is queued at once) and waits for them.
    public func shutdown() {
        stopRequested.store(true, ordering: .releasing)
        decoderWakeup.post()
        outputWakeup.post()
        for thread in threads { thread.join() }
        threads = []
        streamClaims.withLock { _ in
            for slot in streamSlots {
                slot.thread?.join()
                slot.thread = nil
            }
        }
    }

    // MARK: Commands (control plane)

    /// Plays `item` from `position` seconds, replacing whatever plays or is read ahead. With
    /// `resume` false a paused engine stays paused, ready at the new place (a seek while paused).
    /// Returns the request number its `ItemStart` will carry.
    @discardableResult
    public func play(_ item: EngineItem, from position: Double = 0, resume: Bool = true) -> Int {
        let request = requests.add(1, ordering: .relaxed).newValue
        commands.withLock { $0.append(.play(item, from: position, request: request)) }
        if resume { pauseRequested.store(false, ordering: .releasing) }
        decoderWakeup.post()
        outputWakeup.post()
        return request
    }

    /// Silence; forgets the current item. Returns the request number: starts numbered below it
    /// are stale.
    @discardableResult
    public func stop() -> Int {
        let request = requests.add(1, ordering: .relaxed).newValue
        commands.withLock { $0.append(.stop) }
        decoderWakeup.post()
        return request
    }

    /// Fades out and holds the position; the read-ahead is kept.
    public func pause() { pauseRequested.store(true, ordering: .releasing) }

    /// Fades back in where it paused.
    public func resume() {
        pauseRequested.store(false, ordering: .releasing)
        outputWakeup.post()
    }

    /// True once a pause has faded out and the device is idle.
    public var isPausedOrIdle: Bool { outputIdle.load(ordering: .acquiring) }

    /// Software volume, 0…100 %; ramps, never clicks.
    public func setVolume(_ percent: Double) {
        let gain = Float(max(0, min(100, percent)) / 100)
        volumeBits.store(gain.bitPattern, ordering: .relaxed)
    }

    /// What follows the current item changed; re-reads it through `upcoming`.
    public func upcomingChanged() {
        commands.withLock { $0.append(.upcomingChanged) }
        decoderWakeup.post()
    }

    // MARK: Observations (control plane)

    public var underruns: Int { underrunCount.load(ordering: .relaxed) }
    public var deviceLosses: Int { lossCount.load(ordering: .relaxed) }
    /// Frames handed to ALSA since the start.
    public var writtenFrames: Int { framesWritten.load(ordering: .relaxed) }

    public var deviceStatus: DeviceStatus {
        let states: [DeviceStatus.State] = [.closed, .open, .lost, .unavailable]
        let interrupted = outputInterrupted.load(ordering: .acquiring)
        return DeviceStatus(name: options.device, state: states[deviceState.load(ordering: .relaxed)],
                            format: currentFormat.withLock { $0 }, underruns: underruns, losses: deviceLosses,
                            interruption: interrupted ? lastInterruption.withLock { $0 } : nil)
    }

    /// The item heard now and how far into it (to within a period): not what the device took,
    /// which runs a buffer ahead.
    public func position() -> PlaybackPosition? {
        let heard = min(heardSample.load(ordering: .acquiring), ring.samplesRead)
        return timeline.withLock { t in
            guard let mark = t.marks.last(where: { $0.ringSample <= heard }) else { return nil }
            let frames = (heard - mark.ringSample) / max(1, mark.channels)
            return PlaybackPosition(itemID: mark.start.itemID,
                                    seconds: mark.start.position + Double(frames) / Double(max(1, mark.deviceRate)))
        }
    }

    /// When the first frame at `mark` is heard, given the sample heard at `now`. A mark not yet
    /// heard is at most a buffer and a period ahead (the mixer has read it): a heard sample
    /// still from before a cut (the device dropped and not yet written to) says no more.
    private func heardAt(_ mark: Mark, heard: Int, now: Double, device: DeviceFormat?) -> Double {
        let rate = Double(max(1, mark.deviceRate))
        let framesSince = Double(heard - mark.ringSample) / Double(max(1, mark.channels))
        let buffer = device ?? DeviceFormat(sampleFormat: .s16LE, sampleRate: mark.deviceRate, channels: mark.channels,
                                            periodFrames: options.periodFrames, bufferFrames: options.bufferFrames)
        let mostAhead = Double(buffer.bufferFrames + buffer.periodFrames)
        return now - max(framesSince, -mostAhead) / rate
    }

    /// What happened since the last call, oldest first. `now` is the caller's clock (seconds);
    /// starts say on it when they are heard.
    public func nextEvents(now: Double) -> [PlaybackEvent] {
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
        // Several interruptions between two calls are told as the last one; a return is told
        // only if it came after it.
        let interruptions = interruptionCount.load(ordering: .acquiring)
        if interruptions > announcedInterruptions, let why = lastInterruption.withLock({ $0 }) {
            announcedInterruptions = interruptions
            events.append(.outputInterrupted(why, position: position()))
        }
        let reopens = reopenCount.load(ordering: .acquiring)
        if reopens > announcedReopens, let format = currentFormat.withLock({ $0 }) {
            announcedReopens = reopens
            events.append(.deviceReopened(format))
        }
        let underrunTotal = underruns
        if underrunTotal > announcedUnderruns {
            announcedUnderruns = underrunTotal
            events.append(.underruns(total: underrunTotal))
        }
        let resumes = resumeCount.load(ordering: .acquiring)
        let resumed = resumes > announcedResumes && !outputInterrupted.load(ordering: .acquiring)
        announcedResumes = resumes
        let read = ring.samplesRead
        let heard = min(heardSample.load(ordering: .acquiring), read)
        let device = currentFormat.withLock { $0 }
        let idle = outputIdle.load(ordering: .acquiring)
        timeline.withLock { t in
            while announcedErrors < t.errors.count {
                events.append(.itemFailed(itemID: t.errors[announcedErrors].0, t.errors[announcedErrors].1))
                announcedErrors += 1
            }
            // Marks are strictly increasing; announce each one the reader has reached, once.
            for mark in t.marks where mark.ringSample <= read && mark.serial > announcedMark {
                var start = mark.start
                start.heardAt = heardAt(mark, heard: heard, now: now, device: device)
                events.append(.itemStarted(start))
                announcedMark = mark.serial
            }
            if let end = t.endOfQueue, t.endSerial > announcedEnd, read >= end, idle {
                announcedEnd = t.endSerial
                events.append(.endOfQueue)
            }
        }
        // After the starts: the item heard from here on is the one they name.
        if resumed { events.append(.outputResumed(position: position())) }
        return events
    }

    // MARK: Decoder thread

    /// The decoder thread's state: the file being decoded and its conversion to the device.
    private struct Decoding {
        var item: EngineItem
        var decoder: FLACDecoder
        var pending: UnsafeBufferPointer<Int32> = UnsafeBufferPointer(start: nil, count: 0)
    }

    private func runDecoder() {
        var decoding: Decoding?
        var converter: StreamConverter?
        var source: StreamFormat?  // the source format of the run the device is set up for
        var request = 0  // the `play` the items being decoded follow from

        /// Publishes a cut and waits until the output has taken it (it checks every few ms).
        func cutAndWait(_ generation: Int) -> Bool {
            outputWakeup.post()
            while !ring.cutTaken(generation) {
                if stopRequested.load(ordering: .relaxed) { return false }
                sleepMilliseconds(2)
            }
            return true
        }

        /// Opens `item` and queues it after what is written (`boundary`: a track boundary that
        /// plays out first) or in place of everything not yet heard (`replacing`).
        func begin(_ item: EngineItem, from seconds: Double, replacing: Bool) -> Bool {
            var next = item
            var position = seconds
            while true {
                do throws(FLACError) {
                    let decoder = try FLACDecoder(path: next.path)
                    let format = decoder.info.format
                    let frame = Int((position * Double(format.sampleRate)).rounded())
                    if frame > 0 { try decoder.seek(toFrame: frame) }
                    if replacing || format != source {
                        // Finish the old run's resampler tail only when it still plays out.
                        if !replacing, let tail = converter?.flush(), tail.count > 0 {
                            guard push(tail, channels: converter!.deviceChannels) else { return false }
                        }
                        let generation = replacing ? ring.cutNow(format: format == source ? nil : format)
                                                   : ring.cutAtEnd(format: format)
                        guard cutAndWait(generation) else { return false }
                        // A fresh converter for every new run: a flushed resampler cannot be fed
                        // again, and a seek must not carry the old position's filter state.
                        if replacing || format != source || converter == nil {
                            source = format
                            converter = try? StreamConverter(source: format, deviceRate: deviceRate.load(ordering: .acquiring),
                                                             deviceChannels: deviceChannels.load(ordering: .acquiring))
                        }
                    }
                    let written = ring.samplesWritten
                    let start = ItemStart(itemID: next.id, info: decoder.info, position: Double(frame) / Double(format.sampleRate),
                                          device: currentFormat.withLock { $0 } ?? DeviceFormat(sampleFormat: .s16LE, sampleRate: 0, channels: 0, periodFrames: 0, bufferFrames: 0),
                                          request: request)
                    queueEnd.store(Int.max, ordering: .relaxed)
                    timeline.withLock { t in
                        if replacing { t.marks.removeAll() }
                        t.markSerial += 1
                        t.marks.append(Mark(serial: t.markSerial, start: start, ringSample: written, sourceRate: format.sampleRate,
                                            deviceRate: deviceRate.load(ordering: .acquiring),
                                            channels: deviceChannels.load(ordering: .acquiring)))
                        t.endOfQueue = nil
                    }
                    decoding = Decoding(item: next, decoder: decoder)
                    return true
                } catch {
                    timeline.withLock { $0.errors.append((next.id, error)) }
                    guard let following = upcoming(next.id) else {
                        if replacing { _ = cutAndWait(ring.cutNow(format: nil)) }
                        endQueue()
                        return true
                    }
                    next = following
                    position = 0
                }
            }
        }

        /// Nothing follows what is written: the output idles once it is heard, and, unless the
        /// control plane stopped playback itself, says the queue ended.
        func endQueue(announce: Bool = true) {
            decoding = nil
            let end = ring.samplesWritten
            timeline.withLock { t in
                t.endOfQueue = announce ? end : nil
                if announce { t.endSerial += 1 }
            }
            queueEnd.store(end, ordering: .releasing)
            outputWakeup.post()
        }

        while !stopRequested.load(ordering: .relaxed) {
            for command in commands.withLock({ c -> [DecoderCommand] in defer { c.removeAll() }; return c }) {
                switch command {
                case .play(let item, let from, let number):
                    request = number
                    // The end queued before is not where this play ends: once the cut drops
                    // what precedes it, it must not be told as heard.
                    timeline.withLock { $0.endOfQueue = nil }
                    guard begin(item, from: from, replacing: true) else { return }
                case .stop:
                    decoding = nil
                    timeline.withLock { $0.endOfQueue = nil }
                    guard cutAndWait(ring.cutNow(format: nil)) else { return }
                    timeline.withLock { $0.marks.removeAll() }
                    endQueue(announce: false)
                case .upcomingChanged:
                    // Only matters when the decoder has already moved on to the next item.
                    let read = ring.samplesRead
                    let (playing, ahead) = timeline.withLock { t -> (Mark?, Mark?) in
                        let heard = t.marks.last(where: { $0.ringSample <= read })
                        let next = t.marks.first(where: { $0.ringSample > read })
                        return (heard, next)
                    }
                    guard let playing, let ahead else { continue }
                    let wanted = upcoming(playing.start.itemID)
                    guard wanted?.id != ahead.start.itemID else { continue }
                    // Replace it where it begins: what precedes still plays out, and the end
                    // queued after it is no longer the end.
                    timeline.withLock { $0.endOfQueue = nil }
                    let generation = ring.cut(at: ahead.ringSample, format: nil, playsOut: true)
                    guard cutAndWait(generation) else { return }
                    timeline.withLock { t in t.marks.removeAll { $0.ringSample >= ahead.ringSample } }
                    decoding = nil
                    source = nil  // a fresh converter: none of the abandoned item's resampler state
                    if let wanted {
                        guard begin(wanted, from: 0, replacing: false) else { return }
                    } else {
                        endQueue()
                    }
                }
            }

            guard var current = decoding, let conv = converter else {
                decoderWakeup.wait(milliseconds: 200)
                continue
            }
            if current.pending.count == 0 {
                do throws(FLACError) {
                    if let block = try current.decoder.nextBlock() {
                        current.pending = conv.convert(block)
                    } else {
                        // End of the file: straight on to what follows, gaplessly.
                        decoding = nil
                        if let next = upcoming(current.item.id) {
                            guard begin(next, from: 0, replacing: false) else { return }
                        } else {
                            if let tail = converter?.flush(), tail.count > 0 {
                                guard push(tail, channels: conv.deviceChannels) else { return }
                            }
                            endQueue()
                        }
                        continue
                    }
                } catch {
                    timeline.withLock { $0.errors.append((current.item.id, error)) }
                    decoding = nil
                    if let next = upcoming(current.item.id) {
                        guard begin(next, from: 0, replacing: false) else { return }
                    } else {
                        endQueue()
                    }
                    continue
                }
            }
            // Write what fits; come back for commands at least every few milliseconds.
            let n = ring.write(current.pending, frameSize: conv.deviceChannels)
            current.pending = UnsafeBufferPointer(rebasing: current.pending[n...])
            decoding = current
            if outputIdle.load(ordering: .relaxed) { outputWakeup.post() }
            if current.pending.count > 0 { decoderWakeup.wait(milliseconds: 5) }
        }
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
                sleepMilliseconds(5)
            }
        }
        return true
    }

    // MARK: Output thread

    private func stallTimeout(_ format: DeviceFormat) -> Int32 {
        if let t = options.stallTimeoutMilliseconds { return Int32(t) }
        return Int32(max(1000, 4 * format.bufferFrames * 1000 / max(1, format.sampleRate)))
    }

    private func setDeviceState(_ state: DeviceStatus.State) {
        let index = [DeviceStatus.State.closed, .open, .lost, .unavailable].firstIndex(of: state)!
        deviceState.store(index, ordering: .relaxed)
    }

    private func runOutput() {
        realtimeErrno.store(requestRealtimePriority(options.realtimePriority), ordering: .relaxed)

        var device: PCMDevice?
        var request: OutputRequest?  // what the device should be opened as
        var format: DeviceFormat?
        var periodBytes = options.periodFrames * 8 * 4
        var periodBuffer = UnsafeMutableRawPointer.allocate(byteCount: periodBytes, alignment: 16)
        defer { periodBuffer.deallocate() }
        lockMemory(periodBuffer, periodBytes)

        var pending = 0  // frames rendered into periodBuffer, not yet accepted by ALSA
        var offset = 0
        var lost = false  // the device went away (as opposed to being closed for a new format)
        var lossCode: Int32?  // set in the render path when the device goes: 0 for a stall
        // The output is not heard since a loss or a failed open, until the reopened device has
        // taken `startThreshold` frames (it starts playing once its buffer is full).
        var interrupted = false
        var writtenSinceOpen = 0
        var startThreshold = 0
        var deviceFill = 0  // frames in the device buffer still to play, as of the last write
        var paused = true  // faded out and idle (also before anything plays)
        var playerSounding = true  // the player's input takes part in the periods rendered
        var othersOnly = false  // the last periods held only sessions' streams
        var playerIdle = true  // the player is paused or at the end of its queue
        var reportedIdle = true  // mirrors outputIdle

        func adopt(_ opened: PCMDevice) {
            let f = opened.format
            if f.periodFrames * f.bytesPerFrame > periodBytes {
                periodBuffer.deallocate()
                periodBytes = f.periodFrames * f.bytesPerFrame
                periodBuffer = .allocate(byteCount: periodBytes, alignment: 16)
                lockMemory(periodBuffer, periodBytes)
            }
            mixer.configure(format: f, maxFrames: f.periodFrames)
            format = f
            currentFormat.withLock { $0 = f }
            deviceRate.store(f.sampleRate, ordering: .relaxed)
            deviceChannels.store(f.channels, ordering: .relaxed)
            deviceGeneration.add(1, ordering: .releasing)
            setDeviceState(.open)
            startThreshold = f.bufferFrames - f.bufferFrames % max(1, f.periodFrames)
            writtenSinceOpen = 0
        }

        /// The output stops being heard (outside the render path: it allocates and locks).
        func interrupt(_ why: OutputInterruption) {
            interrupted = true
            lastInterruption.withLock { $0 = why }
            outputInterrupted.store(true, ordering: .releasing)
            interruptionCount.add(1, ordering: .releasing)
        }

        func nap(_ ms: Int) {
            var slept = 0
            while slept < ms && !stopRequested.load(ordering: .relaxed) {
                sleepMilliseconds(min(50, ms - slept))
                slept += 50
            }
        }

        while !stopRequested.load(ordering: .relaxed) {
            // A session's new stream clears what its slot's last stream left.
            var slot = 0
            while slot < streamSlots.count {
                let slotRing = streamSlots[slot].ring
                if slotRing.reachedCut != nil { slotRing.takeCut() }
                slot += 1
            }

            // A cut: a seek or skip (drop what is queued) or a track boundary (play it out),
            // perhaps with a new format (reconfigure). Taken even while paused.
            if let cut = ring.reachedCut, pending == 0 || !cut.playsOut {
                if !cut.playsOut {
                    // What is queued is abandoned; the new item starts bit-exact at once.
                    pending = 0
                    device?.drop()
                }
                if let next = cut.format, next != request?.stream {
                    if let dev = device, cut.playsOut {
                        dev.drain(timeoutMilliseconds: 1000 + dev.format.bufferFrames * 1000 / dev.format.sampleRate)
                    }
                    device = nil
                    request = OutputRequest(stream: next, periodFrames: options.periodFrames, bufferFrames: options.bufferFrames)
                    setDeviceState(.closed)
                }
                // The decoder converts to the device's rate and channels: a cut with a format
                // is taken only once the device is open and they are known.
                if cut.format == nil || device != nil {
                    ring.takeCut()
                    continue
                }
            }

            // A stream started before anything played opens the device at its own format.
            if request == nil, let wanted = streamDeviceRequest.withLock({ $0 }) {
                request = OutputRequest(stream: wanted, periodFrames: options.periodFrames, bufferFrames: options.bufferFrames)
            }

            if device == nil, let wanted = request {
                do {
                    let opened = try PCMDevice(name: options.device, request: wanted)
                    adopt(opened)
                    device = opened
                    lost = false
                    if interrupted { reopenCount.add(1, ordering: .releasing) }
                } catch {
                    // The first failure of an outage interrupts; a lost device's failed
                    // reopens only go on waiting for it.
                    if !interrupted { interrupt(.unavailable(error)) }
                    if !lost { setDeviceState(.unavailable) }
                    nap(options.reopenIntervalMilliseconds)
                }
                continue
            }

            let pauseWanted = pauseRequested.load(ordering: .acquiring)
            playerInput.gain = pauseWanted ? 0 : Float(bitPattern: volumeBits.load(ordering: .relaxed))
            if pending == 0 {
                let othersWant = format.map { streamsWantOutput(periodSamples: $0.periodFrames * $0.channels) } ?? false
                // Paused (once faded out), or at the end of the queue: the player is silent, and
                // unless a session's stream has audio the device idles.
                let atEnd = ring.readableSamples == 0 && ring.samplesRead >= queueEnd.load(ordering: .acquiring)
                let playerSilent = (pauseWanted && (paused || mixer.isSilent(playerInput))) || atEnd
                if playerSilent && !othersWant {
                    if !paused {
                        // A pause drops the player's faded-out tail; a session's stream plays out.
                        if pauseWanted && !othersOnly { device?.drop() } else if let dev = device {
                            dev.drain(timeoutMilliseconds: 1000 + dev.format.bufferFrames * 1000 / dev.format.sampleRate)
                        }
                        paused = true
                    }
                    othersOnly = false
                    playerIdle = true
                    reportedIdle = true
                    outputIdle.store(true, ordering: .releasing)
                    outputWakeup.wait(milliseconds: 100)
                    continue
                }
                if playerSilent {
                    playerSounding = false
                    playerIdle = true
                } else if ring.readableSamples == 0 {
                    // The decoder is behind (start-up, a seek, a slow disk): wait for it, or let
                    // the sessions' streams go on without the player until it catches up.
                    guard othersWant else {
                        outputWakeup.wait(milliseconds: 1)
                        continue
                    }
                    playerSounding = false
                } else {
                    playerSounding = true
                    playerIdle = false
                }
                // A disabled primary input lets the mixer render periods of the other inputs.
                playerInput.isEnabled = playerSounding
            }
            guard let dev = device, let f = format else {
                outputWakeup.wait(milliseconds: 10)
                continue
            }
            paused = false
            othersOnly = !playerSounding
            if reportedIdle != playerIdle {
                reportedIdle = playerIdle
                outputIdle.store(playerIdle, ordering: .releasing)
            }

            // ── Render path (see Mixer.render) ──
            var outcome: PCMDevice.WriteOutcome?
            if pending == 0 {
                // Render only once the device has room for the period: what is rendered is
                // written at once, so a gain change (duck, pause, volume) is heard one buffer
                // after it is made.
                outcome = dev.waitForRoom(f.periodFrames, timeoutMilliseconds: stallTimeout(f))
                if outcome == nil {
                    deviceFill = max(0, f.bufferFrames - dev.availableFrames)
                    pending = mixer.render(into: periodBuffer, frames: f.periodFrames)
                    offset = 0
                    if pending == 0 { continue }
                }
            }
            switch outcome ?? dev.write(periodBuffer + offset * f.bytesPerFrame, count: pending, timeoutMilliseconds: stallTimeout(f)) {
            case .wrote(let n):
                pending -= n
                offset += n
                framesWritten.add(n, ordering: .relaxed)
                deviceFill += n
                // What is heard now: the player's frames read, less those still in the device
                // or not yet written. Periods without the player hold none of its frames.
                let read = ring.samplesRead
                heardSample.store(playerSounding ? read - (deviceFill + pending) * f.channels : read,
                                  ordering: .releasing)
                if interrupted {
                    // Heard again once the device has taken enough to start.
                    writtenSinceOpen += n
                    if writtenSinceOpen >= startThreshold {
                        interrupted = false
                        outputInterrupted.store(false, ordering: .releasing)
                        resumeCount.add(1, ordering: .releasing)
                    }
                }
            case .recoveredUnderrun:
                underrunCount.add(1, ordering: .relaxed)
            case .stalled:
                lossCode = 0
            case .failed(let code):
                lossCode = code
            }
            if lossCode != nil {
                // Gone (error) or wedged (no period completes): close and reopen later. What
                // was rendered but not accepted is kept and written first.
                device = nil
                lost = true
                lossCount.add(1, ordering: .relaxed)
                setDeviceState(.lost)
            }
            // ── Render path ends ──
            if let code = lossCode {
                lossCode = nil
                interrupt(code == 0 ? .stalled(device: options.device, milliseconds: Int(stallTimeout(f)))
                                    : .lost(ALSAError(device: options.device, operation: "write to", code: code)))
            }
        }
        device?.drop()
        device = nil
        setDeviceState(.closed)
        outputFinished.store(true, ordering: .releasing)
    }

    /// Some session's stream has audio to play now. Output thread; no lock, no allocation.
    @inline(__always)
    private func streamsWantOutput(periodSamples: Int) -> Bool {
        var slot = 0
        while slot < streamSlots.count {
            if streamSlots[slot].wantsOutput(periodSamples: periodSamples) { return true }
            slot += 1
        }
        return false
    }

    private func lockMemory(_ buffer: UnsafeMutableRawPointer, _ bytes: Int) {
        let regions = [ring.storageRegion, UnsafeMutableRawBufferPointer(start: buffer, count: bytes)] + mixer.scratchRegions
            + streamSlots.map(\.ring.storageRegion)
        let error = lockRegions(regions)
        if memlockErrno.load(ordering: .relaxed) <= 0 { memlockErrno.store(error, ordering: .relaxed) }
    }
}
