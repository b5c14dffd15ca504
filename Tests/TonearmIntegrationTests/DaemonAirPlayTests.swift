import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// AirPlay, end to end: Debian's shairport-sync, unmodified, plays to `tonearm:media`, fed by a
/// real AirPlay 1 sender (pyatv, `Tests/AirPlay/send.py`) on 127.0.0.1, and a `[[link]]` ties
/// its sessions to its MPRIS player on a private bus. The capture separates the streams as
/// `DaemonSessionTests` does: the music on the left, the sender's tone on the right.
extension DaemonSessionTests {
    static let shairportPlayer = "org.mpris.MediaPlayer2.ShairportSync"

    /// The player is interrupted while shairport-sync plays, and resumes once it closes its PCM;
    /// meanwhile the sender's title and artist are Now Playing, `tonearm next` becomes
    /// shairport-sync's MPRIS Next, and the sender's tone reaches the device at its level.
    func testAnAirPlaySenderThroughShairportSyncInterruptsThePlayerAndIsNowPlaying() throws {
        try requirePacedDevice()
        guard toolsAvailable("dbus-daemon", "busctl", "mpc", "ss") else {
            throw XCTSkip("dbus-daemon, busctl, mpc and ss are not installed; run ./scripts/setup")
        }
        try XCTSkipUnless(toolsAvailable("shairport-sync"), "shairport-sync is not installed; run ./scripts/setup")
        let python: String
        do {
            python = try pythonWith("pyatv==0.18.0")
        } catch {
            throw XCTSkip("no AirPlay sender: pyatv 0.18.0 cannot be installed from PyPI: \(error)")
        }
        let patience = 30.0
        let world = try DaemonBench(device: "pacedcapture", start: false)
        let address = "unix:path=" + world.path("bus")
        let bus = try PrivateBus(address: address, config: "/usr/share/dbus-1/session.conf", log: world.path("bus"))
        defer { bus.stop() }

        let profile = world.path("board.toml")
        try """
            [[link]]
            session = "shairport-sync"
            mpris = "\(Self.shairportPlayer)"
            bus = "session"
            """.write(toFile: profile, atomically: true, encoding: .utf8)
        let mpdPort = try freeTCPPort()
        world.daemon.environment["DBUS_SESSION_BUS_ADDRESS"] = address
        world.daemon.arguments = ["--config", profile, "--mpd-port", String(mpdPort)]
        try world.daemon.start()
        let (musicPath, _) = try music(world, seconds: 45)
        try playMusic(world, musicPath, until: 1.5)

        let shairport = try startShairportSync(world, bus: address)
        defer { stop(shairport.process) }
        try world.waitForStatus(timeout: patience, "the link sees shairport-sync's player") {
            ($0.array("links")?.first as? [String: Any])?.bool("present") == true
        }

        // The sender: 12 s of a 1 kHz tone with seeded noise on the right, at AirPlay's rate (long
        // enough that what follows its metadata's arrival happens while it plays), then
        // 0.5 s of silence: when the sender tears the stream down, shairport-sync drops what its
        // output still holds (its 0.2 s buffer), as it would on a sound card.
        let title = "Tone Over AirPlay", artist = "The Sender"
        let stream = world.path("airplay.wav")
        var random = SeededRandom(seed: 25)
        _ = try writeWAV(stream, seconds: 12.5, rate: 44100, left: { _ in 0 }, right: { frame in
            frame < 12 * 44100 ? 0.3 * sin(2 * Double.pi * 1000 * Double(frame) / 44100) + 0.01 * random.nextSigned() : 0
        })
        let sent = monotonicSeconds()
        let sender = try RunningProcess(python, [packageRoot + "/Tests/AirPlay/send.py", "127.0.0.1", String(shairport.port), stream, title, artist],
                                        stdoutPath: world.path("sender.log"), stderrPath: world.path("sender.log"))
        defer { stop(sender) }
        func report() -> String {
            "--- shairport-sync ---\n\(readLog(world.path("shairport-sync.log")).suffix(3000))\n"
                + "--- sender ---\n\(readLog(world.path("sender.log")).suffix(3000))\n\(daemonReport(world.daemon))"
        }

        // While it plays: the player interrupted, shairport-sync's session the media preset's.
        var during: [String: Any] = [:]
        XCTAssertTrue(try waitUntil(timeout: patience) {
            during = try world.daemon.result("sessions")
            let airplay = (during.array("sessions") as? [[String: Any]])?.first { $0.string("name") == "shairport-sync" }
            return airplay?.bool("active") == true && session(during, 1)?.bool("interrupted") == true
        }, "shairport-sync's session plays and the player is interrupted: \(jsonText(during))\n\(report())")
        let airplay = (during.array("sessions") as? [[String: Any]])?.first { $0.string("name") == "shairport-sync" }
        XCTAssertEqual(airplay?.string("category"), "playback")
        XCTAssertEqual(airplay?.bool("nowPlaying"), true, "it owns Now Playing")
        let started = monotonicSeconds() - sent

        // The sender's metadata, through shairport-sync's MPRIS player, is Now Playing for every
        // front end while its session plays and the player is interrupted. shairport-sync opens
        // its PCM once briefly before it plays (the session above may be that one): on a busy
        // machine the moment between the two has none of this, so the whole of it is waited for.
        var seen = ""
        XCTAssertTrue(try waitUntil(timeout: patience, interval: 0.2) {
            let status = try world.status()
            let text = try world.ok("status").stdout
            let current = try runProcess("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", String(mpdPort), "-f", "%file%;%title%;%artist%", "current"],
                                         timeout: 15).stdout
            let interrupted = session(try world.daemon.result("sessions"), 1)?.bool("interrupted") == true
            seen = "status: \(jsonText(status))\ntonearm status: \(text)\nMPD's currentsong: \(current)\nplayer interrupted: \(interrupted)"
            return status.string("title") == title && status.string("artist") == artist
                && status.object("nowPlayingLink")?.string("session") == "shairport-sync" && status.int("queueIndex") == nil
                && text.contains("\(title) — \(artist)") && current == "shairport-sync;\(title);\(artist)\n" && interrupted
        }, "the sender's title and artist, not the queue's, are Now Playing for the socket and MPD while the player is interrupted:\n\(seen)\n\(report())")

        // `tonearm next` is shairport-sync's MPRIS Next, which it sends on as DACP "nextitem"
        // (and cannot deliver: without mDNS it never learns the sender's DACP port).
        try world.ok("next")
        XCTAssertTrue(waitUntil(timeout: patience) {
            readLog(world.path("shairport-sync.log")).contains("send_simple_dacp_command: sending command \"nextitem\"")
        }, "shairport-sync was asked for the next item\n\(report())")

        // The stream ends; shairport-sync closes its PCM, its session goes and the player resumes.
        let result = sender.wait(timeout: 60)
        XCTAssertEqual(result.status, 0, "the sender streamed the whole file\n\(report())")
        XCTAssertTrue(try waitUntil(timeout: patience) { try programSessions(world, named: "shairport-sync").isEmpty },
                      "shairport-sync closed its PCM\n\(report())")
        try world.waitForStatus(timeout: patience, "the player resumes, its own Now Playing again") {
            $0.string("state") == "playing" && $0.isNull("nowPlayingLink")
        }
        let resumed = try XCTUnwrap(try world.status().double("elapsed"))
        try world.waitForStatus(timeout: patience, "three seconds of music after") { ($0.double("elapsed") ?? 0) > resumed + 3 }
        try world.ok("stop")
        XCTAssertEqual(world.daemon.terminate()?.status, 0, "the capture is complete once the device is closed")

        // The capture: the sender's tone on the right at its level, the music silent meanwhile,
        // at its level before, and back at it soon after.
        let (left, right) = try capture(world)
        let tone = try XCTUnwrap(sounding(right, 1000, expected: 0.3), "the sender's tone reached the device")
        XCTAssertEqual(Double(tone.count) / Double(Self.rate), 12, accuracy: 0.15, "all of it")
        let window = Self.rate / 20
        var levels: [Double] = []
        var start = tone.lowerBound + 2 * window
        while start + window <= tone.upperBound - 2 * window {
            levels.append(level(right, start..<(start + window), 1000))
            start += window
        }
        // The daemon's part is the level: never louder, and at the sender's where it sounds. A
        // shairport-sync the machine holds back past its 0.2 s of buffer leaves a gap, which the
        // daemon fills with silence as a sound card would (a shared CI machine once left 0.35 s);
        // gaps are reported, and more than a tenth of the stream missing fails.
        let atLevel = levels.filter { abs($0 - 0.3) <= 0.03 }.count
        let gaps = levels.filter { $0 < 0.1 }.count
        XCTAssertLessThanOrEqual(levels.max() ?? 1, 0.33, "the tone never louder than the sender's level")
        XCTAssertGreaterThanOrEqual(atLevel * 10, levels.count * 9,
                                    "the tone at the sender's level in \(atLevel) of \(levels.count) windows of 50 ms (\(gaps) silent): \(levels.min()!)…\(levels.max()!)")
        XCTAssertLessThan(level(left, (tone.lowerBound + 4 * window)..<(tone.upperBound - 4 * window), 440), 0.003, "the music is silent while AirPlay plays")
        XCTAssertEqual(level(left, (10 * window)..<(20 * window), 440), 0.3, accuracy: 0.01, "the music before")
        let back = try XCTUnwrap(stride(from: tone.upperBound, to: left.count - window, by: window / 5).first {
            level(left, $0..<($0 + window), 440) > 0.15
        }, "the music comes back")
        let silence = Double(back - tone.upperBound) / Double(Self.rate)
        XCTAssertLessThan(silence, 2, "the music is back within the stream's silent end, its teardown and the resume")
        XCTAssertGreaterThan(left.count, back + 30 * window, "music after the stream")
        guard left.count > back + 30 * window else { return }
        XCTAssertEqual(level(left, (back + 10 * window)..<(back + 20 * window), 440), 0.3, accuracy: 0.01, "the music after")
        print(String(format: "measured: shairport-sync's session active %.2f s after the sender started; the tone %.3f s at %.3f…%.3f, %d of %d windows of 50 ms silent; the music back %.2f s after it",
                     started, Double(tone.count) / Double(Self.rate), levels.min() ?? 0, levels.max() ?? 0, gaps, levels.count, silence))
    }

    // MARK: shairport-sync

    /// shairport-sync on a free port, its MPRIS player on `bus`, playing to `tonearm:media`;
    /// returned once its port and its player's name are its own.
    private func startShairportSync(_ world: DaemonBench, bus: String) throws -> (process: RunningProcess, port: Int) {
        let port = try freeTCPPort()
        let config = world.path("shairport-sync.conf")
        try """
            general = {
              name = "Tonearm test";
              port = \(port);
              output_backend = "alsa";
              ignore_volume_control = "yes";   // full scale: pyatv asks for 33 %
              mpris_service_bus = "session";
              dbus_service_bus = "session";
            };
            // "never" (the default) closes the PCM when play stops; "auto" and "always" keep it
            // open, feeding silence, and so would keep the player interrupted.
            alsa = { output_device = "tonearm:media"; disable_standby_mode = "never"; };
            metadata = { enabled = "yes"; include_cover_art = "no"; pipe_name = "\(world.path("shairport-sync-metadata"))"; };
            diagnostics = { log_verbosity = 2; };   // 2 logs the DACP commands it sends

            """.write(toFile: config, atomically: true, encoding: .utf8)
        // Its only mDNS backend is avahi, which it gives up on without a system bus: on the private
        // bus, with no avahi there, it waits and runs unadvertised.
        var environment = try programs(world)
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus
        let log = world.path("shairport-sync.log")
        let process = try RunningProcess("shairport-sync", ["-c", config, "-u"], environment: environment, stdoutPath: log, stderrPath: log)
        // It binds 0.0.0.0 and [::] and runs on with either: the port must be its.
        var ready = false
        _ = waitUntil(timeout: 30, interval: 0.1) {
            guard process.isRunning else { return true }
            guard (try? runProcess("busctl", ["--address=" + bus, "status", Self.shairportPlayer], timeout: 10))?.status == 0,
                  let listening = try? runProcess("ss", ["-Hltnp", "sport = :\(port)"], timeout: 10) else { return false }
            ready = listening.stdout.contains("0.0.0.0:\(port)") && listening.stdout.contains("pid=\(process.pid),")
            return ready
        }
        guard ready else {
            stop(process)
            throw TestSupportError("shairport-sync did not get port \(port) and its MPRIS name:\n\(readLog(log))")
        }
        return (process, port)
    }

    private func stop(_ process: RunningProcess) {
        process.send(SIGTERM)
        if process.wait(timeout: 10).timedOut { XCTFail("\(process.executable) ignored SIGTERM") }
    }

    private func readLog(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }
}
