import CSoxr
import TonearmAudio

/// Brings a decoded stream to the device's channel layout and rate, on the decoder thread
/// (never in the render path): a channel matrix, then libsoxr. When the device already has the
/// stream's rate and channel count, blocks pass through untouched.
///
/// One converter lives as long as a run of tracks of the same format, so resampling across a
/// track boundary stays gapless: nothing is flushed between them.
///
/// libsoxr is driven the way it measured cheapest (`scripts/bench-soxr.c`, 44.1 → 48 kHz
/// stereo): interleaved left-justified `Int32` in and out, so its own int ↔ float conversion
/// rides on the (de)interleaving it does anyway, as cheap as a float-only pass; converting to
/// float here measured about 15 % dearer. Each block goes in as the decoder hands it: larger
/// chunks measured no cheaper, and audio held back to gather them would count as written
/// before it is. One thread: an OpenMP team for two channels costs over twice the CPU, as it
/// spins (the environment variable `SOXR_NUM_THREADS` still overrides this, as libsoxr
/// documents). The buffers grow to the largest block seen and are reused: no allocation per
/// block.
final class StreamConverter {
    let source: StreamFormat
    let deviceRate: Int
    let deviceChannels: Int
    let quality: ResampleQuality
    private let matrix: ChannelMatrix?
    private var soxr: soxr_t?
    private var mapped: UnsafeMutablePointer<Int32>
    private var mappedCapacity: Int
    private var resampled: UnsafeMutablePointer<Int32>
    private var resampledCapacity: Int

    var isPassThrough: Bool { matrix == nil && soxr == nil }

    init(source: StreamFormat, deviceRate: Int, deviceChannels: Int, quality: ResampleQuality = .high) throws(PlaybackError) {
        self.source = source
        self.deviceRate = deviceRate
        self.deviceChannels = deviceChannels
        self.quality = quality
        matrix = source.channels == deviceChannels ? nil : ChannelMatrix(from: source.channels, to: deviceChannels)
        mappedCapacity = 0
        mapped = .allocate(capacity: 1)
        resampledCapacity = 0
        resampled = .allocate(capacity: 1)
        if source.sampleRate != deviceRate {
            var error: soxr_error_t?
            var io = soxr_io_spec(SOXR_INT32_I, SOXR_INT32_I)
            var recipe = soxr_quality_spec(quality.soxrRecipe, 0)
            var runtime = soxr_runtime_spec(1)
            soxr = soxr_create(Double(source.sampleRate), Double(deviceRate), UInt32(deviceChannels), &error, &io, &recipe, &runtime)
            if let error {
                throw PlaybackError.resampler("\(source.sampleRate) Hz to \(deviceRate) Hz, \(deviceChannels) ch, quality \(quality): \(String(cString: error))")
            }
        }
    }

    deinit {
        if let soxr { soxr_delete(soxr) }
        mapped.deallocate()
        resampled.deallocate()
    }

    /// Converts a block of interleaved source frames. The result stays valid until the next
    /// call; it may be empty while the resampler's filter fills.
    func convert(_ block: UnsafeBufferPointer<Int32>) -> UnsafeBufferPointer<Int32> {
        if isPassThrough { return block }
        let frames = block.count / source.channels
        var stage = block
        if let matrix {
            ensure(&mapped, &mappedCapacity, frames * deviceChannels)
            matrix.apply(block.baseAddress!, frames: frames, into: mapped)
            stage = UnsafeBufferPointer(start: mapped, count: frames * deviceChannels)
        }
        guard let soxr, frames > 0 else { return stage }
        // Room for the block at the device's rate, and what the last call may have left inside.
        let room = frames * deviceRate / source.sampleRate + 1024
        ensure(&resampled, &resampledCapacity, room * deviceChannels)
        let input = stage.baseAddress!
        var consumed = 0
        var produced = 0
        while consumed < frames && produced < room {
            var inDone = 0, outDone = 0
            _ = soxr_process(soxr, input + consumed * deviceChannels, frames - consumed, &inDone,
                             resampled + produced * deviceChannels, room - produced, &outDone)
            consumed += inDone
            produced += outDone
            if inDone == 0 && outDone == 0 { break }  // a failed resampler: nothing more comes
        }
        return UnsafeBufferPointer(start: resampled, count: produced * deviceChannels)
    }

    /// All the resampler still holds (its filter's delay), at the end of the run; the converter
    /// takes no more blocks after it.
    func flush() -> UnsafeBufferPointer<Int32> {
        guard let soxr else { return UnsafeBufferPointer(start: nil, count: 0) }
        var room = Int(soxr_delay(soxr).rounded(.up)) + 64
        ensure(&resampled, &resampledCapacity, room * deviceChannels)
        room = resampledCapacity / deviceChannels
        var produced = 0
        while true {
            var outDone = 0
            _ = soxr_process(soxr, nil, 0, nil, resampled + produced * deviceChannels, room - produced, &outDone)
            produced += outDone
            if outDone == 0 { break }
            if produced == room {
                // More than the filter's delay said: keep what came and make room for the rest.
                room *= 2
                let grown = UnsafeMutablePointer<Int32>.allocate(capacity: room * deviceChannels)
                grown.update(from: resampled, count: produced * deviceChannels)
                resampled.deallocate()
                resampled = grown
                resampledCapacity = room * deviceChannels
            }
        }
        return UnsafeBufferPointer(start: resampled, count: produced * deviceChannels)
    }

    private func ensure(_ buffer: inout UnsafeMutablePointer<Int32>, _ capacity: inout Int, _ needed: Int) {
        guard needed > capacity else { return }
        buffer.deallocate()
        buffer = .allocate(capacity: needed)
        capacity = needed
    }
}

extension ResampleQuality {
    /// libsoxr's recipe for this quality.
    fileprivate var soxrRecipe: UInt {
        switch self {
        case .quick: UInt(SOXR_QQ)
        case .low: UInt(SOXR_LQ)
        case .medium: UInt(SOXR_MQ)
        case .high: UInt(SOXR_HQ)
        case .veryHigh: UInt(SOXR_VHQ)
        }
    }
}

/// Folds or spreads FLAC's channel layouts onto the device's: mono is copied to both sides of
/// a stereo device; 3–8 channels are downmixed to stereo with the usual −3 dB centre and
/// surround weights (LFE dropped), normalised so a full-scale input cannot clip; anything else
/// keeps the first channels in order and leaves extra device channels silent.
struct ChannelMatrix {
    let inputs: Int
    let outputs: Int
    private let weights: [Float]  // outputs × inputs, row-major

    init(from inputs: Int, to outputs: Int) {
        self.inputs = inputs
        self.outputs = outputs
        var w = [Float](repeating: 0, count: inputs * outputs)
        let h: Float = 0.7071
        if inputs == 1 {
            for o in 0..<min(outputs, 2) { w[o * inputs] = 1 }
        } else if outputs == 2 && inputs > 2 {
            // FLAC channel order (same as WAVEFORMATEXTENSIBLE's default masks).
            let left: [Float], right: [Float]
            switch inputs {
            case 3: left = [1, 0, h]; right = [0, 1, h]
            case 4: left = [1, 0, h, 0]; right = [0, 1, 0, h]
            case 5: left = [1, 0, h, h, 0]; right = [0, 1, h, 0, h]
            case 6: left = [1, 0, h, 0, h, 0]; right = [0, 1, h, 0, 0, h]
            case 7: left = [1, 0, h, 0, h, h, 0]; right = [0, 1, h, 0, h, 0, h]
            default: left = [1, 0, h, 0, h, 0, h, 0]; right = [0, 1, h, 0, 0, h, 0, h]
            }
            let norm = 1 / left.reduce(0, +)
            for i in 0..<inputs {
                w[i] = left[i] * norm
                w[inputs + i] = right[i] * norm
            }
        } else {
            for c in 0..<min(inputs, outputs) { w[c * inputs + c] = 1 }
        }
        weights = w
    }

    func apply(_ source: UnsafePointer<Int32>, frames: Int, into destination: UnsafeMutablePointer<Int32>) {
        weights.withUnsafeBufferPointer { w in
            for f in 0..<frames {
                let inFrame = source + f * inputs
                let outFrame = destination + f * outputs
                for o in 0..<outputs {
                    var acc: Float = 0
                    for i in 0..<inputs { acc += Float(inFrame[i]) * w[o * inputs + i] }
                    outFrame[o] = SampleConversion.floatToLeftJustified(acc * SampleConversion.int32Scale)
                }
            }
        }
    }
}
