import TestSupport
import TonearmAudio
import TonearmPlayback
import XCTest

extension XCTestCase {
    /// A started engine on the ALSA `null` device, shut down when the test ends.
    func nullDeviceEngine(player items: [EngineItem] = [], slots: Int = 3) -> PlaybackEngine {
        var options = PlaybackOptions()
        options.device = "null"
        options.streamSlots = slots
        let engine = PlaybackEngine(options: options) { id in id + 1 < items.count ? items[id + 1] : nil }
        engine.start()
        addTeardownBlock { engine.shutdown() }
        return engine
    }
}

/// Polls `condition` every millisecond for up to `seconds`; its last answer.
func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}

/// Sessions' streams played through the engine's secondary mixer slots, on the `null` device
/// (unpaced: whole files play in a fraction of their length).
final class SecondaryStreamTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    private func engine(player items: [EngineItem] = [], slots: Int = 3) -> PlaybackEngine {
        nullDeviceEngine(player: items, slots: slots)
    }

    private func fixture(_ name: String, frames: Int, sampleRate: Int = 48000, tone: Double = 440) throws -> String {
        try FLACFixture(frames: frames, sampleRate: sampleRate, channels: 2, tones: [Tone(tone, level: 0.5)])
            .write(to: directory.file(name))
    }

    func testStreamPlaysToItsEndWhileThePlayerIsIdle() throws {
        let path = try fixture("chime.flac", frames: 24000)
        let engine = engine()
        XCTAssertTrue(engine.isPausedOrIdle)
        let handle = try engine.startStream(path: path)
        XCTAssertTrue(waitUntil(10) { engine.streamFinished(handle) }, "the stream never finished")
        XCTAssertGreaterThanOrEqual(engine.writtenFrames, 24000)
        XCTAssertTrue(engine.isPausedOrIdle, "the player stays idle while a stream plays")
        XCTAssertEqual(engine.deviceStatus.format?.sampleRate, 48000, "the device opens at the stream's format")

        // The slot is reused, and a second stream adds its length again.
        let before = engine.writtenFrames
        let again = try engine.startStream(path: path)
        XCTAssertTrue(waitUntil(10) { engine.streamFinished(again) })
        XCTAssertGreaterThanOrEqual(engine.writtenFrames - before, 24000)
    }

    func testStreamIsResampledToThePlayersDevice() throws {
        let music = try fixture("music.flac", frames: 48000 * 20)
        let prompt = try fixture("prompt.flac", frames: 22050, sampleRate: 44100, tone: 1000)
        let engine = engine(player: [EngineItem(id: 0, path: music)])
        engine.play(EngineItem(id: 0, path: music))
        XCTAssertTrue(waitUntil(10) { engine.deviceStatus.format != nil })
        let handle = try engine.startStream(path: prompt)
        XCTAssertTrue(waitUntil(10) { engine.streamFinished(handle) }, "the stream never finished")
        XCTAssertEqual(engine.deviceStatus.format?.sampleRate, 48000)
    }

    func testPlayerAndStreamAreBothReadAndThePlayerDucks() throws {
        let music = try fixture("music.flac", frames: 48000 * 20)
        let prompt = try fixture("prompt.flac", frames: 48000, tone: 1000)
        let engine = engine(player: [EngineItem(id: 0, path: music)])
        // The null device is unpaced: duck and start the stream while the player's 20 s last.
        engine.play(EngineItem(id: 0, path: music))
        engine.setPlayerDuck(0.1778)
        let handle = try engine.startStream(path: prompt)
        XCTAssertTrue(waitUntil(10) { (engine.position()?.seconds ?? 0) > 0 }, "the player never started")
        XCTAssertTrue(waitUntil(10) { abs(engine.appliedGain(slot: 0) - 0.1778) < 0.001 },
                      "the player's gain is \(engine.appliedGain(slot: 0)), not ducked to 0.1778")
        XCTAssertTrue(waitUntil(10) { engine.streamFinished(handle) }, "the stream never finished")
        XCTAssertGreaterThan(engine.position()?.seconds ?? 0, 0)
        XCTAssertEqual(engine.appliedGain(slot: handle.slot), 1, accuracy: 0.0001)
    }

    func testStoppedStreamFadesOutAndFreesItsSlot() throws {
        let long = try fixture("long.flac", frames: 48000 * 30)
        let engine = engine(slots: 1)
        let handle = try engine.startStream(path: long)
        XCTAssertTrue(waitUntil(10) { engine.writtenFrames > 0 })
        engine.stopStream(handle)
        XCTAssertTrue(waitUntil(10) { engine.streamFinished(handle) }, "the stopped stream never finished")
        XCTAssertNoThrow(try engine.startStream(path: long), "the slot was not freed")
    }

    func testNoFreeSlotIsAClearError() throws {
        let long = try fixture("long.flac", frames: 48000 * 30)
        let engine = engine(slots: 2)
        _ = try engine.startStream(path: long)
        _ = try engine.startStream(path: long)
        XCTAssertThrowsError(try engine.startStream(path: long)) { error in
            XCTAssertEqual("\(error)", "cannot play '\(long)': all 2 stream slots are in use")
        }
    }

    func testMissingFileIsAClearError() throws {
        let engine = engine()
        let missing = directory.file("missing.flac")
        XCTAssertThrowsError(try engine.startStream(path: missing)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains(missing), text)
            XCTAssertFalse(text.contains("\n"), text)
        }
    }
}
