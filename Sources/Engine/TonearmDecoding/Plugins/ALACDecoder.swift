import TonearmAudio

/// Apple Lossless (ALAC), one MP4 sample (an ALAC frame) at a time, into interleaved,
/// left-justified `Int32` frames at the stream's own depth (16, 20, 24 or 32 bits), bit-exact.
///
/// Each channel of a frame is coded as residuals in an adaptive Golomb-Rice code, run
/// through an adaptive FIR predictor whose coefficients follow the signal; a stereo pair is
/// coded as a weighted mid/side mix; at 24 and 32 bits the low bytes travel uncoded beside it.
/// Up to 8 channels: their elements come centre first (C, L R, Ls Rs, LFE for 5.1) and are
/// put in WAV order (tested up to 7 channels, the most ffmpeg writes).
final class ALACDecoder: MP4Codec {
    /// The ALACSpecificConfig of the 'alac' magic cookie.
    struct Config {
        var frameLength: Int
        var bitDepth: Int
        /// The Rice parameters: history multiplier, initial history and limit of k.
        var pb: UInt32, mb: UInt32, kb: Int
        var channels: Int
        var sampleRate: Int

        init?(cookie b: [UInt8]) {
            guard b.count >= 24 else { return nil }
            frameLength = Int(be32(b, 0))
            bitDepth = Int(b[5])
            pb = UInt32(b[6])
            mb = UInt32(b[7])
            kb = Int(b[8])
            channels = Int(b[9])
            sampleRate = Int(be32(b, 20))
        }
    }

    let path: String
    let config: Config
    let format: StreamFormat
    let codecName = "ALAC"
    let dropsFirstUnit = false

    private let residuals: UnsafeMutablePointer<Int32>
    private let mixU: UnsafeMutablePointer<Int32>
    private let mixV: UnsafeMutablePointer<Int32>
    private let lowBytes: UnsafeMutablePointer<UInt32>
    /// Each channel's predictor coefficients (at most 31), adapted within a frame.
    private let coefficientsU: UnsafeMutablePointer<Int16>
    private let coefficientsV: UnsafeMutablePointer<Int16>
    private let output: UnsafeMutablePointer<Int32>
    /// For each channel in element order, its place in the output frame.
    private let place: [Int]

    /// ALAC's channel layouts by count, in element order, as places in WAV order: 6.1 is
    /// C L R Ls Rs Cs LFE (its surrounds taken as back left and right, as ffmpeg does), 7.1 is
    /// C Lc Rc L R Ls Rs LFE.
    static let places: [[Int]] = [
        [0], [0, 1], [2, 0, 1], [2, 0, 1, 3], [2, 0, 1, 3, 4], [2, 0, 1, 4, 5, 3], [2, 0, 1, 4, 5, 6, 3], [2, 6, 7, 0, 1, 4, 5, 3],
    ]

    init(path: String, cookie: [UInt8]) throws(DecodeError) {
        self.path = path
        guard let config = Config(cookie: cookie) else {
            throw DecodeError(path: path, reason: .badMetadata("ALAC magic cookie of \(cookie.count) bytes"))
        }
        guard [16, 20, 24, 32].contains(config.bitDepth) else {
            throw DecodeError(path: path, reason: .unsupported("ALAC at \(config.bitDepth) bits"))
        }
        guard (1...8).contains(config.channels) else {
            throw DecodeError(path: path, reason: .unsupported("ALAC with \(config.channels) channels"))
        }
        guard (1...65536).contains(config.frameLength), config.kb <= 31, config.sampleRate > 0 else {
            throw DecodeError(path: path, reason: .badMetadata("ALAC frame length \(config.frameLength), k limit \(config.kb), rate \(config.sampleRate)"))
        }
        self.config = config
        format = StreamFormat(sampleRate: config.sampleRate, channels: config.channels, bitsPerSample: config.bitDepth)
        let n = config.frameLength
        residuals = .allocate(capacity: n)
        mixU = .allocate(capacity: n)
        mixV = .allocate(capacity: n)
        lowBytes = .allocate(capacity: n * 2)
        coefficientsU = .allocate(capacity: 32)
        coefficientsV = .allocate(capacity: 32)
        output = .allocate(capacity: n * config.channels)
        place = Self.places[config.channels - 1]
    }

    deinit {
        residuals.deallocate()
        mixU.deallocate()
        mixV.deallocate()
        lowBytes.deallocate()
        coefficientsU.deallocate()
        coefficientsV.deallocate()
        output.deallocate()
    }

    /// Frames are independent: nothing to forget.
    func reset() throws(DecodeError) {}

    private func corrupt(_ why: String) -> DecodeError { DecodeError(path: path, reason: .decoder("ALAC frame: \(why)")) }

    /// One ALAC frame: its elements (a mono SCE, or a stereo CPE, plus fill and data elements
    /// that are skipped) up to the END tag. `unit` has 8 readable zero bytes after its end.
    func decode(_ unit: UnsafeRawBufferPointer) throws(DecodeError) -> UnsafeBufferPointer<Int32> {
        var bits = BitReader(unit)
        var frames = 0
        var channelsDone = 0
        decoding: while true {
            guard bits.position < bits.count else { throw corrupt("no END element") }
            let tag = bits.read(3)
            switch tag {
            case 0, 1, 3: // SCE, CPE, LFE
                let pair = tag == 1
                guard channelsDone + (pair ? 2 : 1) <= config.channels else { throw corrupt("more channels than the stream has") }
                let n = try element(&bits, pair: pair, firstChannel: channelsDone)
                guard channelsDone == 0 || n == frames else { throw corrupt("channels of different lengths") }
                frames = n
                channelsDone += pair ? 2 : 1
            case 4: // DSE: tag, align flag, count (extended past 255), the bytes
                _ = bits.read(4)
                let aligned = bits.read(1) == 1
                var count = Int(bits.read(8))
                if count == 255 { count += Int(bits.read(8)) }
                if aligned { bits.alignToByte() }
                bits.position += count * 8
            case 6: // FIL: count (extended past 15), the bytes
                var count = Int(bits.read(4))
                if count == 15 { count += Int(bits.read(8)) - 1 }
                bits.position += count * 8
            case 7: // END
                bits.alignToByte()
                break decoding
            default:
                throw corrupt("element \(tag) is not played")
            }
        }
        guard !bits.overran, bits.position <= bits.count else { throw corrupt("runs past its end") }
        // ALAC has no checksum; a frame whose elements end before its bytes do (other than in
        // zero padding) was misread.
        if bits.position < bits.count, unit[(bits.position / 8)...].contains(where: { $0 != 0 }) {
            throw corrupt("ends \(unit.count - bits.position / 8) bytes before its sample does")
        }
        guard channelsDone == config.channels else { throw corrupt("\(channelsDone) of \(config.channels) channels") }
        return UnsafeBufferPointer(start: output, count: frames * config.channels)
    }

    /// One SCE (mono) or CPE (stereo pair) element into `output`: returns its frame count.
    private func element(_ bits: inout BitReader, pair: Bool, firstChannel: Int) throws(DecodeError) -> Int {
        _ = bits.read(4) // element instance tag
        guard bits.read(12) == 0 else { throw corrupt("unused header bits are set") }
        let header = bits.read(4)
        let partial = header >> 3 != 0
        let bytesShifted = Int(header >> 1) & 3
        let escaped = header & 1 != 0
        guard bytesShifted != 3 else { throw corrupt("3 bytes shifted") }
        var frames = config.frameLength
        if partial {
            frames = Int(bits.read(32))
            guard (1...config.frameLength).contains(frames) else { throw corrupt("\(frames) frames in a frame of \(config.frameLength)") }
        }
        let channels = pair ? 2 : 1
        var shift = bytesShifted * 8
        var mixBits = 0
        var mixRes: Int32 = 0
        if !escaped {
            let chanBits = config.bitDepth - shift + channels - 1
            guard chanBits > 0 else { throw corrupt("\(shift) bits shifted off \(config.bitDepth)-bit samples") }
            mixBits = Int(bits.read(8))
            mixRes = Int32(Int8(truncatingIfNeeded: bits.read(8)))
            // Per channel: prediction mode, quantisation shift, Rice multiplier factor, order
            // and the coefficients.
            var predictors = (u: Predictor(), v: Predictor())
            for c in 0..<channels {
                let a = bits.read(8), b = bits.read(8)
                let p = Predictor(mode: a >> 4, denShift: Int(a & 0xF), pbFactor: b >> 5, order: Int(b & 0x1F))
                let coefficients = c == 0 ? coefficientsU : coefficientsV
                for i in 0..<p.order { coefficients[i] = Int16(truncatingIfNeeded: bits.read(16)) }
                if c == 0 { predictors.u = p } else { predictors.v = p }
            }
            // The low bytes come before the residuals; they are read after them.
            var low = bits
            bits.position += shift * channels * frames
            for c in 0..<channels {
                let p = c == 0 ? predictors.u : predictors.v
                try residualsDecoded(&bits, count: frames, chanBits: chanBits, pb: config.pb &* p.pbFactor / 4)
                if p.mode != 0 {
                    predict(residuals, into: residuals, count: frames, coefficients: nil, order: 31, chanBits: chanBits, denShift: 0)
                }
                predict(residuals, into: c == 0 ? mixU : mixV, count: frames, coefficients: c == 0 ? coefficientsU : coefficientsV,
                        order: p.order, chanBits: chanBits, denShift: p.denShift)
            }
            if shift > 0 {
                for i in 0..<(frames * channels) { lowBytes[i] = low.read(shift) }
            }
        } else {
            // Uncompressed: the samples at full depth, interleaved.
            let chanBits = config.bitDepth
            for i in 0..<frames {
                mixU[i] = bits.readSigned(chanBits)
                if pair { mixV[i] = bits.readSigned(chanBits) }
            }
            shift = 0
        }
        guard !bits.overran else { throw corrupt("runs past its end") }

        let justify = Int32(32 - config.bitDepth)
        let lowShift = Int32(shift)
        let stride = config.channels
        let left = place[firstChannel], right = pair ? place[firstChannel + 1] : 0
        if pair {
            for i in 0..<frames {
                var l = mixU[i], r = mixV[i]
                if mixRes != 0 {
                    l = mixU[i] &+ mixV[i] &- ((mixRes &* mixV[i]) >> Int32(mixBits))
                    r = l &- mixV[i]
                }
                if shift > 0 {
                    l = (l &<< lowShift) | Int32(bitPattern: lowBytes[2 * i])
                    r = (r &<< lowShift) | Int32(bitPattern: lowBytes[2 * i + 1])
                }
                output[i * stride + left] = l &<< justify
                output[i * stride + right] = r &<< justify
            }
        } else {
            for i in 0..<frames {
                var s = mixU[i]
                if shift > 0 { s = (s &<< lowShift) | Int32(bitPattern: lowBytes[i]) }
                output[i * stride + left] = s &<< justify
            }
        }
        return frames
    }

    struct Predictor {
        var mode: UInt32 = 0
        var denShift = 0
        var pbFactor: UInt32 = 0
        var order = 0
    }

    /// The adaptive Golomb-Rice residuals of one channel into `residuals`.
    private func residualsDecoded(_ bits: inout BitReader, count: Int, chanBits: Int, pb: UInt32) throws(DecodeError) {
        let qbShift: UInt32 = 9
        let kb = config.kb
        let wb = UInt32((1 << kb) - 1)
        var mb = config.mb
        var zmode: UInt32 = 0
        var c = 0
        let escapeBits = min(chanBits, 32)
        while c < count {
            guard bits.position < bits.count else { throw corrupt("residuals run past its end") }
            let m = mb >> qbShift
            let k = min(31 - (m &+ 3).leadingZeroBitCount, kb)
            let n = bits.golomb(m: UInt32((1 << k) - 1), k: k, escapeBits: escapeBits, zeroRun: false)
            let coded = n &+ zmode
            let magnitude = Int32(bitPattern: (coded &+ 1) >> 1)
            residuals[c] = coded & 1 != 0 ? 0 &- magnitude : magnitude
            c += 1
            mb = pb &* (n &+ zmode) &+ mb &- ((pb &* mb) >> qbShift)
            if n > 0xFFFF { mb = 0xFFFF }
            zmode = 0
            // A quiet stretch: a run of zero residuals, its length coded with its own k.
            if mb << 2 < 1 << qbShift && c < count {
                zmode = 1
                let k = mb.leadingZeroBitCount - 24 + Int((mb &+ 16) >> 6)
                let run = Int(bits.golomb(m: UInt32((1 << k) - 1) & wb, k: k, escapeBits: 16, zeroRun: true))
                guard run <= count - c else { throw corrupt("a run of \(run) zeros past the frame's end") }
                (residuals + c).update(repeating: 0, count: run)
                c += run
                if run >= 65535 { zmode = 0 }
                mb = 0
            }
        }
    }

    /// The adaptive FIR predictor: `out[j]` is `residual[j]` plus the prediction from the
    /// previous `order` outputs; after each sample the coefficients move by one step against
    /// the sign of the error, oldest first, until the error is used up. Order 31 is a plain
    /// first difference. `residual` and `out` may be the same.
    private func predict(_ residual: UnsafeMutablePointer<Int32>, into out: UnsafeMutablePointer<Int32>, count: Int,
                         coefficients: UnsafeMutablePointer<Int16>?, order: Int, chanBits: Int, denShift: Int) {
        let chanShift = Int32(32 - chanBits)
        @inline(__always) func signExtended(_ v: Int32) -> Int32 { (v &<< chanShift) &>> chanShift }
        guard count > 0 else { return }
        out[0] = residual[0]
        if order == 0 {
            if residual != out { out.advanced(by: 1).update(from: residual.advanced(by: 1), count: count - 1) }
            return
        }
        if order == 31 {
            var previous = out[0]
            for j in 1..<max(1, count) {
                previous = signExtended(residual[j] &+ previous)
                out[j] = previous
            }
            return
        }
        guard let coefficients else { return }
        let warmUp = min(order, count - 1)
        if warmUp >= 1 {
            for j in 1...warmUp { out[j] = signExtended(residual[j] &+ out[j - 1]) }
        }
        // Up to order 8 the coefficients are kept in registers, in a loop of fixed length
        // for each order, which the compiler unrolls.
        switch order {
        case 1: Self.adaptInRegisters(residual, into: out, count: count, coefficients: coefficients, order: 1, chanShift: chanShift, denShift: denShift)
        case 2: Self.adaptInRegisters(residual, into: out, count: count, coefficients: coefficients, order: 2, chanShift: chanShift, denShift: denShift)
        case 3: Self.adaptInRegisters(residual, into: out, count: count, coefficients: coefficients, order: 3, chanShift: chanShift, denShift: denShift)
        case 4: Self.adaptInRegisters(residual, into: out, count: count, coefficients: coefficients, order: 4, chanShift: chanShift, denShift: denShift)
        case 5: Self.adaptInRegisters(residual, into: out, count: count, coefficients: coefficients, order: 5, chanShift: chanShift, denShift: denShift)
        case 6: Self.adaptInRegisters(residual, into: out, count: count, coefficients: coefficients, order: 6, chanShift: chanShift, denShift: denShift)
        case 7: Self.adaptInRegisters(residual, into: out, count: count, coefficients: coefficients, order: 7, chanShift: chanShift, denShift: denShift)
        case 8: Self.adaptInRegisters(residual, into: out, count: count, coefficients: coefficients, order: 8, chanShift: chanShift, denShift: denShift)
        default: Self.adapt(residual, into: out, count: count, coefficients: coefficients, order: order, chanShift: chanShift, denShift: denShift)
        }
    }

    /// −1, 0 or 1, without a branch.
    @inline(__always)
    private static func signum(_ v: Int32) -> Int32 { (v &>> 31) | Int32(bitPattern: UInt32(bitPattern: 0 &- v) &>> 31) }

    /// `adapt` for orders up to 8, the coefficients held in a vector rather than in memory
    /// (a coefficient stored and read back at once stalls the loads that follow).
    @inline(__always)
    private static func adaptInRegisters(_ residual: UnsafeMutablePointer<Int32>, into out: UnsafeMutablePointer<Int32>, count: Int,
                                         coefficients: UnsafeMutablePointer<Int16>, order: Int, chanShift: Int32, denShift: Int) {
        let half: Int32 = denShift > 0 ? 1 &<< Int32(denShift - 1) : 0
        let den = Int32(denShift)
        var a = SIMD8<Int16>()
        for k in 0..<order { a[k] = coefficients[k] }
        var j = order + 1
        while j < count {
            // The `order` outputs before j, newest first, relative to the one before them.
            let past = out + (j - 1)
            let top = out[j - order - 1]
            var window = SIMD8<Int32>()
            for k in 0..<order { window[k] = past[-k] &- top }
            let sum = (SIMD8<Int32>(truncatingIfNeeded: a) &* window).wrappedSum()
            let error = residual[j]
            out[j] = ((error &+ top &+ ((sum &+ half) &>> den)) &<< chanShift) &>> chanShift
            if error > 0 {
                var remaining = error
                var k = order - 1
                var weight: Int32 = 1
                while k >= 0 {
                    let d = 0 &- window[k]
                    let s = signum(d)
                    a[k] = a[k] &- Int16(truncatingIfNeeded: s)
                    remaining = remaining &- weight &* ((s &* d) &>> den)
                    if remaining <= 0 { break }
                    k -= 1
                    weight &+= 1
                }
            } else if error < 0 {
                var remaining = error
                var k = order - 1
                var weight: Int32 = 1
                while k >= 0 {
                    let d = 0 &- window[k]
                    let s = signum(d)
                    a[k] = a[k] &+ Int16(truncatingIfNeeded: s)
                    remaining = remaining &- weight &* ((0 &- s &* d) &>> den)
                    if remaining >= 0 { break }
                    k -= 1
                    weight &+= 1
                }
            }
            j += 1
        }
        for k in 0..<order { coefficients[k] = a[k] }
    }

    /// `predict` after its warm-up, from `order + 1` on. The arithmetic wraps, as in C.
    @inline(__always)
    private static func adapt(_ residual: UnsafeMutablePointer<Int32>, into out: UnsafeMutablePointer<Int32>, count: Int,
                              coefficients: UnsafeMutablePointer<Int16>, order: Int, chanShift: Int32, denShift: Int) {
        let half: Int32 = denShift > 0 ? 1 &<< Int32(denShift - 1) : 0
        let den = Int32(denShift)
        var j = order + 1
        while j < count {
            // The `order` outputs before j, newest first, relative to the one before them.
            let past = out + (j - 1)
            let top = out[j - order - 1]
            var sum: Int32 = 0
            for k in 0..<order { sum = sum &+ Int32(coefficients[k]) &* (past[-k] &- top) }
            let error = residual[j]
            out[j] = ((error &+ top &+ ((sum &+ half) &>> den)) &<< chanShift) &>> chanShift
            // Each step: d = top − that output; its sign moves the coefficient against the
            // error's, and d scaled by the distance uses up some of the error.
            if error > 0 {
                var remaining = error
                var k = order - 1
                var weight: Int32 = 1
                while k >= 0 {
                    let d = top &- past[-k]
                    let s = signum(d)
                    coefficients[k] = coefficients[k] &- Int16(truncatingIfNeeded: s)
                    remaining = remaining &- weight &* ((s &* d) &>> den)
                    if remaining <= 0 { break }
                    k -= 1
                    weight &+= 1
                }
            } else if error < 0 {
                var remaining = error
                var k = order - 1
                var weight: Int32 = 1
                while k >= 0 {
                    let d = top &- past[-k]
                    let s = signum(d)
                    coefficients[k] = coefficients[k] &+ Int16(truncatingIfNeeded: s)
                    remaining = remaining &- weight &* ((0 &- s &* d) &>> den)
                    if remaining >= 0 { break }
                    k -= 1
                    weight &+= 1
                }
            }
            j += 1
        }
    }
}

/// Big-endian bits of one ALAC frame. Reads past the end give zeros and set `overran`;
/// the bytes are followed by at least 8 readable bytes, so a 64-bit load at any position
/// before the end stays inside the buffer.
struct BitReader {
    let bytes: UnsafeRawBufferPointer
    /// Bits in the frame.
    let count: Int
    var position = 0
    var overran = false

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        count = bytes.count * 8
    }

    /// The next 64 bits from `position`, the first in the top bit (only 57 are sure to be
    /// whole); zeros past the end.
    @inline(__always) func peek64() -> UInt64 {
        let byte = position >> 3
        guard position >= 0, byte < bytes.count else { return 0 }
        let v = UInt64(bigEndian: bytes.baseAddress!.loadUnaligned(fromByteOffset: byte, as: UInt64.self))
        return v &<< UInt64(position & 7)
    }

    /// `n` bits (0…32) as an unsigned value.
    @inline(__always) mutating func read(_ n: Int) -> UInt32 {
        guard n > 0 else { return 0 }
        let v = UInt32(truncatingIfNeeded: peek64() &>> UInt64(64 - n))
        position += n
        if position > count { overran = true }
        return v
    }

    /// `n` bits (1…32) as a signed value.
    @inline(__always) mutating func readSigned(_ n: Int) -> Int32 {
        let v = Int32(bitPattern: read(n))
        return n == 32 ? v : (v &<< Int32(32 - n)) >> Int32(32 - n)
    }

    mutating func alignToByte() { position = (position + 7) & ~7 }

    /// One adaptive Golomb value: a unary prefix of up to 8 ones ended by a zero, then k bits
    /// (k − 1 when they would be 0 or 1); nine ones escape to `escapeBits` raw bits. Values
    /// and zero runs differ only in k = 1, where a value is its prefix alone.
    @inline(__always) mutating func golomb(m: UInt32, k: Int, escapeBits: Int, zeroRun: Bool) -> UInt32 {
        let window = peek64()
        let prefix = (~window).leadingZeroBitCount
        if prefix >= 9 {
            position += 9
            return read(escapeBits)
        }
        position += prefix + 1
        if k == 1 && !zeroRun { return UInt32(prefix) }
        guard k > 0 else { position -= 1; return UInt32(prefix) &* m }
        let v = UInt32(truncatingIfNeeded: (window &<< UInt64(prefix + 1)) &>> UInt64(64 - k))
        if v >= 2 {
            position += k
            return UInt32(prefix) &* m &+ v &- 1
        }
        position += k - 1
        return UInt32(prefix) &* m
    }
}
