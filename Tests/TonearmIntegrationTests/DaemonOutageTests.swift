import Foundation
import TestSupport
import XCTest

/// The output device goes away, or is not there yet: the transport stays `playing`, but Now
/// Playing says rate 0 with the elapsed time actually heard, `status` says why, and the clock
/// runs again from where the audio carries on once the device is back.
///
/// The daemon plays to `pacedsplitcapture` (the paced JACK dummy device, through a `file`
/// plugin that starts a new file at every open), so what reached the device is on disk: its
/// frame count over the rate is the position actually played.
final class DaemonOutageTests: XCTestCase {
    override func setUpWithError() throws { try requirePacedDevice() }

    /// jackd is killed 2 s into a 12 s track and restarted 2.5 s later. While it is down,
    /// `status` says rate 0, an elapsed that does not move and equal to what reached the device,
    /// and why; once it is back, elapsed is again what reached the device.
    func testElapsedStopsWhileTheDeviceIsGoneAndFollowsTheAudioAfter() throws {
        let world = try DaemonBench(device: "pacedsplitcapture")
        let jack = try XCTUnwrap(world.bench.jack)
        let track = try world.fixture("outage.flac", taggedFixture(1, seconds: 12))
        try world.ok("add", track)
        let subscriber = try world.daemon.connect()
        subscriber.setsAsideStartCorrections = true
        _ = try subscriber.result("subscribe", ["topics": ["nowPlaying"]])
        subscriber.events.removeAll()
        try world.ok("play")
        try world.waitForStatus(timeout: 30, "two seconds played") { ($0.double("elapsed") ?? 0) >= 2 }

        jack.kill()
        let killed = monotonicSeconds()
        // The engine notices after the stall timeout (1 s by default); how long after is printed.
        let down = try world.waitForStatus(timeout: 30, "rate 0 after the device stopped") { $0.double("rate") == 0 }
        let noticed = monotonicSeconds() - killed
        XCTAssertEqual(down.string("state"), "playing", "nobody paused: \(jsonText(down))")
        XCTAssertEqual(down.string("output"), "device stopped responding, waiting for it", jsonText(down))
        XCTAssertTrue(down.object("device")?.string("error")?.contains("stopped responding (no period in") == true, jsonText(down))
        let frozen = down.double("elapsed") ?? -1
        let before = try world.capturedSeconds()
        XCTAssertEqual(frozen, before, accuracy: 0.2, "elapsed while down vs the audio that reached the device")
        sleepSeconds(max(0.5, 2.5 - (monotonicSeconds() - killed)))
        let stillDown = try world.status()
        XCTAssertEqual(stillDown.double("rate"), 0, jsonText(stillDown))
        XCTAssertEqual(stillDown.double("elapsed") ?? -1, frozen, accuracy: 0.001, "elapsed ran on while nothing was heard")
        let doctor = try world.daemon.result("doctor")
        let flags = (doctor.array("redFlags") ?? []).compactMap { ($0 as? [String: Any])?.string("flag") }
        XCTAssertTrue(flags.contains("outputInterrupted"), jsonText(doctor))
        XCTAssertFalse(flags.contains("rateZeroWhilePlaying"), jsonText(doctor))
        let text = try world.ok("status")
        XCTAssertTrue(text.stdout.contains("output: device stopped responding, waiting for it"), text.stdout)
        let downFor = monotonicSeconds() - killed

        try jack.start()
        let restarted = monotonicSeconds()
        let back = try world.waitForStatus(timeout: 30, "rate 1 once the device is back") {
            $0.double("rate") == 1 && $0.string("output") == "ok"
        }
        XCTAssertEqual(back.string("state"), "playing")
        XCTAssertTrue(try waitUntil(timeout: 30) { try world.capturedSeconds() >= before + 1.5 }, "1.5 s more reached the device")
        let (playing, played) = try heardBracket(world)
        let since = monotonicSeconds() - restarted
        print("outage: noticed after \(String(format: "%.2f", noticed)) s, down \(String(format: "%.2f", downFor)) s; "
            + "elapsed at the loss \(String(format: "%.3f", frozen)) s vs captured \(String(format: "%.3f", before)) s; "
            + "after the return elapsed \(playing.double("elapsed") ?? -1) s, captured \(played)")
        XCTAssertEqual(playing.double("rate"), 1, jsonText(playing))
        assertWithin(playing, played, atMost: frozen + since, "elapsed after the outage vs the audio that reached the device")

        // Subscribers saw the clock stop and start again: rate changes, not a pause.
        subscriber.collectEvents(timeout: 30, until: 3)
        subscriber.collectEvents(timeout: 0.5)
        let infos = subscriber.events.compactMap { $0.message.object("data") }
        let rates = infos.map { "\($0.string("reason") ?? "?") \($0.object("info")?.double("rate") ?? -1)" }
        XCTAssertEqual(rates, ["playbackStarted 1.0", "rateChanged 0.0", "rateChanged 1.0"], "\(infos.map(jsonText))")
        XCTAssertLessThanOrEqual(subscriber.startCorrections.count, 1, "one play, so at most one correction of its start")
        let lines = daemonLogLines(world.daemon.log)
        XCTAssertTrue(lines.contains { $0.contains("ALSA PCM 'pacedsplitcapture' stopped responding (no period in") },
                      daemonReport(world.daemon))
        XCTAssertTrue(lines.contains { $0.contains("ALSA PCM 'pacedsplitcapture' is back") }, daemonReport(world.daemon))
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
    }

    /// The daemon starts with its device not there yet (the JACK server behind it is not
    /// running): play is `playing` at rate 0 and elapsed 0, waiting for the device; when the
    /// server starts it plays from the start, and the log says the device is back.
    func testPlayWaitsForADeviceThatIsNotThereYet() throws {
        let world = try DaemonBench(jackRunning: false, device: "pacedsplitcapture")
        let jack = try XCTUnwrap(world.bench.jack)
        let track = try world.fixture("late.flac", taggedFixture(1, seconds: 8))
        try world.ok("add", track)
        try world.ok("play")
        let waiting = try world.waitForStatus(timeout: 30, "waiting for the device") {
            $0.string("output") == "waiting for the device"
        }
        XCTAssertEqual(waiting.string("state"), "playing", jsonText(waiting))
        XCTAssertEqual(waiting.double("rate"), 0, jsonText(waiting))
        XCTAssertEqual(waiting.double("elapsed"), 0, jsonText(waiting))
        XCTAssertTrue(waiting.object("device")?.string("error")?.hasPrefix("cannot open ALSA PCM 'pacedsplitcapture'") == true,
                      jsonText(waiting))
        sleepSeconds(1)
        let later = try world.status()
        XCTAssertEqual(later.double("elapsed"), 0, "elapsed ran while nothing played: \(jsonText(later))")
        XCTAssertEqual(later.double("rate"), 0, jsonText(later))
        let text = try world.ok("status")
        XCTAssertTrue(text.stdout.contains("output: waiting for the device (cannot open ALSA PCM"), text.stdout)

        try jack.start()
        let started = monotonicSeconds()
        try world.waitForStatus(timeout: 30, "playing once the device is there") {
            $0.double("rate") == 1 && $0.string("output") == "ok"
        }
        XCTAssertTrue(try waitUntil(timeout: 30) { try world.capturedSeconds() >= 1.5 }, "1.5 s reached the device")
        let (playing, played) = try heardBracket(world)
        let since = monotonicSeconds() - started
        print("late device: elapsed \(playing.double("elapsed") ?? -1) s, captured \(played)")
        assertWithin(playing, played, atMost: since, "elapsed vs the audio that reached the device")
        let lines = daemonLogLines(world.daemon.log)
        XCTAssertTrue(lines.contains { $0.contains("cannot open ALSA PCM 'pacedsplitcapture'") }, daemonReport(world.daemon))
        XCTAssertTrue(lines.contains { $0.contains("ALSA PCM 'pacedsplitcapture' is back") }, daemonReport(world.daemon))
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
    }

    /// `status` and the audio captured just before and just after it.
    private func heardBracket(_ world: DaemonBench) throws -> ([String: Any], ClosedRange<Double>) {
        let before = try world.capturedSeconds()
        let status = try world.status()
        return (status, before...(try world.capturedSeconds()))
    }

    /// Elapsed is no less than the audio captured before the status and no more than `limit`
    /// (where it was when the device came back, plus the time since), give or take 0.2 s (the
    /// buffers). Elapsed runs on the clock, as it must for a sound card; the JACK dummy device,
    /// a process like any other, falls behind it on a busy machine, which widens the two. The
    /// fault is an elapsed that ran while nothing was heard (beyond the limit) or that stopped
    /// (below the audio).
    private func assertWithin(_ status: [String: Any], _ captured: ClosedRange<Double>, atMost limit: Double, _ message: String,
                              file: StaticString = #filePath, line: UInt = #line) {
        let elapsed = status.double("elapsed") ?? -1
        let shown = "\(message): elapsed \(elapsed) s, captured \(captured), at most \(limit): \(jsonText(status))"
        XCTAssertGreaterThanOrEqual(elapsed, captured.lowerBound - 0.2, shown, file: file, line: line)
        XCTAssertLessThanOrEqual(elapsed, limit + 0.2, shown, file: file, line: line)
    }
}
