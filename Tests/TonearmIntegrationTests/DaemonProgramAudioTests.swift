import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// ALSA programs, unmodified, pointed at `tonearm:…`: their audio reaches the paced device and
/// the category rules apply to them exactly as to the player. The capture separates the
/// streams as `DaemonSessionTests` does: the music on the left, a program's sound on the right.
extension DaemonSessionTests {
    func pcmSocket(_ world: DaemonBench) -> String { world.daemon.directory + "/tonearmd-pcm.sock" }

    /// The environment for programs playing through the plugin into `world`'s daemon.
    func programs(_ world: DaemonBench, extra: String = "") throws -> [String: String] {
        try ProgramAudio.environment(world.bench.alsa, socket: pcmSocket(world), extra: extra)
    }

    /// Stereo 16-bit WAV, left and right given as functions of the frame index (±1 full scale).
    func writeWAV(_ path: String, seconds: Double, rate: Int = DaemonSessionTests.rate,
                  left: (Int) -> Double, right: (Int) -> Double) throws -> [Int16] {
        let frames = Int(seconds * Double(rate))
        var samples = [Int16](repeating: 0, count: 2 * frames)
        for frame in 0..<frames {
            samples[2 * frame] = Int16((left(frame) * 32767).rounded())
            samples[2 * frame + 1] = Int16((right(frame) * 32767).rounded())
        }
        try ProgramAudio.wav(samples, channels: 2, rate: rate, to: path)
        return samples
    }

    func programSessions(_ world: DaemonBench, named name: String) throws -> [[String: Any]] {
        let report = try world.daemon.result("sessions")
        return ((report.array("sessions") as? [[String: Any]]) ?? []).filter { $0.string("name") == name }
    }

    func openDescriptors(_ pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    // MARK: What reaches the device

    /// `aplay -D tonearm:media` alone: the device gets the program's samples, every one of them
    /// unchanged (at the device's format, at full volume), and the session closes after.
    func testAplayThroughTheMediaPresetReachesTheDeviceBitExact() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "pacedcapture")
        var random = SeededRandom(seed: 11)
        let path = world.path("noise.wav")
        let source = try writeWAV(path, seconds: 2, left: { _ in 0.3 * random.nextSigned() }, right: { _ in 0.3 * random.nextSigned() })
        let aplay = try runProcess("aplay", ["-q", "-D", "tonearm:media", path], environment: try programs(world), timeout: 30)
        XCTAssertEqual(aplay.status, 0, "\(aplay)\n\(daemonReport(world.daemon))")
        XCTAssertTrue(try waitUntil(timeout: 10) { try programSessions(world, named: "aplay").isEmpty }, "aplay's session closed")
        // The capture holds back up to a buffer until the device closes.
        XCTAssertEqual(world.daemon.terminate()?.status, 0)

        let (left, right) = try capture(world)
        let sourceLeft = stride(from: 0, to: source.count, by: 2).map { Int32(source[$0]) }
        let sourceRight = stride(from: 1, to: source.count, by: 2).map { Int32(source[$0]) }
        let probe = Array(sourceLeft[0..<960])
        let start = try XCTUnwrap((0...(left.count - probe.count)).first { left[$0] == probe[0] && Array(left[$0..<($0 + probe.count)]) == probe },
                                  "the program's first 20 ms are in the capture")
        XCTAssertGreaterThanOrEqual(left.count - start, sourceLeft.count, "the whole of it was captured")
        let frames = min(sourceLeft.count, left.count - start)
        XCTAssertEqual(Array(left[start..<(start + frames)]), Array(sourceLeft[0..<frames]), "left, bit for bit")
        XCTAssertEqual(Array(right[start..<(start + frames)]), Array(sourceRight[0..<frames]), "right, bit for bit")
    }

    /// speaker-test, sox's `play` and GStreamer's `alsasink` through the plugin, one after the
    /// other, each its own tone: each tone is what the device gets, at the level it was played.
    func testSpeakerTestSoxAndGStreamerPlayThroughThePlugin() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "pacedcapture")
        let environment = try programs(world)
        let runs: [(program: String, arguments: [String], environment: [String: String], frequency: Double, level: Double)] = [
            ("speaker-test", ["-D", "tonearm:media", "-t", "sine", "-f", "750", "-c", "2", "-r", "48000", "-F", "S16_LE",
                              "-l", "1", "-b", "100000", "-p", "20000"], [:], 750, 0.8),
            ("play", ["-q", "-n", "-r", "48000", "-c", "2", "-b", "16", "synth", "1.5", "sine", "1500", "vol", "0.5"],
             ["AUDIODRIVER": "alsa", "AUDIODEV": "tonearm:media"], 1500, 0.5),
            ("gst-launch-1.0", ["-q", "audiotestsrc", "num-buffers=70", "freq=2250", "volume=0.5", "!",
                                "audio/x-raw,rate=48000,channels=2,format=S16LE", "!", "alsasink", "device=tonearm:media"], [:], 2250, 0.5),
        ]
        for run in runs {
            let result = try runProcess(run.program, run.arguments, environment: environment.merging(run.environment) { $1 }, timeout: 60)
            XCTAssertEqual(result.status, 0, "\(run.program): \(result)\n\(daemonReport(world.daemon))")
            XCTAssertTrue(try waitUntil(timeout: 10) {
                ((try world.daemon.result("sessions")).array("sessions") ?? []).count == 1
            }, "\(run.program)'s session closed")
        }
        XCTAssertEqual(world.daemon.terminate()?.status, 0)

        // The loudest 50 ms window of each program's tone, on either channel.
        let (left, right) = try capture(world)
        let window = Self.rate / 20
        for run in runs {
            var loudest = 0.0
            var index = 0
            while index + window <= left.count {
                loudest = max(loudest, level(left, index..<(index + window), run.frequency), level(right, index..<(index + window), run.frequency))
                index += window
            }
            XCTAssertEqual(loudest, run.level, accuracy: 0.03, "\(run.program)'s \(run.frequency) Hz tone at the level it played it")
        }
    }

    // MARK: The rules

    /// espeak-ng, unmodified, speaking through `tonearm:nav` (its default PCM, routed to the
    /// right channel): the music ducks by the rule's 15 dB while it speaks and comes back.
    func testEspeakThroughTheNavPresetDucksTheMusic() throws {
        try requirePacedDevice()
        try XCTSkipUnless(toolsAvailable("espeak-ng"), "espeak-ng is not installed")
        let world = try DaemonBench(device: "pacedcapture")
        let (musicPath, _) = try music(world, seconds: 14)
        try playMusic(world, musicPath, until: 1.5)
        let environment = try programs(world, extra: """
            pcm.!default {
                type route
                slave { pcm "tonearm:nav" channels 2 }
                ttable.0.1 1
            }
            """)
        let speech = try runProcess("espeak-ng", ["-s", "140", "Turn left in two hundred metres, then keep right."],
                                    environment: environment, timeout: 30)
        XCTAssertEqual(speech.status, 0, "\(speech)\n\(daemonReport(world.daemon))")
        sleepSeconds(2.5)
        try world.ok("stop")

        let (left, right) = try capture(world)
        // Where the speech is: 10 ms windows on the right holding sound.
        let window = Self.rate / 100
        var spoken: [Int] = []
        var index = 0
        while index + window <= right.count {
            if right[index..<(index + window)].contains(where: { abs($0) > 300 }) { spoken.append(index) }
            index += window
        }
        let first = try XCTUnwrap(spoken.first, "the speech reached the device")
        let last = try XCTUnwrap(spoken.last) + window
        XCTAssertGreaterThan(Double(last - first) / Double(Self.rate), 1.0, "a sentence's worth of speech")
        let fifty = Self.rate / 20
        let before = level(left, (first - 12 * fifty)..<(first - 2 * fifty), 440)
        XCTAssertEqual(before, 0.3, accuracy: 0.01, "the music at full level before the speech")
        let during = level(left, (first + 6 * fifty)..<(last - 2 * fifty), 440)
        XCTAssertEqual(dB(during / before), -15, accuracy: 1, "ducked while it speaks")
        // Back once espeak-ng has drained and closed its PCM (its last frames are silence).
        XCTAssertGreaterThan(left.count, last + 40 * fifty, "two seconds of music after the speech")
        guard left.count > last + 40 * fifty else { return }
        let after = level(left, (last + 30 * fifty)..<(last + 40 * fifty), 440)
        XCTAssertEqual(dB(after / before), 0, accuracy: 0.5, "back after it")
    }

    /// `aplay -D tonearm:call` interrupts the player, which resumes when the call ends (the
    /// preset notifies others); with NOTIFY=0 the player stays paused.
    func testACallInterruptsThePlayerWhichResumesAfterItUnlessItDoesNotNotify() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "paced")
        let (musicPath, _) = try music(world, seconds: 30)
        let callPath = world.path("call.wav")
        _ = try writeWAV(callPath, seconds: 1.5, left: { _ in 0 }, right: { 0.3 * sin(2 * Double.pi * 1000 * Double($0) / 48000) })
        let environment = try programs(world)

        for (device, resumes) in [("tonearm:call", true), ("tonearm:PRESET=call,NOTIFY=0", false)] {
            try playMusic(world, musicPath, until: 1)
            let call = try RunningProcess("aplay", ["-q", "-D", device, callPath], environment: environment)
            var during: [String: Any] = [:]
            XCTAssertTrue(try waitUntil(timeout: 10) {
                during = try world.daemon.result("sessions")
                return session(during, 1)?.bool("interrupted") == true
            }, "\(device): the player is interrupted: \(jsonText(during))")
            let aplay = (during.array("sessions") as? [[String: Any]])?.first { $0.string("name") == "aplay" }
            XCTAssertEqual(aplay?.string("category"), "playAndRecord")
            XCTAssertEqual(aplay?.string("mode"), "voiceChat")
            XCTAssertEqual(try world.status().string("state"), "paused")
            let result = call.wait(timeout: 20)
            XCTAssertEqual(result.status, 0, "\(result)")
            if resumes {
                try world.waitForStatus(timeout: 10, "the music resumes after the call") { $0.string("state") == "playing" }
            } else {
                XCTAssertTrue(try waitUntil(timeout: 10) { try programSessions(world, named: "aplay").isEmpty })
                sleepSeconds(1.0)
                XCTAssertEqual(try world.status().string("state"), "paused", "without NOTIFY the music stays paused")
            }
            try world.ok("stop")
            try world.ok("clear")
        }
    }

    /// A program that stops without draining — alsa-lib drops a running PCM when it is closed,
    /// as shairport-sync's closing after a stream and aplay's on Ctrl-C do — ends its session
    /// all the same: the player it interrupted resumes.
    func testAProgramThatClosesWithoutDrainingLetsThePlayerResume() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "paced")
        let (musicPath, _) = try music(world, seconds: 30)
        try playMusic(world, musicPath, until: 1)
        let call = try RunningProcess("aplay", ["-q", "-D", "tonearm:call", "-t", "raw", "-f", "S16_LE", "-c", "2", "-r", "48000", "/dev/zero"],
                                      environment: try programs(world))
        XCTAssertTrue(try waitUntil(timeout: 10) {
            try programSessions(world, named: "aplay").first?.bool("active") == true
                && session(try world.daemon.result("sessions"), 1)?.bool("interrupted") == true
        }, "the call plays and the player is interrupted")
        call.send(SIGINT)
        XCTAssertFalse(call.wait(timeout: 10).timedOut)
        XCTAssertTrue(try waitUntil(timeout: 10) { try programSessions(world, named: "aplay").isEmpty }, "its session closed")
        try world.waitForStatus(timeout: 10, "the music resumes after the call") { $0.string("state") == "playing" }
    }

    // MARK: Failures

    /// No daemon: the open fails at once, naming the socket.
    func testWithoutTheDaemonAProgramFailsAtOnceNamingTheSocket() throws {
        let bench = try Bench(jack: false)
        let socket = bench.path("nobody-pcm.sock")
        let environment = try ProgramAudio.environment(bench.alsa, socket: socket)
        let aplay = try runProcess("aplay", ["-q", "-D", "tonearm:media", "-f", "cd", "/dev/zero"], environment: environment, timeout: 10)
        XCTAssertNotEqual(aplay.status, 0)
        XCTAssertLessThan(aplay.seconds, 2, "it failed at once")
        XCTAssertTrue(aplay.stderr.contains(socket), "the socket is named: \(aplay.stderr)")
    }

    /// A program killed mid-write: its session closes and the daemon lets go of everything it
    /// had for it; the daemon killed while programs write: they fail within a second, and play
    /// again once it is back.
    func testProgramsAndTheDaemonKilledMidStream() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "paced")
        let environment = try programs(world)
        let daemonPID = try XCTUnwrap(world.daemon.process?.pid)
        // A first program opens the device (which stays open): what the daemon holds after it is
        // the baseline.
        let path = world.path("short.wav")
        _ = try writeWAV(path, seconds: 0.5, left: { _ in 0 }, right: { _ in 0 })
        XCTAssertEqual(try runProcess("aplay", ["-q", "-D", "tonearm:media", path], environment: environment, timeout: 20).status, 0)
        XCTAssertTrue(try waitUntil(timeout: 5) { try programSessions(world, named: "aplay").isEmpty })
        let descriptorsBefore = openDescriptors(daemonPID)

        let raw = ["-q", "-D", "tonearm:media", "-t", "raw", "-f", "S16_LE", "-c", "2", "-r", "48000", "/dev/urandom"]
        let victim = try RunningProcess("aplay", raw, environment: environment)
        XCTAssertTrue(try waitUntil(timeout: 10) { try programSessions(world, named: "aplay").first?.bool("active") == true },
                      "the program's session is active")
        victim.send(SIGKILL)
        _ = victim.wait(timeout: 5)
        XCTAssertTrue(try waitUntil(timeout: 5) { try programSessions(world, named: "aplay").isEmpty }, "its session closed")
        XCTAssertTrue(waitUntil(timeout: 5) { openDescriptors(daemonPID) <= descriptorsBefore },
                      "the daemon's descriptors are back: \(openDescriptors(daemonPID)) (before \(descriptorsBefore))")

        let writers = try (0..<3).map { _ in try RunningProcess("aplay", raw.map { $0 == "tonearm:media" ? "tonearm:chime" : $0 }, environment: environment) }
        XCTAssertTrue(try waitUntil(timeout: 10) { try programSessions(world, named: "aplay").filter { $0.bool("active") == true }.count == 3 })
        let killed = monotonicSeconds()
        _ = world.daemon.kill()
        for writer in writers {
            let result = writer.wait(timeout: 5)
            XCTAssertFalse(result.timedOut, "a program writing to a daemon that died does not hang")
            XCTAssertNotEqual(result.status, 0, "it gets an error")
        }
        XCTAssertLessThan(monotonicSeconds() - killed, 4, "every writer failed soon after the daemon's death")

        try world.daemon.start()
        let again = try runProcess("aplay", ["-q", "-D", "tonearm:media", path], environment: environment, timeout: 20)
        XCTAssertEqual(again.status, 0, "a program plays again once the daemon is back: \(again)")
    }

    /// A program that opens the PCM and never writes holds an inactive session and interrupts
    /// nothing; when it goes, the session goes.
    func testAProgramThatOpensAndNeverWritesInterruptsNothing() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "paced")
        let (musicPath, _) = try music(world, seconds: 30)
        try playMusic(world, musicPath, until: 0.5)
        let fifo = world.path("silent.fifo")
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let idle = try RunningProcess("aplay", ["-q", "-D", "tonearm:media", "-t", "raw", "-f", "S16_LE", "-c", "2", "-r", "48000", fifo],
                                      environment: try programs(world))
        // Opened for writing only after aplay opened it for reading: it reads nothing.
        let writer = open(fifo, O_WRONLY)
        XCTAssertGreaterThanOrEqual(writer, 0)
        XCTAssertTrue(try waitUntil(timeout: 10) { !(try programSessions(world, named: "aplay").isEmpty) }, "its session opened")
        sleepSeconds(1.0)
        let held = try programSessions(world, named: "aplay")
        XCTAssertEqual(held.first?.bool("active"), false, "a session without frames is not active")
        XCTAssertEqual(try world.status().string("state"), "playing", "the music plays on")
        close(writer)
        XCTAssertEqual(idle.wait(timeout: 10).status, 0)
        XCTAssertTrue(try waitUntil(timeout: 5) { try programSessions(world, named: "aplay").isEmpty })
    }

    /// Ten programs at once, each a chime (they all mix): ten sessions active together, all
    /// heard to the end, all closed after.
    func testTenProgramsAtOnce() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "paced")
        let environment = try programs(world)
        let path = world.path("chime.wav")
        _ = try writeWAV(path, seconds: 3, left: { 0.05 * sin(2 * Double.pi * 660 * Double($0) / 48000) }, right: { _ in 0 })
        let chimes = try (0..<10).map { _ in try RunningProcess("aplay", ["-q", "-D", "tonearm:chime", path], environment: environment) }
        var most = 0
        _ = try waitUntil(timeout: 15) {
            most = max(most, try programSessions(world, named: "aplay").filter { $0.bool("active") == true }.count)
            return most == 10
        }
        XCTAssertEqual(most, 10, "ten sessions active at once")
        for chime in chimes {
            let result = chime.wait(timeout: 30)
            XCTAssertEqual(result.status, 0, "\(result)\n\(daemonReport(world.daemon))")
        }
        XCTAssertTrue(try waitUntil(timeout: 10) { try programSessions(world, named: "aplay").isEmpty }, "every session closed")
    }

    /// Only members of the PCM socket's group (audio) may open sessions.
    func testAUserOutsideTheAudioGroupIsRefused() throws {
        try requirePacedDevice()
        try XCTSkipUnless(getuid() == 0, "needs root to run a program as another user")
        try XCTSkipUnless(toolsAvailable("setpriv"), "setpriv is not installed")
        let world = try DaemonBench(device: "paced")
        // The test's directories are the test's own; let other users reach the socket file.
        var directory = world.daemon.directory
        while directory != "/" && !directory.isEmpty {
            chmod(directory, 0o755)
            directory = (directory as NSString).deletingLastPathComponent
        }
        let path = world.path("short.wav")
        _ = try writeWAV(path, seconds: 0.3, left: { _ in 0 }, right: { _ in 0 })
        chmod(path, 0o644)
        let environment = try programs(world)
        for file in [world.bench.alsa.directory + "/programs.conf", world.bench.alsa.path] { chmod(file, 0o644) }
        var status = stat()
        XCTAssertEqual(stat(pcmSocket(world), &status), 0)
        XCTAssertEqual(status.st_mode & 0o777, 0o660)
        let audio = try XCTUnwrap(getgrnam("audio")?.pointee.gr_gid, "group audio exists")
        XCTAssertEqual(status.st_gid, audio, "the socket belongs to group audio")

        let outsider = try runProcess("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "aplay", "-q", "-D", "tonearm:media", path],
                                      environment: environment, timeout: 10)
        XCTAssertNotEqual(outsider.status, 0, "refused: \(outsider)")
        XCTAssertTrue(outsider.stderr.contains("audio"), "the message says which group it takes: \(outsider.stderr)")
        let member = try runProcess("setpriv", ["--reuid=65534", "--regid=65534", "--groups=\(audio)", "aplay", "-q", "-D", "tonearm:media", path],
                                    environment: environment, timeout: 20)
        XCTAssertEqual(member.status, 0, "a member of group audio plays: \(member)")
    }
}

extension DaemonSessionTests {
    /// A program playing through `tonearm:media` owns Now Playing, and the remote commands go
    /// to it: pause holds its stream (it waits, as on a paused card), play plays it on; when it
    /// ends, the player has the commands again.
    func testTheButtonsFollowAProgramThatOwnsNowPlaying() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "paced")
        let raw = ["-q", "-D", "tonearm:media", "-t", "raw", "-f", "S16_LE", "-c", "2", "-r", "48000", "/dev/urandom"]
        let program = try RunningProcess("aplay", raw, environment: try programs(world))
        defer { program.send(SIGKILL) }
        var owner: [String: Any]?
        XCTAssertTrue(try waitUntil(timeout: 10) {
            owner = try programSessions(world, named: "aplay").first
            return owner?.bool("nowPlaying") == true && (owner?.double("gain") ?? 0) > 0.99
        }, "the program owns Now Playing and sounds: \(owner.map(jsonText) ?? "no session")")
        let pause = try world.daemon.result("pause")
        XCTAssertEqual(pause.int("forwardedTo"), owner?.int("session"), "forwarded to the program's session: \(jsonText(pause))")
        XCTAssertTrue(try waitUntil(timeout: 5) { (try programSessions(world, named: "aplay").first?.double("gain") ?? 1) == 0 },
                      "paused: its stream is held: \((try? world.daemon.result("sessions")).map(jsonText) ?? "")\n\(daemonReport(world.daemon))")
        XCTAssertTrue(program.isRunning, "the program waits, it is not stopped")
        try world.ok("play")
        XCTAssertTrue(try waitUntil(timeout: 5) { (try programSessions(world, named: "aplay").first?.double("gain") ?? 0) > 0.99 },
                      "played on")
        program.send(SIGTERM)
        _ = program.wait(timeout: 5)
        XCTAssertTrue(try waitUntil(timeout: 5) { try world.daemon.result("sessions").int("nowPlayingOwner") != owner?.int("session") })
    }
}

extension DaemonSessionTests {
    /// Programs at other rates and sample formats than the device's: 44.1 kHz float, 96 kHz
    /// 24-bit (packed and in 32-bit words), 32 kHz 32-bit mono. The daemon converts each to the
    /// device (opened at 48 kHz 16-bit by the first program): every tone is heard at its level.
    func testProgramsAtOtherRatesAndFormatsAreConverted() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "pacedcapture")
        let environment = try programs(world)
        let opener = world.path("opener.wav")
        _ = try writeWAV(opener, seconds: 0.3, left: { _ in 0 }, right: { _ in 0 })
        XCTAssertEqual(try runProcess("aplay", ["-q", "-D", "tonearm:media", opener], environment: environment, timeout: 20).status, 0)
        let streams: [(name: String, sox: [String], aplay: [String], frequency: Double)] = [
            ("float 44.1 kHz", ["-r", "44100", "-c", "2", "-e", "floating-point", "-b", "32"], [], 600),
            ("24-bit 96 kHz", ["-r", "96000", "-c", "2", "-e", "signed-integer", "-b", "24"], [], 1200),
            ("24-bit in 32 96 kHz", ["-r", "96000", "-c", "2", "-e", "signed-integer", "-b", "32"], ["-f", "S24_LE"], 1800),
            ("32-bit mono 32 kHz", ["-r", "32000", "-c", "1", "-e", "signed-integer", "-b", "32"], [], 2400),
        ]
        for stream in streams {
            let path = world.path("\(Int(stream.frequency)).wav")
            let made = try runProcess("sox", ["-n"] + stream.sox + [path, "synth", "1", "sine", String(stream.frequency), "vol", "0.5"], timeout: 30)
            XCTAssertEqual(made.status, 0, "\(made)")
            var arguments = ["-q", "-D", "tonearm:media"]
            if stream.aplay.isEmpty {
                arguments.append(path)
            } else {
                // S24_LE as raw words: the WAV's 32-bit samples shifted down, as a 24-bit card takes them.
                let raw = world.path("\(Int(stream.frequency)).raw")
                XCTAssertEqual(try runProcess("sox", [path, "-t", "raw", "-e", "signed-integer", "-b", "32", raw, "vol", "0.00390625"], timeout: 30).status, 0)
                arguments += ["-t", "raw", "-r", "96000", "-c", "2"] + stream.aplay + [raw]
            }
            let played = try runProcess("aplay", arguments, environment: environment, timeout: 30)
            XCTAssertEqual(played.status, 0, "\(stream.name): \(played)\n\(daemonReport(world.daemon))")
        }
        XCTAssertTrue(try waitUntil(timeout: 10) { try programSessions(world, named: "aplay").isEmpty })
        XCTAssertEqual(world.daemon.terminate()?.status, 0)

        let wav = try WAVFile(path: world.bench.alsa.pacedCapturePath)
        XCTAssertEqual(wav.sampleRate, 48000, "the device stayed at the first program's rate")
        let (left, right) = try capture(world)
        let window = Self.rate / 20
        for stream in streams {
            var loudest = 0.0
            var index = 0
            while index + window <= left.count {
                loudest = max(loudest, min(level(left, index..<(index + window), stream.frequency),
                                           level(right, index..<(index + window), stream.frequency)))
                index += window
            }
            XCTAssertEqual(loudest, 0.5, accuracy: 0.03, "\(stream.name): its \(stream.frequency) Hz tone on both channels at its level")
        }
    }
}

extension DaemonSessionTests {
    /// A program interrupted by a call is suspended the ALSA way: aplay reports it, waits in
    /// snd_pcm_resume until the call ends (with notifyOthersOnDeactivation), and plays on from
    /// where it stopped: all of its audio is heard, none of it during the call.
    func testAnInterruptedProgramIsSuspendedAndResumesWhereItStopped() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "pacedcapture")
        let environment = try programs(world)
        let musicPath = world.path("program.wav")
        _ = try writeWAV(musicPath, seconds: 3, left: { _ in 0 }, right: { 0.3 * sin(2 * Double.pi * 700 * Double($0) / 48000) })
        let call = try tone(world, "call.flac", frequency: 1000, seconds: 1)

        let program = try RunningProcess("aplay", ["-D", "tonearm:media", musicPath], environment: environment)
        XCTAssertTrue(try waitUntil(timeout: 10) { try programSessions(world, named: "aplay").first?.bool("active") == true })
        sleepSeconds(0.8)
        let announce = try startAnnounce(world, ["--category", "playAndRecord", "--notify-others", call])
        XCTAssertTrue(try waitUntil(timeout: 10) { try programSessions(world, named: "aplay").first?.bool("interrupted") == true },
                      "the program's session is interrupted")
        XCTAssertEqual(announce.wait(timeout: 20).status, 0)
        let result = program.wait(timeout: 20)
        XCTAssertEqual(result.status, 0, "\(result)\n\(daemonReport(world.daemon))")
        XCTAssertTrue(result.stderr.contains("Suspended"), "aplay saw its PCM suspended: \(result.stderr)")
        XCTAssertTrue(try waitUntil(timeout: 10) { try programSessions(world, named: "aplay").isEmpty })
        XCTAssertEqual(world.daemon.terminate()?.status, 0)

        let (_, right) = try capture(world)
        let window = Self.rate / 100
        func windows(_ frequency: Double) -> [Int] {
            stride(from: 0, to: right.count - window, by: window).filter { level(right, $0..<($0 + window), frequency) > 0.2 }
        }
        let programWindows = windows(700), callWindows = windows(1000)
        XCTAssertEqual(Double(programWindows.count) / 100, 3, accuracy: 0.1, "every second of the program was heard")
        let callStart = try XCTUnwrap(callWindows.first), callEnd = try XCTUnwrap(callWindows.last)
        XCTAssertEqual(Double(callWindows.count) / 100, 1, accuracy: 0.1, "the call was heard")
        XCTAssertFalse(programWindows.contains { $0 > callStart + 5 * window && $0 < callEnd - 5 * window }, "the program was silent during the call")
        XCTAssertTrue(programWindows.contains { $0 < callStart } && programWindows.contains { $0 > callEnd }, "the program played before and after it")
    }
}
