import TonearmAudio
import XCTest

/// The factor a file plays at, for every mode and every combination of tags it may carry.
final class ReplayGainTests: XCTestCase {
    private func db(_ x: Double) -> Double { pow(10, x / 20) }

    func testOffIsExactlyUnityWhateverTheFileCarries() {
        let settings = ReplayGainSettings(mode: .off, preamp: 6, missingPreamp: -3)
        for gain in [ReplayGain(), ReplayGain(trackGain: -9, trackPeak: 1), ReplayGain(albumGain: 4, albumPeak: 0.2)] {
            XCTAssertEqual(settings.scale(gain, albumInOrder: true), 1)
            XCTAssertEqual(settings.scale(gain, albumInOrder: false), 1)
        }
    }

    func testEachModeTakesItsKindAndFallsBackToTheOther() {
        let both = ReplayGain(trackGain: -6, trackPeak: 0.5, albumGain: -3, albumPeak: 0.5)
        let trackOnly = ReplayGain(trackGain: -6, trackPeak: 0.5)
        let albumOnly = ReplayGain(albumGain: -3, albumPeak: 0.5)
        let cases: [(ReplayGainMode, Bool, ReplayGain, Double)] = [
            (.track, false, both, db(-6)), (.track, true, both, db(-6)),
            (.album, false, both, db(-3)), (.album, true, both, db(-3)),
            (.auto, true, both, db(-3)), (.auto, false, both, db(-6)),
            (.track, false, albumOnly, db(-3)), (.album, false, trackOnly, db(-6)),
            (.auto, true, trackOnly, db(-6)), (.auto, false, albumOnly, db(-3)),
        ]
        for (mode, inOrder, gain, expected) in cases {
            XCTAssertEqual(ReplayGainSettings(mode: mode).scale(gain, albumInOrder: inOrder), expected, accuracy: 1e-12,
                           "\(mode) inOrder=\(inOrder) \(gain)")
        }
    }

    func testThePreampAddsAndThePeakLimitsUnlessTold() {
        let gain = ReplayGain(trackGain: 2, trackPeak: 0.9)
        XCTAssertEqual(ReplayGainSettings(mode: .track, preamp: -4).scale(gain, albumInOrder: false), db(-2), accuracy: 1e-12)
        // +2 dB on a 0.9 peak would clip: 1 / 0.9.
        XCTAssertEqual(ReplayGainSettings(mode: .track).scale(gain, albumInOrder: false), 1 / 0.9, accuracy: 1e-12)
        XCTAssertEqual(ReplayGainSettings(mode: .track, preventsClipping: false).scale(gain, albumInOrder: false), db(2), accuracy: 1e-12)
        // No peak stored: nothing to limit by (the mixer's limiter still catches overs).
        XCTAssertEqual(ReplayGainSettings(mode: .track).scale(ReplayGain(trackGain: 2), albumInOrder: false), db(2), accuracy: 1e-12)
        // Absurd peaks are ignored rather than trusted.
        XCTAssertEqual(ReplayGainSettings(mode: .track).scale(ReplayGain(trackGain: 2, trackPeak: 0), albumInOrder: false), db(2), accuracy: 1e-12)
    }

    func testAFileWithoutReplayGainPlaysAtTheMissingPreamp() {
        XCTAssertEqual(ReplayGainSettings(mode: .album).scale(ReplayGain(), albumInOrder: true), 1)
        XCTAssertEqual(ReplayGainSettings(mode: .track, preamp: 6, missingPreamp: -6).scale(ReplayGain(), albumInOrder: false),
                       db(-6), accuracy: 1e-12)
        XCTAssertEqual(ReplayGainSettings(mode: .track).scale(ReplayGain(trackGain: .nan), albumInOrder: false), 1)
    }
}
