import CAllocationCounter
import TonearmAudio
import XCTest

/// The ring's history and the mixer's rewind: what was rendered is rendered again, the same
/// where nothing changed and with the new targets from the point rewound to.
final class MixerRewindTests: XCTestCase {
    private let stereo16 = DeviceFormat(sampleFormat: .s16LE, sampleRate: 48000, channels: 2, periodFrames: 1024, bufferFrames: 4096)

    /// A ring of `frames` stereo frames of a signal that never repeats within them.
    private func signalRing(frames: Int, capacity: Int = 1 << 17, level: Int32 = 12000) -> SPSCRing {
        let ring = SPSCRing(capacity: capacity)
        let samples = (0..<frames * 2).map { i -> Int32 in
            Int32(Double(level) * sin(Double(i / 2) * 0.0731 + Double(i % 2))) << 16
        }
        _ = samples.withUnsafeBufferPointer { ring.write($0) }
        return ring
    }

    private func render(_ mixer: Mixer, frames: Int) -> [Int16] {
        var out = [Int16](repeating: 0, count: frames * mixer.format.channels)
        let n = out.withUnsafeMutableBytes { mixer.render(into: $0.baseAddress!, frames: frames) }
        return Array(out[0..<(n * mixer.format.channels)])
    }

    // MARK: The ring

    func testAKeptHistoryHoldsTheProducerBackUntilReleased() {
        let ring = SPSCRing(capacity: 100)
        ring.keepHistory(50)
        let ones = [Int32](repeating: 1, count: 100)
        XCTAssertEqual(ones.withUnsafeBufferPointer { ring.write($0) }, 100)
        var scratch = [Int32](repeating: 0, count: 100)
        XCTAssertEqual(ring.read(into: &scratch, count: 30), 30)
        XCTAssertEqual(ring.freeSamples, 0, "what was read is kept")
        XCTAssertEqual(ring.read(into: &scratch, count: 40), 40)
        XCTAssertEqual(ring.freeSamples, 20, "no more than the limit is kept")
        ring.release(upTo: 60)
        XCTAssertEqual(ring.freeSamples, 60)
        ring.release(upTo: 1000)
        XCTAssertEqual(ring.freeSamples, 70, "never past what was read")
    }

    func testARewindReadsTheSameSamplesAgainWithinWhatIsKept() {
        let ring = SPSCRing(capacity: 64)
        ring.keepHistory(32)
        let samples = (0..<64).map { Int32($0) }
        _ = samples.withUnsafeBufferPointer { ring.write($0) }
        var first = [Int32](repeating: 0, count: 40)
        ring.read(into: &first, count: 40)
        XCTAssertNil(ring.rewindTarget(7), "older than the history kept")
        XCTAssertFalse(ring.rewind(to: 7))
        XCTAssertEqual(ring.samplesRead, 40, "a refused rewind changes nothing")
        XCTAssertNil(ring.rewindTarget(41), "not read yet")
        XCTAssertTrue(ring.rewind(to: 10))
        var again = [Int32](repeating: 0, count: 30)
        ring.read(into: &again, count: 30)
        XCTAssertEqual(again, Array(samples[10..<40]))
    }

    func testNoRewindGoesBeforeACutTaken() {
        let ring = SPSCRing(capacity: 64)
        ring.keepHistory(64)
        _ = [Int32](repeating: 1, count: 20).withUnsafeBufferPointer { ring.write($0) }
        var scratch = [Int32](repeating: 0, count: 64)
        ring.read(into: &scratch, count: 10)
        _ = ring.cutNow(format: nil)
        _ = [Int32](repeating: 2, count: 20).withUnsafeBufferPointer { ring.write($0) }
        XCTAssertNotNil(ring.reachedCut)
        ring.takeCut()
        XCTAssertEqual(ring.firstSinceCut, 20)
        XCTAssertEqual(ring.freeSamples, 44, "what was before the cut is let go")
        ring.read(into: &scratch, count: 5)
        XCTAssertEqual(ring.rewindTarget(3), 20, "a rewind from before the cut starts at it")
        XCTAssertTrue(ring.rewind(to: 3))
        XCTAssertEqual(ring.samplesRead, 20)
    }

    func testWithoutAHistoryWhatIsReadIsFreedAtOnce() {
        let ring = SPSCRing(capacity: 16)
        _ = [Int32](repeating: 1, count: 16).withUnsafeBufferPointer { ring.write($0) }
        var scratch = [Int32](repeating: 0, count: 16)
        ring.read(into: &scratch, count: 6)
        XCTAssertEqual(ring.freeSamples, 6)
        XCTAssertNil(ring.rewindTarget(0))
    }

    // MARK: The mixer

    /// Rendering, rewinding to every noted point in turn and rendering on gives the same bytes
    /// as rendering straight through: ramps under way, the limiter and the dither included.
    func testARewindThatChangesNothingRendersTheSameBytes() {
        for mixing in [false, true] {
            let straight = mixedOutput(frames: 9000, mixing: mixing, rewindEvery: nil)
            let rewound = mixedOutput(frames: 9000, mixing: mixing, rewindEvery: 700)
            XCTAssertEqual(straight.count, 9000 * 2)
            XCTAssertEqual(rewound, straight, mixing ? "mixed, ramping and limited" : "one stream at unity (bit-perfect)")
        }
    }

    /// Warming the mixing path up, at any moment, changes nothing that is rendered, mixing or
    /// bit-perfect, ramping or settled; what it wrote is silence.
    func testAWarmUpChangesNothing() {
        for mixing in [false, true] {
            let straight = mixedOutput(frames: 9000, mixing: mixing, rewindEvery: nil)
            let warmed = mixedOutput(frames: 9000, mixing: mixing, rewindEvery: nil, warmUpEvery: 333)
            XCTAssertEqual(warmed, straight, mixing ? "mixed" : "bit-perfect")
        }
        let mixer = Mixer(inputs: [MixerInput(ring: signalRing(frames: 10))], format: stereo16, maxFrames: 1024)
        var out = [Int16](repeating: 7, count: Mixer.granule * 2)
        out.withUnsafeMutableBytes { mixer.warmUp(into: $0.baseAddress!) }
        XCTAssertTrue(out.allSatisfy { abs($0) <= 1 }, "silence, give or take the dither")
    }

    /// Renders `frames` frames in periods of 1000; every `rewindEvery` frames rendered, goes
    /// back 1500 frames (to the first point noted at or after that) and keeps what is before.
    private func mixedOutput(frames: Int, mixing: Bool, rewindEvery: Int?, warmUpEvery: Int? = nil) -> [Int16] {
        let player = MixerInput(ring: signalRing(frames: frames + 2000))
        let prompt = MixerInput(ring: signalRing(frames: mixing ? frames : 0, level: 30000), isEnabled: mixing)
        let mixer = Mixer(inputs: [player, prompt], format: stereo16, maxFrames: 1024)
        mixer.keepHistory(frames: 5000)
        if mixing {
            player.gain = 0.5
            player.duckLevel = 0.2
        }
        var out: [Int16] = []
        var nextRewind = rewindEvery ?? Int.max
        var scratch = [Int16](repeating: 0, count: Mixer.granule * 2)
        while out.count < frames * 2 {
            if let every = warmUpEvery {
                scratch.withUnsafeMutableBytes { mixer.warmUp(into: $0.baseAddress!) }
                let rendered = render(mixer, frames: min(every, frames - out.count / 2))
                out += rendered
                continue
            }
            let rendered = render(mixer, frames: min(1000, frames - out.count / 2))
            XCTAssertFalse(rendered.isEmpty)
            out += rendered
            if mixer.renderedFrames >= nextRewind, let point = mixer.rewindPoint(notBefore: mixer.renderedFrames - 1500) {
                nextRewind += rewindEvery!
                XCTAssertTrue(mixer.rewind(to: point))
                XCTAssertEqual(mixer.renderedFrames, point)
                out.removeLast(out.count - point * 2)
            }
        }
        return out
    }

    /// A duck asked after a rewind ramps from the point rewound to; what is before it is as it
    /// was.
    func testAChangeAfterARewindStartsAtThePoint() {
        let player = MixerInput(ring: signalRing(frames: 20000))
        let mixer = Mixer(inputs: [player], format: stereo16, maxFrames: 1024,
                          timing: MixerTiming(duck: 0.01))
        mixer.keepHistory(frames: 5000)
        var before: [Int16] = []
        for _ in 0..<4 { before += render(mixer, frames: 1024) }
        let point = mixer.rewindPoint(notBefore: 1000)!
        XCTAssertEqual(point, 1024, "the first point noted at or after frame 1000")
        XCTAssertTrue(mixer.rewind(to: point))
        player.duckLevel = 0.1
        var after = Array(before[0..<point * 2])
        for _ in 0..<3 { after += render(mixer, frames: 1024) }
        XCTAssertEqual(Array(after[0..<point * 2]), Array(before[0..<point * 2]))
        let changed = zip(before, after).enumerated().first { $0.element.0 != $0.element.1 }!.offset / 2
        XCTAssertLessThanOrEqual(changed - point, 2, "the ramp starts at the point (frame \(changed))")
        // 10 ms later (480 frames) the duck is complete: about a tenth.
        let settled = (point + 600) * 2
        XCTAssertEqual(Double(after[settled]), Double(before[settled]) * 0.1, accuracy: 2)
    }

    func testNoRewindGoesBackPastAStreamThatStoppedBeingRead() {
        let player = MixerInput(ring: signalRing(frames: 20000))
        let prompt = MixerInput(ring: signalRing(frames: 20000))
        let mixer = Mixer(inputs: [player, prompt], format: stereo16, maxFrames: 1024)
        mixer.keepHistory(frames: 5000)
        _ = render(mixer, frames: 1024)
        prompt.isEnabled = false
        _ = render(mixer, frames: 1024)
        XCTAssertEqual(mixer.rewindPoint(notBefore: 0), 1024, "the prompt's last samples are not rendered again without it")
        mixer.markBarrier()
        XCTAssertNil(mixer.rewindPoint(notBefore: 0), "nothing is noted after the barrier yet")
    }

    func testAStreamStartedSinceAPointStartsThereAfterTheRewind() {
        let player = MixerInput(ring: signalRing(frames: 20000))
        let slot = SPSCRing(capacity: 1 << 15)
        let prompt = MixerInput(ring: slot)
        let mixer = Mixer(inputs: [player, prompt], format: stereo16, maxFrames: 1024)
        mixer.keepHistory(frames: 5000)
        _ = render(mixer, frames: 2048)
        // The slot's new stream: a cut, then its samples, while the device still holds 2048.
        _ = slot.cutNow(format: nil)
        let tone = [Int32](repeating: 5000 << 16, count: 4000)
        _ = tone.withUnsafeBufferPointer { slot.write($0) }
        let point = mixer.rewindPoint(notBefore: 512)!
        XCTAssertEqual(point, 512)
        XCTAssertTrue(mixer.rewind(to: point))
        let again = render(mixer, frames: 1024)
        let alone = Int(again[1]) - Int(playerAlone(frames: 512 + 1024)[(512) * 2 + 1])
        XCTAssertEqual(alone, 5000, accuracy: 2, "the prompt is heard from the point rewound to")
        XCTAssertEqual(slot.samplesRead, 2048, "1024 frames of it read")
    }

    private func playerAlone(frames: Int) -> [Int16] {
        let mixer = Mixer(inputs: [MixerInput(ring: signalRing(frames: 20000))], format: stereo16, maxFrames: 1024)
        var out: [Int16] = []
        while out.count < frames * 2 { out += render(mixer, frames: min(1024, frames - out.count / 2)) }
        return out
    }

    func testReleasingHistoryGivesTheProducerRoomAndForgetsThePointsBefore() {
        let ring = SPSCRing(capacity: 40000)
        let player = MixerInput(ring: ring)
        _ = [Int32](repeating: 1 << 20, count: 40000).withUnsafeBufferPointer { ring.write($0) }
        let mixer = Mixer(inputs: [player], format: stereo16, maxFrames: 1024)
        mixer.keepHistory(frames: 8000)
        for _ in 0..<8 { _ = render(mixer, frames: 1024) }
        XCTAssertEqual(ring.freeSamples, 0, "all 8192 frames kept")
        mixer.releaseHistory(before: 4096)
        XCTAssertEqual(ring.freeSamples, 4096 * 2)
        XCTAssertNil(mixer.rewindPoint(notBefore: 0).flatMap { $0 < 4096 ? $0 : nil })
        mixer.forgetHistory()
        XCTAssertEqual(ring.freeSamples, 8192 * 2)
        XCTAssertNil(mixer.rewindPoint(notBefore: 0))
    }

    func testRenderingAndRewindingAllocateNothing() {
        let player = MixerInput(ring: signalRing(frames: 30000))
        let prompt = MixerInput(ring: signalRing(frames: 30000))
        let mixer = Mixer(inputs: [player, prompt], format: stereo16, maxFrames: 1024)
        mixer.keepHistory(frames: 5000)
        let out = UnsafeMutableRawPointer.allocate(byteCount: 1024 * 4, alignment: 16)
        defer { out.deallocate() }
        _ = mixer.render(into: out, frames: 1024)
        allocation_counter_start()
        for round in 0..<10 {
            player.duckLevel = round % 2 == 0 ? 0.3 : 1
            _ = mixer.render(into: out, frames: 1024)
            _ = mixer.render(into: out, frames: 1024)
            if let point = mixer.rewindPoint(notBefore: mixer.renderedFrames - 1500) { mixer.rewind(to: point) }
            mixer.releaseHistory(before: mixer.renderedFrames - 3000)
        }
        let allocations = allocation_counter_stop()
        XCTAssertEqual(allocations, 0)
    }
}
