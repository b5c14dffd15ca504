import Foundation
import Synchronization
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The state directory on a small file system of its own that fills up, then turns read-only,
/// while the daemon plays and takes commands: it keeps playing and answering, tries to save
/// only as its back-off allows (it spun a core and logged ~5,000 lines a second), says so once
/// per change in the log, `status` and `doctor`, and saves again once it can.
final class DaemonSaveFailureTests: XCTestCase {
    override func setUpWithError() throws { try requirePacedDevice() }

    /// A 256 KiB tmpfs, unmounted when the test ends. Mounting needs root (CI runs as root).
    private func smallFileSystem() throws -> String {
        let directory = try TemporaryDirectory(prefix: "tonearm-state")
        let path = directory.path
        let mounted = try runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=256k,mode=0750", "tonearm-test-state", path], timeout: 10)
        guard mounted.status == 0 else { throw XCTSkip("cannot mount a small file system for the state: \(mounted.stderr)") }
        // The directory goes once the file system is off it.
        addTeardownBlock {
            _ = try? runProcess("/bin/umount", ["-l", path], timeout: 10)
            withExtendedLifetime(directory) {}
        }
        return path
    }

    private func remount(_ path: String, _ mode: String) throws {
        let result = try runProcess("/bin/mount", ["-o", "remount,\(mode)", path], timeout: 10)
        XCTAssertEqual(result.status, 0, "remount \(mode): \(result)")
    }

    /// CPU seconds (user + system) the process has used.
    private func cpuSeconds(_ pid: Int32) -> Double {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        // After the command's name in parentheses: state is field 3, utime 14, stime 15.
        let fields = text[(text.lastIndex(of: ")").map { text.index($0, offsetBy: 2) } ?? text.startIndex)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    private func lines(_ world: DaemonBench, containing text: String) -> [String] {
        daemonLogLines(world.daemon.log).filter { $0.contains(text) }
    }

    /// Volume changes, each of which saves the state when it can.
    private func changeVolume(_ world: DaemonBench, from: Int) -> @Sendable () throws -> Void {
        let socket = world.daemon.socketPath
        let counter = LockedCounter()
        return {
            let client = try ControlSocket(path: socket)
            defer { client.close() }
            for _ in 0..<10 {
                let percent = from + counter.next() % 20
                let answer = try client.request("volume", ["percent": percent])
                guard answer.bool("ok") == true else { throw TestSupportError("volume \(percent): \(jsonText(answer))") }
            }
        }
    }

    func testAFullThenReadOnlyStateDirectoryIsRetriedWithBackOffAndSavedAgain() throws {
        let state = try smallFileSystem()
        let world = try DaemonBench(stateDirectory: state)
        try world.playForAbuse()
        try world.ok("volume", "50")
        XCTAssertTrue(waitUntil(timeout: 10) { world.daemon.savedState().map { $0.array("queue")?.count == 1 && $0.double("volume") == 50 } == true },
                      "the queue and the volume are saved")
        let pid = try XCTUnwrap(world.daemon.pid)

        // Full: a file takes every block left.
        _ = try runProcess("/bin/dd", ["if=/dev/zero", "of=\(state)/filler", "bs=4096"], timeout: 30)
        let cpuBefore = (cpuSeconds(pid), monotonicSeconds())
        try world.withstands("a full state directory", rounds: 3, changeVolume(world, from: 20))
        try world.waitForStatus(timeout: 10, "the failed save known") { $0["saveFailure"] is String }
        XCTAssertEqual(lines(world, containing: "cannot save the player state").count, 1, daemonReport(world.daemon))
        XCTAssertTrue(lines(world, containing: "cannot save the player state").first?.contains("(No space left on device); will retry") == true,
                      daemonReport(world.daemon))
        XCTAssertEqual(try world.status().string("saveFailure"), "cannot save the player state in \(state): No space left on device")
        let flags = try world.daemon.result("doctor").array("redFlags") as? [[String: Any]] ?? []
        XCTAssertTrue(flags.contains { $0.string("flag") == "stateNotSaved" }, "doctor: \(flags)")
        XCTAssertEqual(world.daemon.savedState()?.array("queue")?.count, 1, "the last good save is still there, whole")
        XCTAssertEqual(world.daemon.savedState()?.double("volume"), 50)

        // Space again: the next try saves, says so once, and the failure is gone.
        try FileManager.default.removeItem(atPath: state + "/filler")
        try world.waitForStatus(timeout: 70, "the state saved again") { $0["saveFailure"] is NSNull }
        // From the disk filling up to the save that worked, nothing spun (a retry without a pause
        // took 95 % of a core).
        let cpu = (cpuSeconds(pid) - cpuBefore.0) / (monotonicSeconds() - cpuBefore.1)
        XCTAssertLessThan(cpu, 0.5, "tonearmd used \(Int(cpu * 100)) % of a core while it could not save")
        XCTAssertEqual(lines(world, containing: "the player state is saved again").count, 1, daemonReport(world.daemon))
        let volume = try XCTUnwrap(world.status().double("volume"))
        XCTAssertTrue(waitUntil(timeout: 10) { world.daemon.savedState()?.double("volume") == volume },
                      "the saved volume is the volume now (\(volume)): \(world.daemon.savedState() ?? [:])")

        // Read-only: the same, with its own reason; SIGTERM meanwhile ends cleanly.
        try remount(state, "ro")
        try world.withstands("a read-only state directory", rounds: 3, changeVolume(world, from: 60))
        try world.waitForStatus(timeout: 10, "the failed save known") { $0.string("saveFailure")?.hasSuffix("Read-only file system") == true }
        let readOnly = lines(world, containing: "cannot save the player state")
        XCTAssertEqual(readOnly.count, 2, daemonReport(world.daemon))
        XCTAssertTrue(readOnly.last?.contains("(Read-only file system); will retry") == true, daemonReport(world.daemon))
        XCTAssertEqual(try world.status().string("saveFailure"), "cannot save the player state in \(state): Read-only file system")
        let stopped = try XCTUnwrap(world.daemon.terminate(), "tonearmd was running")
        XCTAssertEqual(stopped.status, 0, "SIGTERM while saves fail: \(stopped)")
        XCTAssertFalse(world.daemon.log.contains("Cannot schedule tasks"), world.daemon.log)
        XCTAssertEqual(world.daemon.savedState()?.double("volume"), volume, "the file from before is whole")
    }
}

/// A counter shared by the rounds of an attack.
final class LockedCounter: Sendable {
    private let value = Mutex(0)

    func next() -> Int { value.withLock { value in
        defer { value += 1 }
        return value
    } }
}
