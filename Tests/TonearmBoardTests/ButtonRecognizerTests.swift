import TonearmBoard
import TonearmControlPlane
import XCTest

/// Recorded edge timelines through a ButtonRecognizer driven exactly as the GPIO thread drives
/// it: edges at their times, ticks at `nextDeadline`. Each command is checked with the time it
/// was sent.
final class ButtonRecognizerTests: XCTestCase {
    struct Sent: Equatable, CustomStringConvertible {
        var command: Command
        var at: Double
        var description: String { "\(command) @\(at)" }
    }

    /// Plays `edges` (pressed, at) and ticks at every deadline up to `until`.
    func play(
        _ settings: ButtonRecognizer.Settings, _ edges: [(Bool, Double)], until end: Double, pressed: Bool = false
    ) -> [Sent] {
        var button = ButtonRecognizer(settings, pressed: pressed)
        var sent: [Sent] = []
        var pending = edges[...]
        while true {
            let deadline = button.nextDeadline ?? .infinity
            if let edge = pending.first, edge.1 <= deadline {
                pending.removeFirst()
                sent += button.edge(pressed: edge.0, at: edge.1).map { Sent(command: $0, at: edge.1) }
            } else if deadline <= end {
                sent += button.tick(at: deadline).map { Sent(command: $0, at: deadline) }
            } else {
                return sent
            }
        }
    }

    func assertSent(_ sent: [Sent], _ expected: [(Command, Double)], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(sent.map(\.command), expected.map(\.0), "\(sent)", file: file, line: line)
        for (got, want) in zip(sent, expected) {
            XCTAssertEqual(got.at, want.1, accuracy: 1e-6, "\(got.command)", file: file, line: line)
        }
    }

    let play = Command("togglePlayPause")
    let next = Command("nextTrack")
    let up = Command("volumeUp")

    // MARK: Debounce

    func testAPlainButtonFiresOnPressOnceDebounced() {
        let sent = play(.init(press: play), [(true, 1.0), (false, 1.3)], until: 5)
        assertSent(sent, [(play, 1.02)])
    }

    func testBounceBurstsGiveOnePressAndOneRelease() {
        let press = [(true, 1.000), (false, 1.002), (true, 1.004), (false, 1.007), (true, 1.009)]
        let release = [(false, 1.500), (true, 1.503), (false, 1.505), (true, 1.506), (false, 1.510)]
        let again = [(true, 2.0), (false, 2.001), (true, 2.003), (false, 2.2)]
        let sent = play(.init(press: play), press + release + again, until: 5)
        // The press counts 20 ms after its last bounce; the second press proves the release
        // in between was recognised.
        assertSent(sent, [(play, 1.029), (play, 2.023)])
    }

    func testAGlitchShorterThanTheDebounceIsIgnoredAndExactlyTheDebounceCounts() {
        XCTAssertEqual(play(.init(press: play), [(true, 1.0), (false, 1.0199)], until: 5), [])
        assertSent(play(.init(press: play), [(true, 1.0), (false, 1.02)], until: 5), [(play, 1.02)])
        assertSent(play(.init(press: play, debounce: 0.05), [(true, 1.0), (false, 1.04), (true, 1.045), (false, 1.2)], until: 5), [(play, 1.095)])
    }

    func testTheSameLevelTwiceRestartsTheWait() {
        // A release between the two presses was lost: the line was not stable.
        assertSent(play(.init(press: play), [(true, 1.0), (true, 1.015), (false, 1.3)], until: 5), [(play, 1.035)])
    }

    func testDeadlinesAreWhatTheCallerMustWaitFor() {
        var button = ButtonRecognizer(.init(press: play, hold: .longPress(next)))
        XCTAssertNil(button.nextDeadline)
        XCTAssertEqual(button.edge(pressed: true, at: 10), [])
        XCTAssertEqual(button.nextDeadline ?? 0, 10.02, accuracy: 1e-9)
        XCTAssertEqual(button.tick(at: 10.019), [])
        XCTAssertFalse(button.isPressed)
        XCTAssertEqual(button.tick(at: 10.02), [])
        XCTAssertTrue(button.isPressed)
        XCTAssertEqual(button.nextDeadline ?? 0, 10.62, accuracy: 1e-9)
        XCTAssertEqual(button.tick(at: 10.5), [])
        XCTAssertEqual(button.tick(at: 10.62), [next])
        XCTAssertNil(button.nextDeadline, "after the long press nothing is due until release")
    }

    // MARK: Long press

    func testAShortPressSendsThePressCommandOnRelease() {
        let sent = play(.init(press: next, hold: .longPress(Command("skipForward 30"))), [(true, 1.0), (false, 1.3)], until: 5)
        assertSent(sent, [(next, 1.32)])
    }

    func testALongPressFiresOnceAtTheThresholdAndTheReleaseSendsNothing() {
        let skip = Command("skipForward 30")
        let sent = play(.init(press: next, hold: .longPress(skip)), [(true, 1.0), (false, 3.0)], until: 5)
        assertSent(sent, [(skip, 1.62)])
    }

    func testHeldExactlyTheThresholdIsLongAndJustUnderIsShort() {
        let skip = Command("skipForward 30")
        let settings = ButtonRecognizer.Settings(press: next, hold: .longPress(skip))
        // At times where press + debounce + threshold and release + debounce round differently.
        for start in [0.0, 1.0, 12.345, 86_400.1] {
            assertSent(play(settings, [(true, start), (false, start + 0.6)], until: start + 5), [(skip, start + 0.62)])
            assertSent(play(settings, [(true, start), (false, start + 0.599)], until: start + 5), [(next, start + 0.619)])
        }
        let custom = ButtonRecognizer.Settings(press: next, hold: .longPress(skip, after: 1.5), debounce: 0.01)
        assertSent(play(custom, [(true, 0), (false, 1.499)], until: 5), [(next, 1.509)])
        assertSent(play(custom, [(true, 0), (false, 1.5)], until: 5), [(skip, 1.51)])
    }

    func testReleaseBounceAroundTheThresholdDoesNotCutTheHoldShort() {
        // The contact opens at 0.59 but closes again within the debounce: the press goes on.
        let skip = Command("skipForward 30")
        let sent = play(.init(press: next, hold: .longPress(skip)), [(true, 0), (false, 0.59), (true, 0.6), (false, 2)], until: 5)
        assertSent(sent, [(skip, 0.62)])
    }

    func testAHeldLongCommandIsEndedByTheRelease() {
        let begin = Command("seekForward begin")
        let sent = play(.init(press: next, hold: .longPress(begin)), [(true, 1.0), (false, 4.0), (true, 5), (false, 5.1)], until: 9)
        assertSent(sent, [(begin, 1.62), (Command("seekForward end"), 4.02), (next, 5.12)])
    }

    // MARK: Repeat

    func testHoldToRepeatCounts() {
        let settings = ButtonRecognizer.Settings(press: up, hold: .repeats())
        // Press at 0.02, repeats at 0.42, 0.52, … while held; released (counted) at 0.97.
        assertSent(play(settings, [(true, 0), (false, 0.95)], until: 5), [(up, 0.02)] + (0..<6).map { (up, 0.42 + Double($0) * 0.1) })
        XCTAssertEqual(play(settings, [(true, 0), (false, 0.3)], until: 5).count, 1, "released before the delay: the press only")
        XCTAssertEqual(play(settings, [(true, 0), (false, 0.399)], until: 5).count, 1)
        XCTAssertEqual(play(settings, [(true, 0), (false, 0.4)], until: 5).count, 2, "held exactly the delay: one repeat, as for long press")
        XCTAssertEqual(play(settings, [(true, 0), (false, 10.0)], until: 20).count, 1 + 97, "10 s: (10 - 0.4) / 0.1 + 1 repeats, no drift")
        let fast = ButtonRecognizer.Settings(press: up, hold: .repeats(delay: 0.25, interval: 0.05))
        XCTAssertEqual(play(fast, [(true, 0), (false, 1.0)], until: 5).count, 1 + 16)
    }

    func testLateTicksCatchUpSoTheCountDependsOnlyOnTheHold() {
        var button = ButtonRecognizer(.init(press: up, hold: .repeats()))
        XCTAssertEqual(button.edge(pressed: true, at: 0), [])
        XCTAssertEqual(button.tick(at: 1.0), Array(repeating: up, count: 7), "press at 0.02, repeats at 0.42 … 0.92")
        XCTAssertEqual(button.edge(pressed: false, at: 1.03), [up], "the repeat at 1.02 came before the release")
        XCTAssertEqual(button.tick(at: 3), [])
    }

    func testARepeatingButtonHasNoLongPress() {
        let sent = play(.init(press: up, hold: .repeats(delay: 5, interval: 1)), [(true, 0), (false, 2)], until: 9)
        assertSent(sent, [(up, 0.02)])
    }

    // MARK: Start

    func testAButtonHeldAtStartSendsNothingUntilPressedAgain() {
        let skip = Command("skipForward 30")
        let sent = play(.init(press: next, hold: .longPress(skip)), [(false, 2.0), (true, 3.0), (false, 3.1)], until: 9, pressed: true)
        assertSent(sent, [(next, 3.12)])
        XCTAssertEqual(play(.init(press: up, hold: .repeats()), [(false, 2.0)], until: 9, pressed: true), [])
    }

    func testTimesThatGoBackwardsCountAsTheLatestSeen() {
        var button = ButtonRecognizer(.init(press: play))
        XCTAssertEqual(button.tick(at: 5), [])
        XCTAssertEqual(button.edge(pressed: true, at: 4.9), [])
        XCTAssertEqual(button.tick(at: 5.019), [])
        XCTAssertEqual(button.tick(at: 5.02), [play])
    }
}
