import TonearmBoard
import TonearmControlPlane
import XCTest

final class QuadratureDecoderTests: XCTestCase {
    /// States as "AB" strings: "00", "10", …
    func levels(_ state: String) -> (a: Bool, b: Bool) {
        let bits = Array(state)
        return (bits[0] == "1", bits[1] == "1")
    }

    /// Feeds states through `update(a:b:)` (both lines at once, so jumps of two states can
    /// happen); returns the detents per state.
    func detents(_ states: [String], _ settings: QuadratureDecoder.Settings = .init()) -> [Int] {
        let start = levels(states[0])
        var decoder = QuadratureDecoder(settings, a: start.a, b: start.b)
        return states.dropFirst().map { state in
            let (a, b) = levels(state)
            return decoder.update(a: a, b: b)
        }
    }

    let clockwise = ["00", "10", "11", "01", "00"]
    let counterClockwise = ["00", "01", "11", "10", "00"]

    func testOneDetentEachWayCountsAtTheRestPosition() {
        XCTAssertEqual(detents(clockwise), [0, 0, 0, 1])
        XCTAssertEqual(detents(counterClockwise), [0, 0, 0, -1])
        let three = clockwise + Array(clockwise.dropFirst()) + Array(clockwise.dropFirst())
        XCTAssertEqual(detents(three).reduce(0, +), 3)
        XCTAssertEqual(detents(three).filter { $0 != 0 }, [1, 1, 1])
    }

    func testBounceAndANudgeLetBackCountNothing() {
        let bouncy = ["00", "10", "00", "10", "11", "10", "11", "01", "11", "01", "00", "01", "00"]
        XCTAssertEqual(detents(bouncy).filter { $0 != 0 }, [1])
        XCTAssertEqual(detents(["00", "10", "11", "10", "00"]).filter { $0 != 0 }, [])
        XCTAssertEqual(detents(["00", "10", "11", "01", "11", "10", "00"]).filter { $0 != 0 }, [], "three quarters and back")
    }

    func testAJumpOfTwoStatesIsNotCountedAndTheDirectionIsKept() {
        // Each clockwise detent with one state missed: the two steps left still say clockwise.
        for missed in 1...3 {
            var states = clockwise
            states.remove(at: missed)
            XCTAssertEqual(detents(states), Array(repeating: 0, count: states.count - 2) + [1], "\(states)")
            var back = counterClockwise
            back.remove(at: missed)
            XCTAssertEqual(detents(back).last, -1, "\(back)")
        }
        // Two states missed in one detent: nothing to go by, nothing counted (not a random way).
        XCTAssertEqual(detents(["00", "11", "00"]), [0, 0])
        XCTAssertEqual(detents(["00", "10", "01", "10", "01", "00"]).filter { $0 != 0 }, [1], "jumps back and forth are ignored")
    }

    func testTheCountResynchronisesAtTheNextRest() {
        // Garbage (jumps, half a detent backwards), then the knob settles at rest: the next
        // clean detent counts exactly one.
        let garbage = ["00", "01", "10", "01", "11", "00"]
        let then = garbage + Array(clockwise.dropFirst())
        let result = detents(then)
        XCTAssertEqual(result.suffix(4), [0, 0, 0, 1], "\(result)")
    }

    func testAFastTurnWithDroppedTransitionsNeverCountsBackwards() {
        // 40 clockwise detents; a deterministic pseudo-random choice of states is lost, never
        // two in a row. A detent that lost two states is lost; every other one counts.
        var generator = SplitMix(seed: 7)
        let cycle = ["10", "11", "01", "00"]
        var states = ["00"]
        var expected = 0
        for _ in 0..<40 {
            var dropped = Set<Int>()
            for index in 0..<3 where generator.next() % 3 == 0 && !dropped.contains(index - 1) { dropped.insert(index) }
            for (index, state) in cycle.enumerated() where !dropped.contains(index) { states.append(state) }
            expected += dropped.count < 2 ? 1 : 0
        }
        let result = detents(states)
        XCTAssertFalse(result.contains { $0 < 0 })
        XCTAssertEqual(result.reduce(0, +), expected)
        XCTAssertGreaterThan(expected, 20)
        XCTAssertLessThan(expected, 40, "some detents must have lost two states for this test to mean anything")
    }

    func testHalfCycleEncodersCountAtBothRests() {
        let two = QuadratureDecoder.Settings(stepsPerDetent: .two)
        XCTAssertEqual(detents(clockwise, two), [0, 1, 0, 1])
        XCTAssertEqual(detents(counterClockwise, two), [0, -1, 0, -1])
        XCTAssertEqual(detents(["00", "11", "00"], two), [0, 0], "a jump from rest to rest is not guessed")
        XCTAssertEqual(detents(["00", "10", "00", "10", "11"], two), [0, 0, 0, 1])
    }

    func testQuarterCycleCountsEveryTransition() {
        let one = QuadratureDecoder.Settings(stepsPerDetent: .one)
        XCTAssertEqual(detents(clockwise, one), [1, 1, 1, 1])
        XCTAssertEqual(detents(counterClockwise, one), [-1, -1, -1, -1])
        XCTAssertEqual(detents(["00", "11", "01", "10"], one), [0, 1, 0])
    }

    func testAnEncoderRestingWithBothLinesActive() {
        // Read at rest as 11 when the decoder starts: detents count there, not at 00.
        let fromActive = ["11", "01", "00", "10", "11"]
        XCTAssertEqual(detents(fromActive), [0, 0, 0, 1])
        XCTAssertEqual(detents(["11", "10", "00", "01", "11"]), [0, 0, 0, -1])
        // Told where it rests, whatever it reads at start.
        let told = QuadratureDecoder.Settings(rest: .bothActive)
        XCTAssertEqual(detents(["00", "10", "11", "01", "00", "10", "11"], told), [0, 0, 0, 0, 0, 1])
    }

    func testEdgesMapToCommandsAndLostEdgesCountNothing() {
        var decoder = QuadratureDecoder(.init(clockwise: Command("nextTrack"), counterClockwise: Command("previousTrack")), a: false, b: false)
        // A clean clockwise detent, edge by edge: A rises, B rises, A falls, B falls.
        XCTAssertEqual(decoder.edge(a: true) + decoder.edge(b: true) + decoder.edge(a: false), [])
        XCTAssertEqual(decoder.edge(b: false), [Command("nextTrack")])
        // "B rises" lost: A↑ A↓ B↓ — the detent is lost, not counted backwards.
        XCTAssertEqual(decoder.edge(a: true) + decoder.edge(a: false) + decoder.edge(b: false), [])
        // Counter-clockwise: B leads.
        XCTAssertEqual(decoder.edge(b: true) + decoder.edge(a: true) + decoder.edge(b: false) + decoder.edge(a: false), [Command("previousTrack")])
        XCTAssertEqual(decoder.count, 0)
    }

    func testDefaultCommandsAreVolume() {
        let settings = QuadratureDecoder.Settings()
        XCTAssertEqual(settings.clockwise, Command("volumeUp"))
        XCTAssertEqual(settings.counterClockwise, Command("volumeDown"))
        XCTAssertEqual(settings.stepsPerDetent, .four)
        XCTAssertEqual(QuadratureDecoder.StepsPerDetent(rawValue: 3), nil)
    }
}

/// A small deterministic generator, so a failing sequence can be replayed.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
