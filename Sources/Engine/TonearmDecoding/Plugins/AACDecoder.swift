import CFAAD
import TonearmAudio

/// AAC (LC, and HE-AAC as far as libfaad goes) through libfaad, one MP4 sample (access unit)
/// at a time, into interleaved `Int32` frames: 16 bits left-justified.
///
/// The output is 16-bit, the same as the `faad` reference decoder writes by default, so a
/// decode can be compared with it sample for sample: libfaad's float output (FAAD_FMT_FLOAT)
/// rounded here exactly as libfaad's own 16-bit conversion rounds it, only faster.
///
/// libfaad gives no output for the first unit after it is opened (that unit only primes the
/// overlap of its transform), so the unit's frames are counted as dropped and a seek opens it
/// afresh one unit early. After a seek the frames equal those of a decode from the start,
/// except in bands coded as perceptual noise: libfaad's noise generator starts anew.
///
/// More than two channels are put in WAV order from the positions libfaad reports. libfaad
/// makes a mono stream stereo, in case it carries parametric stereo; when the first frame
/// shows it does not, one channel is given.
final class AACDecoder: MP4Codec {
    let path: String
    let codecName = "AAC"
    let dropsFirstUnit = true
    private(set) var format: StreamFormat
    private var config: [UInt8]
    private var handle: NeAACDecHandle
    private var output: UnsafeMutablePointer<Int32>
    private var capacity: Int
    /// For each output channel, the libfaad channel it takes; nil while in order.
    private var order: [Int]?
    private var orderKnown = false
    /// libfaad's channels per frame, which may be more than `format` gives.
    private let libraryChannels: Int
    /// A mono stream that libfaad widens to two identical channels, until a frame shows
    /// parametric stereo.
    private var monoFromStereo: Bool

    init(path: String, audioSpecificConfig: [UInt8]) throws(DecodeError) {
        self.path = path
        config = audioSpecificConfig
        (handle, format) = try Self.openLibrary(path: path, config: &config)
        libraryChannels = format.channels
        monoFromStereo = format.channels == 2 && AudioSpecificConfig(audioSpecificConfig)?.channels == 1
        if monoFromStereo { format.channels = 1 }
        capacity = 2048 * max(2, format.channels)
        output = .allocate(capacity: capacity)
    }

    deinit {
        NeAACDecClose(handle)
        output.deallocate()
    }

    private static func openLibrary(path: String, config: inout [UInt8]) throws(DecodeError) -> (NeAACDecHandle, StreamFormat) {
        guard let handle = NeAACDecOpen() else { throw DecodeError(path: path, reason: .decoder("cannot open libfaad")) }
        let settings = NeAACDecGetCurrentConfiguration(handle)!
        settings.pointee.outputFormat = UInt8(FAAD_FMT_FLOAT)
        settings.pointee.downMatrix = 0
        _ = NeAACDecSetConfiguration(handle, settings)
        var rate: UInt = 0
        var channels: UInt8 = 0
        let status = config.withUnsafeMutableBufferPointer {
            NeAACDecInit2(handle, $0.baseAddress, UInt($0.count), &rate, &channels)
        }
        guard status == 0, rate > 0, channels > 0 else {
            NeAACDecClose(handle)
            throw DecodeError(path: path, reason: .unsupported("AAC configuration libfaad does not play"))
        }
        return (handle, StreamFormat(sampleRate: Int(rate), channels: Int(channels), bitsPerSample: 16))
    }

    /// A fresh decoder: nothing of the previous units is remembered.
    func reset() throws(DecodeError) {
        NeAACDecClose(handle)
        (handle, _) = try Self.openLibrary(path: path, config: &config)
    }

    func decode(_ unit: UnsafeRawBufferPointer) throws(DecodeError) -> UnsafeBufferPointer<Int32> {
        var frame = NeAACDecFrameInfo()
        let bytes = UnsafeMutablePointer(mutating: unit.baseAddress!.assumingMemoryBound(to: UInt8.self))
        let samples = NeAACDecDecode(handle, &frame, bytes, UInt(unit.count))
        guard frame.error == 0 else {
            let why = NeAACDecGetErrorMessage(frame.error).map { String(cString: $0) } ?? "error \(frame.error)"
            throw DecodeError(path: path, reason: .decoder("AAC: \(why)"))
        }
        let count = Int(frame.samples)
        guard count > 0, let samples else { return UnsafeBufferPointer(start: output, count: 0) }
        let channels = Int(frame.channels)
        if channels != libraryChannels {
            throw DecodeError(path: path, reason: .formatChange("channel count (\(libraryChannels) → \(channels))"))
        }
        if Int(frame.samplerate) != format.sampleRate {
            throw DecodeError(path: path, reason: .formatChange("sample rate (\(format.sampleRate) Hz → \(frame.samplerate) Hz)"))
        }
        if !orderKnown {
            orderKnown = true
            order = Self.wavOrder(frame, channels: channels)
            if monoFromStereo && frame.ps != 0 {
                monoFromStereo = false
                format.channels = 2
            }
        }
        if count > capacity {
            output.deallocate()
            capacity = count
            output = .allocate(capacity: capacity)
        }
        let pcm = samples.assumingMemoryBound(to: Float.self)
        if monoFromStereo {
            for i in 0..<(count / 2) { output[i] = Self.leftJustified16(pcm[2 * i]) }
            return UnsafeBufferPointer(start: output, count: count / 2)
        }
        if let order {
            var i = 0
            while i < count {
                for c in 0..<channels { output[i + c] = Self.leftJustified16(pcm[i + order[c]]) }
                i += channels
            }
        } else {
            for i in 0..<count { output[i] = Self.leftJustified16(pcm[i]) }
        }
        return UnsafeBufferPointer(start: output, count: count)
    }

    /// One of libfaad's float samples (its 16-bit value over 32768) as a left-justified 16-bit
    /// sample, as libfaad's own conversion gives it: clipped to ±32767/−32768, then rounded to
    /// nearest, ties to even (`lrintf`); NaN is 0. Without branches or calls, so that the loops
    /// vectorise: adding 1.5 × 2²³ to a Float of magnitude up to 2²² leaves it rounded in the
    /// low bits of the mantissa.
    @inline(__always)
    static func leftJustified16(_ x: Float) -> Int32 {
        let scaled = x * 32768
        let low: Float = scaled > -32768 ? scaled : -32768
        let clipped: Float = low < 32767 ? low : 32767
        let rounded = clipped + 12_582_912
        let sample = (Int32(bitPattern: rounded.bitPattern & 0x7F_FFFF) &- 0x40_0000) &<< 16
        return scaled == scaled ? sample : 0
    }

    /// The permutation that puts libfaad's channels in WAV order (front left, front right,
    /// centre, LFE, back left, back right, back centre, side left, side right); nil for one or
    /// two channels, or when it is already so.
    static func wavOrder(_ frame: NeAACDecFrameInfo, channels: Int) -> [Int]? {
        guard channels > 2 else { return nil }
        let positions = withUnsafeBytes(of: frame.channel_position) { Array($0.prefix(channels)) }
        // libfaad's positions: 1 front centre, 2 front left, 3 front right, 4 side left,
        // 5 side right, 6 back left, 7 back right, 8 back centre, 9 LFE.
        let rank: [UInt8: Int] = [2: 0, 3: 1, 1: 2, 9: 3, 6: 4, 7: 5, 8: 6, 4: 7, 5: 8]
        let sorted = (0..<channels).sorted { (rank[positions[$0]] ?? 9, $0) < (rank[positions[$1]] ?? 9, $1) }
        return sorted == Array(0..<channels) ? nil : sorted
    }
}
