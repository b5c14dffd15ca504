import Foundation
import TestSupport
import XCTest

/// Power cuts: the daemon is SIGKILLed while playing, 20 times in a row on the same state
/// directory. Every restart must come up with the queue intact and the position no further
/// from where it was killed than the save interval allows.
final class DaemonPowerLossTests: XCTestCase {
    override func setUpWithError() throws { try requirePacedDevice() }

    func testRepeatedKillNine() throws {
        let cycles = 20
        let tolerance = 6.0
        let seed = UInt64(ProcessInfo.processInfo.environment["TONEARM_POWER_LOSS_SEED"] ?? "") ?? UInt64.random(in: 1...999_999)
        var random = SeededRandom(seed: seed)
        let world = try DaemonBench(start: false)
        // Save every second (the shortest interval allowed), so the position moves from cycle to
        // cycle and kills land during saves.
        let profile = world.path("board.toml")
        try "[daemon]\nsave_interval_seconds = 1\n".write(toFile: profile, atomically: true, encoding: .utf8)
        world.daemon.arguments = ["--config", profile]
        // 90 s of 8 kHz mono: small, and long enough that 20 cycles never reach its end.
        let long = try world.fixture("long.flac", FLACFixture(frames: 90 * 8000, sampleRate: 8000, channels: 1,
                                                              tones: [Tone(440, level: 0.3)], noiseLevel: 0.02, seed: 7,
                                                              tags: [("TITLE", "Long")]))
        let other = try world.fixture("other.flac", taggedFixture(2, seconds: 1, sampleRate: 8000, channels: 1))
        try world.daemon.start()
        let added = try world.daemon.result("add", ["paths": [long, other]])
        XCTAssertEqual(added.int("queueCount"), 2, jsonText(added))

        var killedAt: Double?  // where it was when killed, by the last status before the kill
        var lags: [Double] = []
        for cycle in 1...cycles {
            let context = "cycle \(cycle) (seed \(seed))"
            if cycle > 1 {
                do {
                    try world.daemon.start()
                } catch {
                    return XCTFail("\(context): the restart failed: \(error)")
                }
            }
            let restored = try world.status()
            XCTAssertEqual(restored.int("queueCount"), 2, "\(context): \(jsonText(restored))")
            let queue = try world.daemon.result("queue")
            let paths = (queue.array("items") ?? []).compactMap { ($0 as? [String: Any])?.string("path") }
            XCTAssertEqual(paths, [long, other], "\(context): queue")
            XCTAssertFalse(world.daemon.log.contains("set aside"), "\(context): the state was lost:\n\(daemonReport(world.daemon))")
            if let killedAt {
                XCTAssertEqual(restored.string("title"), "Long", "\(context): \(jsonText(restored))")
                XCTAssertEqual(restored.int("queueIndex"), 0, "\(context): \(jsonText(restored))")
                XCTAssertEqual(restored.string("state"), "paused", "\(context): \(jsonText(restored))")
                let position = restored.double("elapsed") ?? -1
                lags.append(killedAt - position)
                XCTAssertLessThanOrEqual(abs(killedAt - position), tolerance,
                                         "\(context): restored at \(position) s, killed at \(killedAt) s")
                XCTAssertLessThanOrEqual(position, killedAt + 0.5, "\(context): restored ahead of where it was killed")
            }

            let play = try world.daemon.result("play")
            XCTAssertEqual(play.string("status"), "success", "\(context): \(jsonText(play))")
            let wait = 0.3 + 3.7 * Double(random.next() >> 11) / Double(1 << 53)
            sleepSeconds(wait)
            let last = try world.status()
            XCTAssertEqual(last.string("state"), "playing", "\(context): \(jsonText(last))")
            let readAt = monotonicSeconds()
            world.daemon.kill()
            killedAt = (last.double("elapsed") ?? 0) + (monotonicSeconds() - readAt)
        }
        try world.daemon.start()
        let final = try world.status()
        if let killedAt {
            XCTAssertEqual(final.double("elapsed") ?? -1, killedAt, accuracy: tolerance, jsonText(final))
        }
        XCTAssertEqual(final.int("queueCount"), 2)
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: world.daemon.stateDirectory)) ?? []
        XCTAssertFalse(leftovers.contains { $0.contains("corrupt") }, "state set aside: \(leftovers)")
        XCTAssertGreaterThan(final.double("elapsed") ?? 0, 5, "the position never moved on: \(jsonText(final))")
        print(String(format: "power loss: %d kills (seed %llu), restored position behind the kill by %.2f s at most, %.2f s on average",
                     cycles, seed, lags.max() ?? 0, lags.isEmpty ? 0 : lags.reduce(0, +) / Double(lags.count)))
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
    }
}
