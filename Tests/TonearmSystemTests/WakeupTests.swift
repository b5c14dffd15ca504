import Glibc
import TonearmSystem
import XCTest

/// The wake-up's waits on real pipes: a post, another descriptor, a deadline, in any mix.
final class WakeupTests: XCTestCase {
    func testAWaitAlsoEndsWhenAnotherDescriptorIsReadableAndSaysSo() {
        let wakeup = Wakeup()
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0)
        defer { close(ends[0]); close(ends[1]) }

        XCTAssertFalse(wakeup.wait(milliseconds: 10, orUntilReadable: ends[0]), "the deadline: nothing readable")

        var byte: UInt8 = 1
        XCTAssertEqual(write(ends[1], &byte, 1), 1)
        XCTAssertTrue(wakeup.wait(milliseconds: nil, orUntilReadable: ends[0]), "the other descriptor ends a wait with no deadline")
        XCTAssertEqual(read(ends[0], &byte, 1), 1)

        wakeup.post()
        XCTAssertFalse(wakeup.wait(milliseconds: nil, orUntilReadable: ends[0]), "a post ends it, and is not the other descriptor")
        XCTAssertFalse(wakeup.wait(milliseconds: 10, orUntilReadable: ends[0]), "the post was taken: this one waits to its deadline")

        wakeup.post()
        XCTAssertFalse(wakeup.wait(milliseconds: nil, orUntilReadable: -1), "-1 is passed by: the post ends the wait")
        wakeup.post()
        wakeup.wait()  // the plain wait, on the same poll
        wakeup.post()
        wakeup.wait(milliseconds: 5000)
    }
}
