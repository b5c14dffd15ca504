import TestSupport
import TonearmControlPlane
import TonearmPlayer
@testable import TonearmSerial
import XCTest

final class LineProtocolTests: XCTestCase {
    /// What `start` sends for `trackState()` at its timestamp.
    static let startLines = [
        "hello tonearm 1",
        "state playing",
        "title So What",
        "artist Miles Davis",
        "album Kind of Blue",
        "queue 1 5",
        "volume 40",
        "mute off",
        "clock 0.000 1.000 562.000",
        "command play enabled",
        "command pause enabled",
        "command togglePlayPause enabled",
        "command stop enabled",
        "command nextTrack enabled",
        "command previousTrack enabled",
        "command skipForward disabled",
        "command skipBackward disabled",
        "command seekForward disabled",
        "command seekBackward disabled",
        "command changePlaybackPosition enabled",
        "command changeRepeatMode disabled",
        "command changeShuffleMode disabled",
        "command volumeUp enabled",
        "command volumeDown enabled",
        "command setVolume enabled",
        "command toggleMute enabled",
        "command muteOn enabled",
        "command muteOff enabled",
        "command ignitionOn enabled",
        "command ignitionOff enabled",
        "end",
    ]

    private func text(_ lines: [String]) -> String { lines.map { $0 + "\n" }.joined() }
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// A track starts, pauses, is sought, resumes; the next track has previousTrack disabled.
    func testScriptedSessionSendsOnlyWhatChanged() {
        var driver = LineProtocolDriver()
        XCTAssertEqual(text(driver.start(trackState(), now: 1000)), text(Self.startLines))

        let paused = trackState(.paused, elapsed: 12.25, timestamp: 1012.25)
        XCTAssertEqual(text(driver.update(paused, now: 1012.25)), text(["state paused", "clock 12.250 0.000 562.000", "end"]))
        XCTAssertEqual(driver.update(paused, now: 1015), [], "nothing changed, nothing sent")
        var republished = paused
        republished.nowPlaying.timestamp = 1020
        XCTAssertEqual(driver.update(republished, now: 1020), [], "the same position, anchored later")

        let sought = trackState(.paused, elapsed: 100, timestamp: 1021)
        XCTAssertEqual(text(driver.update(sought, now: 1021)), text(["clock 100.000 0.000 562.000", "end"]))

        let resumed = trackState(.playing, elapsed: 100, timestamp: 1030)
        XCTAssertEqual(text(driver.update(resumed, now: 1030)), text(["state playing", "clock 100.000 1.000 562.000", "end"]))
        var later = resumed
        (later.nowPlaying.elapsed, later.nowPlaying.timestamp) = (105, 1035)
        XCTAssertEqual(driver.update(later, now: 1035.5), [], "the display's clock is still right")

        let next = trackState(
            title: "Freddie Freeloader", duration: 589, elapsed: 0, timestamp: 1040, index: 1,
            enabled: [.play, .pause, .togglePlayPause, .stop, .nextTrack, .changePlaybackPosition])
        XCTAssertEqual(
            text(driver.update(next, now: 1040.5)),
            text(["title Freddie Freeloader", "queue 2 5", "clock 0.500 1.000 589.000", "command previousTrack disabled", "end"]),
            "elapsed is as of the moment of sending")

        var louder = next
        (louder.volume, louder.muted) = (55.4, true)
        XCTAssertEqual(text(driver.update(louder, now: 1041)), text(["volume 55", "mute on", "end"]))

        let stopped = ControlState()
        XCTAssertEqual(
            text(driver.update(stopped, now: 1050)),
            text(["state stopped", "title", "artist", "album", "queue - 0", "volume 100", "mute off", "clock 0.000 0.000 -"]
                + ["play", "pause", "togglePlayPause", "stop", "nextTrack", "changePlaybackPosition"].map { "command \($0) disabled" }
                + ["end"]))
    }

    func testTextsAreEscapedAndCutToTheLineLimit() {
        var driver = LineProtocolDriver()
        _ = driver.start(ControlState(), now: 0)
        var state = textState(title: "A\\B\nC\r\tD\u{1}\u{7F} é “x”")
        XCTAssertEqual(text(driver.update(state, now: 0)), "title A\\\\B\\nC\\r\\tD\\x01\\x7f é “x”\nend\n")

        state.nowPlaying.title = String(repeating: "ab", count: 200)
        state.nowPlaying.artist = String(repeating: "é", count: 200)
        let lines = text(driver.update(state, now: 0)).split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(lines[0], "title " + String(repeating: "ab", count: 124) + "a", "249 bytes of text: 256 with the LF")
        XCTAssertEqual(lines[1], "artist " + String(repeating: "é", count: 124), "cut on a character boundary")
        XCTAssertTrue(lines.allSatisfy { $0.utf8.count + 1 <= LineProtocol.maxLineBytes })
    }

    private func commands(_ input: String) -> [DisplayInput] {
        var driver = LineProtocolDriver()
        return driver.receive(Array(input.utf8))
    }

    private func reply(_ text: String) -> DisplayInput { .reply(Array(text.utf8)) }

    func testDecodesCommandsByName() {
        let cases: [(String, Command)] = [
            ("togglePlayPause", .remote(CommandRequest(.togglePlayPause))),
            ("nextTrack", .remote(CommandRequest(.nextTrack))),
            ("skipForward 30", .remote(CommandRequest(.skipForward, interval: 30))),
            ("skipBackward", .remote(CommandRequest(.skipBackward))),
            ("changePlaybackPosition 42.5", .remote(CommandRequest(.changePlaybackPosition, position: 42.5))),
            ("changePlaybackPosition 0", .remote(CommandRequest(.changePlaybackPosition, position: 0))),
            ("setVolume 40", .volume(.set(40))),
            ("volumeUp 10", .volume(.step(10))),
            ("volumeDown", .volume(.step(-5))),
            ("seekForward begin", .remote(CommandRequest(.seekForward, scanning: .begin))),
            ("seekBackward end", .remote(CommandRequest(.seekBackward, scanning: .end))),
            ("changeRepeatMode all", .remote(CommandRequest(.changeRepeatMode, repeatMode: .all))),
            ("changeRepeatMode", .remote(CommandRequest(.changeRepeatMode))),
            ("changeShuffleMode off", .remote(CommandRequest(.changeShuffleMode, shuffle: false))),
            ("  \tmuteOn  ", .mute(.on)),
            ("toggleMute", .mute(.toggle)),
            ("ignitionOff\r", .ignition(on: false)),
            // The control socket's aliases are the same commands.
            ("next", .remote(CommandRequest(.nextTrack))),
            ("toggle", .remote(CommandRequest(.togglePlayPause))),
        ]
        for (line, command) in cases {
            XCTAssertEqual(commands(line + "\n"), [.command(command)], line)
        }
        XCTAssertEqual(commands("hello\nping\n\n   \n\r\n"), [.resend, reply("pong\n")], "blank lines are ignored")

        var driver = LineProtocolDriver()
        XCTAssertEqual(driver.receive(Array("skipFor".utf8)), [], "half a line waits for the rest")
        XCTAssertEqual(driver.receive(Array("ward 15\npla".utf8)), [.command(Command("skipForward 15"))])
        XCTAssertEqual(driver.receive(Array("y\n".utf8)), [.command(Command("play"))])
    }

    func testAnswersLinesItCannotUseAndIgnoresThem() {
        let cases: [(String, String)] = [
            ("frobnicate", "error unknownCommand frobnicate"),
            ("Play", "error unknownCommand Play"),
            (String(repeating: "x", count: 40), "error unknownCommand " + String(repeating: "x", count: 32)),
            ("setVolume 140", "error badArgument setVolume takes percent, 0 to 100"),
            ("setVolume", "error badArgument setVolume takes percent, 0 to 100"),
            ("setVolume -5", "error badArgument setVolume takes percent, 0 to 100"),
            ("setVolume 1e2", "error badArgument setVolume takes percent, 0 to 100"),
            ("setVolume nan", "error badArgument setVolume takes percent, 0 to 100"),
            ("setVolume 4.", "error badArgument setVolume takes percent, 0 to 100"),
            ("skipForward 0", "error badArgument skipForward takes seconds, more than 0 (optional)"),
            ("changePlaybackPosition", "error badArgument changePlaybackPosition takes a position in seconds, 0 or more"),
            ("play now", "error badArgument play takes no argument"),
            ("seekForward", "error badArgument seekForward takes begin or end"),
            ("changeRepeatMode sometimes", "error badArgument changeRepeatMode takes off, one or all (optional)"),
            ("changeShuffleMode on off", "error badArgument changeShuffleMode takes on or off (optional)"),
            ("volumeUp 0", "error badArgument volumeUp takes a step in percent, 1 to 100 (optional)"),
            ("hello there", "error unknownCommand hello"),
            ("play\u{1}", "error malformed"),
        ]
        for (line, answer) in cases {
            XCTAssertEqual(commands(line + "\n"), [reply(answer + "\n")], line)
        }
        var driver = LineProtocolDriver()
        XCTAssertEqual(driver.receive([0xFF, 0xFE, 0x41, 0x0A]), [reply("error malformed\n")], "not UTF-8")
        XCTAssertEqual(driver.receive(Array("stop\n".utf8)), [.command(Command("stop"))], "and the next line counts")
    }

    func testOverlongLinesAreDiscardedWithinBoundedMemory() {
        var driver = LineProtocolDriver()
        let longest = String(repeating: " ", count: LineProtocol.maxLineBytes - 5) + "play\n"
        XCTAssertEqual(longest.utf8.count, LineProtocol.maxLineBytes)
        XCTAssertEqual(driver.receive(Array(longest.utf8)), [.command(Command("play"))], "256 bytes with the LF fit")

        let tooLong = " " + longest
        XCTAssertEqual(driver.receive(Array(tooLong.utf8)), [reply("error lineTooLong\n")])

        // A megabyte without a line feed: held to one line's worth, then dropped at the LF.
        let garbage = randomBytes(1 << 20).map { $0 == 0x0A ? 0x20 : $0 }
        XCTAssertEqual(driver.receive(garbage), [])
        XCTAssertLessThan(driver.bufferedByteCount, LineProtocol.maxLineBytes)
        XCTAssertEqual(driver.receive(Array("\nnextTrack\n".utf8)), [reply("error lineTooLong\n"), .command(Command("nextTrack"))])
        XCTAssertEqual(driver.bufferedByteCount, 0)
    }

    /// The protocol over a real pty, through `SerialDisplay`.
    func testSessionOverAPseudoTerminal() throws {
        let pty = try PseudoTerminal()
        let clock = TestClock(1000)
        let display = try SerialDisplay(
            settings: SerialDisplaySettings(port: SerialPortSettings(path: pty.slavePath, baudRate: 115_200), driver: .line),
            clock: { clock.now })
        let recorder = Recorder()
        recorder.show(trackState())
        let running = recorder.start(display)
        defer { running.stop() }

        XCTAssertEqual(pty.takeLines(Self.startLines.count), Self.startLines)

        clock.set(1012.25)
        recorder.show(trackState(.paused, elapsed: 12.25, timestamp: 1012.25))
        XCTAssertEqual(pty.takeLines(3), ["state paused", "clock 12.250 0.000 562.000", "end"])

        clock.set(1020)
        recorder.show(trackState(.paused, elapsed: 100, timestamp: 1020))
        XCTAssertEqual(pty.takeLines(2), ["clock 100.000 0.000 562.000", "end"])

        clock.set(1030.5)
        recorder.show(trackState(
            title: "Freddie Freeloader", duration: 589, elapsed: 0, timestamp: 1030, index: 1,
            enabled: [.play, .pause, .togglePlayPause, .stop, .nextTrack, .changePlaybackPosition]))
        XCTAssertEqual(pty.takeLines(6), [
            "state playing", "title Freddie Freeloader", "queue 2 5", "clock 0.500 1.000 589.000",
            "command previousTrack disabled", "end",
        ])

        pty.write("togglePlayPause\nskipForward 30\r\nchangePlaybackPosition 42.5\nsetVolume 40\nseekForward begin\nseekForward end\n")
        pty.write("changeRepeatMode all\nnextTrack\n")
        XCTAssertEqual(recorder.waitForCommands(8), [
            Command("togglePlayPause"), Command("skipForward 30"),
            Command("changePlaybackPosition 42.5"), Command("setVolume 40"),
            Command("seekForward begin"), Command("seekForward end"),
            Command("changeRepeatMode all"), Command("nextTrack"),
        ])

        pty.write("frobnicate\nsetVolume 140\nping\n")
        XCTAssertEqual(pty.takeLines(3), [
            "error unknownCommand frobnicate", "error badArgument setVolume takes percent, 0 to 100", "pong",
        ])

        // The display restarted: everything again, as of now.
        clock.set(1040.5)
        pty.write("hello\n")
        var expected = Self.startLines
        expected[2] = "title Freddie Freeloader"
        expected[5] = "queue 2 5"
        expected[8] = "clock 10.500 1.000 589.000"
        expected[14] = "command previousTrack disabled"
        XCTAssertEqual(pty.takeLines(expected.count), expected)
        XCTAssertEqual(readable(pty.takeAll()), "", "nothing else")
        XCTAssertEqual(recorder.commands.count, 8, "errors and hello are not commands")
    }
}
