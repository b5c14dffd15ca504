import TestSupport
import TonearmControlPlane
import TonearmPlayer
@testable import TonearmSerial
import XCTest

/// A SerLCD backpack and its HD44780, as far as the driver may use them: it records the
/// screen and every byte the real one would not take as the driver means it.
struct SerLCDScreen {
    let columns: Int
    let rows: Int
    var ddram = [UInt8](repeating: 0x20, count: 0x80)
    var address = 0
    var settings: [UInt8] = []
    var instructions: [UInt8] = []
    var faults: [String] = []
    private var prefix: UInt8?

    init(columns: Int, rows: Int) {
        self.columns = columns
        self.rows = rows
    }

    mutating func feed(_ bytes: [UInt8]) {
        for byte in bytes {
            switch prefix {
            case 0xFE:
                instructions.append(byte)
                if byte == 0x01 {
                    ddram = [UInt8](repeating: 0x20, count: 0x80)
                    address = 0
                } else if byte & 0x80 != 0 {
                    address = Int(byte & 0x7F)
                } else if byte != 0x0C {
                    faults.append("instruction \(byte)")
                }
                prefix = nil
            case 0x7C:
                settings.append(byte)
                if ![0x03, 0x04, 0x05, 0x06].contains(byte) { faults.append("setting \(byte)") }
                prefix = nil
            default:
                if byte == 0xFE || byte == 0x7C {
                    prefix = byte
                } else {
                    if !(0x20...0x7D).contains(byte) || byte == 0x5C { faults.append("character \(byte) is not in the ROM's ASCII") }
                    ddram[address] = byte
                    // The HD44780's two-line address counter: 0x00…0x27, then 0x40…0x67.
                    address = address == 0x27 ? 0x40 : address == 0x67 ? 0x00 : address + 1
                }
            }
        }
    }

    func row(_ row: Int) -> String {
        let start = [0x00, 0x40, columns, 0x40 + columns][row]
        return String(decoding: ddram[start..<start + columns], as: UTF8.self)
    }

    var lines: [String] { (0..<rows).map(row) }
}

final class HD44780Tests: XCTestCase {
    private let enabled: [RemoteCommand] = [.play, .pause, .togglePlayPause, .stop, .nextTrack, .previousTrack]

    func testScriptedSessionOnA16x2() {
        var lcd = HD44780Driver(settings: HD44780Settings(columns: 16, rows: 2))
        var screen = SerLCDScreen(columns: 16, rows: 2)
        func feed(_ bytes: [UInt8]) -> [UInt8] {
            screen.feed(bytes)
            return bytes
        }

        let start = feed(lcd.start(trackState(), now: 1000))
        XCTAssertEqual(
            readable(start),
            readable(bytes([0x7C, 0x04, 0x7C, 0x06, 0xFE, 0x0C, 0xFE, 0x01, 0xFE, 0x80], ascii("So What - Miles"),
                           [0xFE, 0xC0], ascii("> 0:00/9:22"), [0xFE, 0xCE], ascii("<>"))))
        XCTAssertEqual(screen.lines, ["So What - Miles ", "> 0:00/9:22   <>"])
        XCTAssertEqual(lcd.nextTick, 1000.4, "the first scroll step")

        XCTAssertEqual(lcd.tick(now: 1000.4), [], "a long text stands still first")
        XCTAssertEqual(lcd.nextTick!, 1000.8, accuracy: 1e-9)
        XCTAssertEqual(feed(lcd.tick(now: 1001)), [0xFE, 0xC5, UInt8(ascii: "1")], "one second: one digit")
        XCTAssertEqual(feed(lcd.tick(now: 1001.6)), [0xFE, 0x80] + Array("o What - Miles D".utf8), "the first step")
        XCTAssertEqual(feed(lcd.tick(now: 1002.0)), [0xFE, 0x80] + Array(" What - Miles Da".utf8) + [0xFE, 0xC5, UInt8(ascii: "2")])

        // Paused: the glyph, nothing else (the clock already shows 0:02).
        let paused = trackState(.paused, elapsed: 2.3, timestamp: 1002.3)
        XCTAssertEqual(feed(lcd.update(paused, now: 1002.3)), [0xFE, 0xC0, UInt8(ascii: "\"")])
        XCTAssertEqual(lcd.update(paused, now: 1002.35), [], "nothing changed")

        // Sought while paused: the clock at once, an event is not a tick.
        XCTAssertEqual(feed(lcd.update(trackState(.paused, elapsed: 75.5, timestamp: 1002.38), now: 1002.38)),
                       [0xFE, 0xC2] + Array("1:15".utf8))

        // The next track, with previousTrack disabled: its text starts over, no '<'.
        let next = trackState(title: "Blue in Green", artist: nil, duration: 337, elapsed: 0, timestamp: 1003, index: 1,
                              enabled: enabled.filter { $0 != .previousTrack })
        _ = feed(lcd.update(next, now: 1003))
        XCTAssertEqual(screen.lines, ["Blue in Green   ", "> 0:00/5:37    >"])
        XCTAssertEqual(screen.faults, [])

        let stopped = trackState(.stopped, title: "Blue in Green", artist: nil, album: nil, duration: nil, index: 1, enabled: [])
        _ = feed(lcd.update(stopped, now: 1010))
        XCTAssertEqual(screen.lines, ["Blue in Green   ", "#               "], "no clock and no arrows when stopped with nothing enabled")
        XCTAssertNil(lcd.nextTick, "nothing to tick")
    }

    func testTwentyByFourRowsAndTheirAddresses() {
        var lcd = HD44780Driver(settings: HD44780Settings(columns: 20, rows: 4))
        let start = lcd.start(trackState(duration: 3725, elapsed: 3599.5, timestamp: 1000), now: 1000)
        XCTAssertEqual(
            readable(start),
            readable(bytes([0x7C, 0x03, 0x7C, 0x05, 0xFE, 0x0C, 0xFE, 0x01, 0xFE, 0x80], ascii("So What"),
                           [0xFE, 0xC0], ascii("Miles Davis"), [0xFE, 0x94], ascii("Kind of Blue"),
                           [0xFE, 0xD4], ascii("> 59:59/1:02:05"), [0xFE, 0xE6], ascii("<>"))))
        var screen = SerLCDScreen(columns: 20, rows: 4)
        screen.feed(start)
        screen.feed(lcd.tick(now: 1001))
        XCTAssertEqual(screen.lines, ["So What             ", "Miles Davis         ", "Kind of Blue        ", "> 1:00:00/1:02:05 <>"])

        var narrow = HD44780Driver(settings: HD44780Settings(columns: 16, rows: 2))
        screen = SerLCDScreen(columns: 16, rows: 2)
        screen.feed(narrow.start(trackState(.paused, duration: 3725, elapsed: 3600, timestamp: 0), now: 0))
        XCTAssertEqual(screen.row(1), "\" 1:00:00     <>", "elapsed alone when both do not fit")

        var quiet = HD44780Driver(settings: HD44780Settings(columns: 20, rows: 4, configureBackpack: false))
        XCTAssertEqual(Array(quiet.start(ControlState(), now: 0).prefix(4)), [0xFE, 0x0C, 0xFE, 0x01])
    }

    func testTheClockTicksAtMostOnceASecondAndScrollingEveryPointFour() {
        var lcd = HD44780Driver(settings: HD44780Settings(columns: 16, rows: 2))
        var screen = SerLCDScreen(columns: 16, rows: 2)
        let state = trackState(title: "A title that is far too long for sixteen columns", elapsed: 10.7, timestamp: 1000)
        screen.feed(lcd.start(state, now: 1000))
        var now = 1000.0
        var clockChanges: [Double] = [now], scrollChanges: [Double] = [now]  // drawn at start
        var (clock, text) = (screen.row(1), screen.row(0))
        var ticks = 0
        while let due = lcd.nextTick, due < 1030 {
            XCTAssertGreaterThan(due, now, "always later")
            now = due
            screen.feed(lcd.tick(now: now))
            ticks += 1
            if screen.row(1) != clock { clockChanges.append(now) }
            if screen.row(0) != text { scrollChanges.append(now) }
            (clock, text) = (screen.row(1), screen.row(0))
            // What the clock shows was right when it was drawn, and is never a second behind.
            let shown = screen.row(1).dropFirst(2).prefix(4)
            let truth = Int(state.nowPlaying.elapsed(at: now) + 1e-6)
            XCTAssertTrue(shown == clockText(Double(truth)) || shown == clockText(Double(truth - 1)), "\(shown) at \(truth)")
        }
        XCTAssertLessThan(ticks, 110, "no busy ticking")
        XCTAssertEqual(clockChanges.count, 30, "drawn, then once a second for 29 s")
        XCTAssertTrue(zip(clockChanges, clockChanges.dropFirst()).allSatisfy { $1 - $0 >= 1 - 1e-9 })
        XCTAssertGreaterThan(scrollChanges.count, 50)
        XCTAssertTrue(zip(scrollChanges, scrollChanges.dropFirst()).allSatisfy { $1 - $0 >= 0.4 - 1e-9 })
        XCTAssertEqual(screen.faults, [])
    }

    func testTextOutsideTheROMIsTransliterated() {
        var lcd = HD44780Driver(settings: HD44780Settings(columns: 20, rows: 4))
        var screen = SerLCDScreen(columns: 20, rows: 4)
        let state = textState(title: "Café Ünïcødé – “Ok”", artist: "a|b\\c~d 東京 Straße", album: "Ḿ\u{301}\ttab")
        screen.feed(lcd.start(state, now: 0))
        XCTAssertEqual(screen.faults, [], "every byte is one the LCD draws as ASCII")
        XCTAssertEqual(screen.row(0), "Cafe Unicode - \"Ok\" ")
        XCTAssertEqual(screen.row(1), "a!b/c-d ?? Strasse  ")
        XCTAssertEqual(screen.row(2), "? tab               ")
    }

    func testIgnoresWhatTheBackpackSends() {
        var lcd = HD44780Driver()
        XCTAssertEqual(lcd.receive(randomBytes(4096)), [])
    }

    /// Over a pty, the thread redraws the clock and scrolls by itself.
    func testTheThreadTicksTheClockOverAPseudoTerminal() throws {
        let pty = try PseudoTerminal()
        let clock = TestClock(1000)
        let display = try SerialDisplay(
            settings: SerialDisplaySettings(
                port: SerialPortSettings(path: pty.slavePath), driver: .hd44780(HD44780Settings(columns: 16, rows: 2))),
            clock: { clock.now })
        let recorder = Recorder()
        recorder.show(trackState())
        let running = recorder.start(display)
        defer { running.stop() }

        let start = bytes([0x7C, 0x04, 0x7C, 0x06, 0xFE, 0x0C, 0xFE, 0x01, 0xFE, 0x80], ascii("So What - Miles"),
                          [0xFE, 0xC0], ascii("> 0:00/9:22"), [0xFE, 0xCE], ascii("<>"))
        XCTAssertEqual(readable(pty.take(start.count)), readable(start))

        clock.set(1001)
        XCTAssertEqual(pty.take(3, timeout: 2), [0xFE, 0xC5, UInt8(ascii: "1")], "the clock, from the thread")
        clock.set(1001.6)
        XCTAssertEqual(readable(pty.take(18, timeout: 2)), readable([0xFE, 0x80] + Array("o What - Miles D".utf8)))

        pty.write(randomBytes(10_000))  // the backpack sends nothing; whatever comes is ignored
        recorder.show(trackState(.paused, elapsed: 1.7, timestamp: 1001.6))
        XCTAssertEqual(pty.take(3, timeout: 2), [0xFE, 0xC0, UInt8(ascii: "\"")])
        XCTAssertEqual(readable(pty.takeAll(quiet: 0.5)), "", "paused and not advanced: nothing to redraw")
        XCTAssertEqual(recorder.commands, [])
        XCTAssertEqual(display.statistics.bytesRead, 10_000)
    }
}
