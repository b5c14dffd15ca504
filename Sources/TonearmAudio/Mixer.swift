import Synchronization

/// One stream feeding the mixer: a ring of samples already in the device's rate and channel
/// layout, and a gain the control plane sets and the render path ramps towards.
public final class MixerInput: @unchecked Sendable {
    public let ring: SPSCRing
    private let targetGainBits = Atomic<UInt32>(Float(1).bitPattern)
    private let enabledFlag = Atomic<Bool>(true)
    /// Render-thread state: the gain applied to the last sample.
    fileprivate var currentGain: Float = 1
    fileprivate var rampTarget: Float = 1
    fileprivate var rampStep: Float = 0

    /// `gain` applies from the first sample, with no ramp.
    public init(ring: SPSCRing, gain: Float = 1) {
        self.ring = ring
        targetGainBits.store(gain.bitPattern, ordering: .relaxed)
        currentGain = gain
        rampTarget = gain
    }

    /// Linear gain the stream ramps to (1 = unity, bit-perfect when alone).
    public var gain: Float {
        get { Float(bitPattern: targetGainBits.load(ordering: .relaxed)) }
        set { targetGainBits.store(newValue.bitPattern, ordering: .relaxed) }
    }

    /// A disabled input is not read (its samples wait in the ring).
    public var isEnabled: Bool {
        get { enabledFlag.load(ordering: .relaxed) }
        set { enabledFlag.store(newValue, ordering: .relaxed) }
    }
}

/// Sums its inputs into one device period.
///
/// The first input is the primary stream (the player): its samples are never padded or
/// dropped, so it decides how many frames a period holds. Alone, enabled and at unity gain it
/// takes the integer path, which is bit-perfect; otherwise every input is mixed in floating
/// point with per-sample gain ramps and converted (dithered to 16 bits) to the device format.
public final class Mixer: @unchecked Sendable {
    public let inputs: [MixerInput]
    public private(set) var maxFrames: Int
    public private(set) var format: DeviceFormat
    /// Frames a gain change takes to complete, so no change clicks.
    public private(set) var rampFrames: Int

    private var intScratch: UnsafeMutablePointer<Int32>
    private var floatScratch: UnsafeMutablePointer<Float>
    private var dither = TPDFDither()

    public init(inputs: [MixerInput], format: DeviceFormat, maxFrames: Int, rampSeconds: Double = 0.02) {
        precondition(!inputs.isEmpty)
        self.inputs = inputs
        self.format = format
        self.maxFrames = maxFrames
        rampFrames = max(1, Int(Double(format.sampleRate) * rampSeconds))
        intScratch = .allocate(capacity: maxFrames * format.channels)
        floatScratch = .allocate(capacity: maxFrames * format.channels)
    }

    deinit {
        intScratch.deallocate()
        floatScratch.deallocate()
    }

    /// Adopts a new device format; allocates, so it is called between periods, never inside one.
    public func configure(format: DeviceFormat, maxFrames: Int) {
        let samples = maxFrames * format.channels
        if samples > self.maxFrames * self.format.channels {
            intScratch.deallocate()
            floatScratch.deallocate()
            intScratch = .allocate(capacity: samples)
            floatScratch = .allocate(capacity: samples)
        }
        self.format = format
        self.maxFrames = maxFrames
        rampFrames = max(1, format.sampleRate / 50)
    }

    /// `input` has faded out completely. Output thread only.
    public func isSilent(_ input: MixerInput) -> Bool {
        input.currentGain == 0 && input.gain == 0
    }

    /// Scratch memory the render path uses, for `mlock`.
    public var scratchRegions: [UnsafeMutableRawBufferPointer] {
        let n = maxFrames * format.channels
        return [
            UnsafeMutableRawBufferPointer(start: intScratch, count: n * 4),
            UnsafeMutableRawBufferPointer(start: floatScratch, count: n * 4),
        ]
    }

    // ── Render path begins ───────────────────────────────────────────────────────────────
    // From here to "Render path ends": no allocation, no lock, no logging, no actor call, no
    // system call. Everything touched was allocated in `init`/`configure`.

    /// Renders up to `frames` frames into `destination` (device format, interleaved); returns
    /// the number rendered, 0 when the primary stream has nothing ready.
    public func render(into destination: UnsafeMutableRawPointer, frames requested: Int) -> Int {
        let channels = format.channels
        let primary = inputs[0]
        let frames: Int
        if primary.isEnabled {
            frames = min(requested, maxFrames, primary.ring.readableSamples / channels)
        } else {
            frames = min(requested, maxFrames)
        }
        guard frames > 0 else { return 0 }
        let samples = frames * channels

        if primary.isEnabled && primary.currentGain == 1 && primary.gain == 1 && onlyPrimaryHasData() {
            primary.ring.read(into: intScratch, count: samples)
            SampleConversion.pack(intScratch, count: samples, into: destination, format: format.sampleFormat)
            return frames
        }

        floatScratch.update(repeating: 0, count: samples)
        // Index loops: iterating the array itself would instantiate generic metadata here.
        var index = 0
        while index < inputs.count {
            let input = inputs[index]
            index += 1
            guard input.isEnabled else { continue }
            let available = min(samples, input.ring.readableSamples / channels * channels)
            let n = input.ring.read(into: intScratch, count: available)
            accumulate(input, count: n, channels: channels)
        }
        SampleConversion.pack(floatScratch, count: samples, into: destination, format: format.sampleFormat,
                              dither: &dither, scratch: intScratch)
        return frames
    }

    @inline(__always)
    private func onlyPrimaryHasData() -> Bool {
        var index = 1
        while index < inputs.count {
            if inputs[index].isEnabled && inputs[index].ring.readableSamples > 0 { return false }
            index += 1
        }
        return true
    }

    /// Adds `count` samples from `intScratch` to the float bus, ramping the input's gain
    /// linearly towards its target over `rampFrames`.
    @inline(__always)
    private func accumulate(_ input: MixerInput, count: Int, channels: Int) {
        let target = input.gain
        var gain = input.currentGain
        if target != input.rampTarget {
            input.rampTarget = target
            input.rampStep = (target - gain) / Float(rampFrames)
        }
        let step = input.rampStep
        var i = 0
        while i < count {
            if gain != target {
                gain += step
                if (step > 0 && gain > target) || (step < 0 && gain < target) { gain = target }
            }
            let scaled = gain * SampleConversion.int32Scale
            for c in 0..<channels { floatScratch[i + c] += Float(intScratch[i + c]) * scaled }
            i += channels
        }
        input.currentGain = gain
    }
    // ── Render path ends ─────────────────────────────────────────────────────────────────
}
