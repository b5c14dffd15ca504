import Foundation
import TestSupport
import XCTest

/// Without the right to SCHED_FIFO or to lock memory, tonearm plays all the same and says so
/// once each.
final class RealtimeTests: XCTestCase {
    func testRefusedPrioritiesAreLoggedOnceAndPlaybackIsUnchanged() throws {
        guard toolsAvailable("flac", "prlimit", "setpriv") else { throw XCTSkip("flac or util-linux is missing; run ./scripts/setup") }
        let bench = try Bench()
        let fixture = FLACFixture(frames: 44100, sampleRate: 44100, channels: 2, bitsPerSample: 16, seed: 77)
        let flac = try bench.fixture("in.flac", fixture)
        // RLIMIT_RTPRIO and RLIMIT_MEMLOCK 0; root also loses the capabilities that override them.
        var command = ["/usr/bin/prlimit", "--rtprio=0:0", "--memlock=0:0"]
        if getuid() == 0 { command += ["/usr/bin/setpriv", "--bounding-set=-sys_nice,-ipc_lock"] }
        let result = try runProcess(command[0], Array(command.dropFirst()) + [try tonearmBinary(), "play", "--device", "capture", flac],
                                    environment: bench.alsa.environment, timeout: 30)
        assertExit(result, 0)
        let lines = result.stderrLines
        XCTAssertEqual(lines.filter { $0.contains("output thread runs without SCHED_FIFO: Operation not permitted") }.count, 1, "\(result)")
        XCTAssertEqual(lines.filter { $0.contains("audio buffers are not locked in memory: ") }.count, 1, "\(result)")
        assertSamplesEqual(try bench.capture().samples(), fixture.leftJustifiedSamples(), channels: 2, "capture")
    }
}
