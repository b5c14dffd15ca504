import Glibc
import TonearmAudio
@testable import TonearmPlayback
import XCTest

/// The output thread's events reach the control plane in order through a queue that neither
/// side waits on, and `nextEvents` tells them as before: several interruptions as the last, a
/// return only after one, underruns as their running total, a refusal to rewind once a format is
/// known. When the queue overflows, the output's state says what was lost.
final class OutputEventTests: XCTestCase {
    private let kinds: [OutputEvent] = [.realtimeRefused(EPERM), .memoryLockRefused(ENOMEM), .rewindRefused,
                                        .interrupted, .reopened, .underrun, .resumed]

    func testTheQueueKeepsEveryEventInOrderAndCountsWhatFindsItFull() {
        let queue = OutputEventQueue(events: 8)
        for event in kinds { XCTAssertTrue(queue.push(event)) }
        XCTAssertTrue(queue.push(.underrun))
        XCTAssertFalse(queue.push(.resumed), "a ninth event in a queue of eight")
        XCTAssertFalse(queue.push(.interrupted))
        var popped: [OutputEvent] = []
        while let event = queue.pop() { popped.append(event) }
        XCTAssertEqual(popped, kinds + [.underrun])
        XCTAssertEqual(queue.takeLost(), 2)
        XCTAssertEqual(queue.takeLost(), 0)
        // Room again, and the order goes on across the ring's end.
        for _ in 0..<5 {
            XCTAssertTrue(queue.push(.reopened))
            XCTAssertTrue(queue.push(.realtimeRefused(EAGAIN)))
            XCTAssertEqual(queue.pop(), .reopened)
            XCTAssertEqual(queue.pop(), .realtimeRefused(EAGAIN))
        }
        XCTAssertNil(queue.pop())
    }

    func testTheEventsAreToldAsTheControlPlaneExpectsThem() {
        let engine = PlaybackEngine(options: PlaybackOptions(), upcoming: { _ in nil })
        XCTAssertTrue(describe(engine.nextEvents(now: 0)).isEmpty)

        engine.tell(.realtimeRefused(EPERM))
        engine.tell(.memoryLockRefused(ENOMEM))
        engine.underrunCount.store(3, ordering: .relaxed)
        for _ in 0..<3 { engine.tell(.underrun) }
        XCTAssertEqual(describe(engine.nextEvents(now: 0)), [
            "realtimeRefused \(String(cString: strerror(EPERM)))",
            "memoryLockRefused \(String(cString: strerror(ENOMEM)))",
            "underruns 3",
        ])

        // Interrupted twice, then back: the last reason, then the return.
        engine.interruptions.give(.disabled(device: "first"))
        engine.tell(.interrupted)
        engine.interruptions.give(.disabled(device: "second"))
        engine.tell(.interrupted)
        engine.tell(.resumed)
        XCTAssertEqual(describe(engine.nextEvents(now: 0)), ["interrupted second", "resumed"])

        // Back, then interrupted again before anyone looked: only the interruption is told.
        engine.tell(.resumed)
        engine.interruptions.give(.disabled(device: "third"))
        engine.tell(.interrupted)
        XCTAssertEqual(describe(engine.nextEvents(now: 0)), ["interrupted third"])

        // A refusal to rewind waits for a device format; a reopen needs one too.
        engine.tell(.rewindRefused)
        XCTAssertTrue(describe(engine.nextEvents(now: 0)).isEmpty)
        let format = DeviceFormat(sampleFormat: .s16LE, sampleRate: 48000, channels: 2, periodFrames: 1024, bufferFrames: 4096)
        engine.currentFormat.store(format)
        engine.tell(.reopened)
        XCTAssertEqual(describe(engine.nextEvents(now: 0)), ["rewindRefused 48000", "reopened 48000"])
        XCTAssertTrue(describe(engine.nextEvents(now: 0)).isEmpty)
    }

    func testAfterAnOverflowTheOutputsStateSaysWhatWasLost() {
        let engine = PlaybackEngine(options: PlaybackOptions(), upcoming: { _ in nil })
        // Interrupted, told; then more events than the queue holds, the last of them lost.
        engine.interruptions.give(.disabled(device: "gone"))
        engine.outputInterrupted.store(true, ordering: .relaxed)
        engine.tell(.interrupted)
        XCTAssertEqual(describe(engine.nextEvents(now: 0)), ["interrupted gone"])
        engine.underrunCount.store(1024, ordering: .relaxed)
        for _ in 0..<1024 { engine.tell(.underrun) }
        engine.outputInterrupted.store(false, ordering: .relaxed)
        engine.tell(.resumed)
        XCTAssertEqual(describe(engine.nextEvents(now: 0)), ["underruns 1024", "resumed"])
        // Nothing lost since: nothing more is told.
        XCTAssertTrue(describe(engine.nextEvents(now: 0)).isEmpty)
    }

    private func describe(_ events: [PlaybackEvent]) -> [String] {
        events.map { event in
            switch event {
            case .realtimeRefused(let why): "realtimeRefused \(why)"
            case .memoryLockRefused(let why): "memoryLockRefused \(why)"
            case .underruns(let total): "underruns \(total)"
            case .outputInterrupted(.disabled(let device), _): "interrupted \(device)"
            case .outputInterrupted(let why, _): "interrupted \(why)"
            case .outputResumed: "resumed"
            case .rewindRefused(_, let format): "rewindRefused \(format.sampleRate)"
            case .deviceReopened(let format): "reopened \(format.sampleRate)"
            default: "other \(event)"
            }
        }
    }
}
