import Foundation
import TonearmControl
import TonearmJSON
import TestSupport
import TonearmNetwork
import XCTest

#if canImport(Glibc)
import Glibc
#endif

final class SocketFileTests: XCTestCase {
    private func mode(of path: String) -> mode_t? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return status.st_mode & 0o7777
    }

    private func makeServer(_ path: String) throws(ControlError) -> ControlServer {
        try ControlServer(options: ControlServerOptions(path: path), group: testLoopGroup, handler: testHandler)
    }

    func testTheSocketHasItsModeAndStopRemovesIt() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-socket")
        let path = directory.file("control.sock")
        let previous = umask(0o077)
        defer { umask(previous) }
        let server = try makeServer(path)
        XCTAssertEqual(mode(of: path), 0o660)
        server.start()
        XCTAssertEqual(try ControlClient(path: path).request("echo", [("value", .int(1))]), .int(1))
        server.stop()
        XCTAssertNil(mode(of: path), "the socket file is removed")
        server.stop()
    }

    func testAnotherModeCanBeAsked() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-socket")
        var options = ControlServerOptions(path: directory.file("control.sock"))
        options.mode = 0o600
        let server = try ControlServer(options: options, group: testLoopGroup, handler: testHandler)
        XCTAssertEqual(mode(of: options.path), 0o600)
        server.stop()
    }

    func testAStaleSocketIsReplaced() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-socket")
        let path = directory.file("control.sock")
        try makeStaleSocket(at: path)
        XCTAssertNotNil(mode(of: path))
        let server = try makeServer(path)
        server.start()
        XCTAssertEqual(try ControlClient(path: path).request("echo", [("value", .int(2))]), .int(2))
        server.stop()
    }

    func testALiveSocketIsNotTakenOver() throws {
        let running = try RunningServer()
        XCTAssertThrowsError(try makeServer(running.path)) { error in
            XCTAssertEqual((error as? ControlError)?.description, "another daemon is listening on \(running.path)")
        }
        // The first server is untouched.
        XCTAssertEqual(try ControlClient(path: running.path).request("echo", [("value", .int(3))]), .int(3))
    }

    func testStoppingLeavesASocketThatIsNoLongerOursAlone() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-socket")
        let path = directory.file("control.sock")
        let first = try makeServer(path)
        unlink(path)
        let second = try makeServer(path)
        second.start()
        first.stop()
        XCTAssertEqual(try ControlClient(path: path).request("echo", [("value", .int(4))]), .int(4))
        second.stop()
        XCTAssertNil(mode(of: path))
    }

    func testUnusablePathsAreExplained() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-socket")
        let missing = directory.file("nowhere/control.sock")
        XCTAssertThrowsError(try makeServer(missing)) { error in
            XCTAssertEqual(
                (error as? ControlError)?.description,
                "cannot listen on \(missing): directory \(directory.file("nowhere")) does not exist")
        }

        let file = directory.file("regular")
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data("keep me".utf8)))
        XCTAssertThrowsError(try makeServer(file)) { error in
            XCTAssertEqual((error as? ControlError)?.description, "cannot listen on \(file): a file that is not a socket is in the way")
        }
        XCTAssertEqual(FileManager.default.contents(atPath: file), Data("keep me".utf8))

        let long = directory.file(String(repeating: "n", count: 120))
        XCTAssertThrowsError(try makeServer(long)) { error in
            XCTAssertTrue("\(error)".contains("a Unix socket path holds at most 107"), "\(error)")
        }
    }

    func testTheClientTimesOutAndSeesTheServerStop() throws {
        let running = try RunningServer()
        let client = try ControlClient(path: running.path)
        XCTAssertThrowsError(try client.request("later", [("ms", .int(300))], timeout: 0.1)) { error in
            XCTAssertEqual(
                (error as? ControlError)?.description, "tonearmd at \(running.path) did not answer 'later' within 0.1 s")
        }
        // The late answer to the request that timed out is not taken for the next one.
        usleep(300_000)
        XCTAssertEqual(try client.request("echo", [("value", .int(5))]), .int(5))

        XCTAssertThrowsError(try client.request("add", [("a", .string("x"))])) { error in
            XCTAssertEqual((error as? ControlError)?.code, "badArgument")
            XCTAssertEqual((error as? ControlError)?.message, "'a' must be an integer")
        }

        running.server.stop()
        XCTAssertThrowsError(try client.request("echo")) { error in
            XCTAssertEqual((error as? ControlError)?.description, "tonearmd at \(running.path) closed the connection")
        }
    }

    func testRepliesAfterStopAreDropped() throws {
        let running = try RunningServer()
        let connection = try RawConnection(path: running.path)
        connection.send(#"{"id":1,"command":"later","ms":100}"# + "\n")
        usleep(30_000)
        running.server.stop()
        XCTAssertTrue(connection.isClosedByServer())
        usleep(150_000)  // the late reply finds no client, and nothing breaks
        XCTAssertEqual(running.server.clientCount, 0)
    }
}
