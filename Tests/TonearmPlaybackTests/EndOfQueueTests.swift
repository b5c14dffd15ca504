import TestSupport
import TonearmPlayback
import XCTest

/// A play that replaces a queue which had already ended (decoded to its end, as a short last
/// track is) gets its own end of queue, and only after its start: the old end is not told
/// again when the cut reaches it, and the new one is not lost. A daemon asked for its status
/// right after a seek near the end of the last track once stayed `playing` for ever.
final class EndOfQueueTests: XCTestCase {
    func testEachPlayNearTheEndEndsOnceAfterItsStart() throws {
        let directory = try TemporaryDirectory()
        let path = try FLACFixture(frames: 48000, sampleRate: 48000, channels: 2, seed: 9).write(to: directory.file("one.flac"))
        let item = EngineItem(id: 1, path: path)
        var options = PlaybackOptions()
        options.device = "null"
        let engine = PlaybackEngine(options: options) { _ in nil }
        engine.start()
        defer { engine.shutdown() }

        func playToTheEnd(from position: Double, _ round: Int) {
            let request = engine.play(item, from: position)
            var started = false
            var ends = 0
            let deadline = Date().addingTimeInterval(3)
            // Asked as often as a busy control plane might: between the cut and the new start.
            while ends == 0 && Date() < deadline {
                for event in engine.nextEvents(now: 0) {
                    switch event {
                    case .itemStarted(let start) where start.request >= request:
                        started = true
                    case .endOfQueue:
                        XCTAssertTrue(started, "round \(round): an end of queue before the play's start (the old end)")
                        ends += 1
                    default:
                        break
                    }
                }
                usleep(100)
            }
            XCTAssertEqual(ends, 1, "round \(round): the play from \(position) s never ended")
        }

        playToTheEnd(from: 0, 0)
        for round in 1...30 { playToTheEnd(from: 0.9, round) }
    }
}
