import Synchronization

/// How long each kind of gain change takes, in seconds. The mixer turns them into frames at the
/// device's rate in `init` and `configure`.
public struct MixerTiming: Hashable, Sendable {
    /// A volume change (`MixerInput.gain`), linear in amplitude.
    public var volume: Double
    /// Ducking down to `MixerInput.duckLevel`, linear in dB.
    public var duck: Double
    /// Coming back up from a duck, linear in dB.
    public var duckRestore: Double
    /// A fade out (pause, interruption) or in (`MixerInput.fade`), linear in amplitude.
    public var fade: Double
    /// Time constant of the limiter's release.
    public var limiterRelease: Double

    public init(volume: Double = 0.02, duck: Double = 0.15, duckRestore: Double = 0.3, fade: Double = 0.03,
                limiterRelease: Double = 0.1) {
        self.volume = volume
        self.duck = duck
        self.duckRestore = duckRestore
        self.fade = fade
        self.limiterRelease = limiterRelease
    }
}

/// One stream feeding the mixer: a ring of samples already in the device's rate and channel
/// layout, and three gain factors the control plane sets from any thread and the render path
/// ramps towards, each over its own time (`MixerTiming`), plus the ReplayGain level the output
/// thread sets at track boundaries. The stream sounds at `gain × duckLevel × fade × level`.
public final class MixerInput: @unchecked Sendable {
    public let ring: SPSCRing
    private let volumeBits: Atomic<UInt32>
    private let duckBits: Atomic<UInt32>
    private let fadeBits: Atomic<UInt32>
    private let levelBits = Atomic<UInt32>(Float(1).bitPattern)
    private let enabledFlag: Atomic<Bool>
    private let appliedBits: Atomic<UInt32>
    /// `attach` publishes the factors a new stream starts at, then bumps the generation.
    private let attachGeneration = Atomic<Int>(0)
    private let startVolumeBits = Atomic<UInt32>(Float(1).bitPattern)
    private let startDuckBits = Atomic<UInt32>(Float(1).bitPattern)
    private let startFadeBits = Atomic<UInt32>(Float(1).bitPattern)

    // Render-thread state.
    fileprivate var volumeRamp: GainRamp
    fileprivate var duckRamp: GainRamp
    fileprivate var fadeRamp: GainRamp
    fileprivate var levelRamp = GainRamp(1)
    fileprivate var seenGeneration = 0

    /// The factors apply from the first sample, with no ramp.
    public init(ring: SPSCRing, gain: Float = 1, duckLevel: Float = 1, fade: Float = 1, isEnabled: Bool = true) {
        self.ring = ring
        volumeBits = Atomic(gain.bitPattern)
        duckBits = Atomic(duckLevel.bitPattern)
        fadeBits = Atomic(fade.bitPattern)
        enabledFlag = Atomic(isEnabled)
        appliedBits = Atomic((gain * duckLevel * fade).bitPattern)
        volumeRamp = GainRamp(gain)
        duckRamp = GainRamp(duckLevel)
        fadeRamp = GainRamp(fade)
    }

    /// The volume: linear gain the stream ramps to (1 = unity). At 0 the stream is silent.
    public var gain: Float {
        get { Float(bitPattern: volumeBits.load(ordering: .relaxed)) }
        set { volumeBits.store(newValue.bitPattern, ordering: .relaxed) }
    }

    /// The duck: 1 when not ducked, e.g. 0.1778 (−15 dB) while another session ducks others.
    public var duckLevel: Float {
        get { Float(bitPattern: duckBits.load(ordering: .relaxed)) }
        set { duckBits.store(newValue.bitPattern, ordering: .relaxed) }
    }

    /// The fade: 1 audible, 0 faded out (paused or interrupted).
    public var fade: Float {
        get { Float(bitPattern: fadeBits.load(ordering: .relaxed)) }
        set { fadeBits.store(newValue.bitPattern, ordering: .relaxed) }
    }

    /// The loudness correction (ReplayGain): 1 leaves the stream untouched. A change ramps like
    /// a volume change; `snapLevel` changes it between two samples, at a track boundary.
    public var level: Float {
        get { Float(bitPattern: levelBits.load(ordering: .relaxed)) }
        set { levelBits.store(newValue.bitPattern, ordering: .relaxed) }
    }

    /// Output thread only, between periods: the level jumps to `level` from the next frame
    /// rendered (a new track begins there, so no ramp blurs its first samples).
    public func snapLevel(_ level: Float) {
        self.level = level
        levelRamp.snap(to: level)
    }

    /// A disabled input is not read (its samples wait in the ring) and its ramps stand still.
    public var isEnabled: Bool {
        get { enabledFlag.load(ordering: .relaxed) }
        set { enabledFlag.store(newValue, ordering: .relaxed) }
    }

    /// `gain × duckLevel × fade` as applied to the last frame rendered, published once a period;
    /// any thread may read it (`tonearm sessions` shows it).
    public var appliedGain: Float { Float(bitPattern: appliedBits.load(ordering: .relaxed)) }

    /// Starts a new stream in this slot: the factors apply from its first sample with no ramp,
    /// whatever the slot's previous stream left in its ramps. Setting a factor afterwards ramps
    /// from these, so `attach(fade: 0)` then `fade = 1` fades the stream in.
    public func attach(gain: Float = 1, duckLevel: Float = 1, fade: Float = 1) {
        startVolumeBits.store(gain.bitPattern, ordering: .relaxed)
        startDuckBits.store(duckLevel.bitPattern, ordering: .relaxed)
        startFadeBits.store(fade.bitPattern, ordering: .relaxed)
        self.gain = gain
        self.duckLevel = duckLevel
        self.fade = fade
        attachGeneration.add(1, ordering: .releasing)
        enabledFlag.store(true, ordering: .releasing)
    }

    // Render-thread side.

    /// Enabled, with whatever `attach` published before enabling visible.
    @inline(__always)
    fileprivate var isEnabledForRendering: Bool { enabledFlag.load(ordering: .acquiring) }

    /// Jumps to the factors of a stream `attach`ed since the last period.
    @inline(__always)
    fileprivate func takeAttach() {
        let generation = attachGeneration.load(ordering: .acquiring)
        guard generation != seenGeneration else { return }
        seenGeneration = generation
        volumeRamp.snap(to: Float(bitPattern: startVolumeBits.load(ordering: .relaxed)))
        duckRamp.snap(to: Float(bitPattern: startDuckBits.load(ordering: .relaxed)))
        fadeRamp.snap(to: Float(bitPattern: startFadeBits.load(ordering: .relaxed)))
    }

    @inline(__always)
    fileprivate var isSettledAtUnity: Bool {
        volumeRamp.isSettled(at: 1) && duckRamp.isSettled(at: 1) && fadeRamp.isSettled(at: 1) && levelRamp.isSettled(at: 1)
    }

    @inline(__always)
    fileprivate func publishAppliedGain() {
        let applied = Float(volumeRamp.value * duckRamp.value * fadeRamp.value * levelRamp.value)
        appliedBits.store(applied.bitPattern, ordering: .relaxed)
    }
}

/// Sums its inputs into one device period.
///
/// The first input is the primary stream (the player): its samples are never padded or
/// dropped, so it decides how many frames a period holds. Alone, enabled and with every factor
/// settled at exactly 1 it takes the integer path, which is bit-perfect; otherwise every input
/// is mixed in floating point with per-frame gain ramps, limited (`PeakLimiter`) when the sum
/// would exceed full scale, and converted (dithered to 16 bits) to the device format.
///
/// The inputs are slots created up front (say 8, the player's first); sessions reuse them
/// without locks. A session takes a free slot, writes into its ring and calls `attach`; it
/// leaves by setting `isEnabled = false` (after fading out, once `appliedGain` is 0). The mixer
/// takes every cut on a secondary slot's ring at once, enabled or not, so a session clears what
/// the slot's previous stream left with `ring.cutNow(format: nil)` before it writes; the format
/// of such a cut is ignored, since secondary rings already carry the device's layout. The
/// primary ring's cuts are its owner's (the engine's).
///
/// A secondary input with fewer frames than the period is padded with silence; one whose ring
/// is empty contributes nothing. Its ramps keep the device's time meanwhile, so a stream that
/// restarts does so at the gain its ramps have reached, not partway through an old ramp.
///
/// With a history (`keepHistory`), what was rendered can be rendered again: the mixer renders
/// in chunks of `granule` frames and notes before each chunk where every input's ring was and
/// where its ramps, the limiter and the dither stood. `rewind(to:)` puts all of that back as it
/// was at a noted frame, so what follows is rendered again with the targets as they are now —
/// the same samples, bit for bit, where nothing changed. The frames are counted on the mixer's
/// own clock (`renderedFrames`). No rewind goes back past a *barrier*: the last samples of an
/// input that stopped being read (a stream that ended or was held, the player paused or idle),
/// or a point the owner marks (`markBarrier`: a track boundary).
public final class Mixer: @unchecked Sendable {
    public let inputs: [MixerInput]
    /// `inputs`, unretained (the array keeps them): the render path borrows an input from here
    /// with no retain and release, which, for every input in every 128-frame chunk, took about
    /// a tenth of `tonearm play`'s CPU.
    private let slots: UnsafeMutablePointer<Unmanaged<MixerInput>>
    public private(set) var maxFrames: Int
    public private(set) var format: DeviceFormat
    public private(set) var timing: MixerTiming
    /// Frames a volume change takes to complete, so no change clicks.
    public private(set) var rampFrames: Int
    /// Frames a fade (out or in) takes.
    public private(set) var fadeFrames: Int
    /// Frames a duck takes going down, and coming back up.
    public private(set) var duckFrames: Int
    public private(set) var duckRestoreFrames: Int

    private var intScratch: UnsafeMutablePointer<Int32>
    private var floatScratch: UnsafeMutablePointer<Float>
    private var dither = TPDFDither()
    private var limiter: PeakLimiter

    /// Frames rendered since the mixer was made: the clock rewinds are counted on.
    public private(set) var renderedFrames = 0
    /// Frames a chunk holds while a history is kept.
    public static let granule = 128
    private var notes: UnsafeMutablePointer<Note>
    private var inputNotes: UnsafeMutablePointer<InputNote>
    /// Notes kept: `noteCount` of them, the oldest at `firstNote`, in a circle of `noteCapacity`.
    private var noteCapacity = 0
    private var firstNote = 0
    private var noteCount = 0
    /// No rewind goes before this frame.
    private var barrier = 0

    /// Where everything stood before a chunk.
    private struct Note {
        var frame: Int
        var limiter: PeakLimiter
        var dither: TPDFDither
    }

    private struct InputNote {
        var readIndex: Int
        var volume: GainRamp
        var duck: GainRamp
        var fade: GainRamp
        var level: GainRamp
        var generation: Int
    }

    public init(inputs: [MixerInput], format: DeviceFormat, maxFrames: Int, timing: MixerTiming = MixerTiming()) {
        precondition(!inputs.isEmpty)
        self.inputs = inputs
        slots = .allocate(capacity: inputs.count)
        slots.initialize(from: inputs.map { Unmanaged.passUnretained($0) }, count: inputs.count)
        self.format = format
        self.maxFrames = maxFrames
        self.timing = timing
        rampFrames = Mixer.frames(timing.volume, format.sampleRate)
        fadeFrames = Mixer.frames(timing.fade, format.sampleRate)
        duckFrames = Mixer.frames(timing.duck, format.sampleRate)
        duckRestoreFrames = Mixer.frames(timing.duckRestore, format.sampleRate)
        limiter = PeakLimiter(releaseSeconds: timing.limiterRelease, sampleRate: format.sampleRate)
        intScratch = .allocate(capacity: maxFrames * format.channels)
        floatScratch = .allocate(capacity: maxFrames * format.channels)
        notes = .allocate(capacity: 1)
        inputNotes = .allocate(capacity: 1)
    }

    /// A mixer whose volume changes take `rampSeconds`; the other times are the defaults.
    public convenience init(inputs: [MixerInput], format: DeviceFormat, maxFrames: Int, rampSeconds: Double) {
        self.init(inputs: inputs, format: format, maxFrames: maxFrames, timing: MixerTiming(volume: rampSeconds))
    }

    deinit {
        slots.deallocate()
        intScratch.deallocate()
        floatScratch.deallocate()
        notes.deallocate()
        inputNotes.deallocate()
    }

    private static func frames(_ seconds: Double, _ sampleRate: Int) -> Int {
        max(1, Int((seconds * Double(sampleRate)).rounded()))
    }

    /// Adopts a new device format (and, when given, new ramp times), recomputing every ramp's
    /// length in frames at the new rate; allocates, so it is called between periods, never
    /// inside one. A ramp under way finishes at its old pace.
    public func configure(format: DeviceFormat, maxFrames: Int, timing: MixerTiming? = nil) {
        let samples = maxFrames * format.channels
        if samples > self.maxFrames * self.format.channels {
            intScratch.deallocate()
            floatScratch.deallocate()
            intScratch = .allocate(capacity: samples)
            floatScratch = .allocate(capacity: samples)
        }
        self.format = format
        self.maxFrames = maxFrames
        if let timing { self.timing = timing }
        rampFrames = Mixer.frames(self.timing.volume, format.sampleRate)
        fadeFrames = Mixer.frames(self.timing.fade, format.sampleRate)
        duckFrames = Mixer.frames(self.timing.duck, format.sampleRate)
        duckRestoreFrames = Mixer.frames(self.timing.duckRestore, format.sampleRate)
        limiter.configure(releaseSeconds: self.timing.limiterRelease, sampleRate: format.sampleRate)
    }

    /// Keeps what the last `frames` frames rendered need to be rendered again (0: nothing kept;
    /// every ring then lets go of what it has read). Allocates, so it is called between
    /// periods; what was kept before is forgotten.
    public func keepHistory(frames: Int) {
        let capacity = frames > 0 ? frames / Mixer.granule + 2 : 0
        if capacity > noteCapacity {
            notes.deallocate()
            inputNotes.deallocate()
            notes = .allocate(capacity: capacity)
            inputNotes = .allocate(capacity: capacity * inputs.count)
        }
        noteCapacity = capacity
        let channels = max(1, format.channels)
        for input in inputs {
            // As much as the notes can reach back to, within half the ring: the rest is the
            // producer's room.
            input.ring.keepHistory(capacity == 0 ? 0 : min(capacity * Mixer.granule * channels, input.ring.capacity / 2))
        }
        forgetHistory()
    }

    /// Nothing rendered so far will be rendered again (the device dropped it, or played it
    /// all): the notes go and the rings let go of what was read.
    public func forgetHistory() {
        firstNote = 0
        noteCount = 0
        barrier = renderedFrames
        for input in inputs { input.ring.release(upTo: Int.max) }
    }

    /// No rewind goes before the frame rendered next.
    public func markBarrier() { barrier = renderedFrames }

    /// The notes before `frame` will never be rewound to (the device has played that far): they
    /// go, and each ring lets go of what only they needed.
    public func releaseHistory(before frame: Int) {
        while noteCount > 1 && notes[(firstNote + 1) % max(1, noteCapacity)].frame <= frame {
            dropOldestNote()
        }
        releaseRings()
    }

    /// The earliest noted frame at or after `frame` that `rewind(to:)` can return to, or nil.
    /// `silent`: only one where the primary input had gone silent (a pause faded out), so that
    /// what it read after is read again when it plays on.
    public func rewindPoint(notBefore frame: Int, silent: Bool = false) -> Int? {
        var k = 0
        while k < noteCount {
            let index = (firstNote + k) % noteCapacity
            let note = notes[index]
            k += 1
            guard note.frame >= frame, note.frame >= barrier else { continue }
            if silent {
                let primary = inputNotes[index * inputs.count]
                guard primary.volume.isSettled(at: 0) || primary.fade.isSettled(at: 0) || primary.duck.isSettled(at: 0) else { continue }
            }
            if canRestore(index) { return note.frame }
        }
        return nil
    }

    /// Puts everything back as it stood at `frame`, a point `rewindPoint` gave: what follows is
    /// rendered again. False, changing nothing, when it is not one.
    @discardableResult
    public func rewind(to frame: Int) -> Bool {
        var k = noteCount - 1
        while k >= 0 {
            let index = (firstNote + k) % noteCapacity
            if notes[index].frame == frame { break }
            k -= 1
        }
        guard k >= 0, frame >= barrier else { return false }
        let index = (firstNote + k) % noteCapacity
        guard canRestore(index) else { return false }
        let note = notes[index]
        limiter = note.limiter
        dither = note.dither
        var i = 0
        while i < inputs.count {
            let input = inputs[i]
            let saved = inputNotes[index * inputs.count + i]
            input.ring.rewind(to: saved.readIndex)
            input.volumeRamp = saved.volume
            input.duckRamp = saved.duck
            input.fadeRamp = saved.fade
            input.levelRamp = saved.level
            // A stream attached since starts afresh from its first sample, here.
            input.seenGeneration = saved.generation
            i += 1
        }
        renderedFrames = frame
        // The notes after it are rendered anew.
        noteCount = k
        return true
    }

    /// Whether every input's ring still holds what the note at `index` needs: from there, or
    /// from the cut taken since (a new stream, a seek: what follows it starts at the note).
    /// Cuts whose audio before them must play out are barriers of the owner's.
    /// An input no longer read that has read since the note is a barrier too: what it played
    /// is not rendered again without it.
    private func canRestore(_ index: Int) -> Bool {
        var i = 0
        while i < inputs.count {
            let saved = inputNotes[index * inputs.count + i].readIndex
            let ring = inputs[i].ring
            guard ring.rewindTarget(saved) != nil, inputs[i].isEnabledForRendering || ring.samplesRead == saved else {
                return false
            }
            i += 1
        }
        return true
    }

    private func dropOldestNote() {
        firstNote = (firstNote + 1) % noteCapacity
        noteCount -= 1
    }

    /// Each ring keeps what the oldest note needs.
    private func releaseRings() {
        var i = 0
        while i < inputs.count {
            let ring = inputs[i].ring
            ring.release(upTo: noteCount > 0 ? inputNotes[firstNote * inputs.count + i].readIndex : Int.max)
            i += 1
        }
    }

    /// Notes where everything stands before the chunk rendered next.
    @inline(__always)
    private func note() {
        guard noteCapacity > 0 else { return }
        if noteCount == noteCapacity {
            dropOldestNote()
            releaseRings()
        }
        let index = (firstNote + noteCount) % noteCapacity
        notes[index] = Note(frame: renderedFrames, limiter: limiter, dither: dither)
        let count = inputs.count
        var i = 0
        while i < count {
            withInput(i) { input in
                inputNotes[index * count + i] = InputNote(
                    readIndex: input.ring.samplesRead, volume: input.volumeRamp, duck: input.duckRamp,
                    fade: input.fadeRamp, level: input.levelRamp, generation: input.seenGeneration)
            }
            i += 1
        }
        noteCount += 1
    }

    /// `input` has gone silent: its fade, volume or duck has reached 0 and is meant to stay
    /// there. Output thread only.
    public func isSilent(_ input: MixerInput) -> Bool {
        (input.fadeRamp.isSettled(at: 0) && input.fade == 0)
            || (input.volumeRamp.isSettled(at: 0) && input.gain == 0)
            || (input.duckRamp.isSettled(at: 0) && input.duckLevel == 0)
    }

    /// The limiter's gain on the last frame (1 = not limiting). Output thread only.
    public var limiterGain: Float { Float(limiter.gain) }

    /// Scratch memory the render path uses, for `mlock`.
    public var scratchRegions: [UnsafeMutableRawBufferPointer] {
        let n = maxFrames * format.channels
        return [
            UnsafeMutableRawBufferPointer(start: intScratch, count: n * 4),
            UnsafeMutableRawBufferPointer(start: floatScratch, count: n * 4),
        ]
    }

    /// Runs the mixing path — gains ramping and settled, the limiter, dither, packing — once
    /// over silence into `destination`, changing nothing the mixer keeps: its code and memory
    /// are touched before the first change of gain needs them in a hurry, after a rewind. (On
    /// an emulated CPU a path's first run is translated first; in the kernel suite that made
    /// the first rewind's refill take 4.7 ms, ten times the next one's.) Not on the render path.
    public func warmUp(into destination: UnsafeMutableRawPointer) {
        let channels = format.channels
        let frames = min(Mixer.granule, maxFrames)
        guard frames > 0, let input = inputs.first else { return }
        let kept = (input.volumeRamp, input.duckRamp, input.fadeRamp, input.levelRamp)
        let keptLimiter = limiter
        let keptDither = dither
        intScratch.update(repeating: 0, count: frames * channels)
        floatScratch.update(repeating: 0, count: frames * channels)
        input.volumeRamp.retarget(0.5, frames: frames, inDecibels: false)
        accumulate(input, frames: frames, of: frames, channels: channels)
        accumulate(input, frames: frames, of: frames, channels: channels)
        limiter.process(floatScratch, frames: frames, channels: channels)
        SampleConversion.pack(floatScratch, count: frames * channels, into: destination, format: format.sampleFormat,
                              dither: &dither, scratch: intScratch)
        (input.volumeRamp, input.duckRamp, input.fadeRamp, input.levelRamp) = kept
        limiter = keptLimiter
        dither = keptDither
    }

    // ── Render path begins ───────────────────────────────────────────────────────────────
    // From here to "Render path ends": no allocation, no lock, no logging, no actor call, no
    // system call. Everything touched was allocated in `init`/`configure`. `GainRamp` and
    // `PeakLimiter` are part of it.

    /// Input `index`, lent to `body` without a retain.
    @inline(__always)
    private func withInput<R>(_ index: Int, _ body: (MixerInput) -> R) -> R {
        slots[index]._withUnsafeGuaranteedRef(body)
    }

    /// Renders up to `frames` frames into `destination` (device format, interleaved); returns
    /// the number rendered, 0 when the primary stream has nothing ready. With a history, in
    /// chunks of `granule` frames, each noted first.
    public func render(into destination: UnsafeMutableRawPointer, frames requested: Int) -> Int {
        guard noteCapacity > 0 else {
            let n = renderChunk(into: destination, frames: requested)
            renderedFrames += n
            return n
        }
        let bytesPerFrame = format.bytesPerFrame
        var done = 0
        while done < requested {
            note()
            let wanted = min(Mixer.granule, requested - done)
            let n = renderChunk(into: destination + done * bytesPerFrame, frames: wanted)
            renderedFrames += n
            done += n
            if n < wanted { break }
        }
        return done
    }

    /// Every enabled secondary input's ramps move on by `frames` and publish the gain reached:
    /// the inputs a fast path did not mix keep the device's time.
    @inline(__always)
    private func keepSecondaryTime(_ frames: Int) {
        var index = 1
        while index < inputs.count {
            withInput(index) { input in
                guard input.isEnabledForRendering else { return }
                input.volumeRamp.advance(by: frames)
                input.duckRamp.advance(by: frames)
                input.fadeRamp.advance(by: frames)
                input.levelRamp.advance(by: frames)
                input.publishAppliedGain()
            }
            index += 1
        }
    }

    @inline(__always)
    private func renderChunk(into destination: UnsafeMutableRawPointer, frames requested: Int) -> Int {
        let channels = format.channels
        let primary = inputs[0]
        let primaryEnabled = primary.isEnabledForRendering
        let frames: Int
        if primaryEnabled {
            frames = min(requested, maxFrames, primary.ring.readableSamples / channels)
        } else {
            frames = min(requested, maxFrames)
        }
        guard frames > 0 else { return 0 }
        let samples = frames * channels

        // Targets are read once a period: a change starts ramping at the period's first frame.
        // Index loops: iterating the array itself would instantiate generic metadata here.
        var othersHaveData = false
        var index = 0
        while index < inputs.count {
            withInput(index) { input in
                if index > 0 && input.ring.reachedCut != nil { input.ring.takeCut() }
                if index == 0 ? primaryEnabled : input.isEnabledForRendering {
                    prepare(input)
                    if index > 0 && input.ring.readableSamples >= channels { othersHaveData = true }
                }
            }
            index += 1
        }

        if primaryEnabled && !othersHaveData && primary.isSettledAtUnity && limiter.gain == 1 {
            primary.ring.read(into: intScratch, count: samples)
            SampleConversion.pack(intScratch, count: samples, into: destination, format: format.sampleFormat)
            primary.publishAppliedGain()
            // Secondary inputs with nothing to play still keep the device's time.
            keepSecondaryTime(frames)
            return frames
        }

        // One session's stream alone (the player silent, nothing else with data), settled at
        // unity: bit-perfect too, padded with silence as any secondary input is.
        if !primaryEnabled && limiter.gain == 1 {
            var sole = -1
            index = 1
            while index < inputs.count {
                if withInput(index, { $0.isEnabledForRendering && $0.ring.readableSamples >= channels }) {
                    sole = sole == -1 ? index : -2
                }
                index += 1
            }
            if sole > 0 && inputs[sole].isSettledAtUnity {
                let input = inputs[sole]
                let n = input.ring.read(into: intScratch, count: min(samples, input.ring.readableSamples / channels * channels))
                if n < samples { (intScratch + n).update(repeating: 0, count: samples - n) }
                SampleConversion.pack(intScratch, count: samples, into: destination, format: format.sampleFormat)
                // Its ramps are settled: advancing them leaves them where they are.
                keepSecondaryTime(frames)
                return frames
            }
        }

        floatScratch.update(repeating: 0, count: samples)
        index = 0
        while index < inputs.count {
            withInput(index) { input in
                guard index == 0 ? primaryEnabled : input.isEnabledForRendering else { return }
                let available = min(samples, input.ring.readableSamples / channels * channels)
                let n = input.ring.read(into: intScratch, count: available)
                accumulate(input, frames: n / channels, of: frames, channels: channels)
                input.publishAppliedGain()
            }
            index += 1
        }
        limiter.process(floatScratch, frames: frames, channels: channels)
        SampleConversion.pack(floatScratch, count: samples, into: destination, format: format.sampleFormat,
                              dither: &dither, scratch: intScratch)
        return frames
    }

    /// Takes a new `attach` and points the ramps at the current targets.
    @inline(__always)
    private func prepare(_ input: MixerInput) {
        input.takeAttach()
        input.volumeRamp.retarget(input.gain, frames: rampFrames, inDecibels: false)
        let duck = input.duckLevel
        let down = Double(duck) < input.duckRamp.value
        input.duckRamp.retarget(duck, frames: down ? duckFrames : duckRestoreFrames, inDecibels: true)
        input.fadeRamp.retarget(input.fade, frames: fadeFrames, inDecibels: false)
        input.levelRamp.retarget(input.level, frames: rampFrames, inDecibels: true)
    }

    /// Adds `count` frames from `intScratch` to the float bus, each at the product of the
    /// input's factors for that frame; the rest of the period's `total` frames pass silently.
    @inline(__always)
    private func accumulate(_ input: MixerInput, frames count: Int, of total: Int, channels: Int) {
        // Local copies: no exclusivity check per frame on the class's stored properties.
        var volume = input.volumeRamp
        var duck = input.duckRamp
        var fade = input.fadeRamp
        var level = input.levelRamp
        let end = count * channels
        if volume.isSettled && duck.isSettled && fade.isSettled && level.isSettled {
            let scaled = Float(volume.value * duck.value * fade.value * level.value) * SampleConversion.int32Scale
            if scaled != 0 {
                var i = 0
                while i < end {
                    floatScratch[i] += Float(intScratch[i]) * scaled
                    i += 1
                }
            }
        } else {
            var i = 0
            while i < end {
                let scaled = Float(volume.next() * duck.next() * fade.next() * level.next()) * SampleConversion.int32Scale
                for c in 0..<channels { floatScratch[i + c] += Float(intScratch[i + c]) * scaled }
                i += channels
            }
        }
        volume.advance(by: total - count)
        duck.advance(by: total - count)
        fade.advance(by: total - count)
        level.advance(by: total - count)
        input.volumeRamp = volume
        input.duckRamp = duck
        input.fadeRamp = fade
        input.levelRamp = level
    }
    // ── Render path ends ─────────────────────────────────────────────────────────────────
}
