import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Rooms through Snapcast, with Debian's snapserver and snapclient: tonearmd plays into the
/// pipe snapserver reads (`--device pipe:PATH`), snapserver runs Snapcast's own meta_mpd.py,
/// unmodified, against tonearmd's MPD server, and a snapclient writing to a file hears the
/// music while snapserver's JSON-RPC shows the title. snapserver going away mid-play leaves the
/// daemon answering, the output waiting; it comes back with snapserver.
final class SnapcastTests: XCTestCase {
    /// meta_mpd.py talks to MPD on localhost:6600 (snapserver 0.26 passes it no other address).
    private static let mpdPort = 6600

    override func setUpWithError() throws {
        guard toolsAvailable("snapserver", "snapclient", "flac") else {
            throw XCTSkip("snapserver and snapclient are not installed; run ./scripts/setup")
        }
        let modules = try runProcess("/usr/bin/python3", ["-c", "import mpd, dbus, gi, musicbrainzngs"])
        guard modules.status == 0 else {
            throw XCTSkip("meta_mpd.py's Python modules are missing (python3-mpd python3-dbus python3-gi python3-musicbrainzngs): run ./scripts/setup")
        }
        guard (try? connectTCP(port: Self.mpdPort)).map({ close($0); return false }) ?? true else {
            throw XCTSkip("port \(Self.mpdPort) is taken (another MPD server?): meta_mpd.py can reach only that one")
        }
    }

    /// A snapserver with its own ports and data directory, reading `fifo`.
    private final class SnapServer {
        let process: RunningProcess
        let rpcPort: Int
        let streamPort: Int

        init(directory: String, fifo: String, rpcPort: Int, streamPort: Int, httpPort: Int, log: String) throws {
            self.rpcPort = rpcPort
            self.streamPort = streamPort
            let config = """
                [server]
                datadir = \(directory)
                [http]
                enabled = true
                bind_to_address = 127.0.0.1
                port = \(httpPort)
                doc_root =
                [tcp]
                enabled = true
                bind_to_address = 127.0.0.1
                port = \(rpcPort)
                [stream]
                bind_to_address = 127.0.0.1
                port = \(streamPort)
                source = pipe://\(fifo)?name=Tonearm&mode=create&controlscript=/usr/share/snapserver/plug-ins/meta_mpd.py
                [logging]
                sink = stderr

                """
            let path = directory + "/snapserver.conf"
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(config.utf8)))
            // meta_mpd.py runs under the system's python3, which has its modules.
            process = try RunningProcess("/usr/bin/snapserver", ["-c", path], environment: ["PATH": "/usr/bin:/bin", "HOME": directory],
                                         stdoutPath: log, stderrPath: log)
        }

        /// `Server.GetStatus` over the JSON-RPC port: the streams, each with its properties.
        func streams() throws -> [[String: Any]] {
            let fd = try connectTCP(port: rpcPort)
            defer { close(fd) }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let request = Array("{\"id\":1,\"jsonrpc\":\"2.0\",\"method\":\"Server.GetStatus\"}\r\n".utf8)
            _ = request.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            var reply: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while reply.last != 0x0A {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard n > 0 else { throw TestSupportError("snapserver's JSON-RPC closed or timed out") }
                reply += buffer[..<n]
            }
            let status = parseJSONObject(reply)
            let server = (status?["result"] as? [String: Any])?["server"] as? [String: Any]
            return server?["streams"] as? [[String: Any]] ?? []
        }

        func stop() {
            process.send(SIGTERM)
            process.wait(timeout: 10)
        }
    }

    func testASnapclientHearsTheMusicAndSnapserverShowsTheTitle() throws {
        let world = try DaemonBench(jack: false, device: "pipe:", start: false)
        let snap = world.path("snap")
        try FileManager.default.createDirectory(atPath: snap, withIntermediateDirectories: true)
        let fifo = snap + "/fifo"
        let music = world.path("music")
        try FileManager.default.createDirectory(atPath: music + "/Rooms", withIntermediateDirectories: true)
        _ = try FLACFixture(frames: 8 * 44100, tones: [Tone(440, level: 0.5)], noiseLevel: 0, seed: 70,
                            tags: [("TITLE", "Rooms Apart"), ("ARTIST", "The Snapcasts"), ("ALBUM", "Everywhere")])
            .write(to: music + "/Rooms/1.flac")

        let (rpc, stream, http) = (try freeTCPPort(), try freeTCPPort(), try freeTCPPort())
        var server = try SnapServer(directory: snap, fifo: fifo, rpcPort: rpc, streamPort: stream, httpPort: http, log: snap + "/server.log")
        defer { server.stop() }
        XCTAssertTrue(waitUntil(timeout: 10) { FileManager.default.fileExists(atPath: fifo) }, "snapserver made its pipe")

        world.daemon.device = "pipe:" + fifo
        world.daemon.arguments = ["--music-dir", music, "--mpd-port", String(Self.mpdPort)]
        try world.daemon.start()
        let heard = snap + "/heard.raw"
        let client = try RunningProcess("/usr/bin/snapclient", ["-h", "127.0.0.1", "-p", String(stream), "--player", "file:filename=" + heard,
                                                               "--logsink", "null", "--hostID", "tonearm-test"],
                                        stdoutPath: snap + "/client.out", stderrPath: snap + "/client.err")
        defer {
            client.send(SIGTERM)
            client.wait(timeout: 10)
        }

        _ = try world.daemon.result("update")
        _ = try world.waitForStatus(timeout: 30, "the library scanned") { ($0["library"] as? [String: Any])?["songs"] as? Int == 1 }
        _ = try world.ok("add", music + "/Rooms/1.flac")
        _ = try world.ok("play")

        // The client hears the tone: half of full scale, after snapserver's buffer.
        var peak = 0
        let loud = waitUntil(timeout: 20) {
            peak = Self.peak(heard)
            return peak > 12000
        }
        XCTAssertTrue(loud, "the snapclient's output peaks at \(peak); server log:\n\(((try? String(contentsOfFile: snap + "/server.log", encoding: .utf8)) ?? "").suffix(2000))")
        XCTAssertLessThan(peak, 20000, "at the level it was encoded")

        // meta_mpd.py read Now Playing from tonearmd's MPD server and gave it to snapserver.
        var properties: [String: Any] = [:]
        let titled = try waitUntil(timeout: 20) {
            properties = try server.streams().first { $0["id"] as? String == "Tonearm" }?["properties"] as? [String: Any] ?? [:]
            return (properties["metadata"] as? [String: Any])?["title"] as? String == "Rooms Apart"
        }
        XCTAssertTrue(titled, "snapserver's stream properties: \(properties)")
        XCTAssertEqual((properties["metadata"] as? [String: Any])?["artist"] as? [String], ["The Snapcasts"])
        XCTAssertEqual(properties["playbackStatus"] as? String, "playing")

        // snapserver goes: the pipe fills, the output waits for it, the clock stops (nothing is
        // heard; Now Playing says so just after the output does), the daemon keeps answering.
        server.stop()
        let waiting = try world.waitForStatus(timeout: 10, "the output waiting for the pipe's reader, the clock stopped") {
            $0.string("output") != "ok" && $0.double("rate") == 0
        }
        XCTAssertEqual(waiting.string("state"), "playing", "the transport stays as it was")
        XCTAssertTrue(world.daemon.isRunning)

        // And comes back: heard again.
        server = try SnapServer(directory: snap, fifo: fifo, rpcPort: rpc, streamPort: stream, httpPort: http, log: snap + "/server2.log")
        try world.waitForStatus(timeout: 20, "heard again through the new snapserver") { $0.string("output") == "ok" && $0.double("rate") == 1 }
    }

    /// No pipe at the path (snapserver not started yet): the device is unavailable and retried;
    /// the pipe appearing brings it up.
    func testAMissingPipeIsWaitedFor() throws {
        let world = try DaemonBench(jack: false, device: "pipe:/nonexistent", start: false)
        let fifo = world.path("later.fifo")
        world.daemon.device = "pipe:" + fifo
        let music = world.path("music")
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        _ = try FLACFixture(frames: 44100 * 4, seed: 71).write(to: music + "/1.flac")
        world.daemon.arguments = ["--music-dir", music]
        try world.daemon.start()
        _ = try world.ok("add", music + "/1.flac")
        _ = try world.ok("play")
        let waiting = try world.waitForStatus(timeout: 10, "waiting for the pipe") { $0.string("output") == "waiting for the device" }
        XCTAssertTrue(((waiting["device"] as? [String: Any])?["error"] as? String ?? "").contains("cannot open pipe '\(fifo)'"), jsonText(waiting))
        XCTAssertEqual(mkfifo(fifo, 0o644), 0)
        // Something to read it, as snapserver does.
        let reader = try RunningProcess("/bin/sh", ["-c", "exec cat \(fifo) > /dev/null"])
        defer {
            reader.send(SIGTERM)
            reader.wait(timeout: 5)
        }
        try world.waitForStatus(timeout: 10, "playing into the pipe") { $0.string("output") == "ok" && $0.double("rate") == 1 }
    }

    /// The largest magnitude among the 16-bit samples written to `path` so far.
    private static func peak(_ path: String) -> Int {
        guard let data = FileManager.default.contents(atPath: path) else { return 0 }
        var peak = 0
        data.withUnsafeBytes { raw in
            let samples = raw.bindMemory(to: Int16.self)
            for sample in samples { peak = max(peak, abs(Int(sample))) }
        }
        return peak
    }
}
