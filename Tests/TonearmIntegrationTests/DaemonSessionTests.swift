import Foundation
import TestSupport
import XCTest

/// Audio sessions measured in a capture of the paced device: the daemon plays music, `tonearm
/// announce` plays a prompt, a call or a chime in a session of its own, and the capture shows
/// what the policy and the mixer did.
///
/// Each stream keeps to one channel so the capture separates them exactly: the music is on the
/// left (a 440 Hz tone with a little seeded noise, so every stretch of it is unique and can be
/// found in the source), the sessions' audio on the right. The mixer never crosses channels.
final class DaemonSessionTests: XCTestCase {
    static let rate = 48000

    /// Stereo 16-bit FLAC, left and right given as functions of the frame index.
    func writeStereo(_ path: String, seconds: Double, left: (Int) -> Double, right: (Int) -> Double) throws -> String {
        let frames = Int(seconds * Double(Self.rate))
        var samples = [Int32](repeating: 0, count: frames * 2)
        for frame in 0..<frames {
            samples[2 * frame] = Int32((left(frame) * 32767).rounded())
            samples[2 * frame + 1] = Int32((right(frame) * 32767).rounded())
        }
        try LibFLACEncoder.write(samples, to: path, sampleRate: Self.rate, channels: 2, bits: 16)
        return path
    }

    /// The music: a 440 Hz tone at 0.3 with seeded noise at `noise`, on the left only.
    func music(_ world: DaemonBench, seconds: Double, noise: Double = 0.01) throws -> (path: String, left: [Int32]) {
        var random = SeededRandom(seed: 7)
        var left: [Int32] = []
        let path = try writeStereo(world.path("music.flac"), seconds: seconds, left: { frame in
            let value = 0.3 * sin(2 * Double.pi * 440 * Double(frame) / Double(Self.rate)) + noise * random.nextSigned()
            left.append(Int32((value * 32767).rounded()))
            return value
        }, right: { _ in 0 })
        return (path, left)
    }

    /// A session's sound: a tone on the right only.
    func tone(_ world: DaemonBench, _ name: String, frequency: Double, seconds: Double, level: Double = 0.3) throws -> String {
        try writeStereo(world.path(name), seconds: seconds, left: { _ in 0 }, right: { frame in
            level * sin(2 * Double.pi * frequency * Double(frame) / Double(Self.rate))
        })
    }

    /// The capture's left and right channels as 16-bit values.
    func capture(_ world: DaemonBench) throws -> (left: [Int32], right: [Int32]) {
        let wav = try WAVFile(path: world.bench.alsa.pacedCapturePath)
        XCTAssertEqual(wav.channels, 2)
        XCTAssertEqual(wav.sampleRate, Self.rate)
        XCTAssertEqual(wav.bitsPerSample, 16, "the daemon opened the device at the files' format")
        let samples = try wav.samples()
        var left: [Int32] = [], right: [Int32] = []
        left.reserveCapacity(samples.count / 2)
        right.reserveCapacity(samples.count / 2)
        for frame in 0..<(samples.count / 2) {
            left.append(samples[2 * frame] >> 16)
            right.append(samples[2 * frame + 1] >> 16)
        }
        return (left, right)
    }

    /// Amplitude (fraction of full scale) of `frequency` in `samples[range]`.
    func level(_ samples: [Int32], _ range: Range<Int>, _ frequency: Double) -> Double {
        let floats = samples[range].map { Float($0) / 32768 }
        return toneAmplitude(floats, channel: 0, channels: 1, sampleRate: Self.rate, frequency: frequency)
    }

    func dB(_ ratio: Double) -> Double { 20 * log10(ratio) }

    /// Where a session's tone sounds on the right channel: the first and last frame of 10 ms
    /// windows holding more than a third of `expected` at `frequency`.
    func sounding(_ samples: [Int32], _ frequency: Double, expected: Double, from start: Int = 0) -> Range<Int>? {
        let window = Self.rate / 100
        var first: Int?, last: Int?
        var index = start
        while index + window <= samples.count {
            if level(samples, index..<(index + window), frequency) > expected / 3 {
                if first == nil { first = index }
                last = index + window
            }
            index += window
        }
        guard let first, let last else { return nil }
        return first..<last
    }

    /// The offset from capture to source at `at`: the source index of capture frame `at`, found
    /// by matching 20 ms of capture exactly (the seeded noise makes every stretch unique).
    func sourceOffset(_ capture: [Int32], _ source: [Int32], at: Int) -> Int? {
        let length = Self.rate / 50
        guard at >= 0, at + length <= capture.count else { return nil }
        let probe = Array(capture[at..<(at + length)])
        for start in 0...(source.count - length) where source[start] == probe[0] {
            if Array(source[start..<(start + length)]) == probe { return start - at }
        }
        return nil
    }

    /// Starts `tonearm announce …` and returns at once.
    func startAnnounce(_ world: DaemonBench, _ arguments: [String]) throws -> RunningProcess {
        try RunningProcess(try tonearmBinary(), ["--socket", world.daemon.socketPath, "announce"] + arguments,
                           environment: world.bench.alsa.environment)
    }

    func session(_ report: [String: Any], _ id: Int) -> [String: Any]? {
        (report.array("sessions") as? [[String: Any]])?.first { $0.int("session") == id }
    }

    func playMusic(_ world: DaemonBench, _ path: String, until elapsed: Double) throws {
        try world.ok("add", path)
        try world.ok("play")
        try world.waitForStatus(timeout: 10, "music playing") {
            $0.string("state") == "playing" && ($0.double("elapsed") ?? 0) >= elapsed
        }
    }

    // MARK: Duck

    /// A prompt with duckOthers: the music drops 15 dB (± 1) while it speaks, is back within
    /// 0.5 dB less than 400 ms after it, and the ramps never jump.
    func testAPromptWithDuckOthersDucksTheMusicBy15dBAndItComesBack() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "pacedcapture")
        let (musicPath, _) = try music(world, seconds: 12)
        let prompt = try tone(world, "prompt.flac", frequency: 1000, seconds: 1.5)
        try playMusic(world, musicPath, until: 1.5)

        let announce = try startAnnounce(world, [prompt])
        var during: [String: Any] = [:]
        XCTAssertTrue(try waitUntil(timeout: 5) {
            during = try world.daemon.result("sessions")
            return (session(during, 1)?.bool("ducked") ?? false) && (session(during, 1)?.double("gainDB") ?? 0) < -14
        }, "the player's session ducked to about −15 dB: \(jsonText(during))")
        XCTAssertEqual(session(during, 2)?.array("options") as? [String], ["mixWithOthers", "duckOthers"])
        XCTAssertEqual(session(during, 1)?.bool("interrupted"), false)
        let result = announce.wait(timeout: 15)
        XCTAssertEqual(result.status, 0, "\(result)\n\(daemonReport(world.daemon))")
        sleepSeconds(1.0)
        try world.ok("stop")
        let after = try world.daemon.result("sessions")
        XCTAssertEqual(session(after, 1)?.bool("ducked"), false)
        XCTAssertNil(session(after, 2), "announce closed its session")

        let (left, right) = try capture(world)
        let promptRange = try XCTUnwrap(sounding(right, 1000, expected: 0.3), "the prompt is in the capture")
        XCTAssertEqual(Double(promptRange.count) / Double(Self.rate), 1.5, accuracy: 0.05)
        let window = Self.rate / 20  // 50 ms: whole cycles of 440 Hz (22) and of the noise's spread
        let before = level(left, (promptRange.lowerBound - 12 * window)..<(promptRange.lowerBound - 2 * window), 440)
        XCTAssertEqual(before, 0.3, accuracy: 0.01, "the music at full level before the prompt")

        // Ducked: every 50 ms window from 200 ms into the prompt (the 150 ms ramp done) to its end.
        var start = promptRange.lowerBound + 4 * window
        var ducked: [Double] = []
        while start + window <= promptRange.upperBound {
            ducked.append(dB(level(left, start..<(start + window), 440) / before))
            start += window
        }
        XCTAssertGreaterThan(ducked.count, 15)
        for value in ducked { XCTAssertEqual(value, -15, accuracy: 1, "440 Hz during the prompt, dB relative to before: \(ducked)") }

        // Restored: the first window after the prompt from which the music stays within 0.5 dB.
        var windows: [(start: Int, dB: Double)] = []
        start = promptRange.upperBound
        while start + window <= left.count - Self.rate / 2 {
            windows.append((start, dB(level(left, start..<(start + window), 440) / before)))
            start += window / 5
        }
        let settled = try XCTUnwrap(windows.indices.first { index in windows[index...].allSatisfy { abs($0.dB) <= 0.5 } },
                                    "the music returns to its level: \(windows.map(\.dB))")
        let recovery = Double(windows[settled].start + window - promptRange.upperBound) / Double(Self.rate)
        XCTAssertLessThan(recovery, 0.4, "back within 0.5 dB \(recovery) s after the prompt")
        XCTAssertGreaterThan(recovery, 0.1, "the restore is a ramp (300 ms), not a step")
        print("measured: ducked \(ducked.min()!)…\(ducked.max()!) dB, back within 0.5 dB \(recovery * 1000) ms after the prompt")

        // No click: the music's steepest step is what a 0.3 tone and the noise allow.
        let allowed = (0.3 * 2 * Double.pi * 440 / Double(Self.rate) + 2 * 0.01) * 32768 + 2
        var steepest = 0
        for index in 1..<left.count { steepest = max(steepest, abs(Int(left[index]) - Int(left[index - 1]))) }
        XCTAssertLessThanOrEqual(Double(steepest), allowed, "largest sample-to-sample step on the music channel")
    }

    // MARK: Interrupt

    /// A call (playAndRecord) interrupts the music: it fades out within 50 ms, the player says
    /// it was interrupted, and when the call ends with notifyOthersOnDeactivation the music
    /// resumes where it stopped (± 50 ms).
    func testACallInterruptsTheMusicWhichResumesWhereItStoppedWhenTheCallNotifiesOthers() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "pacedcapture")
        let (musicPath, source) = try music(world, seconds: 12, noise: 0.05)
        let call = try tone(world, "call.flac", frequency: 1000, seconds: 1.5)
        try playMusic(world, musicPath, until: 1.5)

        let announce = try startAnnounce(world, ["--category", "playAndRecord", "--notify-others", call])
        var during: [String: Any] = [:]
        XCTAssertTrue(try waitUntil(timeout: 5) {
            during = try world.daemon.result("sessions")
            return session(during, 1)?.bool("interrupted") == true
        }, "the player's session is interrupted: \(jsonText(during))")
        XCTAssertEqual(try world.status().string("state"), "paused", "the player paused for the call")
        let result = announce.wait(timeout: 15)
        XCTAssertEqual(result.status, 0, "\(result)\n\(daemonReport(world.daemon))")
        try world.waitForStatus(timeout: 3, "the music resumes by itself") { $0.string("state") == "playing" }
        XCTAssertEqual(session(try world.daemon.result("sessions"), 1)?.bool("interrupted"), false)
        sleepSeconds(1.0)
        try world.ok("stop")

        let (left, right) = try capture(world)
        let callRange = try XCTUnwrap(sounding(right, 1000, expected: 0.3), "the call is in the capture")

        // Before the call: the capture is the source, exactly; find where that ends.
        let probeBefore = callRange.lowerBound - Self.rate / 2
        let offsetBefore = try XCTUnwrap(sourceOffset(left, source, at: probeBefore), "music before the call found in the source")
        var exactEnd = probeBefore
        while exactEnd < left.count && left[exactEnd] == source[exactEnd + offsetBefore] { exactEnd += 1 }
        // The fade: from the first altered sample until the music channel is silent (the
        // mixer's dither, ±1 LSB, stays while another stream plays).
        var silent = exactEnd
        while silent < callRange.upperBound && left[silent..<min(left.count, silent + 480)].contains(where: { abs($0) > 1 }) { silent += 1 }
        let fade = Double(silent - exactEnd) / Double(Self.rate)
        XCTAssertLessThanOrEqual(fade, 0.05, "the music fades out within 50 ms (took \(fade) s)")
        XCTAssertLessThan(silent, callRange.upperBound, "the music is silent during the call")
        XCTAssertLessThan(abs(silent - callRange.lowerBound), Self.rate / 5,
                          "the music stops as the call starts (music silent at \(silent), call from \(callRange.lowerBound))")

        // After the call: the music again, exactly, from some later point of the source.
        let probeAfter = left.count - Self.rate / 2
        let offsetAfter = try XCTUnwrap(sourceOffset(left, source, at: probeAfter), "music after the call found in the source")
        let resumedAt = try XCTUnwrap((callRange.upperBound..<left.count).first { abs(left[$0]) > 1 }, "the music resumed")
        let stoppedAtSource = silent + offsetBefore
        let resumedAtSource = resumedAt + offsetAfter
        let gap = Double(resumedAtSource - stoppedAtSource) / Double(Self.rate)
        XCTAssertEqual(gap, 0, accuracy: 0.05,
                       "the music resumes where it stopped: stopped at source \(stoppedAtSource), resumed at \(resumedAtSource)")
        print("measured: fade-out \(fade * 1000) ms, resumed \(gap * 1000) ms from where the music stopped")
    }

    /// Without notifyOthersOnDeactivation the interrupted music stays paused until asked.
    func testWithoutNotifyOthersTheInterruptedMusicStaysPaused() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "paced")
        let (musicPath, _) = try music(world, seconds: 12)
        let call = try tone(world, "call.flac", frequency: 1000, seconds: 0.5)
        try playMusic(world, musicPath, until: 0.5)
        try world.ok("announce", "--category", "playAndRecord", call)
        sleepSeconds(1.0)
        let status = try world.status()
        XCTAssertEqual(status.string("state"), "paused", "no notifyOthers: the music does not resume")
        let sessions = try world.daemon.result("sessions")
        XCTAssertEqual(session(sessions, 1)?.bool("interrupted"), true)
        XCTAssertEqual(session(sessions, 1)?.bool("active"), true)
        try world.ok("play")
        try world.waitForStatus(timeout: 3, "play resumes it") { $0.string("state") == "playing" }
        XCTAssertEqual(session(try world.daemon.result("sessions"), 1)?.bool("interrupted"), false)
    }

    // MARK: Mix and mute

    /// An ambient chime mixes with the music, both at full level; with the mute input on the
    /// chime is silent and the music unchanged.
    func testAnAmbientChimeMixesAndTheMuteInputSilencesOnlyIt() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "pacedcapture")
        let (musicPath, _) = try music(world, seconds: 14)
        let chime = try tone(world, "chime.flac", frequency: 1000, seconds: 1.0)
        try playMusic(world, musicPath, until: 1.0)

        try world.ok("announce", "--category", "ambient", chime)
        sleepSeconds(0.5)
        try world.ok("mute", "on")
        XCTAssertEqual(try world.daemon.result("sessions").bool("muted"), true)
        try world.ok("announce", "--category", "ambient", chime)
        try world.ok("mute", "off")
        sleepSeconds(0.5)
        XCTAssertEqual(try world.status().string("state"), "playing", "the music never stopped")
        try world.ok("stop")

        let (left, right) = try capture(world)
        let heard = try XCTUnwrap(sounding(right, 1000, expected: 0.3), "the first chime is in the capture")
        XCTAssertEqual(Double(heard.count) / Double(Self.rate), 1.0, accuracy: 0.05, "one chime heard, the muted one not")
        let window = Self.rate / 20
        let chimeLevel = level(right, (heard.lowerBound + 2 * window)..<(heard.upperBound - 2 * window), 1000)
        XCTAssertEqual(dB(chimeLevel / 0.3), 0, accuracy: 0.1, "the chime at full level")
        let before = level(left, (heard.lowerBound - 10 * window)..<(heard.lowerBound - window), 440)
        let alongside = level(left, (heard.lowerBound + 2 * window)..<(heard.upperBound - 2 * window), 440)
        XCTAssertEqual(dB(alongside / before), 0, accuracy: 0.1, "the music at full level under the chime")

        // The muted chime: 1.0 s of capture after the first chime's end + 0.5 s, nothing on the
        // right, the music unchanged on the left.
        let afterFirst = heard.upperBound + Self.rate / 4
        let rest = afterFirst..<(left.count - window)
        XCTAssertGreaterThan(rest.count, Self.rate * 3 / 2, "the capture runs on through the muted chime")
        XCTAssertLessThan(level(right, rest, 1000), 0.0003, "the muted chime is silent (under −60 dB)")
        XCTAssertEqual(dB(level(left, rest, 440) / before), 0, accuracy: 0.1, "the music is unchanged while muted")
    }

    // MARK: Spoken audio

    /// A podcast (playback, mode spokenAudio, mixing) is interrupted by a prompt with
    /// interruptSpokenAudioAndMixWithOthers; the music in the player's session is not. Only the
    /// podcast's client hears of it.
    func testAPromptInterruptsSpokenAudioButNotTheMusic() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "pacedcapture")
        let (musicPath, _) = try music(world, seconds: 14)
        let podcast = try tone(world, "podcast.flac", frequency: 660, seconds: 10, level: 0.2)
        let prompt = try tone(world, "prompt.flac", frequency: 1000, seconds: 1.0)
        try playMusic(world, musicPath, until: 0.5)

        let podcaster = try world.daemon.connect()
        _ = try podcaster.result("subscribe", ["topics": ["interruption", "duck", "stream"]])
        let opened = try podcaster.result("sessionOpen", ["category": "playback", "mode": "spokenAudio", "options": ["mixWithOthers"]])
        let podcastSession = try XCTUnwrap(opened.int("session"))
        _ = try podcaster.result("sessionPlay", ["session": podcastSession, "path": podcast])
        let bystander = try world.daemon.connect()
        _ = try bystander.result("subscribe", [:])
        _ = try bystander.result("sessionOpen", ["category": "ambient"])
        sleepSeconds(1.0)

        try world.ok("announce", "--category", "playback", "--options", "interruptSpokenAudioAndMixWithOthers", prompt)
        var events: [[String: Any]] = []
        _ = waitUntil(timeout: 2) {
            events = podcaster.collectEvents(timeout: 0.05).map(\.message)
            return events.contains { $0.string("event") == "interruption" }
        }
        let interruption = try XCTUnwrap(events.first { $0.string("event") == "interruption" }?.object("data"), "\(events)")
        XCTAssertEqual(interruption.string("type"), "began")
        XCTAssertEqual(interruption.string("reason"), "spokenAudioInterrupted")
        XCTAssertEqual(interruption.int("session"), podcastSession)
        let sessions = try world.daemon.result("sessions")
        XCTAssertEqual(session(sessions, podcastSession)?.bool("interrupted"), true)
        XCTAssertEqual(session(sessions, 1)?.bool("interrupted"), false, "the music is not spoken audio")
        XCTAssertEqual(try world.status().string("state"), "playing")
        let bystanderEvents = bystander.collectEvents(timeout: 0.2).map(\.message).filter {
            ["interruption", "duck", "stream"].contains($0.string("event") ?? "")
        }
        XCTAssertEqual(bystanderEvents.count, 0, "another client's session hears nothing: \(bystanderEvents)")
        sleepSeconds(0.5)
        try world.ok("stop")

        let (left, right) = try capture(world)
        let promptRange = try XCTUnwrap(sounding(right, 1000, expected: 0.3), "the prompt is in the capture")
        let window = Self.rate / 20
        let podcastBefore = level(right, (promptRange.lowerBound - 10 * window)..<(promptRange.lowerBound - window), 660)
        XCTAssertEqual(podcastBefore, 0.2, accuracy: 0.01, "the podcast played before the prompt")
        // Whole cycles of both tones (2400 frames hold 50 of the prompt's and 33 of the podcast's),
        // inside the prompt: otherwise the prompt itself leaks into the podcast's frequency by up
        // to 0.3 / (π · 340 Hz · the window's seconds), about 0.0003, with where the window ends.
        let during = promptRange.lowerBound + 2 * window
        let wholeCycles = (promptRange.upperBound - window - during) / 2400 * 2400
        let podcastDuring = level(right, during..<(during + wholeCycles), 660)
        XCTAssertLessThan(podcastDuring, 0.0002, "the podcast is silent during the prompt")
        // (From 50 ms after the prompt: its last cycle, cut off, splashes into every frequency.)
        let podcastAfter = level(right, (promptRange.upperBound + window)..<(left.count - window), 660)
        XCTAssertLessThan(podcastAfter, 0.0002, "it stays interrupted: the prompt did not notify others")
        let musicBefore = level(left, (promptRange.lowerBound - 10 * window)..<(promptRange.lowerBound - window), 440)
        let musicDuring = level(left, promptRange, 440)
        XCTAssertEqual(dB(musicDuring / musicBefore), 0, accuracy: 0.1, "the music plays on at its level")
    }

    // MARK: Now Playing

    /// Now Playing (and the remote commands) belong to the most recently activated eligible
    /// session, and go back to the player when that one deactivates.
    func testNowPlayingFollowsTheLatestEligibleSessionAndComesBack() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "paced")
        let (musicPath, _) = try music(world, seconds: 12)
        try playMusic(world, musicPath, until: 0.2)
        XCTAssertEqual(try world.daemon.result("sessions").int("nowPlayingOwner"), 1, "the player owns Now Playing")

        let app = try world.daemon.connect()
        _ = try app.result("subscribe", ["topics": ["remoteCommand", "interruption", "duck"]])
        // Mixable, or without commands: not eligible, the player keeps Now Playing.
        let mixing = try XCTUnwrap(try app.result("sessionOpen", ["category": "playback", "options": ["mixWithOthers"], "remoteCommands": true]).int("session"))
        _ = try app.result("sessionActivate", ["session": mixing])

        // Another client's prompt ducks the app's session: the app hears of it, twice.
        let navigation = try world.daemon.connect()
        let prompt = try XCTUnwrap(try navigation.result("sessionOpen", ["category": "playback", "options": ["duckOthers"]]).int("session"))
        _ = try navigation.result("sessionActivate", ["session": prompt])
        _ = try navigation.result("sessionDeactivate", ["session": prompt])
        var ducks: [[String: Any]] = []
        XCTAssertTrue(waitUntil(timeout: 2) {
            ducks = app.collectEvents(timeout: 0.05).map(\.message).filter { $0.string("event") == "duck" }.compactMap { $0.object("data") }
            return ducks.count >= 2
        }, "\(ducks)")
        XCTAssertEqual(ducks.map { $0.int("session") }, [mixing, mixing])
        XCTAssertEqual(ducks.map { $0.bool("ducked") }, [true, false])
        XCTAssertEqual(ducks.first?.array("by") as? [Int], [prompt])
        navigation.close()
        let silent = try XCTUnwrap(try app.result("sessionOpen", ["category": "playback"]).int("session"))
        XCTAssertEqual(try world.daemon.result("sessions").int("nowPlayingOwner"), 1)
        _ = silent

        let eligible = try XCTUnwrap(try app.result("sessionOpen", ["category": "playback", "remoteCommands": true]).int("session"))
        _ = try app.result("sessionActivate", ["session": eligible])
        XCTAssertEqual(try world.daemon.result("sessions").int("nowPlayingOwner"), eligible)
        XCTAssertEqual(try world.status().string("state"), "paused", "a non-mixable session interrupts the player")
        let forwarded = try world.daemon.result("command", ["name": "nextTrack"])
        XCTAssertEqual(forwarded.int("forwardedTo"), eligible)
        var events: [[String: Any]] = []
        XCTAssertTrue(waitUntil(timeout: 2) {
            events = app.collectEvents(timeout: 0.05).map(\.message)
            return events.contains { $0.string("event") == "remoteCommand" }
        })
        let command = try XCTUnwrap(events.first { $0.string("event") == "remoteCommand" }?.object("data"))
        XCTAssertEqual(command.string("name"), "nextTrack")
        XCTAssertEqual(command.int("session"), eligible)

        _ = try app.result("sessionDeactivate", ["session": eligible, "notifyOthers": true])
        try world.waitForStatus(timeout: 3, "the player resumes") { $0.string("state") == "playing" }
        XCTAssertEqual(try world.daemon.result("sessions").int("nowPlayingOwner"), 1, "Now Playing is the player's again")
    }

    // MARK: Raw PCM and errors

    /// A client streams raw PCM at 22050 Hz mono into its session; the daemon resamples it to
    /// the device and plays it to the end.
    func testRawPCMStreamedIntoASessionIsResampledAndPlayed() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "pacedcapture")
        let (musicPath, _) = try music(world, seconds: 8)
        try playMusic(world, musicPath, until: 0.5)
        // 1.0 s of a 1 kHz tone at 22050 Hz, mono, 16-bit little-endian, through sox's format.
        var raw: [UInt8] = []
        for frame in 0..<22050 {
            let value = Int16((0.3 * sin(2 * Double.pi * 1000 * Double(frame) / 22050) * 32767).rounded())
            raw += [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
        }
        let rawPath = world.path("prompt.raw")
        try Data(raw).write(to: URL(fileURLWithPath: rawPath))
        try world.ok("announce", "--category", "ambient", "--pcm", "22050:1:16", rawPath)
        try world.ok("stop")
        let (_, right) = try capture(world)
        let heard = try XCTUnwrap(sounding(right, 1000, expected: 0.3), "the streamed prompt is in the capture")
        XCTAssertEqual(Double(heard.count) / Double(Self.rate), 1.0, accuracy: 0.05)
        let window = Self.rate / 20
        XCTAssertEqual(level(right, (heard.lowerBound + window)..<(heard.upperBound - window), 1000), 0.3, accuracy: 0.01,
                       "mono on both channels, resampled from 22050 Hz to 48000 Hz")
    }

    func testSessionRequestsRefuseWhatTheRulesDoNotAllow() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "paced")
        let client = try world.daemon.connect()
        let refused = try client.request("sessionOpen", ["category": "ambient", "options": ["mixWithOthers"]])
        XCTAssertEqual(refused.object("error")?.string("code"), "badArgument")
        XCTAssertEqual(refused.object("error")?.string("message"),
                       "category ambient does not accept option mixWithOthers (accepted only by playback, playAndRecord and multiRoute)")
        let badMode = try client.request("sessionOpen", ["category": "playback", "mode": "voiceChat"])
        XCTAssertEqual(badMode.object("error")?.string("message"),
                       "mode voiceChat cannot be used with category playback (only with playAndRecord)")
        let unknown = try client.request("sessionOpen", ["category": "loud"])
        XCTAssertTrue(unknown.object("error")?.string("message")?.hasPrefix("unknown category 'loud'") == true, "\(unknown)")
        XCTAssertEqual(try client.request("sessionActivate", ["session": 1]).object("error")?.string("message"),
                       "session 1 belongs to another client", "the player's session is not a client's to change")
        XCTAssertEqual(try client.request("sessionActivate", ["session": 99]).object("error")?.string("message"), "no open session 99")

        let opened = try client.result("sessionOpen", [:])
        XCTAssertEqual(opened.string("category"), "soloAmbient", "the default category of a new session")
        let id = try XCTUnwrap(opened.int("session"))
        let missing = try client.request("sessionPlay", ["session": id, "path": world.path("nope.flac")])
        XCTAssertEqual(missing.object("error")?.string("code"), "notFound")
        let notFLAC = world.path("text.flac")
        try "not audio".write(toFile: notFLAC, atomically: true, encoding: .utf8)
        XCTAssertEqual(try client.request("sessionPlay", ["session": id, "path": notFLAC]).object("error")?.string("code"), "notPlayable")
        let badFormat = try client.request("sessionPlay", ["session": id, "format": ["rate": 48000, "channels": 2, "bits": 12]])
        XCTAssertEqual(badFormat.object("error")?.string("code"), "badArgument", "\(badFormat)")
        XCTAssertEqual(try client.request("sessionWrite", ["session": id, "data": "AAAA"]).object("error")?.string("code"), "notStreaming")

        // The CLI says the same, and exits 1.
        let cli = try world.cli("announce", "--category", "record", "--options", "duckOthers", notFLAC)
        XCTAssertEqual(cli.status, 1)
        XCTAssertTrue(cli.stderr.contains("category record does not accept option duckOthers"), cli.stderr)

        // A client that goes away takes its sessions with it.
        client.close()
        XCTAssertTrue(try waitUntil(timeout: 3) {
            (try world.daemon.result("sessions").array("sessions") ?? []).count == 1
        }, "only the player's session is left")
    }
}
