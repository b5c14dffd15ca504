import TestSupport
import TonearmControlPlane
import TonearmPlayer
@testable import TonearmSerial
import XCTest

final class NextionTests: XCTestCase {
    static let touch = [
        NextionTouch(page: 0, component: 1, command: Command("previousTrack")),
        NextionTouch(page: 0, component: 2, command: Command("togglePlayPause")),
        NextionTouch(page: 0, component: 3, command: Command("nextTrack")),
        NextionTouch(page: 0, component: 4, command: Command("seekForward")),
        NextionTouch(page: 1, component: 5, command: Command("stop")),
    ]

    static let start: [UInt8] = [0xFF, 0xFF, 0xFF] + nextion(
        #"title.txt="So What""#, #"artist.txt="Miles Davis""#, #"album.txt="Kind of Blue""#, #"state.txt="playing""#,
        #"queue.txt="1/5""#, "volume.val=40", "mute.val=0", "duration.val=562", "elapsed.val=0", "clock.en=1",
        "tsw 1,1", "tsw 2,1", "tsw 3,1", "tsw 4,0")

    private let withoutPrevious: [RemoteCommand] = [.play, .pause, .togglePlayPause, .stop, .nextTrack, .changePlaybackPosition]

    func testScriptedSessionSendsOnlyWhatChanged() {
        var driver = NextionDriver(settings: NextionSettings(touch: Self.touch))
        XCTAssertEqual(readable(driver.start(trackState(), now: 1000)), readable(Self.start))

        XCTAssertEqual(
            readable(driver.update(trackState(.paused, elapsed: 12.25, timestamp: 1012.25), now: 1012.25)),
            readable(nextion(#"state.txt="paused""#, "elapsed.val=12", "clock.en=0")))
        XCTAssertEqual(driver.update(trackState(.paused, elapsed: 12.25, timestamp: 1012.25), now: 1013), [])
        XCTAssertEqual(
            readable(driver.update(trackState(.paused, elapsed: 100, timestamp: 1020), now: 1020)),
            readable(nextion("elapsed.val=100")))
        XCTAssertEqual(
            readable(driver.update(trackState(.playing, elapsed: 100, timestamp: 1030), now: 1030)),
            readable(nextion(#"state.txt="playing""#, "elapsed.val=100", "clock.en=1")))
        XCTAssertEqual(driver.update(trackState(.playing, elapsed: 110, timestamp: 1040), now: 1040.2), [],
                       "the display's timer keeps the clock: nothing every second")
        let next = trackState(title: "Freddie Freeloader", duration: 589, elapsed: 0, timestamp: 1040.5, index: 1, enabled: withoutPrevious)
        XCTAssertEqual(
            readable(driver.update(next, now: 1041.7)),
            readable(nextion(#"title.txt="Freddie Freeloader""#, #"queue.txt="2/5""#, "duration.val=589", "elapsed.val=1", "tsw 1,0")),
            "whole seconds as of sending; previousTrack's button stops taking touches")
        var muted = next
        (muted.volume, muted.muted, muted.nowPlaying.duration) = (0, true, nil)
        XCTAssertEqual(readable(driver.update(muted, now: 1042)), readable(nextion("volume.val=0", "mute.val=1", "duration.val=0", "elapsed.val=1")),
                       "a new duration is a new trajectory: elapsed again")
    }

    func testTextsAreEscapedEncodedAndSentToTheConfiguredComponents() {
        var components = NextionSettings.defaultComponents
        (components[.title], components[.artist], components[.album]) = ("t0", "", "main.t2")
        var latin1 = NextionDriver(settings: NextionSettings(components: components))
        _ = latin1.start(ControlState(), now: 0)
        let state = textState(title: #"Say "Hi" \ Café…ÿŸ 東"#, artist: "not sent", album: "a\nb")
        XCTAssertEqual(
            readable(latin1.update(state, now: 0)),
            readable(Array(#"t0.txt="Say \"Hi\" \\ Caf"#.utf8) + [0xE9] + Array(#"...yY ?""#.utf8) + [0xFF, 0xFF, 0xFF]
                + nextion(#"main.t2.txt="a b""#)))

        var utf8 = NextionDriver(settings: NextionSettings(components: components, encoding: .utf8))
        _ = utf8.start(ControlState(), now: 0)
        XCTAssertEqual(readable(utf8.update(textState(title: "Café 東"), now: 0)), readable(nextion(#"t0.txt="Café 東""#)))

        let long = utf8.update(textState(title: String(repeating: "é", count: 300)), now: 0)
        let text = long.dropFirst(#"t0.txt=""#.utf8.count).dropLast(4)
        XCTAssertEqual(text.count, 254, "cut to 255 bytes, not inside a character")
        XCTAssertEqual(String(validating: text, as: UTF8.self), String(repeating: "é", count: 127))
    }

    func testTouchEventsBecomeCommands() {
        var driver = NextionDriver(settings: NextionSettings(touch: Self.touch))
        XCTAssertEqual(driver.receive([0x65, 0, 3, 1, 0xFF, 0xFF, 0xFF]), [.command(Command("nextTrack"))])
        XCTAssertEqual(driver.receive([0x65, 0, 3, 0, 0xFF, 0xFF, 0xFF]), [], "a release does nothing")
        XCTAssertEqual(driver.receive([0x65, 0, 4, 1, 0xFF, 0xFF, 0xFF, 0x65, 0, 4, 0, 0xFF, 0xFF, 0xFF]),
                       [.command(Command("seekForward begin")), .command(Command("seekForward end"))])
        XCTAssertEqual(driver.receive([0x65, 0, 9, 1, 0xFF, 0xFF, 0xFF]), [], "not in the map")
        XCTAssertEqual(driver.receive([0x65, 1, 5, 1, 0xFF]), [], "half a frame waits")
        XCTAssertEqual(driver.receive([0xFF, 0xFF]), [.command(Command("stop"))])
    }

    func testOtherReturnDataIsParsedAndIgnored() {
        let frames: [([UInt8], NextionEvent)] = [
            ([0x00], .returnCode(0x00)), ([0x00, 0x00, 0x00], .startup), ([0x01], .returnCode(0x01)),
            ([0x1A], .returnCode(0x1A)), ([0x24], .returnCode(0x24)), ([0x86], .sleep), ([0x87], .wake),
            ([0x89], .upgrade), ([0xFD], .returnCode(0xFD)), ([0xFE], .returnCode(0xFE)),
            ([0x70, 0x61, 0x62], .string([0x61, 0x62])), ([0x71, 0x2A, 0x00, 0x00, 0x00], .number(42)),
            ([0x71, 0xFE, 0xFF, 0xFF, 0xFF], .number(-2)),
            ([0x67, 0x01, 0x02, 0x00, 0x30, 0x01], .touchCoordinates(x: 0x102, y: 0x30, pressed: true)),
            ([0x68, 0x00, 0x10, 0x00, 0x20, 0x00], .touchCoordinates(x: 0x10, y: 0x20, pressed: false)),
            ([0x65, 0x00, 0x03], .garbage), ([0x42, 0x43], .garbage),
        ]
        for (body, event) in frames {
            XCTAssertEqual(NextionDriver.event(body[...]), event, readable(body))
        }
        var driver = NextionDriver(settings: NextionSettings(touch: Self.touch))
        let terminator: [UInt8] = [0xFF, 0xFF, 0xFF]
        var stream: [UInt8] = frames.filter { $0.0.first != 0x71 }.flatMap { $0.0 + terminator }
        stream += [0x71, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]  // -1: its terminator cannot be told apart, and nothing breaks
        XCTAssertEqual(driver.receive(stream), [])
        XCTAssertEqual(driver.receive([0x65, 0, 2, 1, 0xFF, 0xFF, 0xFF]), [.command(Command("togglePlayPause"))], "still in step")
    }

    func testPageReportsAndRestartsSendEverythingAgain() {
        var driver = NextionDriver(settings: NextionSettings(touch: Self.touch))
        _ = driver.start(trackState(), now: 1000)
        XCTAssertEqual(driver.receive([0x66, 0x01, 0xFF, 0xFF, 0xFF]), [.resend])
        XCTAssertEqual(driver.page, 1)
        let page1 = driver.start(trackState(), now: 1000)
        XCTAssertEqual(readable(Array(page1.suffix(10))), readable(nextion("tsw 5,1")), "page 1's buttons, not page 0's")
        XCTAssertEqual(page1.count, Self.start.count - 4 * 10 + 10)
        XCTAssertEqual(driver.receive([0x88, 0xFF, 0xFF, 0xFF]), [.resend], "the display restarted")
        XCTAssertEqual(driver.page, 0)
        XCTAssertEqual(driver.start(trackState(), now: 1000), Self.start)
    }

    func testGarbageIsSkippedToTheNextTerminatorWithinBoundedMemory() {
        var driver = NextionDriver(settings: NextionSettings(touch: Self.touch))
        XCTAssertEqual(driver.receive([0x12, 0x34, 0x56, 0x65, 0, 3, 1, 0xFF, 0xFF, 0xFF]), [.command(Command("nextTrack"))],
                       "a touch right after garbage")
        XCTAssertEqual(driver.receive([0x12, 0x34, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x65, 0, 1, 1, 0xFF, 0xFF, 0xFF]),
                       [.command(Command("previousTrack"))], "stray terminator bytes")
        let garbage = randomBytes(1 << 20, seed: 7)
        XCTAssertEqual(driver.receive(garbage), [])
        XCTAssertLessThanOrEqual(driver.bufferedByteCount, NextionDriver.maxFrameBytes)
        XCTAssertEqual(driver.receive([0x65, 0, 2, 1, 0xFF, 0xFF, 0xFF]), [.command(Command("togglePlayPause"))])
    }

    func testSettingsThatCannotWorkAreRefused() throws {
        let port = SerialPortSettings(path: "/dev/ttyUSB0")
        var components = NextionSettings.defaultComponents
        components[.title] = #"t0.txt="x""#
        XCTAssertThrowsError(try SerialDisplay(settings: SerialDisplaySettings(port: port, driver: .nextion(NextionSettings(components: components))))) {
            XCTAssertEqual("\($0)", #"nextion display on /dev/ttyUSB0: component 't0.txt="x"' for title is not a component name (letters, digits, '_' and '.')"#)
        }
        let twice = Self.touch + [NextionTouch(page: 0, component: 3, command: Command("play"))]
        XCTAssertThrowsError(try SerialDisplay(settings: SerialDisplaySettings(port: port, driver: .nextion(NextionSettings(touch: twice))))) {
            XCTAssertEqual("\($0)", "nextion display on /dev/ttyUSB0: touch 0.3 is mapped twice")
        }
        XCTAssertThrowsError(try SerialDisplay(settings: SerialDisplaySettings(port: port, driver: .hd44780(HD44780Settings(columns: 24, rows: 2))))) {
            XCTAssertEqual("\($0)", "hd44780 display on /dev/ttyUSB0: 24×2 is not supported (16 or 20 columns, 2 or 4 rows)")
        }
        XCTAssertEqual(NextionTouch(key: "0.3", command: Command("nextTrack")), NextionTouch(page: 0, component: 3, command: Command("nextTrack")))
        for key in ["0.256", "a.b", "1", "1.2.3", ".3", "-1.2"] {
            XCTAssertNil(NextionTouch(key: key, command: Command("play")), key)
        }
    }

    func testSessionOverAPseudoTerminal() throws {
        let pty = try PseudoTerminal()
        let clock = TestClock(1000)
        let display = try SerialDisplay(
            settings: SerialDisplaySettings(
                port: SerialPortSettings(path: pty.slavePath, baudRate: 9600), driver: .nextion(NextionSettings(touch: Self.touch))),
            clock: { clock.now })
        let recorder = Recorder()
        recorder.show(trackState())
        let running = recorder.start(display)
        defer { running.stop() }
        XCTAssertEqual(readable(pty.take(Self.start.count)), readable(Self.start))

        clock.set(1012.25)
        recorder.show(trackState(.paused, elapsed: 12.25, timestamp: 1012.25))
        let paused = nextion(#"state.txt="paused""#, "elapsed.val=12", "clock.en=0")
        XCTAssertEqual(readable(pty.take(paused.count)), readable(paused))

        clock.set(1030)
        recorder.show(trackState(title: "Freddie Freeloader", duration: 589, elapsed: 0, timestamp: 1030, index: 1, enabled: withoutPrevious))
        let next = nextion(#"title.txt="Freddie Freeloader""#, #"state.txt="playing""#, #"queue.txt="2/5""#, "duration.val=589",
                           "elapsed.val=0", "clock.en=1", "tsw 1,0")
        XCTAssertEqual(readable(pty.take(next.count)), readable(next))

        // Touches, amid return data the driver ignores and a little noise.
        pty.write([0x65, 0, 2, 1, 0xFF, 0xFF, 0xFF, 0x1A, 0xFF, 0xFF, 0xFF, 0x65, 0, 2, 0, 0xFF, 0xFF, 0xFF])
        pty.write([0x71, 1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0x13, 0x37, 0x65, 0, 3, 1, 0xFF, 0xFF, 0xFF, 0x86, 0xFF, 0xFF, 0xFF])
        pty.write([0x65, 0, 4, 1, 0xFF, 0xFF, 0xFF, 0x65, 0, 4, 0, 0xFF, 0xFF, 0xFF])
        XCTAssertEqual(recorder.waitForCommands(4), [
            Command("togglePlayPause"), Command("nextTrack"), Command("seekForward begin"),
            Command("seekForward end"),
        ])

        // The display reports page 1: it gets everything again, with page 1's buttons.
        clock.set(1040.5)
        pty.write([0x66, 1, 0xFF, 0xFF, 0xFF])
        let page1: [UInt8] = [0xFF, 0xFF, 0xFF] + nextion(
            #"title.txt="Freddie Freeloader""#, #"artist.txt="Miles Davis""#, #"album.txt="Kind of Blue""#, #"state.txt="playing""#,
            #"queue.txt="2/5""#, "volume.val=40", "mute.val=0", "duration.val=589", "elapsed.val=10", "clock.en=1", "tsw 5,1")
        XCTAssertEqual(readable(pty.take(page1.count)), readable(page1))
        XCTAssertEqual(readable(pty.takeAll()), "", "nothing else")
        XCTAssertEqual(recorder.commands.count, 4)
    }
}
