import TonearmALSA
import TonearmAudio
@testable import TonearmPlayback
import XCTest

/// A device that plays nothing: it takes back and puts forward as the test says, and counts
/// what it was asked.
private final class ScriptedDevice: OutputDevice {
    let format: DeviceFormat
    var availableFrames = 0
    /// What `rewindableFrames` answers.
    var rewindable = 0
    /// What `delayFrames` answers.
    var delay: Int? = 0
    /// At most this many frames are taken back by one `rewind` (nil: all asked).
    var rewindLimit: Int?
    /// Runs inside `rewind`, after the device took its frames.
    var duringRewind: () -> Void = {}
    private(set) var rewindableAsked = 0
    private(set) var delayAsked = 0
    private(set) var rewound: [Int] = []
    private(set) var forwarded: [Int] = []

    init(format: DeviceFormat) {
        self.format = format
    }

    func waitForRoom(_ frames: Int, timeoutMilliseconds: Int32, wake: Int32) -> PCMDevice.WriteOutcome? { nil }
    func write(_ frames: UnsafeRawPointer, count: Int, timeoutMilliseconds: Int32) -> PCMDevice.WriteOutcome { .wrote(count) }
    func drain(timeoutMilliseconds: Int) {}
    func drop() {}
    func delayFrames() -> Int? {
        delayAsked += 1
        return delay
    }
    func startIfPrepared() {}
    func canRewind() -> Bool { true }
    func rewindableFrames() -> Int {
        rewindableAsked += 1
        return rewindable
    }
    func rewind(_ frames: Int) -> Int {
        let taken = min(frames, rewindLimit ?? frames)
        rewound.append(taken)
        duringRewind()
        return taken
    }
    func forward(_ frames: Int) -> Int {
        forwarded.append(frames)
        return frames
    }
}

/// The rewinder's arithmetic (how far back, the refill, when a seek's audio is ready), and its
/// take-backs on a scripted device and a real mixer: what the device and the mixer are left
/// with, and what is put back when one of them refuses.
final class RewinderTests: XCTestCase {
    /// 20 ms at 48 kHz: a guard of 960 frames, a seek's lead of 3840.
    private let format = DeviceFormat(sampleFormat: .s16LE, sampleRate: 48000, channels: 2, periodFrames: 1024,
                                      bufferFrames: 4096)
    private var ring: SPSCRing!
    private var mixer: Mixer!
    private var device: ScriptedDevice!
    private var scratch: UnsafeMutableRawPointer!

    override func setUp() {
        scratch = .allocate(byteCount: format.periodFrames * format.bytesPerFrame, alignment: 16)
        rebuild()
    }

    /// A new ring of a signal that never repeats, its mixer and a device.
    private func rebuild() {
        ring = SPSCRing(capacity: 1 << 16)
        let samples = (0..<16384 * 2).map { i -> Int32 in
            let phase = Double(i / 2) * 0.0731 + Double(i % 2)
            let level: Double = 12000 * sin(phase)
            return Int32(level) << 16
        }
        _ = samples.withUnsafeBufferPointer { ring.write($0) }
        mixer = Mixer(inputs: [MixerInput(ring: ring)], format: format, maxFrames: format.periodFrames)
        device = ScriptedDevice(format: format)
    }

    override func tearDown() {
        scratch.deallocate()
    }

    /// A rewinder on a device that rewinds, just opened.
    private func opened(guardMilliseconds: Int = 20, isOn: Bool = true) -> Rewinder {
        var rewinder = Rewinder(mixer: mixer, guardMilliseconds: guardMilliseconds)
        rewinder.isOn = isOn
        rewinder.opened(format, pending: 0)
        return rewinder
    }

    /// Renders `frames` and has the device take them, a period at a time: the bytes rendered.
    @discardableResult
    private func write(_ frames: Int, _ rewinder: inout Rewinder) -> [UInt8] {
        var bytes: [UInt8] = []
        var left = frames
        while left > 0 {
            let n = mixer.render(into: scratch, frames: min(left, format.periodFrames))
            XCTAssertGreaterThan(n, 0, "the ring ran dry")
            bytes += UnsafeRawBufferPointer(start: scratch, count: n * format.bytesPerFrame)
            rewinder.wrote(n)
            left -= n
        }
        return bytes
    }

    // MARK: The arithmetic

    func testTheGuardInFramesAndTheSeekLead() {
        let rewinder = Rewinder(mixer: mixer, guardMilliseconds: 20)
        XCTAssertEqual(rewinder.guardFrames(format), 960)
        XCTAssertEqual(rewinder.seekLeadFrames(format), 3840)
        var slow = format
        slow.sampleRate = 8000
        XCTAssertEqual(rewinder.guardFrames(slow), 160)
        XCTAssertEqual(Rewinder(mixer: mixer, guardMilliseconds: 0).guardFrames(format), 1, "never less than a frame")
    }

    func testTheFloorLeavesTheDeviceItsGuard() {
        XCTAssertNil(Rewinder.takeBackFloor(deviceEnd: 4096, rewindable: 960, guardFrames: 960, notBefore: 0),
                     "the device can give back no more than the guard")
        XCTAssertNil(Rewinder.takeBackFloor(deviceEnd: 4096, rewindable: 0, guardFrames: 960, notBefore: 0))
        XCTAssertEqual(Rewinder.takeBackFloor(deviceEnd: 4096, rewindable: 961, guardFrames: 960, notBefore: 0), 4095)
        XCTAssertEqual(Rewinder.takeBackFloor(deviceEnd: 4096, rewindable: 4096, guardFrames: 960, notBefore: 0), 960)
        XCTAssertEqual(Rewinder.takeBackFloor(deviceEnd: 4096, rewindable: 4096, guardFrames: 960, notBefore: 3072), 3072,
                       "a floor later than the guard's holds")
        XCTAssertEqual(Rewinder.takeBackFloor(deviceEnd: 4096, rewindable: 4096, guardFrames: 960, notBefore: 500), 960,
                       "a floor earlier than the guard's does not")
    }

    func testOnlyAPointThatRendersSomethingAgainIsTakenBackTo() {
        XCTAssertTrue(Rewinder.rendersAgain(from: 100, deviceEnd: 200, renderedFrames: 200))
        XCTAssertFalse(Rewinder.rendersAgain(from: 200, deviceEnd: 200, renderedFrames: 200), "nothing after it")
        XCTAssertTrue(Rewinder.rendersAgain(from: 200, deviceEnd: 200, renderedFrames: 300),
                      "frames rendered that the device never took")
        XCTAssertFalse(Rewinder.rendersAgain(from: 250, deviceEnd: 200, renderedFrames: 300), "past the device's end")
    }

    func testTheRefillDoublesUpToAPeriodThenStops() {
        XCTAssertEqual(Rewinder.nextRefill(after: 128, periodFrames: 1024), 256)
        XCTAssertEqual(Rewinder.nextRefill(after: 256, periodFrames: 1024), 512)
        XCTAssertEqual(Rewinder.nextRefill(after: 511, periodFrames: 1024), 1022)
        XCTAssertEqual(Rewinder.nextRefill(after: 512, periodFrames: 1024), 0, "twice is a whole period: none")
        XCTAssertEqual(Rewinder.nextRefill(after: 960, periodFrames: 1024), 0)
    }

    func testASeekWaitsForAPeriodOfNewAudioOrTheEndOfTheQueueOrTheLead() {
        let rewinder = opened()
        let period = format.periodFrames * format.channels
        device.delay = 4000
        XCTAssertTrue(rewinder.seekAudioReady(device, format, readableSamples: period, queueEnded: false))
        XCTAssertEqual(device.delayAsked, 0, "a period is there: the device is not asked")
        XCTAssertTrue(rewinder.seekAudioReady(device, format, readableSamples: 0, queueEnded: true), "all there is")
        XCTAssertEqual(device.delayAsked, 0)
        XCTAssertFalse(rewinder.seekAudioReady(device, format, readableSamples: period - 1, queueEnded: false),
                       "less than a period, and the device far from its lead")
        XCTAssertEqual(device.delayAsked, 1)
        device.delay = 3841
        XCTAssertFalse(rewinder.seekAudioReady(device, format, readableSamples: 2, queueEnded: false))
        device.delay = 3840
        XCTAssertTrue(rewinder.seekAudioReady(device, format, readableSamples: 2, queueEnded: false),
                      "at the lead, whatever there is")
        XCTAssertFalse(rewinder.seekAudioReady(device, format, readableSamples: 0, queueEnded: false),
                       "at the lead with nothing new: the old plays on")
        device.delay = nil
        XCTAssertTrue(rewinder.seekAudioReady(device, format, readableSamples: 2, queueEnded: false),
                      "a failed device has nothing left to play")
    }

    func testASeekSleepsToTheLeadForAPeriodThenForAnyNewAudio() {
        let rewinder = opened()
        XCTAssertTrue(rewinder.seekWait(delay: 5000, format) == (1160, 2048))
        XCTAssertTrue(rewinder.seekWait(delay: 3841, format) == (1, 2048))
        XCTAssertTrue(rewinder.seekWait(delay: 3840, format) == (0, 2), "at the lead: a frame will do")
        XCTAssertTrue(rewinder.seekWait(delay: 0, format) == (-3840, 2))
    }

    func testAChangeToTheMixIsTakenOnceAndASeekWaitingIsAlwaysOne() {
        var rewinder = opened()
        XCTAssertFalse(rewinder.takeMixChange(0), "nothing changed yet")
        XCTAssertTrue(rewinder.takeMixChange(1))
        XCTAssertFalse(rewinder.takeMixChange(1), "taken")
        XCTAssertTrue(rewinder.takeMixChange(3), "two changes since: one rewind")
        rewinder.awaitSeekAudio()
        XCTAssertTrue(rewinder.takeMixChange(3))
        XCTAssertTrue(rewinder.takeMixChange(3), "until the seek is taken back")
        rewinder.closed()
        XCTAssertFalse(rewinder.cutWaiting)
        XCTAssertFalse(rewinder.takeMixChange(3))
    }

    // MARK: Taking back

    func testTakesBackToTheFirstPointAfterTheGuard() {
        var rewinder = opened()
        write(4096, &rewinder)
        XCTAssertEqual(rewinder.deviceEnd, 4096)
        device.rewindable = 4096
        XCTAssertEqual(rewinder.takeBack(device, format, silent: false, heard: true, paced: true), 3072,
                       "back to 1024, the first chunk's start at or after 4096 - 4096 + 960")
        XCTAssertEqual(device.rewound, [3072])
        XCTAssertEqual(device.forwarded, [])
        XCTAssertEqual(rewinder.deviceEnd, 1024)
        XCTAssertEqual(mixer.renderedFrames, 1024)
        XCTAssertEqual(ring.samplesRead, 1024 * 2, "the mixer reads again from where it rendered frame 1024")
        XCTAssertEqual(rewinder.refillFrames, 960, "the refill starts at the guard")
    }

    func testTheGuardIsRespectedHoweverMuchTheDeviceCanGiveBack() {
        for rewindable in stride(from: 961, through: 4096, by: 97) {
            rebuild()
            var rewinder = opened()
            write(4096, &rewinder)
            device.rewindable = rewindable
            let frames = rewinder.takeBack(device, format, silent: false, heard: true, paced: true)
            let floor = 4096 - rewindable + 960
            // The first chunk (128 frames) to start at or after the floor; none when that is the end.
            let point = (floor + 127) / 128 * 128
            if point >= 4096 {
                XCTAssertNil(frames, "rewindable \(rewindable)")
                XCTAssertEqual(device.rewound, [])
                XCTAssertEqual(rewinder.deviceEnd, 4096)
                continue
            }
            XCTAssertEqual(frames, 4096 - point, "rewindable \(rewindable)")
            XCTAssertGreaterThanOrEqual(rewindable - (frames ?? 0), 960, "the device keeps its guard")
            XCTAssertEqual(rewinder.deviceEnd, point)
            XCTAssertEqual(mixer.renderedFrames, point)
        }
    }

    func testNothingIsTakenBackWhenTheDeviceCannotGiveBackMoreThanTheGuard() {
        var rewinder = opened()
        write(4096, &rewinder)
        device.rewindable = 960
        XCTAssertNil(rewinder.takeBack(device, format, silent: false, heard: true, paced: true))
        XCTAssertEqual(device.rewound, [], "the device is not asked to take back")
        XCTAssertEqual(rewinder.deviceEnd, 4096)
        XCTAssertEqual(mixer.renderedFrames, 4096)
        XCTAssertEqual(rewinder.refillFrames, 0)
    }

    func testNothingIsTakenBackWhileNotHeardOrNotPaced() {
        var rewinder = opened()
        write(4096, &rewinder)
        device.rewindable = 4096
        XCTAssertNil(rewinder.takeBack(device, format, silent: false, heard: false, paced: true))
        XCTAssertNil(rewinder.takeBack(device, format, silent: false, heard: true, paced: false))
        XCTAssertEqual(device.rewindableAsked, 0, "the device is not even asked")
        XCTAssertEqual(rewinder.deviceEnd, 4096)
        XCTAssertEqual(mixer.renderedFrames, 4096)
    }

    func testWhatTheDeviceTookIsPutBackWhenItTookLessThanAsked() {
        var rewinder = opened()
        write(4096, &rewinder)
        device.rewindable = 4096
        device.rewindLimit = 1000
        XCTAssertNil(rewinder.takeBack(device, format, silent: false, heard: true, paced: true))
        XCTAssertEqual(device.rewound, [1000])
        XCTAssertEqual(device.forwarded, [1000], "the device plays on as it was")
        XCTAssertEqual(rewinder.deviceEnd, 4096)
        XCTAssertEqual(mixer.renderedFrames, 4096, "the mixer did not move")
        XCTAssertEqual(rewinder.refillFrames, 0)
    }

    func testAFailedMixerRewindPutsBackWhatTheDeviceTook() {
        var rewinder = opened()
        write(4096, &rewinder)
        device.rewindable = 4096
        // A barrier between the point found and the rewind: the mixer refuses to go back.
        device.duringRewind = { [mixer] in mixer!.markBarrier() }
        XCTAssertNil(rewinder.takeBack(device, format, silent: false, heard: true, paced: true))
        XCTAssertEqual(device.rewound, [3072])
        XCTAssertEqual(device.forwarded, [3072])
        XCTAssertEqual(rewinder.deviceEnd, 4096)
        XCTAssertEqual(mixer.renderedFrames, 4096)
        XCTAssertEqual(rewinder.refillFrames, 0)
    }

    func testAfterATakeBackThePeriodsAreShortThenWhole() {
        var rewinder = opened(guardMilliseconds: 2)
        write(4096, &rewinder)
        device.rewindable = 4096
        XCTAssertEqual(rewinder.takeBack(device, format, silent: false, heard: true, paced: true), 3968,
                       "a guard of 96 frames: back to 128")
        XCTAssertEqual(rewinder.refillFrames, 128, "never less than a chunk")
        var periods: [Int] = []
        for _ in 0..<5 { periods.append(rewinder.refill(1024, format)) }
        XCTAssertEqual(periods, [128, 256, 512, 1024, 1024])
        XCTAssertEqual(rewinder.refillFrames, 0)
    }

    func testARefillShorterPeriodStillDoubles() {
        var rewinder = opened(guardMilliseconds: 2)
        write(4096, &rewinder)
        device.rewindable = 4096
        XCTAssertNotNil(rewinder.takeBack(device, format, silent: false, heard: true, paced: true))
        XCTAssertEqual(rewinder.refill(100, format), 100, "a period cut short at an item's start")
        XCTAssertEqual(rewinder.refill(1024, format), 256)
    }

    func testForgettingEndsTheRefillAndTheSeekAndMovesTheEndToWhatIsRendered() {
        var rewinder = opened(guardMilliseconds: 2)
        write(4096, &rewinder)
        device.rewindable = 4096
        XCTAssertNotNil(rewinder.takeBack(device, format, silent: false, heard: true, paced: true))
        rewinder.awaitSeekAudio()
        _ = mixer.render(into: scratch, frames: 500)
        rewinder.forget(pending: 200)
        XCTAssertEqual(rewinder.refillFrames, 0)
        XCTAssertFalse(rewinder.cutWaiting)
        XCTAssertEqual(rewinder.deviceEnd, 128 + 500 - 200)
        XCTAssertNil(rewinder.takeBack(device, format, silent: false, heard: true, paced: true), "no history left")
    }

    func testWhatTheDeviceHasPlayedIsNeverRenderedAgain() {
        var rewinder = opened()
        write(4096, &rewinder)
        rewinder.devicePlayed(holding: 1000)
        XCTAssertEqual(mixer.rewindPoint(notBefore: 0), 3072, "the last chunk started before frame 3096")
        device.rewindable = 4096
        XCTAssertEqual(rewinder.takeBack(device, format, silent: false, heard: true, paced: true), 1024)
    }

    func testADeviceThatDoesNotRewindKeepsNoHistory() {
        var rewinder = opened(isOn: false)
        write(4096, &rewinder)
        rewinder.devicePlayed(holding: 1000)
        XCTAssertNil(mixer.rewindPoint(notBefore: 0))
    }

    func testADeviceOpenedEndsWhereTheWrittenEnd() {
        var rewinder = opened()
        _ = mixer.render(into: scratch, frames: 700)
        rewinder.awaitSeekAudio()
        rewinder.opened(format, pending: 300)
        XCTAssertEqual(rewinder.deviceEnd, 400, "what is rendered and not written is written to the new device")
        XCTAssertFalse(rewinder.cutWaiting)
    }

    // MARK: Rewinds and seeks

    func testARewindTakesBackAndASeekThatCannotIsAbandoned() {
        var rewinder = opened()
        write(4096, &rewinder)
        device.rewindable = 0
        XCTAssertEqual(rewinder.rewind(device, format, heard: true, paced: true), .unchanged)
        rewinder.awaitSeekAudio()
        XCTAssertEqual(rewinder.rewind(device, format, heard: true, paced: true), .seekAbandoned)
        XCTAssertFalse(rewinder.cutWaiting)
        rewinder.awaitSeekAudio()
        device.rewindable = 4096
        XCTAssertEqual(rewinder.rewind(device, format, heard: true, paced: true), .tookBack(frames: 3072))
        XCTAssertFalse(rewinder.cutWaiting)
        XCTAssertEqual(rewinder.deviceEnd, 1024)
    }

    func testASeekWhileNotHeardIsAbandoned() {
        var rewinder = opened()
        write(4096, &rewinder)
        device.rewindable = 4096
        rewinder.awaitSeekAudio()
        XCTAssertEqual(rewinder.rewind(device, format, heard: false, paced: true), .seekAbandoned)
        XCTAssertEqual(device.rewound, [])
    }

    // MARK: The rehearsal

    func testTheRehearsalComesOncePerDeviceOnceItIsFull() {
        var rewinder = opened()
        XCTAssertFalse(rewinder.rehearsalDue(writtenSinceStart: 4095, format))
        XCTAssertTrue(rewinder.rehearsalDue(writtenSinceStart: 4096, format))
        let written = write(4096, &rewinder)
        device.rewindable = 4096
        XCTAssertEqual(rewinder.rehearse(device, format, scratch: scratch, heard: true, paced: true), 1024,
                       "the last period")
        XCTAssertEqual(device.rewound, [1024])
        XCTAssertFalse(rewinder.rehearsalDue(writtenSinceStart: 8192, format), "once")
        XCTAssertEqual(rewinder.deviceEnd, 3072)
        // Rendered again, the same audio, bit for bit.
        let again = write(1024, &rewinder)
        XCTAssertEqual(again, Array(written[(3072 * format.bytesPerFrame)...]))

        rewinder.opened(format, pending: 0)
        XCTAssertTrue(rewinder.rehearsalDue(writtenSinceStart: 4096, format), "a device opened again")
    }

    func testARehearsalWhileNotHeardTakesNothingBackAndIsNotRepeated() {
        var rewinder = opened()
        write(4096, &rewinder)
        device.rewindable = 4096
        XCTAssertNil(rewinder.rehearse(device, format, scratch: scratch, heard: false, paced: true))
        XCTAssertEqual(device.rewindableAsked, 0)
        XCTAssertFalse(rewinder.rehearsalDue(writtenSinceStart: 4096, format), "it had its turn")
        XCTAssertEqual(rewinder.deviceEnd, 4096)
    }
}
