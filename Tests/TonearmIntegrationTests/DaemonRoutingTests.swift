import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// One routing rule for every source (the seeds' rule): a transport command goes to the owner of
/// Now Playing, whether it comes from `tonearm`, a key on an input device or a serial display.
/// (GPIO buttons take the same path; the kernel suite presses a real one.)
final class DaemonRoutingTests: XCTestCase {
    func testTransportCommandsFromEverySourceGoToTheNowPlayingOwner() throws {
        try requirePacedDevice()
        let world = try DaemonBench(device: "paced", start: false)
        let fifo = world.path("event0")
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let terminal = try PseudoTerminal()
        world.daemon.arguments = ["--config", try profile(world, """
            [[input]]
            path = "\(fifo)"

            [display]
            driver = "line"
            port = "\(terminal.slavePath)"
            baud = 115200
            """)]
        try world.daemon.start()
        let keys = try openWriter(fifo)
        defer { close(keys) }
        let tracks = try (1...2).map { try world.fixture("t\($0).flac", taggedFixture($0, seconds: 30)) }
        try world.ok(["add"] + tracks)
        try world.ok("play")
        try world.waitForStatus(timeout: 5, "playing") { $0.string("state") == "playing" }

        // An app's session takes Now Playing (non-mixable, with remote commands): the player is
        // interrupted.
        let app = try world.daemon.connect()
        _ = try app.result("subscribe", ["topics": ["remoteCommand"]])
        let session = try XCTUnwrap(try app.result("sessionOpen", ["category": "playback", "remoteCommands": true]).int("session"))
        _ = try app.result("sessionActivate", ["session": session])
        XCTAssertEqual(try world.daemon.result("sessions").int("nowPlayingOwner"), session)
        try world.waitForStatus(timeout: 3, "the player interrupted") { $0.string("state") == "paused" }

        // pause from the socket, from `tonearm`, from a key and from the display; play from a key.
        let socketAnswer = try world.daemon.result("pause")
        XCTAssertEqual(socketAnswer.string("status"), "success")
        XCTAssertEqual(socketAnswer.int("forwardedTo"), session)
        try world.ok("pause")
        write(keys, press(119))  // KEY_PAUSE
        terminal.write("pause\n")
        write(keys, press(207))  // KEY_PLAY
        var forwarded: [[String: Any]] = []
        XCTAssertTrue(waitUntil(timeout: 5) {
            forwarded = app.collectEvents(timeout: 0.05).map(\.message).filter { $0.string("event") == "remoteCommand" }
                .compactMap { $0.object("data") }
            return forwarded.count >= 5
        }, "\(forwarded)")
        // Sources run side by side: the order between them is not fixed, only what arrives.
        XCTAssertEqual(forwarded.compactMap { $0.string("name") }.sorted(), ["pause", "pause", "pause", "pause", "play"])
        XCTAssertEqual(Set(forwarded.map { $0.int("session") }), [session])
        // None of them reached the player: it stays where the interruption left it.
        let status = try world.status()
        XCTAssertEqual(status.string("state"), "paused")
        XCTAssertEqual(status.int("queueIndex"), 0)
        XCTAssertFalse(daemonLogLines(world.daemon.log).contains { $0.contains(": pause:") || $0.contains(": play:") },
                       "every source got the same status, success:\n\(daemonReport(world.daemon))")

        // Without a client owning Now Playing, the same three pause the player.
        _ = try app.result("sessionClose", ["session": session])
        app.events.removeAll()
        XCTAssertEqual(try world.daemon.result("sessions").int("nowPlayingOwner"), 1)
        let sources: [(String, () throws -> Void)] = [
            ("tonearm pause", { try world.ok("pause") }),
            ("a key", { self.write(keys, self.press(119)) }),
            ("the display", { terminal.write("pause\n") }),
        ]
        for (source, pause) in sources {
            try world.ok("play")
            try world.waitForStatus(timeout: 3, "playing before \(source)") { $0.string("state") == "playing" }
            try pause()
            try world.waitForStatus(timeout: 3, "paused by \(source)") { $0.string("state") == "paused" }
        }
        XCTAssertTrue(app.collectEvents(timeout: 0.2).filter { $0.message.string("event") == "remoteCommand" }.isEmpty,
                      "nothing is forwarded to a closed session")
    }
}
