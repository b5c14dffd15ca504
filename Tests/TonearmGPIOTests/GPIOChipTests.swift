import TonearmGPIO
import XCTest

final class GPIOChipTests: XCTestCase {
    /// This machine (like CI) has no GPIO chip: opening one names the chip and says why.
    func testAMissingChipGivesAClearError() {
        XCTAssertThrowsError(try GPIOChip("gpiochip-that-does-not-exist")) { error in
            let text = "\(error)"
            XCTAssertTrue(text.hasPrefix("GPIO chip 'gpiochip-that-does-not-exist': "), text)
            XCTAssertGreaterThan(text.count, "GPIO chip 'gpiochip-that-does-not-exist': ".count)
        }
    }
}
