import TestSupport
import TonearmControlPlane
import TonearmPlayer
import TonearmSerial
import XCTest

#if canImport(Glibc)
import Glibc
#endif

final class SerialDisplayTests: XCTestCase {
    private func contains(_ haystack: [UInt8], _ needle: String) -> Bool { contains(haystack, Array(needle.utf8)) }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        haystack.withUnsafeBufferPointer { h in
            needle.withUnsafeBufferPointer { n in
                guard n.count > 0, n.count <= h.count else { return n.isEmpty }
                for i in 0...(h.count - n.count) where h[i] == n[0] {
                    var j = 1
                    while j < n.count && h[i + j] == n[j] { j += 1 }
                    if j == n.count { return true }
                }
                return false
            }
        }
    }

    /// A megabyte of random bytes from the display: the thread reads it all, keeps sending
    /// the latest state while it does, holds little memory, and decodes a good command after.
    private func checkGarbage(
        _ driver: SerialDisplaySettings.Driver, during: ([UInt8], Int) -> Bool, shows marker: ([UInt8]) -> Bool,
        command: [UInt8]?, expected: Command?, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let pty = try PseudoTerminal()
        let display = try SerialDisplay(settings: SerialDisplaySettings(port: SerialPortSettings(path: pty.slavePath, baudRate: 230_400), driver: driver))
        let recorder = Recorder()
        recorder.show(trackState(title: "Before", artist: nil))
        let running = recorder.start(display)
        defer { running.stop() }
        XCTAssertTrue(pty.read(until: { $0.count > 0 }), "the display starts", file: file, line: line)

        // The flood comes in sixteen bursts of 64 KiB; after each, a new state must come out.
        let garbage = randomBytes(1 << 20, seed: 42)
        let started = monotonicSeconds()
        var shown = 0
        for burst in stride(from: 0, to: garbage.count, by: 1 << 16) {
            XCTAssertEqual(pty.write(Array(garbage[burst..<burst + (1 << 16)]), timeout: 30), 1 << 16, "the thread reads", file: file, line: line)
            shown += 1
            recorder.show(trackState(title: "Track \(shown)", artist: nil, volume: Double(shown)))
            XCTAssertTrue(pty.read(until: { during($0, shown) }, timeout: 30), "state \(shown) goes out during the flood", file: file, line: line)
        }
        let flood = monotonicSeconds() - started
        recorder.show(trackState(title: "After the flood", artist: nil))
        XCTAssertTrue(pty.read(until: marker, timeout: 30), "the latest state still goes out", file: file, line: line)
        if let command, let expected {
            pty.write(command)
            XCTAssertEqual(recorder.waitForCommands(1, timeout: 30), [expected], "and a good command is decoded", file: file, line: line)
        }
        let total = monotonicSeconds() - started
        let statistics = display.statistics
        XCTAssertGreaterThanOrEqual(statistics.bytesRead, garbage.count, "every byte read: the thread kept up", file: file, line: line)
        print(String(format: "serial flood: 1 MiB in %.2f s, %.2f s to the decoded command", flood, total))
        XCTAssertLessThanOrEqual(statistics.largestPendingOutput, 2048, "output waits for one drawing and a few replies", file: file, line: line)
        XCTAssertEqual(statistics.commands, command == nil ? 0 : 1, "garbage is not a command", file: file, line: line)
        XCTAssertEqual(statistics.losses, 0, file: file, line: line)
    }

    func testGarbageDisturbsNothingOnTheLineProtocol() throws {
        var errors = 0
        try checkGarbage(
            .line, during: { bytes, n in self.contains(bytes, "volume \(n)\n") }, shows: { bytes in
                errors = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\nerror ").count - 1
                return self.contains(bytes, "title After the flood\n")
            },
            command: Array("\nnextTrack\n".utf8), expected: Command("nextTrack"))
        XCTAssertGreaterThan(errors, 0, "the display is told")
        XCTAssertLessThan(errors, 30, "but not flooded back: four answers a second")
    }

    func testGarbageDisturbsNothingOnANextion() throws {
        let touch = [NextionTouch(page: 0, component: 3, command: Command("nextTrack"))]
        try checkGarbage(
            .nextion(NextionSettings(touch: touch)), during: { bytes, n in self.contains(bytes, Array("volume.val=\(n)".utf8) + [0xFF]) }, shows: { self.contains($0, #"title.txt="After the flood""#) },
            command: [0x65, 0, 3, 1, 0xFF, 0xFF, 0xFF], expected: Command("nextTrack"))
    }

    func testGarbageDisturbsNothingOnAnLCD() throws {
        try checkGarbage(
            .hd44780(HD44780Settings(columns: 16, rows: 2)),
            during: { bytes, n in
                var screen = SerLCDScreen(columns: 16, rows: 2)
                screen.feed(bytes)
                return screen.row(0) == "Track \(n)".padding(toLength: 16, withPad: " ", startingAt: 0)
            },
            shows: { bytes in
                var screen = SerLCDScreen(columns: 16, rows: 2)
                screen.feed(bytes)
                return screen.row(0) == "After the flood "
            },
            command: nil, expected: nil)
    }

    /// A path missing at start, then a pty; that pty closed (its path cannot come back), then
    /// a new pty at the same path, as a udev symlink would do.
    func testReopensAPortThatDisappearsAndComesBack() throws {
        let directory = try TemporaryDirectory()
        let link = directory.file("ttyDISPLAY")
        let display = try SerialDisplay(
            settings: SerialDisplaySettings(port: SerialPortSettings(path: link), driver: .line, reopenInterval: 0.1))
        let recorder = Recorder()
        recorder.show(trackState(title: "First"))
        let running = recorder.start(display)
        defer { running.stop() }

        XCTAssertTrue(recorder.waitForLog(containing: "cannot open serial port \(link): No such file or directory; trying again every 0.1 s"))
        sleepSeconds(0.35)
        XCTAssertEqual(recorder.log.count, 1, "logged once, however many attempts: \(recorder.log)")

        let first = try PseudoTerminal()
        XCTAssertEqual(symlink(first.slavePath, link), 0)
        let everything = first.takeLines(LineProtocolTests.startLines.count)
        XCTAssertEqual(everything.first, "hello tonearm 1")
        XCTAssertEqual(everything[2], "title First")
        XCTAssertEqual(everything.last, "end")
        XCTAssertTrue(recorder.waitForLog(containing: "opened serial port \(link) for the line display at 9600 baud"))
        recorder.show(trackState(title: "Second"))
        XCTAssertEqual(first.takeLines(2), ["title Second", "end"])

        first.close()
        // Closed while nothing is written, the port hangs up; a read the close overtakes fails
        // with EIO instead: both are the port lost.
        XCTAssertTrue(recorder.waitForLog(containing: "line display lost: "))
        let loss = recorder.log.last ?? ""
        XCTAssertTrue(loss == "line display lost: serial port \(link) hung up; reopening every 0.1 s"
                      || (loss.hasPrefix("line display lost: cannot read from serial port \(link): ")
                          && loss.hasSuffix("; reopening every 0.1 s")), loss)
        recorder.show(trackState(title: "Third"))  // while it is gone: kept
        sleepSeconds(0.35)
        XCTAssertEqual(recorder.log.count, 3, "the loss once, not each failed reopen: \(recorder.log)")

        let second = try PseudoTerminal()
        XCTAssertEqual(unlink(link), 0)
        XCTAssertEqual(symlink(second.slavePath, link), 0)
        let again = second.takeLines(LineProtocolTests.startLines.count)
        XCTAssertEqual(again.first, "hello tonearm 1", "the whole state again")
        XCTAssertEqual(again.count > 2 ? again[2] : "", "title Third", "the latest")
        XCTAssertTrue(recorder.waitForLog(containing: "serial port \(link) is back: sending the line display everything again"))
        XCTAssertEqual(display.statistics.opens, 2)
        XCTAssertEqual(display.statistics.losses, 1)
        XCTAssertEqual(recorder.log.count, 4, "\(recorder.log)")
    }

    func testShowNeverWaitsForTheDisplay() throws {
        let pty = try PseudoTerminal()  // not read: the display stops taking bytes
        let display = try SerialDisplay(settings: SerialDisplaySettings(port: SerialPortSettings(path: pty.slavePath), driver: .line))
        let recorder = Recorder()
        let running = recorder.start(display)
        XCTAssertTrue(waitUntil(timeout: 30) { display.statistics.opens == 1 })

        let long = String(repeating: "x", count: 200)
        let count = 5000
        let started = monotonicSeconds()
        for n in 1...count { recorder.show(trackState(title: "\(n) \(long)")) }
        // Publishing a change only wakes the display: one that waited for the port, which
        // nobody reads, would never end; 30 s bound that hang.
        XCTAssertLessThan(monotonicSeconds() - started, 30, "publishing waited for the port")
        sleepSeconds(0.2)
        let statistics = display.statistics
        XCTAssertLessThan(statistics.bytesWritten, count * long.count / 4, "the port was full: the thread waited, not the daemon")
        XCTAssertLessThanOrEqual(statistics.largestPendingOutput, 2048, "and only the latest state waits")
        XCTAssertLessThan(statistics.states, count, "changes that come faster than snapshots are read are read once")

        XCTAssertTrue(pty.read(until: { self.contains($0, "title \(count) \(long)\nend\n") }, timeout: 30), "the latest state once the display reads")
        XCTAssertTrue(threadNames().contains("tonearm-display"))
        XCTAssertTrue(running.stop(timeout: 30).isFinite, "the thread waits on the port with no timer: only the stop wakes it")
        XCTAssertFalse(threadNames().contains("tonearm-display"), "joined")
    }

    /// A change of something the display does not show, or a change that is not one, reads a
    /// snapshot and sends nothing.
    func testOnlyWhatItShowsGoesOut() throws {
        let pty = try PseudoTerminal()
        let display = try SerialDisplay(settings: SerialDisplaySettings(port: SerialPortSettings(path: pty.slavePath), driver: .line))
        let recorder = Recorder()
        recorder.show(trackState())
        let running = recorder.start(display)
        defer { running.stop() }
        XCTAssertEqual(pty.takeLines(LineProtocolTests.startLines.count).last, "end")

        var state = trackState()
        state.queue.version = 7
        recorder.plane.publish(state, [.queue])
        recorder.plane.publish(state, [.mixer])
        XCTAssertTrue(waitUntil(timeout: 2) { recorder.plane.snapshotsRead >= 2 })
        XCTAssertEqual(readable(pty.takeAll(quiet: 0.3)), "", "the line protocol shows no queue version")
        recorder.plane.publish(state, [.sessions])  // not followed
        state.volume = 41
        recorder.plane.publish(state, [.mixer])
        XCTAssertEqual(pty.takeLines(2), ["volume 41", "end"])
        XCTAssertEqual(Set(SerialDisplay.subsystems), [.player, .mixer, .options, .queue])
    }

    func testStopIsPromptAndARunIsOneAtATime() throws {
        let display = try SerialDisplay(
            settings: SerialDisplaySettings(port: SerialPortSettings(path: "/nonexistent/ttyS9"), driver: .hd44780(HD44780Settings())))
        let recorder = Recorder()
        let early = try SerialDisplay(settings: SerialDisplaySettings(port: SerialPortSettings(path: "/nonexistent/ttyS8")))
        XCTAssertLessThan(recorder.start(early).stop(), 0.9, "stopped as it starts: not after its first attempt to open, a second later")
        XCTAssertFalse(threadNames().contains("tonearm-display"))

        let running = recorder.start(display)
        XCTAssertTrue(recorder.waitForLog(containing: "cannot open serial port /nonexistent/ttyS9: No such file or directory; trying again every 1 s"))
        XCTAssertTrue(recorder.start(display).waitForEnd(timeout: 1), "a second run at once does nothing")
        XCTAssertTrue(recorder.waitForLog(containing: "hd44780 display on /nonexistent/ttyS9 runs already"))
        XCTAssertLessThan(running.stop(), 0.9, "not after the next attempt to open, a second after the last")
        XCTAssertLessThan(running.stop(), 0.9)
        XCTAssertEqual(display.name, "hd44780 display on /nonexistent/ttyS9")
        XCTAssertFalse(threadNames().contains("tonearm-display"))

        // Run again (the daemon starts a plug-in again after it failed): it tries the port again.
        let again = recorder.start(display)
        XCTAssertTrue(waitUntil(timeout: 2) { recorder.log.filter { $0.contains("/nonexistent/ttyS9: No such file") }.count == 2 })
        again.stop()
    }
}
