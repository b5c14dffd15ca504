import Foundation
import TestSupport
import TonearmControlPlane
import TonearmInput
import XCTest

/// Devices that are missing, come later, go away, cannot be read or are not devices; and
/// stopping.
final class DeviceLifecycleTests: XCTestCase {
    override func setUpWithError() throws {
        guard MemoryLayout<Int>.size == 8 else { throw XCTSkip("the records here are the 64-bit layout") }
        signal(SIGPIPE, SIG_IGN)
    }

    func testADeviceMissingAtStartIsWaitedForAndReadWhenItAppears() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-input")
        let path = directory.file("event3")
        let recorder = Recorder()
        let source = InputEventSource(path: path, retryInterval: 0.1)
        let running = recorder.start(source)
        defer { running.stop() }

        usleep(350_000)  // three more attempts, none of them logged
        XCTAssertEqual(recorder.logs, ["input \(path): not there (No such file or directory); waiting for it"])
        XCTAssertEqual(recorder.logs(at: .warning).count, 1)

        _ = try FIFO(path)
        let writer = try FIFOWriter(path)
        try writer.write(press(keyNextSong))
        XCTAssertEqual(recorder.waitForCommands(1), [Command("nextTrack")])
        XCTAssertEqual(recorder.logs.last, "input \(path): opened")
    }

    func testAPatternReadsEveryDeviceItMatchesEvenLaterOnes() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-input")
        let pattern = directory.path + "/*-event-kbd"
        let recorder = Recorder()
        let source = InputEventSource(path: pattern, retryInterval: 0.1)
        XCTAssertEqual(source.name, "input \(pattern)")
        let running = recorder.start(source)
        defer { running.stop() }

        XCTAssertTrue(recorder.waitForLog(containing: "no device matches"))
        let keyboard = try FIFO(directory.file("usb-remote-event-kbd")).path
        let consumer = try FIFO(directory.file("usb-remote-if01-event-kbd")).path
        let mouse = try FIFO(directory.file("usb-remote-event-mouse")).path
        let keys = try FIFOWriter(keyboard)
        let media = try FIFOWriter(consumer)
        try keys.write(press(keyNextSong))
        XCTAssertEqual(recorder.waitForCommands(1), [Command("nextTrack")])
        try media.write(press(keyPlayPause))
        XCTAssertEqual(recorder.waitForCommands(2), [Command("nextTrack"), Command("togglePlayPause")])
        XCTAssertThrowsError(try FIFOWriter(mouse, timeout: 0.3), "a device the pattern does not match is not opened")

        // One of them goes and comes back; the other is read all along.
        keys.close()
        XCTAssertTrue(recorder.waitForLog(containing: "input \(keyboard): gone (end of file); waiting for it"))
        try media.write(press(keyVolumeUp))
        let again = try FIFOWriter(keyboard)
        try again.write(press(keyPreviousSong))
        let commands = recorder.waitForCommands(4)
        XCTAssertEqual(commands.count, 4, "\(commands)")
        XCTAssertEqual(Set(commands.suffix(2).map(\.description)), ["volumeUp 5", "previousTrack"])
        XCTAssertEqual(Set(recorder.plane.received.map(\.source)), ["input \(keyboard)", "input \(consumer)"], "each from its device")

        let logs = recorder.logs
        XCTAssertEqual(logs.filter { $0.contains("no device matches") }, ["input \(pattern): no device matches; waiting for one"])
        XCTAssertEqual(logs.filter { $0.hasSuffix("opened") }.count, 3, "\(logs)")
        XCTAssertFalse(logs.contains { $0.contains("event-mouse") }, "\(logs)")
    }

    func testStopWakesThePollAndEndsTheThreadPromptly() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-input")
        let before = threadNames().filter { $0 == "tonearm-input" }.count

        // An open FIFO: the thread waits in poll with no timeout. The retry interval is an
        // hour, so a stop that waited for a timeout or a retry instead of waking the thread
        // would not end within the 30 s the test allows it (which bound only a hang).
        let fifo = try FIFO(directory.file("event0"))
        let reading = InputEventSource(path: fifo.path, retryInterval: 3600)
        let recorder = Recorder()
        let running = recorder.start(reading)
        let writer = try FIFOWriter(fifo.path)
        try writer.write(press(keyPlay))
        recorder.waitForCommands(1)
        XCTAssertEqual(threadNames().filter { $0 == "tonearm-input" }.count, before + 1)
        XCTAssertTrue(running.stop(timeout: 30).isFinite, "stop woke the reading thread")
        XCTAssertEqual(threadNames().filter { $0 == "tonearm-input" }.count, before, "the thread is joined")
        _ = try? writer.write(press(keyNextSong))  // EPIPE: the source closed its end
        usleep(50_000)
        XCTAssertEqual(recorder.commands, [Command("play")], "nothing is read after stop")
        running.stop()

        // A missing device: the thread waits a whole retry interval (an hour) between attempts.
        let waiting = recorder.start(InputEventSource(path: directory.file("absent"), retryInterval: 3600))
        XCTAssertTrue(recorder.waitForLog(containing: "not there"))
        XCTAssertTrue(waiting.stop(timeout: 30).isFinite, "stop woke the thread waiting to retry")
        XCTAssertEqual(threadNames().filter { $0 == "tonearm-input" }.count, before)
    }

    func testARegularFileIsNotReadAsADevice() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-input")
        let path = directory.file("event-kbd")
        try Data(press(keyPlayPause)).write(to: URL(fileURLWithPath: path))
        let recorder = Recorder()
        let source = InputEventSource(path: path, retryInterval: 0.1)
        let running = recorder.start(source)
        defer { running.stop() }
        usleep(350_000)
        XCTAssertEqual(recorder.commands, [], "its records are not sent, let alone again after every end of file")
        XCTAssertEqual(recorder.logs(at: .error), ["input \(path): not an input device or a FIFO (a regular file); waiting for it to become one"])
    }

    func testAnUnreadableDeviceSaysHowToFixItAndIsOpenedOnceItCanBe() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-input")
        chmod(directory.path, 0o755)
        let fifo = try FIFO(directory.file("event5"))
        let recorder = Recorder()
        let source = InputEventSource(path: fifo.path, retryInterval: 0.1)

        // root reads anything: be nobody (the whole process, for a moment) to be refused.
        let root = geteuid() == 0
        chmod(fifo.path, root ? 0o600 : 0)
        if root {
            guard seteuid(65534) == 0 else { throw XCTSkip("cannot become nobody: \(String(cString: strerror(errno)))") }
        }
        let running = recorder.start(source)
        defer { running.stop() }
        let refused = recorder.waitForLog(containing: "Permission denied")
        usleep(250_000)  // more attempts, not logged again
        if root { XCTAssertEqual(seteuid(0), 0) } else { chmod(fifo.path, 0o600) }

        XCTAssertTrue(refused, "\(recorder.logs)")
        let errors = recorder.logs(at: .error)
        XCTAssertEqual(errors.count, 1, "\(errors)")
        let message = errors.first ?? ""
        XCTAssertTrue(message.hasPrefix("input \(fifo.path): cannot open (Permission denied); add the user "), message)
        XCTAssertTrue(message.contains(" to group input"), message)
        if root { XCTAssertTrue(message.contains("add the user nobody to group input"), message) }

        let writer = try FIFOWriter(fifo.path)
        try writer.write(press(keyMute))
        XCTAssertEqual(recorder.waitForCommands(1), [Command("toggleMute")])
        XCTAssertEqual(recorder.logs.last, "input \(fifo.path): opened")
    }
}
