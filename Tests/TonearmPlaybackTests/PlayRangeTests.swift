import TestSupport
import TonearmPlayback
import XCTest

/// An item that plays part of its file (MPD's `rangeid`): from its start's frame to its end's,
/// then gaplessly into what follows, exactly.
final class PlayRangeTests: XCTestCase {
    func testARangedItemPlaysExactlyItsFramesThenTheNext() throws {
        let directory = try TemporaryDirectory()
        let alsa = try ALSAConfig(directory: directory)
        for (name, value) in alsa.environment { setenv(name, value, 1) }
        addTeardownBlock { for name in alsa.environment.keys { unsetenv(name) } }
        let first = try FLACFixture(frames: 44100, sampleRate: 44100, channels: 2, seed: 31).write(to: directory.file("a.flac"))
        let second = try FLACFixture(frames: 10007, sampleRate: 44100, channels: 2, seed: 32).write(to: directory.file("b.flac"))
        // 0.25 s to 0.5 s of the first file: frames 11025 up to 22050.
        let items = [EngineItem(id: 1, path: first, start: 0.25, end: 0.5), EngineItem(id: 2, path: second)]
        var options = PlaybackOptions()
        options.device = "capture"
        let engine = PlaybackEngine(options: options) { id in id == 1 ? items[1] : nil }
        engine.start()
        engine.play(items[0])
        var starts: [(Int, Double)] = []
        var ended = false
        let deadline = Date().addingTimeInterval(10)
        while !ended && Date() < deadline {
            for event in engine.nextEvents(now: 0) {
                if case .itemStarted(let start) = event { starts.append((start.itemID, start.position)) }
                if case .endOfQueue = event { ended = true }
            }
            usleep(1000)
        }
        engine.shutdown()
        XCTAssertTrue(ended, "the queue played to its end")
        XCTAssertEqual(starts.map(\.0), [1, 2])
        XCTAssertEqual(starts.first?.1, 0.25, "the first item starts where its range does")

        let whole = try referenceDecode(first)
        let expected = Array(whole[(11025 * 2)..<(22050 * 2)]) + (try referenceDecode(second))
        let heard = try WAVFile(path: alsa.capturePath).samples()
        XCTAssertEqual(heard.count, expected.count, "frames at the device")
        XCTAssertTrue(heard == expected, "the range's frames, then the next file, sample for sample")
    }
}
