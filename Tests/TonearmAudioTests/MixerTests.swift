import CAllocationCounter
import TonearmAudio
import XCTest

final class MixerTests: XCTestCase {
    private let stereo16 = DeviceFormat(sampleFormat: .s16LE, sampleRate: 48000, channels: 2, periodFrames: 256, bufferFrames: 1024)

    private func ring(_ samples: [Int32], capacity: Int = 1 << 16) -> SPSCRing {
        let ring = SPSCRing(capacity: capacity)
        _ = samples.withUnsafeBufferPointer { ring.write($0) }
        return ring
    }

    private func render(_ mixer: Mixer, frames: Int) -> (count: Int, samples: [Int16]) {
        var out = [Int16](repeating: 0, count: frames * mixer.format.channels)
        let n = out.withUnsafeMutableBytes { mixer.render(into: $0.baseAddress!, frames: frames) }
        return (n, Array(out[0..<(n * mixer.format.channels)]))
    }

    func testOneStreamAtUnityIsBitPerfect() {
        let values = (0..<1000).map { Int16(truncatingIfNeeded: $0 &* 7919) }
        let mixer = Mixer(inputs: [MixerInput(ring: ring(values.map { Int32($0) << 16 }))], format: stereo16, maxFrames: 256)
        var got: [Int16] = []
        while true {
            let (n, samples) = render(mixer, frames: 256)
            if n == 0 { break }
            got += samples
        }
        XCTAssertEqual(got, values)
    }

    func testThePrimaryStreamDecidesHowManyFramesAPeriodHolds() {
        let primary = MixerInput(ring: ring([Int32](repeating: 1 << 16, count: 20)))
        let other = MixerInput(ring: ring([Int32](repeating: 1 << 16, count: 400)))
        let mixer = Mixer(inputs: [primary, other], format: stereo16, maxFrames: 256)
        XCTAssertEqual(render(mixer, frames: 256).count, 10, "never pads the primary stream")
        XCTAssertEqual(render(mixer, frames: 256).count, 0)
    }

    func testGainRampsWithoutAJumpAndSettlesOnItsTarget() {
        let level: Int32 = 16384 << 16
        let frames = 48000
        let input = MixerInput(ring: ring([Int32](repeating: level, count: frames * 2), capacity: frames * 2))
        let mixer = Mixer(inputs: [input], format: stereo16, maxFrames: 256, rampSeconds: 0.02)
        input.gain = 0.25
        var got: [Int16] = []
        while true {
            let (n, samples) = render(mixer, frames: 256)
            if n == 0 { break }
            got += samples
        }
        XCTAssertEqual(got.count, frames * 2)
        // 20 ms = 960 frames from 16384 to 4096: about 12.8 LSB per frame, plus dither.
        let largestStep = zip(got, got.dropFirst(2)).map { abs(Int($0) - Int($1)) }.max()!
        XCTAssertLessThanOrEqual(largestStep, 16)
        XCTAssertEqual(Int(got[0]), 16384, accuracy: 20)
        for sample in got.suffix(1000) { XCTAssertEqual(Int(sample), 4096, accuracy: 1) }
    }

    /// A stream created at a gain starts at it: no ramp from unity (the bug: `--volume 50`
    /// played its first 20 ms at full level).
    func testAnInitialGainAppliesFromTheFirstSample() {
        let input = MixerInput(ring: ring([Int32](repeating: 16000 << 16, count: 512)), gain: 0.5)
        let mixer = Mixer(inputs: [input], format: stereo16, maxFrames: 256)
        for s in render(mixer, frames: 256).samples { XCTAssertEqual(Int(s), 8000, accuracy: 1) }
    }

    func testStreamsAreSummedWithTheirOwnGains() {
        let a = MixerInput(ring: ring([Int32](repeating: 8000 << 16, count: 512)))
        let b = MixerInput(ring: ring([Int32](repeating: 4000 << 16, count: 512)))
        let mixer = Mixer(inputs: [a, b], format: stereo16, maxFrames: 256)
        let (n, samples) = render(mixer, frames: 256)
        XCTAssertEqual(n, 256)
        for s in samples { XCTAssertEqual(Int(s), 12000, accuracy: 1) }
    }

    func testADisabledSecondaryStreamIsNotRead() {
        let a = MixerInput(ring: ring([Int32](repeating: 100 << 16, count: 512)))
        let b = MixerInput(ring: ring([Int32](repeating: 9000 << 16, count: 512)))
        b.isEnabled = false
        let mixer = Mixer(inputs: [a, b], format: stereo16, maxFrames: 256)
        XCTAssertEqual(render(mixer, frames: 256).samples, [Int16](repeating: 100, count: 512))
        XCTAssertEqual(b.ring.readableSamples, 512)
    }

    /// The render path allocates nothing: neither the bit-perfect path nor the mixing path.
    func testRenderingAPeriodAllocatesNothing() {
        let periods = 500
        let samples = [Int32](repeating: 3 << 20, count: 256 * 2 * periods)
        let a = MixerInput(ring: ring(samples, capacity: samples.count))
        let b = MixerInput(ring: ring(samples, capacity: samples.count))
        b.isEnabled = false
        let mixer = Mixer(inputs: [a, b], format: stereo16, maxFrames: 256)
        let out = UnsafeMutableRawPointer.allocate(byteCount: 256 * 4, alignment: 16)
        defer { out.deallocate() }

        allocation_counter_start()
        var rendered = 0
        for _ in 0..<(periods / 2) { rendered += mixer.render(into: out, frames: 256) }
        let bitPerfectAllocations = allocation_counter_stop()

        a.gain = 0.5
        b.isEnabled = true
        allocation_counter_start()
        for _ in 0..<(periods / 2) { rendered += mixer.render(into: out, frames: 256) }
        let mixingAllocations = allocation_counter_stop()

        XCTAssertEqual(rendered, 256 * periods)
        XCTAssertEqual(bitPerfectAllocations, 0)
        XCTAssertEqual(mixingAllocations, 0)

        // Everything at once: volume, duck (in dB) and fade ramps, a slot attached and one cut,
        // a secondary with an empty ring keeping time, and the limiter holding two loud streams.
        let loud = [Int32](repeating: .max, count: 256 * 2 * periods)
        _ = samples.withUnsafeBufferPointer { a.ring.write($0) }
        let c = MixerInput(ring: ring(loud, capacity: loud.count))
        let empty = MixerInput(ring: SPSCRing(capacity: 64))
        let full = Mixer(inputs: [a, b, c, empty], format: stereo16, maxFrames: 256)
        _ = b.ring.cutNow(format: nil)
        _ = samples.withUnsafeBufferPointer { b.ring.write($0) }
        b.attach(gain: 0.8, fade: 0)
        a.gain = 1
        a.duckLevel = 0.1778
        b.fade = 1
        empty.duckLevel = 0.5
        allocation_counter_start()
        var fullRendered = 0
        var leastLimiterGain: Float = 1
        for period in 0..<periods {
            if period == periods / 4 {
                a.duckLevel = 1
                a.fade = 0.5
                c.gain = 0.9
                empty.fade = 0
            }
            fullRendered += full.render(into: out, frames: 256)
            leastLimiterGain = min(leastLimiterGain, full.limiterGain)
        }
        let fullAllocations = allocation_counter_stop()
        XCTAssertEqual(fullRendered, 256 * periods)
        XCTAssertLessThan(leastLimiterGain, 1)
        XCTAssertEqual(fullAllocations, 0)
    }

    /// The counter itself works: without this, a zero above would prove nothing.
    func testTheAllocationCounterSeesAllocations() {
        allocation_counter_start()
        let array = [Int](repeating: 1, count: Int.random(in: 100...200))
        let count = allocation_counter_stop()
        XCTAssertGreaterThan(array.count, 0)
        XCTAssertGreaterThan(count, 0)
    }
}
