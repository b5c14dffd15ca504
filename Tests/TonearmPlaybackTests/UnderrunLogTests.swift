import TonearmPlayback
import XCTest

/// A burst of underruns makes one line a second, each with the count since the last line.
final class UnderrunLogTests: XCTestCase {
    func testAtMostOneLineASecondSummingTheBurst() {
        var log = UnderrunLog(device: "hw:CARD=DAC")
        XCTAssertNil(log.line(now: 0), "nothing to say")
        log.record(total: 1)
        XCTAssertEqual(log.line(now: 10), "ALSA PCM 'hw:CARD=DAC' underran once (1 in all)")
        log.record(total: 3)
        XCTAssertNil(log.line(now: 10.2), "a second has not passed")
        log.record(total: 7)
        XCTAssertNil(log.line(now: 10.9))
        XCTAssertEqual(log.line(now: 11), "ALSA PCM 'hw:CARD=DAC' underran 6 times in the last 1 s (7 in all)")
        XCTAssertNil(log.line(now: 30), "no new underrun")
        log.record(total: 8)
        XCTAssertEqual(log.line(now: 40), "ALSA PCM 'hw:CARD=DAC' underran once in the last 29 s (8 in all)")
    }
}
