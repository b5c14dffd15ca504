import Foundation
import TonearmAudio
import XCTest

/// Volume × duck × fade, each on its own ramp, the limiter and the reuse of input slots,
/// measured at the mixer's output. A float device shows the applied gain exactly (no dither);
/// a 16-bit one shows the bit-perfect path.
final class MixerGainTests: XCTestCase {
    private static let rate = 48000
    /// 5 ms periods: every time below (150, 300, 30, 20 ms) is a whole number of them.
    private static let period = 240
    private let float = DeviceFormat(sampleFormat: .floatLE, sampleRate: rate, channels: 2, periodFrames: period, bufferFrames: 4 * period)
    private let s16 = DeviceFormat(sampleFormat: .s16LE, sampleRate: rate, channels: 2, periodFrames: period, bufferFrames: 4 * period)
    /// −15 dB.
    private let duck = Float(pow(10, -15.0 / 20))
    /// A constant half-scale sample: in a float device, output ÷ 0.5 is the gain applied.
    private let half: Int32 = 1 << 30

    // MARK: Helpers

    private func ring(_ samples: [Int32], capacity: Int? = nil) -> SPSCRing {
        let ring = SPSCRing(capacity: capacity ?? max(1, samples.count))
        _ = samples.withUnsafeBufferPointer { ring.write($0) }
        return ring
    }

    /// `seconds` of a stereo sine of `amplitude` (16-bit units), left-justified.
    private func sine(_ frequency: Double, amplitude: Double, seconds: Double) -> [Int32] {
        let frames = Int(seconds * Double(Self.rate))
        var samples = [Int32](repeating: 0, count: frames * 2)
        for n in 0..<frames {
            let v = Int32((sin(2 * .pi * frequency * Double(n) / Double(Self.rate)) * amplitude).rounded()) << 16
            samples[2 * n] = v
            samples[2 * n + 1] = v
        }
        return samples
    }

    private func constant(_ value: Int32, seconds: Double) -> [Int32] {
        [Int32](repeating: value, count: Int(seconds * Double(Self.rate)) * 2)
    }

    /// Renders `periods` periods of a float device; returns the left channel.
    private func renderFloat(_ mixer: Mixer, periods: Int) -> [Float] {
        var left: [Float] = []
        var out = [Float](repeating: 0, count: Self.period * 2)
        for _ in 0..<periods {
            let n = out.withUnsafeMutableBytes { mixer.render(into: $0.baseAddress!, frames: Self.period) }
            XCTAssertEqual(n, Self.period)
            for i in 0..<n { left.append(out[2 * i]) }
        }
        return left
    }

    /// Renders `periods` periods of a 16-bit device; returns both channels.
    private func render16(_ mixer: Mixer, periods: Int) -> [Int16] {
        var all: [Int16] = []
        var out = [Int16](repeating: 0, count: Self.period * 2)
        for _ in 0..<periods {
            let n = out.withUnsafeMutableBytes { mixer.render(into: $0.baseAddress!, frames: Self.period) }
            XCTAssertEqual(n, Self.period)
            all += out[0..<(2 * n)]
        }
        return all
    }

    /// The gain each frame was played at, for a constant half-scale input.
    private func gains(_ left: [Float]) -> [Double] { left.map { Double($0) / 0.5 } }

    private func largestStep(_ g: [Double]) -> Double {
        zip(g, g.dropFirst()).map { abs($1 - $0) }.max() ?? 0
    }

    private func dB(_ x: Double) -> Double { 20 * log10(x) }

    /// Amplitude of `frequency` in the left channel of `stereo` frames `range`, by a single-bin
    /// DFT over a whole number of its cycles.
    private func level(of frequency: Double, in stereo: [Int16], frames range: Range<Int>) -> Double {
        var re = 0.0, im = 0.0
        for n in range {
            let phase = 2 * .pi * frequency * Double(n) / Double(Self.rate)
            re += Double(stereo[2 * n]) * cos(phase)
            im += Double(stereo[2 * n]) * sin(phase)
        }
        return 2 * (re * re + im * im).squareRoot() / Double(range.count)
    }

    private func frames(_ seconds: Double) -> Int { Int(seconds * Double(Self.rate)) }

    // MARK: Ducking

    /// The product's duck: music at 440 Hz ducked to −15 dB in 150 ms while a 1 kHz prompt plays,
    /// back to 0 dB in 300 ms; the prompt itself untouched.
    func testDuckingReachesItsLevelInTimeAndRestores() {
        let music = MixerInput(ring: ring(sine(440, amplitude: 16384, seconds: 1)))
        let prompt = MixerInput(ring: ring(sine(1000, amplitude: 8192, seconds: 1)))
        let mixer = Mixer(inputs: [music, prompt], format: s16, maxFrames: Self.period)
        XCTAssertEqual(mixer.duckFrames, frames(0.15))
        XCTAssertEqual(mixer.duckRestoreFrames, frames(0.3))

        var out = render16(mixer, periods: 20)                  //   0–100 ms
        music.duckLevel = duck
        out += render16(mixer, periods: 60)                     // 100–400 ms
        music.duckLevel = 1
        out += render16(mixer, periods: 120)                    // 400–1000 ms

        // 100 ms windows hold 44 cycles of 440 Hz and 100 of 1 kHz: the bins do not leak.
        let before = level(of: 440, in: out, frames: 0..<frames(0.1))
        XCTAssertEqual(before, 16384, accuracy: 2)
        let ducked = level(of: 440, in: out, frames: frames(0.25)..<frames(0.35))
        XCTAssertEqual(dB(ducked / before), -15, accuracy: 0.1, "150 ms after the duck")
        let restored = level(of: 440, in: out, frames: frames(0.7)..<frames(0.8))
        XCTAssertEqual(dB(restored / before), 0, accuracy: 0.1, "300 ms after the restore")
        for window in [0..<frames(0.1), frames(0.25)..<frames(0.35), frames(0.7)..<frames(0.8)] {
            XCTAssertEqual(level(of: 1000, in: out, frames: window), 8192, accuracy: 2, "the prompt is not ducked")
        }
    }

    /// The duck ramps in dB, a constant ratio per sample: halfway through it stands at −7.5 dB,
    /// and no step exceeds the ramp's own (the larger end × |ln(ratio)| ÷ frames). The restore
    /// ends on 0 dB 300 ms after the period it was requested in.
    func testTheDuckRampIsLinearInDecibelsAndNeverJumps() {
        let music = MixerInput(ring: ring(constant(half, seconds: 1)))
        let prompt = MixerInput(ring: ring(constant(0, seconds: 1)))
        let mixer = Mixer(inputs: [music, prompt], format: float, maxFrames: Self.period)
        let start = 2 * Self.period
        var g = gains(renderFloat(mixer, periods: 2))
        music.duckLevel = duck
        g += gains(renderFloat(mixer, periods: 40))
        let restoreAt = g.count
        music.duckLevel = 1
        g += gains(renderFloat(mixer, periods: 70))

        let down = Array(g[(start - 1)..<restoreAt])
        let up = Array(g[(restoreAt - 1)...])
        let bound = { (frames: Int) in log(1 / Double(self.duck)) / Double(frames) + 1e-6 }
        XCTAssertLessThanOrEqual(largestStep(down), bound(mixer.duckFrames))
        XCTAssertLessThanOrEqual(largestStep(up), bound(mixer.duckRestoreFrames))

        XCTAssertEqual(g[start - 1], 1)
        XCTAssertEqual(dB(g[start + mixer.duckFrames / 2 - 1]), -7.5, accuracy: 0.01, "halfway in dB")
        XCTAssertEqual(dB(g[start + mixer.duckFrames - 1]), -15, accuracy: 0.001, "on −15 dB after 150 ms")
        XCTAssertEqual(dB(g[restoreAt - 1]), -15, accuracy: 0.001, "and staying there")
        for pair in zip(down, down.dropFirst()) { XCTAssertLessThanOrEqual(pair.1, pair.0, "monotonic") }
        for pair in zip(up, up.dropFirst()) { XCTAssertGreaterThanOrEqual(pair.1, pair.0, "monotonic") }

        let back = g[restoreAt...].firstIndex { $0 == 1 }! - restoreAt + 1
        XCTAssertEqual(back, mixer.duckRestoreFrames, accuracy: Self.period, "0 dB within 300 ms ± a period")
        XCTAssertEqual(music.appliedGain, 1)
    }

    /// A duck requested mid-restore turns round from where the gain is: no jump.
    func testADuckThatChangesMidRampBendsWithoutAJump() {
        let music = MixerInput(ring: ring(constant(half, seconds: 1)))
        let mixer = Mixer(inputs: [music], format: float, maxFrames: Self.period)
        music.duckLevel = duck
        var g = gains(renderFloat(mixer, periods: 15))          // halfway down
        music.duckLevel = 1
        g += gains(renderFloat(mixer, periods: 20))             // partway up
        music.duckLevel = 0                                     // below the dB floor: linear
        g += gains(renderFloat(mixer, periods: 40))
        XCTAssertLessThanOrEqual(largestStep(g), log(1 / Double(duck)) / Double(mixer.duckFrames) + 1e-6)
        XCTAssertEqual(g.last, 0)
        XCTAssertTrue(mixer.isSilent(music))
    }

    // MARK: Fade and volume

    /// A pause or an interruption fades out in 30 ms and back in in 30 ms, never by more than
    /// 1/1440 a sample; `isSilent` holds once faded out, and the bit-perfect path returns.
    func testFadeOutAndInTakeThirtyMillisecondsWithoutAJump() {
        let music = MixerInput(ring: ring(constant(half, seconds: 1)))
        let mixer = Mixer(inputs: [music], format: float, maxFrames: Self.period)
        XCTAssertEqual(mixer.fadeFrames, frames(0.03))
        _ = renderFloat(mixer, periods: 1)
        music.fade = 0
        let out = gains(renderFloat(mixer, periods: 1))
        XCTAssertFalse(mixer.isSilent(music), "5 ms into a 30 ms fade")
        let rest = gains(renderFloat(mixer, periods: 9))
        XCTAssertTrue(mixer.isSilent(music))
        let fadingOut = [1] + out + rest
        XCTAssertEqual(fadingOut.firstIndex(of: 0), mixer.fadeFrames)
        XCTAssertLessThanOrEqual(largestStep(fadingOut), 1 / Double(mixer.fadeFrames) + 1e-6)

        music.fade = 1
        let fadingIn = [0] + gains(renderFloat(mixer, periods: 10))
        XCTAssertFalse(mixer.isSilent(music))
        XCTAssertEqual(fadingIn.firstIndex(of: 1), mixer.fadeFrames)
        XCTAssertLessThanOrEqual(largestStep(fadingIn), 1 / Double(mixer.fadeFrames) + 1e-6)
    }

    /// The engine pauses by setting the volume to 0 and waiting for `isSilent`: 20 ms.
    func testAVolumeOfZeroIsSilentAfterTheVolumeRamp() {
        let music = MixerInput(ring: ring(constant(half, seconds: 1)), gain: 0.8)
        let mixer = Mixer(inputs: [music], format: float, maxFrames: Self.period)
        music.gain = 0
        let g = [0.8] + gains(renderFloat(mixer, periods: 3))
        XCTAssertFalse(mixer.isSilent(music))
        _ = renderFloat(mixer, periods: 1)
        XCTAssertTrue(mixer.isSilent(music), "20 ms = 4 periods")
        XCTAssertLessThanOrEqual(largestStep(g), 0.8 / Double(mixer.rampFrames) + 1e-6)
        music.gain = 0.8
        XCTAssertFalse(mixer.isSilent(music), "a new target is not silent, even before it is rendered")
    }

    /// The factors multiply, and once every one is back at exactly 1 the stream is bit-perfect
    /// again (16-bit dither would otherwise move about half the samples by an LSB).
    func testFactorsMultiplyAndTheBitPerfectPathReturnsWhenAllAreBackAtOne() {
        let values = (0..<(frames(1) * 2)).map { Int32(Int16(truncatingIfNeeded: $0 &* 7919)) << 16 }
        let music = MixerInput(ring: ring(values))
        let mixer = Mixer(inputs: [music], format: s16, maxFrames: Self.period)
        music.gain = 0.5
        music.duckLevel = 0.5
        music.fade = 0.5
        _ = render16(mixer, periods: 80)
        XCTAssertEqual(music.appliedGain, 0.125)
        music.gain = 1
        music.duckLevel = 1
        music.fade = 1
        _ = render16(mixer, periods: 60)
        XCTAssertEqual(music.appliedGain, 1)
        let consumed = 140 * Self.period * 2
        let out = render16(mixer, periods: 20)
        XCTAssertEqual(out.map { Int32($0) << 16 }, Array(values[consumed..<(consumed + out.count)]))
    }

    // MARK: Limiter

    /// Two full-scale streams: no sample leaves full scale, and what comes out is the sum times
    /// a gain (never above 1, climbing no faster than the release) — scaled, not clipped.
    func testTheLimiterKeepsTwoFullScaleStreamsWithinFullScaleWithoutClipping() {
        let a = sine(440, amplitude: 32767, seconds: 0.5)
        let b = sine(1000, amplitude: 32767, seconds: 0.5)
        let mixer = Mixer(inputs: [MixerInput(ring: ring(a)), MixerInput(ring: ring(b))], format: float, maxFrames: Self.period)
        let out = renderFloat(mixer, periods: 100)
        XCTAssertLessThan(mixer.limiterGain, 0.6)
        XCTAssertLessThanOrEqual(out.map { abs($0) }.max()!, 1)

        let scale = 1.0 / 2_147_483_648
        var previous: Double?
        let release = 1 - exp(-1 / (0.1 * Double(Self.rate)))
        for n in 0..<out.count {
            let sum = (Double(a[2 * n]) + Double(b[2 * n])) * scale
            guard abs(sum) > 0.25 else {
                previous = nil
                continue
            }
            let g = Double(out[n]) / sum
            XCTAssertLessThanOrEqual(g, 1 + 1e-6)
            if let p = previous { XCTAssertLessThanOrEqual(g - p, (1 - p) * release + 1e-5, "frame \(n)") }
            previous = g
        }

        let clipped = render16(Mixer(inputs: [MixerInput(ring: ring(a)), MixerInput(ring: ring(b))], format: s16, maxFrames: Self.period), periods: 100)
        XCTAssertLessThanOrEqual(clipped.map { Int($0) }.max()!, 32767)
        XCTAssertGreaterThanOrEqual(clipped.map { Int($0) }.min()!, -32768)
        // Hard clipping would hold every sample of the sum beyond full scale on the rails; the
        // limiter touches them only at the peaks that set its gain.
        let onRails = clipped.filter { abs(Int($0)) >= 32766 }.count
        let beyondFullScale = zip(a, b).filter { abs(Int($0 >> 16) + Int($1 >> 16)) >= 32766 }.count
        XCTAssertLessThan(onRails * 10, beyondFullScale)
    }

    /// When the second stream ends, the limiter lets go (100 ms time constant) and the first,
    /// alone at unity, is bit-perfect again.
    func testTheLimiterReleasesAndTheBitPerfectPathReturns() {
        let a = sine(440, amplitude: 32767, seconds: 2.5)
        let b = sine(1000, amplitude: 32767, seconds: 0.3)
        let mixer = Mixer(inputs: [MixerInput(ring: ring(a)), MixerInput(ring: ring(b))], format: s16, maxFrames: Self.period)
        _ = render16(mixer, periods: 60)
        let limited = Double(mixer.limiterGain)
        XCTAssertLessThan(limited, 0.6)
        _ = render16(mixer, periods: 100)                       // 0.5 s alone
        XCTAssertGreaterThan(Double(mixer.limiterGain), 1 - (1 - limited) * exp(-4.9))
        _ = render16(mixer, periods: 200)                       // 1 s more
        XCTAssertEqual(mixer.limiterGain, 1)
        let consumed = 360 * Self.period * 2
        let out = render16(mixer, periods: 40)
        XCTAssertEqual(out.map { Int32($0) << 16 }, Array(a[consumed..<(consumed + out.count)]))
    }

    /// A sum within full scale is the exact float sum: the limiter multiplies nothing.
    func testTheLimiterLeavesASumWithinFullScaleAlone() {
        let a = sine(440, amplitude: 16000, seconds: 0.2)
        let b = sine(1000, amplitude: 16000, seconds: 0.2)
        let mixer = Mixer(inputs: [MixerInput(ring: ring(a)), MixerInput(ring: ring(b))], format: float, maxFrames: Self.period)
        let out = renderFloat(mixer, periods: 40)
        let scale: Float = 1.0 / 2_147_483_648
        for n in 0..<out.count { XCTAssertEqual(out[n], 0 + Float(a[2 * n]) * scale + Float(b[2 * n]) * scale) }
        XCTAssertEqual(mixer.limiterGain, 1)
    }

    // MARK: Slots

    /// An enabled secondary input with an empty ring adds nothing; its ramps keep the device's
    /// time, so a stream ducked while it had nothing to play restarts at the duck, not at the
    /// top of a 150 ms ramp.
    func testAnEmptySecondaryContributesNothingAndRestartsWhereItsRampsAre() {
        let music = MixerInput(ring: ring(constant(half, seconds: 1)))
        let promptRing = SPSCRing(capacity: frames(1) * 2)
        let prompt = MixerInput(ring: promptRing)
        let mixer = Mixer(inputs: [music, prompt], format: float, maxFrames: Self.period)
        XCTAssertEqual(gains(renderFloat(mixer, periods: 4)), [Double](repeating: 1, count: 4 * Self.period))

        prompt.duckLevel = duck
        _ = renderFloat(mixer, periods: 40)
        _ = constant(half / 2, seconds: 0.05).withUnsafeBufferPointer { promptRing.write($0) }
        let g = gains(renderFloat(mixer, periods: 12)).map { $0 - 1 }  // the prompt's share
        XCTAssertEqual(g[0], Double(duck) / 2, accuracy: 1e-6, "starts at the duck")
        XCTAssertLessThanOrEqual(largestStep(Array(g[0..<frames(0.05)])), 1e-6)
        XCTAssertEqual(Array(g[frames(0.05)...]), [Double](repeating: 0, count: g.count - frames(0.05)), "ran dry: nothing")
    }

    /// A reused slot starts at the factors `attach` gives, whatever the previous stream left:
    /// here an interrupted (faded-out) one, with samples it never played, dropped by a cut.
    func testAttachStartsAReusedSlotFreshAndCanFadeItIn() {
        let music = MixerInput(ring: ring(constant(half, seconds: 2)))
        let slotRing = SPSCRing(capacity: frames(1) * 2)
        let slot = MixerInput(ring: slotRing)
        let mixer = Mixer(inputs: [music, slot], format: float, maxFrames: Self.period)
        _ = constant(half / 2, seconds: 0.5).withUnsafeBufferPointer { slotRing.write($0) }
        slot.fade = 0
        _ = renderFloat(mixer, periods: 10)
        XCTAssertTrue(mixer.isSilent(slot))
        slot.isEnabled = false                                  // the session leaves
        _ = renderFloat(mixer, periods: 2)
        XCTAssertGreaterThan(slotRing.readableSamples, 0)

        let cut = slotRing.cutNow(format: nil)                  // a new session takes the slot
        _ = renderFloat(mixer, periods: 1)
        XCTAssertTrue(slotRing.cutTaken(cut), "taken while the slot is disabled")
        XCTAssertEqual(slotRing.readableSamples, 0)
        _ = constant(half / 4, seconds: 0.2).withUnsafeBufferPointer { slotRing.write($0) }
        slot.attach(gain: 0.5)
        var g = gains(renderFloat(mixer, periods: 2)).map { $0 - 1 }
        XCTAssertEqual(g, [Double](repeating: 0.5 / 4, count: g.count), "at its gain from the first sample")
        XCTAssertEqual(slot.appliedGain, 0.5)

        _ = renderFloat(mixer, periods: 40)                     // plays out
        _ = constant(half / 4, seconds: 0.2).withUnsafeBufferPointer { slotRing.write($0) }
        slot.attach(fade: 0)
        slot.fade = 1                                           // before the mixer saw the attach
        g = [0] + gains(renderFloat(mixer, periods: 8)).map { ($0 - 1) * 4 }
        XCTAssertEqual(g.firstIndex(of: 1), mixer.fadeFrames, "fades in from 0 over 30 ms")
        XCTAssertLessThanOrEqual(largestStep(g), 1 / Double(mixer.fadeFrames) + 1e-5)
    }

    // MARK: ReplayGain level

    /// A snapped level applies from the next frame with no ramp; a level set afterwards ramps
    /// over the volume time, in dB; back at 1 the 16-bit path is bit-perfect again.
    func testTheLevelSnapsAtABoundaryRampsOtherwiseAndUnityIsBitPerfect() {
        let input = MixerInput(ring: ring(constant(half, seconds: 1)))
        let mixer = Mixer(inputs: [input], format: float, maxFrames: Self.period)
        input.snapLevel(0.25)
        XCTAssertEqual(renderFloat(mixer, periods: 1).map { $0 / 0.5 }, Array(repeating: 0.25, count: Self.period))
        XCTAssertEqual(input.appliedGain, 0.25)
        input.level = 1
        let g = renderFloat(mixer, periods: mixer.rampFrames / Self.period + 1).map { Double($0 / 0.5) }
        XCTAssertEqual(g.firstIndex { abs($0 - 1) < 1e-6 }.map { $0 + 1 }, mixer.rampFrames, "reaches 1 after the volume ramp")
        for i in 1..<mixer.rampFrames { XCTAssertGreaterThan(g[i], g[i - 1], "rises monotonically") }
        // A ramp in dB: equal ratios per frame.
        XCTAssertEqual(g[1] / g[0], g[101] / g[100], accuracy: 1e-5)

        let samples = sine(997, amplitude: 20000, seconds: 0.1)
        let sixteen = MixerInput(ring: ring(samples))
        let bitPerfect = Mixer(inputs: [sixteen], format: s16, maxFrames: Self.period)
        sixteen.snapLevel(0.5)
        sixteen.snapLevel(1)
        XCTAssertEqual(render16(bitPerfect, periods: 4), samples.prefix(4 * Self.period * 2).map { Int16($0 >> 16) },
                       "a level of 1 is the integer path")
    }

    // MARK: Timing

    /// Every ramp's length comes from its time in seconds at the device's rate; `configure`
    /// kept the volume ramp at 20 ms whatever the mixer was built with.
    func testRampLengthsFollowTheirTimesAtTheDeviceRate() {
        let input = MixerInput(ring: SPSCRing(capacity: 16))
        let mixer = Mixer(inputs: [input], format: float, maxFrames: Self.period, rampSeconds: 0.01)
        XCTAssertEqual(mixer.rampFrames, 480)
        let cd = DeviceFormat(sampleFormat: .s16LE, sampleRate: 44100, channels: 2, periodFrames: 441, bufferFrames: 1764)
        mixer.configure(format: cd, maxFrames: 441)
        XCTAssertEqual(mixer.rampFrames, 441)
        XCTAssertEqual(mixer.fadeFrames, 1323)
        XCTAssertEqual(mixer.duckFrames, 6615)
        XCTAssertEqual(mixer.duckRestoreFrames, 13230)
        mixer.configure(format: cd, maxFrames: 441, timing: MixerTiming(volume: 0.05, duck: 0.1, duckRestore: 0.5, fade: 0.01))
        XCTAssertEqual([mixer.rampFrames, mixer.fadeFrames, mixer.duckFrames, mixer.duckRestoreFrames], [2205, 441, 4410, 22050])
        XCTAssertEqual(mixer.timing.fade, 0.01)
    }
}
