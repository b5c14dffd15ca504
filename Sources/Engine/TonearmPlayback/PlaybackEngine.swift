import Synchronization
import TonearmALSA
import TonearmAudio
import TonearmDecoding
import TonearmStreams
import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// Settings of the playback engine; the CLI and the board profile fill them.
public struct PlaybackOptions: Sendable {
    /// ALSA PCM name: `default`, `hw:CARD=x,DEV=0`, `plughw:…`, or one from an ALSA config.
    public var device = "default"
    /// Frames per ALSA period, when the buffer is given in frames: 256 frames at 48 kHz is
    /// 5.3 ms.
    public var periodFrames = 256
    /// Frames in the ALSA buffer (4 periods by default), when `bufferMilliseconds` is nil or the
    /// device cannot take back what it has not played. A buffer of 100 ms or more on a device
    /// that can is rewound whichever way it was sized (`DeviceFormat.isRewoundWherePossible`);
    /// otherwise a command is heard one buffer after it is made.
    public var bufferFrames = 1024
    /// The ALSA buffer in milliseconds, for a device that can take back what it has not played
    /// (`snd_pcm_rewind`), with a period a quarter of it: the output thread wakes about 8 times
    /// a second at 500 ms, and a command is heard within `rewindGuardMilliseconds` all the same.
    /// nil: `periodFrames` and `bufferFrames`, commands heard a buffer late.
    public var bufferMilliseconds: Int?
    /// What a rewind leaves the device to play before the new audio: how late a command is
    /// heard, and the time the output thread has to write again.
    public var rewindGuardMilliseconds = 5
    /// How carefully a file is resampled to a device that lacks its rate.
    public var resampleQuality = ResampleQuality.high
    /// Software volume in percent of full scale (100 = unity, bit-perfect).
    public var volumePercent: Double = 100
    /// How far the decoder runs ahead of the output, in seconds of audio.
    public var readAheadSeconds: Double = 2
    /// The stream the read-ahead is sized for (rate × channels, at the device): 48 kHz stereo
    /// by default, what most music is; a larger stream gets proportionally less read-ahead
    /// (1 s at 96 kHz with the default 2 s), a smaller one more.
    public var readAheadSamplesPerSecond = 48_000 * 2
    /// Pause between attempts to reopen a device that went away.
    public var reopenIntervalMilliseconds = 500
    /// A device that completes no period for this long is treated as gone; nil means four
    /// buffer lengths, and never less than a second.
    public var stallTimeoutMilliseconds: Int?
    /// SCHED_FIFO priority asked for by the output thread.
    public var realtimePriority: Int32 = 70
    /// Mixer slots for sessions' streams besides the player (`startStream`).
    public var streamSlots = 10
    /// Samples each stream slot's ring holds: 0.5 s at 48 kHz stereo. Small, so several slots
    /// keep the daemon's resident size down; the producer refills it every few milliseconds.
    /// With `bufferMilliseconds`, room for that much history besides.
    public var streamRingSamples = 48_000
    /// How http(s) items are streamed: buffer, timeouts, a CA file to trust.
    public var stream = HTTPSource.Options()

    public init() {}
}

/// One thing to play: the player's queue item id and the file.
public struct EngineItem: Sendable, Equatable {
    public var id: Int
    public var path: String
    /// It plays within an album heard in order: ReplayGain's `auto` takes the album's gain.
    public var albumInOrder: Bool
    /// The part of the file that plays, in seconds: from `start` (a play from earlier starts
    /// there) to `end` (the file's end when nil).
    public var start: Double
    public var end: Double?

    public init(id: Int, path: String, albumInOrder: Bool = false, start: Double = 0, end: Double? = nil) {
        self.id = id
        self.path = path
        self.albumInOrder = albumInOrder
        self.start = start
        self.end = end
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

/// Something the control plane should know about, oldest first. The engine announces that
/// there are new ones (`notify`); `nextEvents(now:)` collects them.
public enum PlaybackEvent: Sendable {
    case itemStarted(ItemStart)
    /// The item could not be played (or only partly, for truncated or corrupt audio); the
    /// engine went on with what follows it.
    case itemFailed(itemID: Int, DecodeError)
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
    case realtimeRefused(String)
    case memoryLockRefused(String)
    /// The device cannot take back what it has not played: it was opened with `bufferFrames`
    /// instead of `bufferMilliseconds`, and commands are heard a buffer late.
    case rewindRefused(device: String, DeviceFormat)
    /// A session's stream has been heard to its end, or was stopped and has faded out; its slot
    /// is free (`streamFinished(_:)` says the same when asked).
    case streamFinished(StreamHandle)
    /// An http(s) item's connection changed state, its station's headers came, or its ICY
    /// title changed: told as it happens on the network (ahead of the audio by the buffers).
    case radio(itemID: Int, StreamEvent)
}

/// What the log says once when the device cannot rewind.
public func rewindRefusedLine(device: String, _ format: DeviceFormat) -> String {
    "'\(device)' is not rewound (no sound card behind it, or snd_pcm_rewind refused): playing with a buffer of "
        + "\(format.bufferFrames) frames instead, so commands are heard \(format.bufferFrames * 1000 / max(1, format.sampleRate)) ms late"
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
    /// A client turned the output off: the device is closed, free for others, until it is
    /// turned on again.
    case disabled(device: String)

    public var description: String {
        switch self {
        case .lost(let error): "\(Self.kind(error.device)) '\(error.device)' lost: \(error.reason)"
        case .stalled(let device, let ms): "\(Self.kind(device)) '\(device)' stopped responding (no period in \(ms) ms)"
        case .unavailable(let error): error.description
        case .disabled(let device): "\(Self.kind(device)) '\(device)' is turned off"
        }
    }

    /// What a device name names: a named pipe (`pipe:PATH`) or an ALSA PCM.
    static func kind(_ device: String) -> String {
        device.hasPrefix(PipeOutput.prefix) ? "pipe" : "ALSA PCM"
    }

    /// What the output is doing about it, in a few words for `status`.
    public var waiting: String {
        switch self {
        case .lost: "device lost, waiting for it"
        case .stalled: "device stopped responding, waiting for it"
        case .unavailable: "waiting for the device"
        case .disabled: "output turned off"
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

/// Audio files → decoder thread → SPSC ring → output thread (mixer, ALSA).
///
/// The control plane tells the engine what to play (`play`, `stop`, `pause`, `resume`,
/// `setVolume`) and answers, through `upcoming`, what follows an item; the decoder thread asks
/// it at the end of each file and goes straight on, so consecutive files are gapless. Pause,
/// resume and volume act at the mixer, so they reach the speaker within the ALSA buffer, not
/// after the read-ahead. The threads share only rings, atomics, the hand-offs of
/// `HandOffs.swift` and the output's events (`OutputEvents.swift`); the output thread takes no
/// lock (`OutputThread.swift`). Each thread with nothing to do sleeps until a command or
/// another thread gives it work.
///
/// The engine announces what happened (`notify`, once for each batch) and the control plane
/// collects it with `nextEvents(now:)`.
///
/// Sessions' streams (`startStream`) play beside the player through the mixer's other slots,
/// each fed by its own producer thread; the output keeps running for them while the player is
/// paused or idle, with the player's input disabled so the mixer renders whole periods of them.
public final class PlaybackEngine: @unchecked Sendable {
    public let options: PlaybackOptions
    /// What follows an item in the queue; called on the decoder thread.
    let upcoming: @Sendable (Int) -> EngineItem?
    /// Called from the engine's threads when `nextEvents(now:)` has something new.
    private let notify: @Sendable () -> Void
    /// Set when announcing, cleared by `nextEvents`: one `notify` for each batch.
    private let announced = Atomic<Bool>(false)

    let ring: SPSCRing
    let playerInput: MixerInput
    /// Sessions' streams, mixer inputs 1…; created once, reused.
    let streamSlots: [StreamSlot]
    let streamClaims = Mutex<Void>(())
    /// Slots claimed by a stream: while none is, the output thread skips them.
    let busySlots = Atomic<Int>(0)
    let mixer: Mixer

    // Control → decoder thread.
    enum DecoderCommand {
        case play(EngineItem, from: Double, request: Int)
        case stop
        case upcomingChanged
    }
    let commands = Mutex<[DecoderCommand]>([])
    /// Numbers `play` and `stop` calls, so the control plane can tell stale starts.
    private let requests = Atomic<Int>(0)

    /// The decoder's and the output thread's sleep: commands wake them, and each rings the
    /// other when it has made room or audio.
    let decoderBell = Doorbell()
    let outputBell = Doorbell()
    /// Ring sample index where the queue ends; `Int.max` while more is coming. Decoder → output.
    /// 0 before anything plays: an engine with nothing queued is at its end, and its output
    /// thread sleeps instead of waiting for a decoder that has nothing to decode.
    let queueEnd = Atomic<Int>(0)
    /// Counts the ends of queue the control plane is to be told (`Timeline.endSerial`), so the
    /// output can announce one when it falls idle there. Decoder → output.
    let endsToTell = Atomic<Int>(0)
    /// Where items start in the ring, decoder → output, which announces them as it reaches them.
    let starts = StartQueue(entries: 1024)

    // Control → output thread.
    let stopRequested = Atomic<Bool>(false)
    let pauseRequested = Atomic<Bool>(false)
    /// Counts changes of what the mixer is to make of its inputs (a gain target, a stream that
    /// starts): the output thread takes back what the device has not played and renders it
    /// again.
    let mixGeneration = Atomic<Int>(0)
    /// False while a client has turned the output off.
    let outputEnabled = Atomic<Bool>(true)
    let volumeBits = Atomic<UInt32>(Float(1).bitPattern)
    /// ReplayGain as the control plane set it; the output thread applies it to what it hears.
    let replayGain = SequenceLocked<ReplayGainSettings>(ReplayGainSettings())
    let replayGainGeneration = Atomic<Int>(0)

    // Output thread → control: what happened, in order (`OutputEvent`), and the output's state
    // and statistics through atomics.
    let outputEvents = OutputEventQueue(events: 1024)
    let outputFinished = Atomic<Bool>(false)
    let outputIdle = Atomic<Bool>(true)
    let underrunCount = Atomic<Int>(0)
    let lossCount = Atomic<Int>(0)
    /// Whether the output is not heard: from an interruption (a loss, or the first failed
    /// open of an outage) until frames flow again.
    let outputInterrupted = Atomic<Bool>(false)
    /// Set once the output thread asked a device whether it takes back what it has not played
    /// (a buffer long enough to rewind), and once it found it cannot.
    let rewindProbed = Atomic<Bool>(false)
    let rewindRefused = Atomic<Bool>(false)
    /// Rewinds made, and the frames they took back: for `doctor` and the benchmarks.
    let rewindCount = Atomic<Int>(0)
    let rewoundFrames = Atomic<Int>(0)
    let framesWritten = Atomic<Int>(0)
    /// Frames the device held, and those rendered but not yet written, as of the last write:
    /// how far behind the mixer the listener is. Output → control.
    let deviceQueuedFrames = Atomic<Int>(0)
    /// When `deviceQueuedFrames` was true (CLOCK_MONOTONIC nanoseconds; 0 before the first
    /// write): the device has played on since, so a reader takes off what it played.
    let deviceQueuedAt = Atomic<Int>(0)
    /// The player's ring sample being heard as of the last write: what the mixer read, less the
    /// frames waiting in the device buffer and those rendered but not yet written. Output →
    /// control, to tell when a mark is (or will be) heard.
    let heardSample = Atomic<Int>(0)
    let deviceState = Atomic<Int>(0)  // DeviceStatus.State, by index
    /// Device rate and channels, published by the output thread before it takes a cut with a
    /// new format, read by the decoder thread after.
    let deviceRate = Atomic<Int>(0)
    let deviceChannels = Atomic<Int>(0)
    /// Bumped each time the device is (re)configured, after the rate and channels; a stream's
    /// producer converts afresh when it changes.
    let deviceGeneration = Atomic<Int>(0)
    /// The format to open the device at when a stream starts before anything has played; set
    /// once, under `streamClaims`, read by the output thread.
    let streamDeviceRequest = SequenceLocked<StreamFormat>(nil)
    /// The device format as of the last (re)configuration: written by the output thread, read
    /// by the decoder and the control plane.
    let currentFormat = SequenceLocked<DeviceFormat>(nil)
    /// Why the output stopped being heard, handed by the output thread to the control plane,
    /// which keeps the last one (`lastInterruption`, a lock of the control plane's own).
    let interruptions = HandOff<OutputInterruption>()
    private let lastInterruption = Mutex<OutputInterruption?>(nil)

    /// Where each item starts in the ring, and where the queue ends; decoder thread → control.
    struct Mark {
        /// Counts marks: two may share a ring index (a play replaced before a sample was written).
        var serial: Int
        var start: ItemStart
        var ringSample: Int
        var sourceRate: Int
        var deviceRate: Int
        var channels: Int
    }
    struct Timeline {
        var marks: [Mark] = []
        var endOfQueue: Int?
        /// Counts the ends set, so each is told once: an end replaced by the next before the
        /// control plane looked is still told.
        var endSerial = 0
        var markSerial = 0
        var errors: [(Int, DecodeError)] = []
    }
    let timeline = Mutex(Timeline())
    /// The http(s) item being decoded: a command ends its waits for the network at once.
    let liveSource = Mutex<HTTPSource?>(nil)
    /// Whether the decoder reads a station (`liveSource` is set), for the output thread.
    let readingLive = Atomic<Bool>(false)
    /// What the item's stream told, stream thread → control.
    let radioReports = Mutex<[(Int, StreamEvent)]>([])

    // Control-plane bookkeeping (the control plane calls from one thread or actor).
    private var announcedMark = 0  // serial of the last mark announced
    private var announcedEnd = 0  // serial of the last end of queue announced
    private var announcedErrors = 0
    /// A refusal to rewind waits to be told until a device format is known.
    private var rewindRefusalToTell = false
    /// Whether the output was last told interrupted: after lost events, the state says what
    /// to tell.
    private var toldInterrupted = false
    private var announcedFinishedStreams: [Int]  // by slot: the serial of the last stream told
    private var threads: [NamedThread] = []
    /// Locks memory for the output thread and the stream slots; a test's stand-in may refuse,
    /// as a low RLIMIT_MEMLOCK does. Set before `start()`.
    var lockMemoryRegions: @Sendable ([UnsafeMutableRawBufferPointer]) -> Int32 = lockRegions

    /// `notify` is called, from the engine's threads, when `nextEvents(now:)` has something new
    /// to say: once, until `nextEvents` is called. It must not block; the daemon writes a pipe.
    public init(options: PlaybackOptions, notify: @escaping @Sendable () -> Void = {},
                upcoming: @escaping @Sendable (Int) -> EngineItem?) {
        self.options = options
        self.notify = notify
        self.upcoming = upcoming
        // A rewind renders a ring's history again, and a ring keeps at most half of itself as
        // history: the read-ahead, or twice the device buffer (at 48 kHz stereo when it is
        // given in milliseconds) if that is more.
        let bufferSamples = max((options.bufferMilliseconds ?? 0) * 48 * 2, options.bufferFrames * 2)
        let history = 2 * bufferSamples
        ring = SPSCRing(capacity: max(Int(Double(options.readAheadSamplesPerSecond) * options.readAheadSeconds), history))
        let volume = Float(max(0, min(100, options.volumePercent)) / 100)
        volumeBits.store(volume.bitPattern, ordering: .relaxed)
        playerInput = MixerInput(ring: ring, gain: volume)
        streamSlots = (0..<max(0, options.streamSlots)).map {
            StreamSlot(index: $0 + 1, ringSamples: max(1024, options.streamRingSamples, history))
        }
        announcedFinishedStreams = streamSlots.map { _ in 0 }
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
            NamedThread(name: "tonearm-output") { [self] in
                var output = OutputThread(engine: self)
                output.run()
            },
        ]
    }

    /// Stops both threads (dropping what is queued at once) and waits for them.
    public func shutdown() {
        stopRequested.store(true, ordering: .releasing)
        endNetworkWait()
        decoderBell.wake()
        outputBell.wake()
        for slot in streamSlots { slot.bell.wake() }
        for thread in threads { thread.join() }
        threads = []
        streamClaims.withLock { _ in
            for slot in streamSlots {
                slot.thread?.join()
                slot.thread = nil
            }
        }
    }

    /// The output thread's: queues `event` and announces it. Never in the render path.
    func tell(_ event: OutputEvent) {
        outputEvents.push(event)
        announce()
    }

    /// Tells the control plane there is something new for `nextEvents`, once for each batch.
    /// Called by the engine's threads after they published it, never in the render path.
    func announce() {
        // Orders what was published before the flag (see `nextEvents`).
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if !announced.exchange(true, ordering: .sequentiallyConsistent) { notify() }
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
        endNetworkWait()
        decoderBell.wake()
        outputBell.wake()
        return request
    }

    /// Silence; forgets the current item. Returns the request number: starts numbered below it
    /// are stale.
    @discardableResult
    public func stop() -> Int {
        let request = requests.add(1, ordering: .relaxed).newValue
        commands.withLock { $0.append(.stop) }
        endNetworkWait()
        decoderBell.wake()
        return request
    }

    /// Fades out and holds the position; the read-ahead is kept.
    public func pause() {
        pauseRequested.store(true, ordering: .releasing)
        mixChanged()
    }

    /// Fades back in where it paused.
    public func resume() {
        pauseRequested.store(false, ordering: .releasing)
        mixChanged()
    }

    /// What the mixer makes of its inputs changed: the output thread takes back what the
    /// device has not played yet and renders it again, so the change is heard at once.
    func mixChanged() {
        mixGeneration.add(1, ordering: .releasing)
        outputBell.wake()
    }

    /// True once a pause has faded out and the device is idle.
    public var isPausedOrIdle: Bool { outputIdle.load(ordering: .acquiring) }

    /// Software volume, 0…100 %; ramps, never clicks.
    public func setVolume(_ percent: Double) {
        let gain = Float(max(0, min(100, percent)) / 100)
        volumeBits.store(gain.bitPattern, ordering: .relaxed)
        mixChanged()
    }

    /// Turns the output off (the device is closed and nothing is heard; playback holds where
    /// it is, as while a device is lost) or on again.
    public func setOutputEnabled(_ on: Bool) {
        outputEnabled.store(on, ordering: .releasing)
        outputBell.wake()
    }

    public var isOutputEnabled: Bool { outputEnabled.load(ordering: .acquiring) }

    /// How loud each item plays (ReplayGain). From the next period on; off keeps the stream
    /// bit-perfect.
    public func setReplayGain(_ settings: ReplayGainSettings) {
        replayGain.store(settings)
        replayGainGeneration.add(1, ordering: .releasing)
        mixChanged()
    }

    /// What follows the current item changed; re-reads it through `upcoming`.
    public func upcomingChanged() {
        commands.withLock { $0.append(.upcomingChanged) }
        decoderBell.wake()
    }

    // MARK: Observations (control plane)

    public var underruns: Int { underrunCount.load(ordering: .relaxed) }
    /// Whether the device takes back what it has not played (nil until one with a buffer long
    /// enough to rewind was opened), and the rewinds made so far with the frames they took back.
    public var rewinds: (supported: Bool?, count: Int, frames: Int) {
        let probed = rewindProbed.load(ordering: .acquiring)
        return (probed ? !rewindRefused.load(ordering: .acquiring) : nil, rewindCount.load(ordering: .relaxed),
                rewoundFrames.load(ordering: .relaxed))
    }
    public var deviceLosses: Int { lossCount.load(ordering: .relaxed) }
    /// Frames handed to ALSA since the start.
    public var writtenFrames: Int { framesWritten.load(ordering: .relaxed) }

    public var deviceStatus: DeviceStatus {
        let states: [DeviceStatus.State] = [.closed, .open, .lost, .unavailable]
        let interrupted = outputInterrupted.load(ordering: .acquiring)
        return DeviceStatus(name: options.device, state: states[deviceState.load(ordering: .relaxed)],
                            format: currentFormat.load(), underruns: underruns, losses: deviceLosses,
                            interruption: interrupted ? latestInterruption() : nil)
    }

    /// The last reason the output stopped being heard, as the output thread handed it over.
    private func latestInterruption() -> OutputInterruption? {
        lastInterruption.withLock { last in
            if let given = interruptions.take() { last = given }
            return last
        }
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

    /// What to open the device as for `stream`: a buffer of `bufferMilliseconds` at its rate
    /// while the device can rewind, else `bufferFrames`.
    func outputRequest(for stream: StreamFormat) -> OutputRequest {
        guard let milliseconds = options.bufferMilliseconds, !rewindRefused.load(ordering: .relaxed) else {
            return OutputRequest(stream: stream, periodFrames: options.periodFrames, bufferFrames: options.bufferFrames)
        }
        return OutputRequest(stream: stream, bufferMilliseconds: milliseconds)
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
        // Cleared before looking: whatever is published from here on is announced again.
        announced.store(false, ordering: .sequentiallyConsistent)
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        var events: [PlaybackEvent] = []
        // The output's events, in order. Several interruptions between two calls are told as
        // the last one; a return is told only if it came after it.
        var (interrupted, reopened, underran, resumed) = (false, false, false, false)
        while let event = outputEvents.pop() {
            switch event {
            case .realtimeRefused(let code): events.append(.realtimeRefused(String(cString: strerror(code))))
            case .memoryLockRefused(let code): events.append(.memoryLockRefused(String(cString: strerror(code))))
            case .rewindRefused: rewindRefusalToTell = true
            case .interrupted: (interrupted, resumed) = (true, false)
            case .reopened: reopened = true
            case .underrun: underran = true
            case .resumed: resumed = true
            }
        }
        if outputEvents.takeLost() > 0 {
            // Some were dropped: the counts and the state say what they were.
            underran = true
            let now = outputInterrupted.load(ordering: .acquiring)
            if now != toldInterrupted { (interrupted, resumed) = (now, !now) }
        }
        if rewindRefusalToTell, let format = currentFormat.load() {
            rewindRefusalToTell = false
            events.append(.rewindRefused(device: options.device, format))
        }
        if interrupted, let why = latestInterruption() {
            toldInterrupted = true
            events.append(.outputInterrupted(why, position: position()))
        }
        if reopened, let format = currentFormat.load() { events.append(.deviceReopened(format)) }
        if underran { events.append(.underruns(total: underruns)) }
        if resumed { toldInterrupted = false }
        let read = ring.samplesRead
        let heard = min(heardSample.load(ordering: .acquiring), read)
        let device = currentFormat.load()
        let idle = outputIdle.load(ordering: .acquiring)
        for (itemID, event) in radioReports.withLock({ r in defer { r.removeAll() }; return r }) {
            events.append(.radio(itemID: itemID, event))
        }
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
        // A slot is claimed again only once its stream has finished: every serial up to the
        // last finished one has finished.
        for (index, slot) in streamSlots.enumerated() {
            let finished = slot.finishedSerial.load(ordering: .acquiring)
            while announcedFinishedStreams[index] < finished {
                announcedFinishedStreams[index] += 1
                events.append(.streamFinished(StreamHandle(slot: slot.index, serial: announcedFinishedStreams[index])))
            }
        }
        return events
    }
}
