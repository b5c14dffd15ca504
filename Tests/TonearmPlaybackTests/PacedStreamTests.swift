import Foundation
import Glibc
import TestSupport
import TonearmPlayback
import XCTest

/// Sessions' streams beside the player on a device that keeps time (a JACK dummy server).
final class PacedStreamTests: XCTestCase {
    /// A stream started while the player plays is heard to its end. Its producer first clears
    /// the slot's ring with a cut, which the mixer takes as it renders; a producer that slept
    /// until the output rang for that cut was never woken, and every prompt of the daemon's
    /// session tests hung.
    func testAStreamBesideThePlayingPlayerFinishes() throws {
        let directory = try TemporaryDirectory()
        let jack = try JackServer(directory: directory)
        let alsa = try ALSAConfig(directory: directory, jackServerName: jack.name)
        for (name, value) in alsa.environment { setenv(name, value, 1) }
        defer { for name in alsa.environment.keys { unsetenv(name) } }
        let music = try FLACFixture(frames: 48000 * 20, sampleRate: 48000, channels: 2, tones: [Tone(440, level: 0.5)])
            .write(to: directory.file("music.flac"))
        let chime = try FLACFixture(frames: 24000, sampleRate: 48000, channels: 2, tones: [Tone(880, level: 0.5)])
            .write(to: directory.file("chime.flac"))
        var options = PlaybackOptions()
        options.device = "paced"
        let engine = PlaybackEngine(options: options) { _ in nil }
        engine.start()
        defer { engine.shutdown() }
        engine.play(EngineItem(id: 0, path: music))
        XCTAssertTrue(waitUntil(5) { (engine.position()?.seconds ?? 0) > 0.2 }, "the music never played")

        let handle = try engine.startStream(path: chime)
        XCTAssertTrue(waitUntil(5) { engine.streamFinished(handle) }, "the half-second stream never finished")
        XCTAssertGreaterThan(engine.position()?.seconds ?? 0, 0.7, "the music stopped")
    }
}
