import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The board's controls driving the real daemon: input events through a FIFO carrying
/// `struct input_event` records, a serial display on a real pseudoterminal, GPIO lines that
/// the profile names but this machine does not have.
final class DaemonBoardTests: XCTestCase {
    // MARK: Input events

    func testKeysFromAnInputDeviceMoveThePlayer() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "paced", start: false)
        let fifo = world.path("event0")
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        world.daemon.arguments = ["--config", try profile(world, """
            [[input]]
            path = "\(fifo)"
            map = { KEY_F1 = "skipForward" }
            """)]
        try world.daemon.start()
        let tracks = try (1...2).map { try world.fixture("t\($0).flac", taggedFixture($0, seconds: 30)) }
        try world.ok(["add"] + tracks)
        try world.ok("play")
        try world.waitForStatus(timeout: 5, "playing") { $0.string("state") == "playing" }

        var writer = try openWriter(fifo)
        write(writer, press(163))  // KEY_NEXTSONG
        try world.waitForStatus(timeout: 3, "the next track") { $0.int("queueIndex") == 1 }
        write(writer, press(164))  // KEY_PLAYPAUSE
        try world.waitForStatus(timeout: 3, "paused") { $0.string("state") == "paused" }
        // Volume down held: a press and two autorepeats are three steps of 5 %.
        write(writer, key(114, 1) + key(114, 2) + key(114, 2) + key(114, 0))
        try world.waitForStatus(timeout: 3, "volume 85") { $0.double("volume") == 85 }
        // A key the profile maps.
        write(writer, press(59))  // KEY_F1 → skipForward (15 s)
        try world.waitForStatus(timeout: 3, "skipped") { ($0.double("elapsed") ?? 0) >= 14 }

        // The writer goes away and comes back (a FIFO's stand-in for an unplugged device).
        close(writer)
        sleepSeconds(0.3)
        writer = try openWriter(fifo)
        defer { close(writer) }
        write(writer, press(164))
        try world.waitForStatus(timeout: 3, "playing again after the device came back") { $0.string("state") == "playing" }

        // At the last track nextTrack is disabled: the key is logged and does nothing.
        write(writer, press(163))
        sleepSeconds(0.5)
        XCTAssertEqual(try world.status().int("queueIndex"), 1)
        XCTAssertTrue(daemonLogLines(world.daemon.log).contains { $0.contains("input \(fifo): nextTrack is disabled now; ignored") },
                      daemonReport(world.daemon))
    }

    /// A profile naming a GPIO chip this machine lacks: the daemon starts without those
    /// controls and says which line is missing; marked required, it refuses to start.
    func testMissingGPIOLinesAreNamedAndRequiredOnesRefuseToStart() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "paced", start: false)
        world.daemon.arguments = ["--config", try profile(world, """
            [[button]]
            name = "next"
            chip = "gpiochip7"
            line = 17
            command = "nextTrack"
            """)]
        try world.daemon.start()
        XCTAssertTrue(waitUntil(timeout: 3) {
            daemonLogLines(world.daemon.log).contains { $0.contains("gpiochip7") && $0.contains("17") }
        }, "the missing line is named: \(daemonReport(world.daemon))")
        XCTAssertEqual(try world.status().string("state"), "stopped", "the daemon runs without the button")
        _ = world.daemon.terminate()

        let required = try profile(world, """
            [[button]]
            name = "next"
            chip = "gpiochip7"
            line = 17
            command = "nextTrack"
            required = true
            """)
        let result = try runProcess(try tonearmdBinary(), ["--config", required, "--device", "paced", "--socket", world.path("other.sock"),
                                                           "--state-dir", world.path("state2")],
                                    environment: world.bench.alsa.environment, timeout: 10)
        XCTAssertEqual(result.status, 1, "\(result)")
        XCTAssertTrue(result.stderr.contains("gpiochip7"), result.stderr)
    }

    // MARK: Serial display

    /// What the display received until `condition` held for it (or `timeout`), taken.
    func text(_ terminal: PseudoTerminal, timeout: Double, _ condition: @escaping (String) -> Bool) -> String {
        terminal.read(until: { condition(String(decoding: $0, as: UTF8.self)) }, timeout: timeout)
        return String(decoding: terminal.take(terminal.received.count), as: UTF8.self)
    }

    /// The `line` display on a real pseudoterminal: Now Playing goes out on events, commands
    /// typed on the display move the player, and a megabyte of garbage from it changes nothing.
    func testALineDisplayShowsNowPlayingAndItsCommandsMoveThePlayer() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "paced", start: false)
        let terminal = try PseudoTerminal()
        world.daemon.arguments = ["--config", try profile(world, """
            [display]
            driver = "line"
            port = "\(terminal.slavePath)"
            baud = 115200
            """)]
        try world.daemon.start()
        let hello = text(terminal, timeout: 5) { $0.contains("end\n") }
        XCTAssertTrue(hello.hasPrefix("hello tonearm 1\nstate stopped\n"), hello)
        XCTAssertTrue(hello.contains("command play enabled\n") || hello.contains("command play disabled\n"), hello)

        let tracks = try (1...2).map { try world.fixture("t\($0).flac", taggedFixture($0, seconds: 30)) }
        try world.ok(["add"] + tracks)
        try world.ok("play")
        let started = text(terminal, timeout: 5) { $0.contains("title Track 1\n") && $0.hasSuffix("end\n") }
        XCTAssertTrue(started.contains("state playing\n"), started)
        XCTAssertTrue(started.contains("title Track 1\nartist The Testers\nalbum Daemon Sessions\n"), started)
        XCTAssertTrue(started.contains("queue 1 2\n"), started)
        XCTAssertTrue(started.contains("clock 0.000 1.000 30.000\n") || started.contains(" 1.000 30.000\n"), started)

        // Nothing on a timer: a second of playing sends nothing.
        XCTAssertEqual(terminal.takeAll(quiet: 1.0, timeout: 1.5), [], "no line while nothing changes")

        terminal.write("nextTrack\n")
        try world.waitForStatus(timeout: 3, "the display's nextTrack") { $0.int("queueIndex") == 1 }
        let next = text(terminal, timeout: 3) { $0.contains("title Track 2\n") }
        XCTAssertTrue(next.contains("title Track 2\n"), next)

        // A megabyte of random bytes from the display: playback carries on, the next real
        // command still works.
        var random = SeededRandom(seed: 42)
        let garbage = (0..<(1 << 20)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        XCTAssertEqual(terminal.write(garbage, timeout: 20), garbage.count)
        terminal.write("\nsetVolume 40\n")
        try world.waitForStatus(timeout: 10, "the display's setVolume after the garbage") { $0.double("volume") == 40 }
        let status = try world.status()
        XCTAssertEqual(status.string("state"), "playing")
        XCTAssertEqual((status.object("device")?.int("underruns")), 0, "no underrun while the display raved")
    }

    /// A Nextion: component updates terminated by 0xFF 0xFF 0xFF, and a touch that moves the
    /// player; a disabled command's button is switched off (`tsw`).
    func testANextionShowsNowPlayingAndItsTouchesMoveThePlayer() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "paced", start: false)
        let terminal = try PseudoTerminal()
        world.daemon.arguments = ["--config", try profile(world, """
            [display]
            driver = "nextion"
            port = "\(terminal.slavePath)"
            baud = 115200
            components = { title = "t0", artist = "t1" }
            touch = { "0.5" = "togglePlayPause", "0.6" = "nextTrack" }
            """)]
        try world.daemon.start()
        let tracks = try (1...2).map { try world.fixture("t\($0).flac", taggedFixture($0, seconds: 30)) }
        try world.ok(["add"] + tracks)
        try world.ok("play")
        let end: [UInt8] = [0xFF, 0xFF, 0xFF]
        let title = Array("t0.txt=\"Track 1\"".utf8) + end
        let artist = Array("t1.txt=\"The Testers\"".utf8) + end
        func holds(_ bytes: [UInt8], _ part: [UInt8]) -> Bool {
            bytes.count >= part.count && (0...(bytes.count - part.count)).contains { Array(bytes[$0..<($0 + part.count)]) == part }
        }
        XCTAssertTrue(terminal.read(until: { holds($0, title) && holds($0, artist) }, timeout: 5),
                      "title and artist, each ended by 0xFF 0xFF 0xFF: \(String(decoding: terminal.received, as: UTF8.self))")
        _ = terminal.take(terminal.received.count)

        // Component 5 on page 0 pressed: togglePlayPause.
        terminal.write([0x65, 0x00, 0x05, 0x01] + end)
        try world.waitForStatus(timeout: 3, "paused by a touch") { $0.string("state") == "paused" }
        terminal.write([0x65, 0x00, 0x06, 0x01] + end)
        try world.waitForStatus(timeout: 3, "the next track by a touch") { $0.int("queueIndex") == 1 }
        // At the last track nextTrack is disabled: its button is switched off.
        let disabled = text(terminal, timeout: 3) { $0.contains("tsw 6,0") }
        XCTAssertTrue(disabled.contains("tsw 6,0"), disabled)
    }

    /// `tonearmd --selftest` checks what the profile names and says what it found.
    func testTheSelfTestReportsWhatIsThereAndWhatIsNot() throws {
        let world = try DaemonBench(jack: false, device: "null", start: false)
        let terminal = try PseudoTerminal()
        let fifo = world.path("event0")
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let path = try profile(world, """
            [output]
            device = "null"
            [[button]]
            name = "next"
            chip = "gpiochip9"
            line = 17
            command = "nextTrack"
            [[input]]
            path = "\(fifo)"
            [display]
            port = "\(terminal.slavePath)"
            """)
        let result = try runProcess(try tonearmdBinary(), ["--config", path, "--selftest"], environment: world.bench.alsa.environment, timeout: 10)
        XCTAssertEqual(result.status, 1, "a chip is missing: \(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains { $0.hasPrefix("ok   ALSA 'null': opens") }, result.stdout)
        XCTAssertTrue(lines.contains("FAIL GPIO chip 'gpiochip9': no such chip (gpiodetect lists the chips)"), result.stdout)
        XCTAssertTrue(lines.contains("FAIL button[1]: line 17 on chip 'gpiochip9': the chip is missing"), result.stdout)
        XCTAssertTrue(lines.contains("ok   input '\(fifo)': \(fifo), readable"), result.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("ok   serial '\(terminal.slavePath)': opens at 9600 baud 8N1") }, result.stdout)
        XCTAssertEqual(lines.last, "\(path): 2 problems")
    }

    /// The self-test's line for ALSA device `null` with `output` as the profile's `[output]`.
    private func selfTestALSALine(_ output: String) throws -> String {
        let world = try DaemonBench(jack: false, device: "null", start: false)
        let path = try profile(world, "[output]\ndevice = \"null\"\n" + output)
        let result = try runProcess(try tonearmdBinary(), ["--config", path, "--selftest"], environment: world.bench.alsa.environment, timeout: 10)
        XCTAssertEqual(result.status, 0, "\(result)")
        let prefix = "ok   ALSA 'null': opens for 44.1 kHz 16-bit stereo as "
        return result.stdout.split(separator: "\n").map(String.init).first { $0.hasPrefix(prefix) } ?? result.stdout
    }

    /// With `buffer_ms` the self-test opens the device as the daemon would and says whether it
    /// rewinds; `null` has no card behind it, so the daemon would fall back to the frame sizes.
    func testTheSelfTestSaysWhetherTheDeviceRewinds() throws {
        let alsa = try selfTestALSALine("buffer_ms = 200")
        XCTAssertTrue(alsa.contains("period 2205, buffer 8820;"), "200 ms at 44.1 kHz: \(alsa)")
        XCTAssertTrue(alsa.hasSuffix("is not rewound (no sound card behind it, or snd_pcm_rewind refused): the daemon plays with "
                                     + "period_frames/buffer_frames (256/1024) instead"), alsa)
    }

    /// A buffer in frames is probed as well: whether commands are heard at once depends on the
    /// device and the buffer's length, not on the unit. A shorter one is not probed.
    func testTheSelfTestSaysWhetherTheDeviceRewindsABufferInFrames() throws {
        let alsa = try selfTestALSALine("period_frames = 512\nbuffer_frames = 4410")
        XCTAssertTrue(alsa.contains("period 512, buffer 4410;"), alsa)
        XCTAssertTrue(alsa.hasSuffix("is not rewound (no sound card behind it, or snd_pcm_rewind refused): commands are heard "
                                     + "a buffer late (100 ms)"), alsa)
        let short = try selfTestALSALine("")
        XCTAssertTrue(short.hasSuffix("period 256, buffer 1024; a buffer under 100 ms is not rewound"), short)
    }
}
