import TonearmBoard
import TonearmControlPlane
import XCTest

final class SwitchDebouncerTests: XCTestCase {
    let ignition = SwitchDebouncer.Settings(on: Command("ignitionOn"), off: Command("ignitionOff"))

    /// Plays `edges` (on, at) and ticks at every deadline; returns (command, time).
    func play(_ settings: SwitchDebouncer.Settings, _ edges: [(Bool, Double)], until end: Double = 100) -> [String] {
        var debouncer = SwitchDebouncer(settings)
        var sent: [String] = []
        var pending = edges[...]
        while true {
            let deadline = debouncer.nextDeadline ?? .infinity
            if let edge = pending.first, edge.1 <= deadline {
                pending.removeFirst()
                sent += debouncer.edge(on: edge.0, at: edge.1).map { "\($0) @\(edge.1)" }
            } else if deadline <= end {
                sent += debouncer.tick(at: deadline).map { "\($0) @\((deadline * 1000).rounded() / 1000)" }
            } else {
                return sent
            }
        }
    }

    func testTheInitialLevelIsSentOnceStable() {
        XCTAssertEqual(play(ignition, [(true, 0)]), ["ignitionOn @0.02"])
        XCTAssertEqual(play(ignition, [(false, 0)]), ["ignitionOff @0.02"])
        var debouncer = SwitchDebouncer(ignition)
        XCTAssertNil(debouncer.isOn)
        XCTAssertEqual(debouncer.edge(on: true, at: 3), [])
        XCTAssertEqual(debouncer.tick(at: 3.019), [])
        XCTAssertEqual(debouncer.tick(at: 3.02), [Command("ignitionOn")])
        XCTAssertEqual(debouncer.isOn, true)
        XCTAssertNil(debouncer.nextDeadline)
    }

    func testEachStableChangeIsSentOnceWhateverTheBounce() {
        let timeline: [(Bool, Double)] = [
            (false, 0),
            (true, 1.0), (false, 1.001), (true, 1.003), (false, 1.004), (true, 1.006),
            (true, 1.5),  // the same level again: a falling edge was lost, nothing changes
            (false, 2.0), (true, 2.002), (false, 2.005),
        ]
        XCTAssertEqual(play(ignition, timeline), ["ignitionOff @0.02", "ignitionOn @1.026", "ignitionOff @2.025"])
    }

    func testAGlitchShorterThanTheDebounceSendsNothing() {
        XCTAssertEqual(play(ignition, [(true, 0), (false, 1.0), (true, 1.019)]), ["ignitionOn @0.02"])
        // An ignition line that dips while cranking, with a debounce to match.
        let cranking = SwitchDebouncer.Settings(on: Command("ignitionOn"), off: Command("ignitionOff"), debounce: 0.5)
        XCTAssertEqual(play(cranking, [(true, 0), (false, 4.0), (true, 4.3), (false, 9), (true, 9.2), (false, 9.25)]), [
            "ignitionOn @0.5", "ignitionOff @9.75",
        ])
    }

    func testAMuteSwitch() {
        let mute = SwitchDebouncer.Settings(on: Command("muteOn"), off: Command("muteOff"))
        XCTAssertEqual(play(mute, [(false, 0), (true, 1), (false, 2)]), ["muteOff @0.02", "muteOn @1.02", "muteOff @2.02"])
    }
}
