import Foundation
import TestSupport
import XCTest

/// Whatever arrives on the control socket while a track plays, the daemon keeps playing without
/// an underrun and keeps answering.
final class DaemonSocketAbuseTests: XCTestCase {
    override func setUpWithError() throws { try requirePacedDevice() }

    func testAbuseWhilePlaying() throws {
        let world = try DaemonBench()
        let track = try world.fixture("abuse.flac", taggedFixture(1, seconds: 40))
        try world.ok("add", track)
        try world.ok("play")
        try world.waitForStatus(timeout: 30, "playing on an open device") {
            $0.string("state") == "playing" && $0.object("device")?.string("state") == "open"
        }

        // 64 KiB of random bytes, then a newline; the connection still answers afterwards.
        do {
            let client = try world.daemon.connect()
            var random = SeededRandom(seed: 64)
            var junk = [UInt8](repeating: 0, count: 64 * 1024)
            for i in junk.indices { junk[i] = UInt8(truncatingIfNeeded: random.next()) }
            XCTAssertEqual(client.write(junk + [0x0A], timeout: 10), junk.count + 1, "the daemon stopped reading random bytes")
            let answer = try client.request("status", timeout: 10)
            XCTAssertEqual(answer.bool("ok"), true, "status after random bytes: \(jsonText(answer))")
        }

        // A 1 MiB line: refused as too long, then the same connection carries on.
        do {
            let client = try world.daemon.connect()
            let huge = "{\"id\":\"huge\",\"command\":\"status\",\"pad\":\"" + String(repeating: "x", count: 1 << 20) + "\"}"
            XCTAssertEqual(client.writeLine(huge, timeout: 10), huge.utf8.count + 1, "the daemon stopped reading a long line")
            let refusal = client.readMessage(timeout: 5)
            XCTAssertEqual(refusal?.object("error")?.string("code"), "lineTooLong", "\(refusal.map(jsonText) ?? "nothing")")
            let answer = try client.request("status")
            XCTAssertEqual(answer.bool("ok"), true, "status after a long line: \(jsonText(answer))")
        }

        // Malformed lines, one connection, each answered with its error and the connection kept.
        do {
            let client = try world.daemon.connect()
            let cases: [(bytes: [UInt8], code: String)] = [
                // (1e400 is out of range for a double: refused by the parser or by the argument check.)
                (Array("{\"id\":1,\"command\":\"st".utf8) + [0xFF, 0xFE, 0xC0, 0x80] + Array("atus\"}".utf8), "malformed"),
                (Array("{\"id\":2,\"command\":".utf8), "malformed"),
                (Array("{\"id\":3,\"command\":\"status\",}".utf8), "malformed"),
                (Array("[1,2,3]".utf8), "badRequest"),
                (Array("{\"id\":[1],\"command\":\"status\"}".utf8), "badRequest"),
                (Array("{\"id\":6,\"command\":42}".utf8), "badRequest"),
                (Array("{\"id\":7}".utf8), "badRequest"),
                (Array("{\"id\":8,\"command\":\"status\",\"command\":\"play\"}".utf8), "malformed"),
                (Array("{\"id\":9,\"command\":\"selfDestruct\"}".utf8), "unknownCommand"),
                (Array("{\"id\":10,\"command\":\"seek\",\"position\":\"soon\"}".utf8), "badArgument"),
                (Array("{\"id\":11,\"command\":\"seek\"}".utf8), "badArgument"),
                (Array("{\"id\":12,\"command\":\"volume\",\"percent\":\"loud\"}".utf8), "badArgument"),
                (Array("{\"id\":13,\"command\":\"volume\",\"percent\":1e400}".utf8), "malformed|badArgument"),
                (Array("{\"id\":14,\"command\":\"add\",\"paths\":5}".utf8), "badArgument"),
                (Array("{\"id\":15,\"command\":\"add\",\"paths\":[\"/a\",7]}".utf8), "badArgument"),
                (Array("{\"id\":16,\"command\":\"repeat\",\"mode\":3}".utf8), "badArgument"),
                (Array("{\"id\":17,\"command\":\"shuffle\",\"on\":\"yes\"}".utf8), "badArgument"),
                (Array("{\"id\":18,\"command\":\"skip\",\"seconds\":null}".utf8), "badArgument"),
                (Array("{\"id\":19,\"command\":\"subscribe\",\"topics\":[\"gossip\"]}".utf8), "badArgument"),
                (Array("{\"id\":20,\"command\":\"remove\",\"id\":1}".utf8), "malformed"),
            ]
            for (bytes, code) in cases {
                let text = String(decoding: bytes, as: UTF8.self)
                XCTAssertEqual(client.write(bytes + [0x0A], timeout: 5), bytes.count + 1)
                guard let answer = client.readMessage(timeout: 5) else {
                    XCTFail("no answer to \(text) (closed: \(client.closedByPeer))")
                    break
                }
                XCTAssertEqual(answer.bool("ok"), false, "\(text): \(jsonText(answer))")
                XCTAssertTrue(code.split(separator: "|").contains { $0 == answer.object("error")?.string("code") ?? "" },
                              "\(text): expected \(code), got \(jsonText(answer))")
                XCTAssertFalse((answer.object("error")?.string("message") ?? "").isEmpty, "\(text): no message")
            }
            let answer = try client.request("status")
            XCTAssertEqual(answer.bool("ok"), true, "status after the malformed lines: \(jsonText(answer))")
            let status = answer.object("result") ?? [:]
            XCTAssertEqual(status.string("state"), "playing", "a bad request changed the state: \(jsonText(status))")
            XCTAssertEqual(status.double("volume"), 100, "a bad request changed the volume")
        }

        // 100 clients at once, each asking for status: each gets its answer, or a clear
        // tooManyClients, and none waits forever.
        do {
            var clients: [ControlSocket] = []
            var refusedToConnect = 0
            for _ in 0..<100 {
                if let client = try? world.daemon.connect() { clients.append(client) } else { refusedToConnect += 1 }
            }
            for (i, client) in clients.enumerated() { client.writeLine("{\"id\":\(i),\"command\":\"status\"}") }
            var answered = 0, refused = 0, silent: [Int] = []
            for (i, client) in clients.enumerated() {
                guard let message = client.readMessage(timeout: 5) else {
                    silent.append(i)
                    continue
                }
                if message.bool("ok") == true && message.int("id") == i {
                    answered += 1
                } else if message.object("error")?.string("code") == "tooManyClients" {
                    refused += 1
                } else {
                    XCTFail("client \(i): \(jsonText(message))")
                }
            }
            print("100 clients: \(answered) answered, \(refused) refused (tooManyClients), \(silent.count) silent, \(refusedToConnect) could not connect")
            XCTAssertEqual(silent, [], "clients that got nothing")
            XCTAssertGreaterThanOrEqual(answered, 16, "answered \(answered), refused \(refused), could not connect \(refusedToConnect)")
            XCTAssertEqual(answered + refused + silent.count, clients.count)
            clients.forEach { $0.close() }
        }

        // A subscriber that never reads while events flow: 200 fast toggles.
        let stalled = try world.daemon.connect()
        stalled.setReceiveBuffer(bytes: 4096)
        XCTAssertEqual(try stalled.result("subscribe").array("topics")?.count, 10, "every topic")
        do {
            let client = try world.daemon.connect()
            let started = monotonicSeconds()
            for i in 0..<200 {
                let answer = try client.result("toggle")
                XCTAssertEqual(answer.string("status"), "success", "toggle \(i): \(jsonText(answer))")
            }
            print(String(format: "socket abuse: 200 toggles beside a stalled subscriber in %.2f s", monotonicSeconds() - started))
        }

        // Still playing, no underrun, still answering, still alive.
        let status = try world.waitForStatus(timeout: 30, "playing after an even number of toggles") {
            $0.string("state") == "playing"
        }
        XCTAssertEqual(status.double("rate"), 1, jsonText(status))
        let device = status.object("device") ?? [:]
        XCTAssertEqual(device.string("state"), "open", jsonText(device))
        XCTAssertEqual(device.int("underruns"), 0, "underruns after the abuse: \(jsonText(device))")
        XCTAssertEqual(device.int("losses"), 0, jsonText(device))
        let cli = try world.statusJSON()
        XCTAssertEqual(cli.string("state"), "playing")
        XCTAssertTrue(world.daemon.isRunning, daemonReport(world.daemon))
        let elapsed = status.double("elapsed") ?? 0
        try world.waitForStatus(timeout: 30, "elapsed moving") { ($0.double("elapsed") ?? 0) > elapsed + 0.2 }
        withExtendedLifetime(stalled) {}
        XCTAssertEqual(world.daemon.terminate()?.status, 0, daemonReport(world.daemon))
    }
}
