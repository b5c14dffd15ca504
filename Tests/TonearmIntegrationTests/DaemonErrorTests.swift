import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Clear errors: no daemon, missing files, paths outside the music directory, a corrupt state
/// file.
final class DaemonErrorTests: XCTestCase {
    override func setUpWithError() throws { try requirePacedDevice() }

    /// With no daemon on the socket, every command exits 1 and names the socket.
    func testNoDaemon() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-it")
        let socket = directory.file("nobody.sock")
        for arguments in [["status"], ["status", "--json"], ["play"], ["add", "/tmp/x.flac"]] {
            let result = try runProcess(try tonearmBinary(), ["--socket", socket] + arguments, timeout: 10)
            assertExit(result, 1)
            XCTAssertTrue(result.stderr.contains(socket), "\(arguments): the message does not name the socket: \(result)")
            XCTAssertTrue(result.stdout.isEmpty, "\(arguments): \(result)")
        }
        // A stale socket file (nothing listening) is the same.
        let stale = try ControlSocketFile(path: directory.file("stale.sock"))
        let result = try runProcess(try tonearmBinary(), ["status", "--socket", stale.path], timeout: 10)
        assertExit(result, 1)
        XCTAssertTrue(result.stderr.contains(stale.path), "\(result)")
    }

    /// Missing files and escapes from the music directory are refused, naming the path; the
    /// queue keeps only what was allowed.
    func testRefusedPaths() throws {
        let world = try DaemonBench(start: false)
        let music = world.path("music")
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        let inside = try taggedFixture(1, seconds: 1).write(to: music + "/inside.flac")
        let outside = try world.fixture("secret.flac", taggedFixture(2, seconds: 1))
        try FileManager.default.createSymbolicLink(atPath: music + "/link.flac", withDestinationPath: outside)
        world.daemon.arguments = ["--music-dir", music]
        try world.daemon.start()

        let missing = music + "/missing.flac"
        let gone = try world.cli("add", missing)
        assertExit(gone, 1)
        XCTAssertTrue(gone.stderr.contains(missing), "the missing file is not named: \(gone)")

        let refusals: [(path: String, what: String)] = [
            ("/etc/passwd", "a system file"),
            (music + "/../secret.flac", "a .. escape"),
            ("../secret.flac", "a relative .. escape"),
            (music + "/link.flac", "a symbolic link leading out"),
        ]
        for (path, what) in refusals {
            let result = try world.cli("add", path)
            assertExit(result, 1)
            XCTAssertTrue(result.stderr.contains(path), "\(what): the path is not named: \(result)")
            XCTAssertTrue(result.stderr.contains("outside the music directory"), "\(what): not a clear refusal: \(result)")
        }

        // What lies inside is accepted, absolute or relative to the music directory.
        let accepted = try world.ok("add", inside, "inside.flac")
        XCTAssertTrue(accepted.stdout.contains("added 2, queue 2"), "\(accepted)")
        let queue = try world.daemon.result("queue")
        let paths = (queue.array("items") ?? []).compactMap { ($0 as? [String: Any])?.string("path") }
        XCTAssertEqual(paths.count, 2, jsonText(queue))
        XCTAssertTrue(paths.allSatisfy { $0.hasSuffix("/music/inside.flac") }, "\(paths)")
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
    }

    /// A state file of garbage, and one cut short: the daemon starts, says it set the file
    /// aside, and answers.
    func testCorruptStateFile() throws {
        let world = try DaemonBench()
        let track = try world.fixture("state.flac", taggedFixture(1, seconds: 2))
        try world.ok("add", track)
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
        let statePath = world.daemon.stateDirectory + "/state.json"
        let good = try XCTUnwrap(FileManager.default.contents(atPath: statePath), "no state.json after a clean stop")
        XCTAssertGreaterThan(good.count, 20)

        var random = SeededRandom(seed: 6)
        let garbage = Data((0..<3000).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        let truncated = good.prefix(good.count / 2)
        for (n, (content, what)) in [(garbage, "garbage"), (Data(truncated), "truncated")].enumerated() {
            try content.write(to: URL(fileURLWithPath: statePath))
            do {
                try world.daemon.start()
            } catch {
                XCTFail("\(what): the daemon did not start: \(error)")
                continue
            }
            let lines = daemonLogLines(world.daemon.log)
            XCTAssertTrue(lines.contains { $0.contains("set aside") }, "\(what): nothing logged about the state:\n\(daemonReport(world.daemon))")
            let status = try world.status()
            XCTAssertEqual(status.string("state"), "stopped", "\(what): \(jsonText(status))")
            XCTAssertEqual(status.int("queueCount"), 0, "\(what): \(jsonText(status))")
            let asideName = "state.json.corrupt-\(n + 1)"
            let aside = FileManager.default.contents(atPath: world.daemon.stateDirectory + "/" + asideName)
            XCTAssertEqual(aside, content, "\(what): \(asideName) does not hold the bad file; the state directory holds "
                + "\((try? FileManager.default.contentsOfDirectory(atPath: world.daemon.stateDirectory)) ?? [])")
            XCTAssertTrue(lines.contains { $0.contains(asideName) }, "\(what): the log does not say where the file went")
            // It works normally afterwards.
            try world.ok("add", track)
            XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
        }
    }
}

/// A Unix socket file that nothing listens on (bound, then its descriptor closed).
private struct ControlSocketFile {
    let path: String
    init(path: String) throws {
        self.path = path
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in bytes.enumerated() { raw[i] = byte }
            raw[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw TestSupportError("bind \(path): \(String(cString: strerror(errno)))") }
    }
}
