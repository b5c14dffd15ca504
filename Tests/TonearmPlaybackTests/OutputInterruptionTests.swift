import Glibc
import TonearmALSA
import TonearmPlayback
import XCTest

/// The log and `status` tell an unplug (an error from ALSA) from a stall (no error, no period).
final class OutputInterruptionTests: XCTestCase {
    func testAnUnplugAndAStallReadDifferently() {
        let unplugged = OutputInterruption.lost(ALSAError(device: "hw:CARD=DAC", operation: "write to", code: -ENODEV))
        XCTAssertEqual(unplugged.description, "ALSA PCM 'hw:CARD=DAC' lost: No such device")
        XCTAssertEqual(unplugged.waiting, "device lost, waiting for it")
        let wedged = OutputInterruption.stalled(device: "hw:CARD=DAC", milliseconds: 1000)
        XCTAssertEqual(wedged.description, "ALSA PCM 'hw:CARD=DAC' stopped responding (no period in 1000 ms)")
        XCTAssertEqual(wedged.waiting, "device stopped responding, waiting for it")
        let absent = OutputInterruption.unavailable(ALSAError(device: "hw:CARD=DAC", operation: "open", code: -ENOENT))
        XCTAssertEqual(absent.description, "cannot open ALSA PCM 'hw:CARD=DAC': No such file or directory")
        XCTAssertEqual(absent.waiting, "waiting for the device")
    }
}
