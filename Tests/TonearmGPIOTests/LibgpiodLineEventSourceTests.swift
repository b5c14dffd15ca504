import TestSupport
import TonearmBoard
import TonearmControlPlane
import TonearmGPIO
import TonearmSystem
import XCTest

/// The real libgpiod path. This machine (like CI) has no GPIO chip, so what can be tested is
/// what a board without the profile's chip or line sees: the error, naming chip and line.
final class LibgpiodLineEventSourceTests: XCTestCase {
    func testEveryLineOnAMissingChipSaysWhich() {
        let source = LibgpiodLineEventSource()
        let results = source.open(
            [
                GPIOLineSpec(chip: "gpiochip0", line: .offset(17)),
                GPIOLineSpec(chip: "pinctrl-bcm2711", line: .named("GPIO27"), bias: .pullUp, activeLow: true),
                GPIOLineSpec(chip: "/dev/gpiochip4", line: .offset(3)),
                GPIOLineSpec(chip: "/dev/null", line: .offset(3)),
            ], consumer: "tonearm-test")
        let messages = results.map { result -> String in
            switch result {
            case .success: return "opened"
            case .failure(let error): return "\(error)"
            }
        }
        XCTAssertEqual(messages, [
            "GPIO line 17 on chip 'gpiochip0': no such chip",
            "GPIO line GPIO27 on chip 'pinctrl-bcm2711': no such chip",
            "GPIO line 3 on chip '/dev/gpiochip4': no such chip",
            "GPIO line 3 on chip '/dev/null': not a GPIO chip",
        ])
        source.close()
    }

    func testARequiredLineOnAMissingChipStopsConstruction() {
        let controls: [GPIOControl] = [
            .button("play", line: GPIOLineSpec(line: .offset(17), required: true), .init(press: Command("togglePlayPause")))
        ]
        XCTAssertThrowsError(try GPIOControls(controls)) { error in
            XCTAssertEqual("\(error)", "GPIO line 17 on chip 'gpiochip0': no such chip")
            XCTAssertEqual((error as? GPIOError)?.chip, "gpiochip0")
            XCTAssertEqual((error as? GPIOError)?.line, "17")
        }
    }

    func testAnOptionalLineOnAMissingChipIsLeftOutWithOneLogLine() throws {
        let controls: [GPIOControl] = [
            .button("play", line: GPIOLineSpec(line: .offset(17)), .init(press: Command("togglePlayPause"))),
            .encoder("volume", a: GPIOLineSpec(chip: "gpiochip1", line: .named("ENC_A")), b: GPIOLineSpec(chip: "gpiochip1", line: .named("ENC_B"))),
        ]
        let gpio = try GPIOControls(controls)
        XCTAssertEqual(gpio.leftOut.map(\.description), [
            "GPIO line 17 on chip 'gpiochip0': no such chip; button play left out",
            "GPIO line ENC_A on chip 'gpiochip1': no such chip; encoder volume left out",
        ])
        let log = TestLog()
        let plane = TestControlPlane()
        let running = RunningPlugIn(gpio, on: plane, log: log.log)
        XCTAssertTrue(log.waitFor("no GPIO controls to watch"))
        running.stop()
        XCTAssertEqual(log.lines, gpio.leftOut.map { "warning: \($0)" } + ["info: no GPIO controls to watch"])
        XCTAssertEqual(plane.commands, [], "nothing to send")
    }

    /// The wait itself runs on a real machine: it keeps its deadline and wakes when told.
    func testTheWaitKeepsItsDeadlineAndWakesWhenTold() {
        let source = LibgpiodLineEventSource()
        let start = source.now()
        XCTAssertEqual(source.wait(until: start + 0.03), [])
        XCTAssertGreaterThanOrEqual(source.now() - start, 0.029)
        XCTAssertLessThan(source.now() - start, 5, "the deadline ends the wait")

        source.wake()
        let woken = source.now()
        XCTAssertEqual(source.wait(until: nil), [], "a wake before the wait makes it return at once")
        XCTAssertLessThan(source.now() - woken, 5, "no deadline: only the wake ends it")

        let thread = NamedThread(name: "test-waker") {
            sleepMilliseconds(20)
            source.wake()
        }
        let before = source.now()
        XCTAssertEqual(source.wait(until: nil), [])
        XCTAssertLessThan(source.now() - before, 5, "no deadline: only the wake ends it")
        thread.join()
    }
}
