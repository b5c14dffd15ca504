import Foundation
import TestSupport
import XCTest

/// Now Playing's elapsed time is the audio heard, from the first frame on: a play is anchored
/// when the device starts playing it (after it was opened, prepared and filled), a gapless
/// change when its first frame plays, not when the daemon happened to collect the report.
///
/// The daemon plays to `pacedsplitcapture` (the paced JACK dummy device behind a `file`
/// plugin), so what reached the device is on disk: its frame count over the rate is the
/// position played. A buffer of 8192 frames (171 ms) makes the time between a start being
/// read from the ring and being heard far longer than the heartbeat that collects it.
final class DaemonHeardClockTests: XCTestCase {
    override func setUpWithError() throws { try requirePacedDevice() }

    func testElapsedIsWhatReachedTheDeviceAfterAPlayAndAGaplessChange() throws {
        let world = try DaemonBench(device: "pacedsplitcapture", start: false)
        let config = world.path("deep-buffer.toml")
        try "[output]\nperiod_frames = 1024\nbuffer_frames = 8192\n".write(toFile: config, atomically: true, encoding: .utf8)
        world.daemon.arguments = ["--config", config]
        try world.daemon.start()
        let first = try world.fixture("first.flac", taggedFixture(1, seconds: 2))
        let second = try world.fixture("second.flac", taggedFixture(2, seconds: 4, seed: 200))
        try world.ok("add", first, second)
        try world.ok("play")
        try world.waitForStatus(timeout: 30, "a second played") { ($0.double("elapsed") ?? 0) >= 1 }
        let afterPlay = try heardBracket(world, before: 0)
        let device = try world.status().object("device") ?? [:]
        XCTAssertEqual(device.int("bufferFrames"), 8192, jsonText(device))
        try world.waitForStatus(timeout: 30, "a second of the second track") {
            $0.string("title") == "Track 2" && ($0.double("elapsed") ?? 0) >= 1
        }
        let afterChange = try heardBracket(world, before: 2)
        print("heard clock: after the play \(afterPlay); after the gapless change \(afterChange)")
        afterPlay.assertWithin(Self.slack, "elapsed after the play vs the audio that reached the device")
        afterChange.assertWithin(Self.slack, "elapsed after the gapless change vs the audio that reached the device")
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
    }

    /// How far elapsed may lie outside what was captured around it: the capture file grows a
    /// period (1024 frames, 21 ms) at a time and the dummy device paces in periods too. The
    /// fault this test guards against is an offset of the whole buffer (171 ms).
    static let slack = 0.08

    /// `status`'s elapsed (plus `before`, the seconds of the items before it) and the audio
    /// captured just before and just after the status call. A busy machine widens the
    /// bracket; it cannot move elapsed out of it.
    struct Bracket: CustomStringConvertible {
        let captured: ClosedRange<Double>
        let elapsed: Double

        var description: String {
            String(format: "elapsed %.3f s, captured %.3f…%.3f s", elapsed, captured.lowerBound, captured.upperBound)
        }

        func assertWithin(_ slack: Double, _ message: String, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertGreaterThanOrEqual(elapsed, captured.lowerBound - slack, "\(message): \(self)", file: file, line: line)
            XCTAssertLessThanOrEqual(elapsed, captured.upperBound + slack, "\(message): \(self)", file: file, line: line)
        }
    }

    private func heardBracket(_ world: DaemonBench, before: Double) throws -> Bracket {
        let capturedBefore = try world.capturedSeconds()
        let status = try world.status()
        let capturedAfter = try world.capturedSeconds()
        XCTAssertEqual(status.double("rate"), 1, jsonText(status))
        return Bracket(captured: capturedBefore...capturedAfter, elapsed: before + (status.double("elapsed") ?? -1))
    }
}
