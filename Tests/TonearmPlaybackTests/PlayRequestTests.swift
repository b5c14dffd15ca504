import TestSupport
import TonearmPlayback
import XCTest

/// Every start the engine reports names the `play` it follows from, so the control plane can
/// drop starts of audio queued before a later play or stop (a daemon test once saw a skip
/// undone by the late start of the play before it).
final class PlayRequestTests: XCTestCase {
    func testStartsCarryTheNumberOfThePlayTheyFollowFrom() throws {
        let directory = try TemporaryDirectory()
        let paths = try (0..<3).map { index in
            try FLACFixture(frames: 48000, sampleRate: 48000, channels: 2, seed: UInt64(index + 1))
                .write(to: directory.file("\(index).flac"))
        }
        let items = paths.enumerated().map { EngineItem(id: $0.offset, path: $0.element) }
        var options = PlaybackOptions()
        options.device = "null"
        let engine = PlaybackEngine(options: options) { id in id + 1 < items.count ? items[id + 1] : nil }
        engine.start()
        defer { engine.shutdown() }

        let first = engine.play(items[0])
        let second = engine.play(items[1], from: 0.5)
        XCTAssertGreaterThan(second, first)
        var starts: [ItemStart] = []
        var ended = false
        let deadline = Date().addingTimeInterval(20)
        while !ended && Date() < deadline {
            for event in engine.nextEvents(now: 0) {
                if case .itemStarted(let start) = event { starts.append(start) }
                if case .endOfQueue = event { ended = true }
            }
            usleep(2000)
        }
        XCTAssertTrue(ended, "the queue never ended")
        let current = starts.filter { $0.request >= second }
        // The second play, then its gapless step into item 2: both numbered as the second play.
        XCTAssertEqual(current.map(\.itemID), [1, 2])
        XCTAssertEqual(current.first?.position ?? -1, 0.5, accuracy: 1e-9)
        XCTAssertTrue(starts.allSatisfy { $0.request == first || $0.request == second })
        XCTAssertGreaterThan(engine.stop(), second)
    }
}
