import Foundation
import TestSupport
import TonearmBoard
import TonearmControlPlane
import TonearmGPIO
import XCTest

/// GPIOControls end to end through a scripted line source: recorded physical edges in, the
/// exact commands out, each with the time on the script's clock it was sent at. The script
/// runs on its own clock, so long presses and repeats take no real time.
final class GPIOControlsTests: XCTestCase {
    /// What a run sent: each command as the control plane got it, with the time on the
    /// script's clock it was made at ("nextTrack @2.27"), from the debug log.
    struct Run {
        var commands: [String]
        var log: [String]
        var controls: GPIOControls
        var plane: TestControlPlane
    }

    typealias Edge = ScriptedLineEventSource.Edge
    typealias Address = ScriptedLineEventSource.Address

    /// A button to ground with the pull-up on: pressed is low.
    func buttonLine(_ offset: Int, required: Bool = false) -> GPIOLineSpec {
        GPIOLineSpec(line: .offset(offset), bias: .pullUp, activeLow: true, required: required)
    }

    func press(_ offset: Int, at time: Double) -> Edge { Edge(Address(offset), high: false, at: time) }
    func release(_ offset: Int, at time: Double) -> Edge { Edge(Address(offset), high: true, at: time) }

    /// Idle buttons read high (pulled up); everything else low.
    func idle(_ offsets: [Int]) -> [Address: Bool] { Dictionary(uniqueKeysWithValues: offsets.map { (Address($0), true) }) }

    /// Builds the controls, runs the plug-in until the script has played to its end and the
    /// plane has every command, stops; returns what was sent and logged.
    func run(
        _ controls: [GPIOControl], _ source: ScriptedLineEventSource, file: StaticString = #filePath, line: UInt = #line
    ) throws -> Run {
        let gpio = try GPIOControls(controls, source: source)
        let plane = TestControlPlane()
        let log = TestLog()
        let running = RunningPlugIn(gpio, on: plane, log: log.log)
        XCTAssertTrue(source.waitUntilFinished(timeout: 5), "the script did not play to its end", file: file, line: line)
        let made = log.texts(at: .debug)
        plane.waitForCommands(made.count)
        XCTAssertLessThan(running.stop(), 5, "cancelled, it stops: its wait has no deadline", file: file, line: line)
        XCTAssertFalse(source.isOpen, "stopping releases the lines", file: file, line: line)
        // Made (by the thread) and received (by the plane) alike, in the same order.
        let stamped = made.map { text -> (source: String, command: String, at: String) in
            let colon = text.range(of: ": ")!
            let at = text.range(of: " at ", options: .backwards)!
            return (String(text[..<colon.lowerBound]), String(text[colon.upperBound..<at.lowerBound]), String(text[at.upperBound...]))
        }
        XCTAssertEqual(plane.received.map(\.description), stamped.map { "\($0.source): \($0.command)" }, file: file, line: line)
        return Run(commands: stamped.map { "\($0.command) @\(Double($0.at)!)" }, log: log.lines, controls: gpio, plane: plane)
    }

    let board: [GPIOControl] = [
        .button("play", line: GPIOLineSpec(line: .offset(17), bias: .pullUp, activeLow: true), .init(press: Command("togglePlayPause"))),
        .button(
            "next", line: GPIOLineSpec(line: .offset(27), bias: .pullUp, activeLow: true),
            .init(press: Command("nextTrack"), hold: .longPress(Command("seekForward begin")))
        ),
        .button(
            "volume-up", line: GPIOLineSpec(line: .offset(22), bias: .pullUp, activeLow: true),
            .init(press: Command("volumeUp 2"), hold: .repeats())
        ),
        .encoder("volume", a: GPIOLineSpec(line: .offset(5)), b: GPIOLineSpec(line: .offset(6))),
        .levelSwitch("mute", line: GPIOLineSpec(line: .offset(23)), .init(on: Command("muteOn"), off: Command("muteOff"))),
    ]

    func testARecordedSessionGivesTheExactCommands() throws {
        var edges: [Edge] = []
        // Play: a bouncy press and release.
        edges += [press(17, at: 1.000), release(17, at: 1.002), press(17, at: 1.004), release(17, at: 1.300), press(17, at: 1.302), release(17, at: 1.305)]
        // Next: short, then held 2 s (seek begins at the threshold and ends on release).
        edges += [press(27, at: 2.0), release(27, at: 2.25)]
        edges += [press(27, at: 3.0), release(27, at: 5.0)]
        // Volume up held 0.75 s: the press, then repeats at 0.4 and 0.5 and 0.6 and 0.7.
        edges += [press(22, at: 6.0), release(22, at: 6.75)]
        // Encoder: two detents clockwise slowly, one counter-clockwise fast (A and B 1 ms apart).
        for t in [7.0, 7.5] {
            edges += [
                Edge(Address(5), high: true, at: t), Edge(Address(6), high: true, at: t + 0.05),
                Edge(Address(5), high: false, at: t + 0.1), Edge(Address(6), high: false, at: t + 0.15),
            ]
        }
        edges += [
            Edge(Address(6), high: true, at: 8.0), Edge(Address(5), high: true, at: 8.001),
            Edge(Address(6), high: false, at: 8.002), Edge(Address(5), high: false, at: 8.003),
        ]
        // Mute switch: off at start (read low), on at 9 with a bounce, off at 10.
        edges += [
            Edge(Address(23), high: true, at: 9.0), Edge(Address(23), high: false, at: 9.001), Edge(Address(23), high: true, at: 9.002),
            Edge(Address(23), high: false, at: 10.0),
        ]
        let source = ScriptedLineEventSource(initial: idle([17, 27, 22]), edges: edges, end: 20)
        let result = try run(board, source)
        XCTAssertEqual(result.commands, [
            "muteOff @0.02",
            "togglePlayPause @1.024",
            "nextTrack @2.27",
            "seekForward begin @3.62",
            "seekForward end @5.02",
            "volumeUp 2 @6.02", "volumeUp 2 @6.42", "volumeUp 2 @6.52", "volumeUp 2 @6.62", "volumeUp 2 @6.72",
            "volumeUp 5 @7.15", "volumeUp 5 @7.65",
            "volumeDown 5 @8.003",
            "muteOn @9.022",
            "muteOff @10.02",
        ])
        XCTAssertEqual(result.log, [
            "info: GPIO controls: button play (gpiochip0 line 17), button next (gpiochip0 line 27), button volume-up (gpiochip0 line 22), encoder volume (gpiochip0 lines 5, 6), switch mute (gpiochip0 line 23)",
        ])
        XCTAssertTrue(result.controls.leftOut.isEmpty)
    }

    func testEncoderTurnsAtSeveralSpeedsWithLostEdges() throws {
        let encoder: [GPIOControl] = [
            .encoder(
                "tracks", a: GPIOLineSpec(line: .named("GPIO5")), b: GPIOLineSpec(line: .named("GPIO6")),
                .init(clockwise: Command("nextTrack"), counterClockwise: Command("previousTrack"))
            )
        ]
        var edges: [Edge] = []
        var time = 1.0
        /// One detent, `spacing` seconds between edges; `lose` drops that edge (0...3).
        func detent(clockwise: Bool, spacing: Double, lose: Int? = nil) {
            let (first, second) = clockwise ? (5, 6) : (6, 5)
            let steps = [(first, true), (second, true), (first, false), (second, false)]
            for (index, step) in steps.enumerated() where index != lose {
                edges.append(Edge(Address(step.0), high: step.1, at: time + Double(index) * spacing))
            }
            time += 4 * spacing + 0.05
        }
        for spacing in [0.03, 0.005, 0.0005] { detent(clockwise: true, spacing: spacing) }
        for spacing in [0.03, 0.005, 0.0005] { detent(clockwise: false, spacing: spacing) }
        // A lost edge loses its detent, never counts one the wrong way, and leaves that line's
        // level wrong until its next edge, so the detent after it may be lost as well: here the
        // first clean detent after the lost "B falls" is, the second counts.
        detent(clockwise: true, spacing: 0.0002, lose: 1)
        detent(clockwise: false, spacing: 0.0002, lose: 2)
        detent(clockwise: true, spacing: 0.001)
        detent(clockwise: true, spacing: 0.001)
        let chip = ScriptedLineEventSource.Chip(lineNames: ["GPIO5": 5, "GPIO6": 6])
        let source = ScriptedLineEventSource(chips: [chip], edges: edges, end: time + 1)
        let commands = try run(encoder, source).commands.map { String($0.prefix { $0 != " " }) }
        XCTAssertEqual(commands, ["nextTrack", "nextTrack", "nextTrack", "previousTrack", "previousTrack", "previousTrack", "nextTrack"])
    }

    func testAButtonHeldAtStartAndASwitchOnAtStart() throws {
        let controls: [GPIOControl] = [
            .button("next", line: buttonLine(27), .init(press: Command("nextTrack"), hold: .longPress(Command("skipForward 30")))),
            .levelSwitch("ignition", line: GPIOLineSpec(line: .offset(4)), .init(on: Command("ignitionOn"), off: Command("ignitionOff"), debounce: 0.5)),
        ]
        // Next is held (low) at start, released at 2, pressed briefly at 3. Ignition is on at
        // start, dips for 0.3 s while cranking, goes off at 7.
        let edges = [
            release(27, at: 2), press(27, at: 3), release(27, at: 3.1),
            Edge(Address(4), high: false, at: 5), Edge(Address(4), high: true, at: 5.3), Edge(Address(4), high: false, at: 7),
        ]
        let source = ScriptedLineEventSource(initial: [Address(27): false, Address(4): true], edges: edges, end: 10)
        XCTAssertEqual(try run(controls, source).commands, ["ignitionOn @0.5", "nextTrack @3.12", "ignitionOff @7.5"])
    }

    // MARK: Missing, required and lost lines

    func testAMissingLineIsLoggedAndItsControlLeftOut() throws {
        let controls: [GPIOControl] = [
            .button("play", line: buttonLine(17), .init(press: Command("togglePlayPause"))),
            .button("next", line: buttonLine(60), .init(press: Command("nextTrack"))),
            .button("stop", line: GPIOLineSpec(chip: "gpiochip9", line: .offset(3)), .init(press: Command("stop"))),
            .encoder("volume", a: GPIOLineSpec(line: .offset(5)), b: GPIOLineSpec(line: .named("ENC_B"))),
        ]
        let source = ScriptedLineEventSource(initial: idle([17, 60]), edges: [press(17, at: 1), release(17, at: 1.1)], end: 2)
        let result = try run(controls, source)
        XCTAssertEqual(result.commands, ["togglePlayPause @1.02"])
        XCTAssertEqual(result.log, [
            "warning: GPIO line 60 on chip 'gpiochip0': no such line (the chip has 54); button next left out",
            "warning: GPIO line 3 on chip 'gpiochip9': no such chip; button stop left out",
            "warning: GPIO line ENC_B on chip 'gpiochip0': no line of that name; encoder volume left out",
            "info: GPIO controls: button play (gpiochip0 line 17)",
        ])
        XCTAssertEqual(result.controls.available.map(\.name), ["play"])
        XCTAssertEqual(result.controls.leftOut.map(\.control.name), ["next", "stop", "volume"])
        XCTAssertEqual(result.controls.name, "GPIO controls: button play (gpiochip0 line 17)")
    }

    func testARequiredLineThatIsMissingFailsConstructionAndReleasesEverything() {
        let source = ScriptedLineEventSource(chips: [.init(lineCount: 0)], edges: [], end: 1)
        let controls: [GPIOControl] = [
            .button("play", line: buttonLine(0), .init(press: Command("togglePlayPause"))),
            .button("next", line: buttonLine(17, required: true), .init(press: Command("nextTrack"))),
        ]
        XCTAssertThrowsError(try GPIOControls(controls, source: source)) { error in
            XCTAssertEqual("\(error)", "GPIO line 17 on chip 'gpiochip0': no such line (the chip has 0)")
        }
        XCTAssertFalse(source.isOpen)
        // The same line not required: built, and the control left out.
        let relaxed = ScriptedLineEventSource(chips: [.init(lineCount: 0)], edges: [], end: 1)
        XCTAssertNoThrow(try GPIOControls([controls[0]], source: relaxed))
        // An encoder is required if either of its lines is.
        let encoder = GPIOControl.encoder("volume", a: GPIOLineSpec(line: .offset(5)), b: GPIOLineSpec(chip: "gpiochip3", line: .offset(6), required: true))
        XCTAssertThrowsError(try GPIOControls([encoder], source: ScriptedLineEventSource(edges: [], end: 1))) { error in
            XCTAssertEqual("\(error)", "GPIO line 6 on chip 'gpiochip3': no such chip")
        }
    }

    func testALineUsedTwiceIsRefusedForTheSecondControl() throws {
        let controls: [GPIOControl] = [
            .button("play", line: buttonLine(17), .init(press: Command("togglePlayPause"))),
            .levelSwitch("mute", line: GPIOLineSpec(line: .offset(17)), .init(on: Command("muteOn"), off: Command("muteOff"))),
        ]
        let source = ScriptedLineEventSource(initial: idle([17]), edges: [press(17, at: 1)], end: 2)
        let result = try run(controls, source)
        XCTAssertEqual(result.commands, ["togglePlayPause @1.02"])
        XCTAssertEqual(result.log.first, "warning: GPIO line 17 on chip 'gpiochip0': already used by button play (gpiochip0 line 17); switch mute left out")
        let required = [controls[0], .levelSwitch("mute", line: GPIOLineSpec(line: .offset(17), required: true), .init(on: Command("muteOn"), off: Command("muteOff")))]
        XCTAssertThrowsError(try GPIOControls(required, source: ScriptedLineEventSource(edges: [], end: 1)))
    }

    func testALostLineIsLoggedAndTheOthersCarryOn() throws {
        let controls: [GPIOControl] = [
            .button("play", line: buttonLine(17), .init(press: Command("togglePlayPause"))),
            .button("next", line: buttonLine(27), .init(press: Command("nextTrack"), hold: .longPress(Command("skipForward 30")))),
        ]
        // Next is pressed again at 1.5 and its line is lost at 1.6, before the long press would
        // fire (2.12): a control whose line is gone sends nothing more.
        let edges = [press(27, at: 1), release(27, at: 1.2), press(27, at: 1.5), press(17, at: 3), release(17, at: 3.2)]
        let source = ScriptedLineEventSource(
            initial: idle([17, 27]), edges: edges, losses: [.init(Address(27), at: 1.6, reason: "the chip went away")], end: 5)
        let result = try run(controls, source)
        XCTAssertEqual(result.commands, ["nextTrack @1.22", "togglePlayPause @3.02"])
        XCTAssertEqual(result.log.last, "warning: GPIO line 27 on chip 'gpiochip0': the chip went away; button next (gpiochip0 line 27) no longer works")
    }

    // MARK: Lifecycle

    func testTheThreadIsNamedAndStopIsPromptAndARunIsOnce() throws {
        let source = ScriptedLineEventSource(initial: idle([17]), edges: [], end: 1)
        let gpio = try GPIOControls([.button("play", line: buttonLine(17), .init(press: Command("togglePlayPause")))], source: source)
        XCTAssertFalse(gpio.isRequired)
        let plane = TestControlPlane()
        let log = TestLog()
        let running = RunningPlugIn(gpio, on: plane, log: log.log)
        XCTAssertTrue(source.waitUntilFinished())
        XCTAssertTrue(threadNames().contains("tonearm-gpio"), "\(threadNames())")
        // A second run while the first runs does nothing.
        XCTAssertTrue(RunningPlugIn(gpio, on: plane, log: log.log).waitForEnd(timeout: 1))
        // The thread now waits with no deadline at all: only the wake-up ends it.
        XCTAssertLessThan(running.stop(), 5)
        XCTAssertFalse(threadNames().contains("tonearm-gpio"))
        XCTAssertFalse(source.isOpen, "the lines are released")
        XCTAssertTrue(RunningPlugIn(gpio, on: plane, log: log.log).waitForEnd(timeout: 1), "the lines were had once")
        XCTAssertEqual(log.lines.count, 3)
        XCTAssertEqual(log.lines.last, "warning: GPIO controls were stopped and do not start again")
    }

    func testControlsNeverRunReleaseTheLines() throws {
        let source = ScriptedLineEventSource(edges: [], end: 1)
        var gpio: GPIOControls? = try GPIOControls([.button("play", line: buttonLine(17), .init(press: Command("togglePlayPause")))], source: source)
        XCTAssertTrue(source.isOpen)
        XCTAssertNotNil(gpio)
        gpio = nil
        XCTAssertFalse(source.isOpen)
    }

    func testNoControlsAtAll() throws {
        let gpio = try GPIOControls([], source: ScriptedLineEventSource(edges: [], end: 1))
        let log = TestLog()
        let running = RunningPlugIn(gpio, on: TestControlPlane(), log: log.log)
        XCTAssertTrue(log.waitFor("no GPIO controls"))
        XCTAssertFalse(running.waitForEnd(timeout: 0.1), "it runs until the daemon stops")
        XCTAssertLessThan(running.stop(), 5)
        XCTAssertEqual(log.lines, ["info: no GPIO controls to watch"])
        XCTAssertEqual(gpio.name, "GPIO controls (none)")
    }

    /// A command the control plane refuses is logged in one line, and the others go on.
    func testADisabledCommandIsLoggedAndTheNextOneSent() throws {
        let controls: [GPIOControl] = [
            .button("next", line: buttonLine(27), .init(press: Command("nextTrack"))),
            .button("play", line: buttonLine(17), .init(press: Command("togglePlayPause"))),
        ]
        let source = ScriptedLineEventSource(
            initial: idle([17, 27]), edges: [press(27, at: 1), release(27, at: 1.1), press(17, at: 2), release(17, at: 2.1)], end: 3)
        let gpio = try GPIOControls(controls, source: source)
        let plane = TestControlPlane()
        plane.disable([.nextTrack])
        let log = TestLog()
        let running = RunningPlugIn(gpio, on: plane, log: log.log)
        XCTAssertEqual(plane.waitForCommands(2), [Command("nextTrack"), Command("togglePlayPause")])
        running.stop()
        XCTAssertEqual(log.texts(at: .notice), ["button next (gpiochip0 line 27): nextTrack is disabled now; ignored"])
        XCTAssertEqual(plane.received.map(\.source), ["button next (gpiochip0 line 27)", "button play (gpiochip0 line 17)"])
    }
}
