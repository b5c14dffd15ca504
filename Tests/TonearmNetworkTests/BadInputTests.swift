import Foundation
import TonearmControl
import TonearmJSON
import TonearmNetwork
import XCTest

/// What the server answers itself; in every case the connection stays usable.
final class BadInputTests: XCTestCase {
    private func assertStillServes(_ connection: RawConnection, file: StaticString = #filePath, line: UInt = #line) {
        connection.send(#"{"id":"after","command":"echo","value":"ok"}"# + "\n")
        XCTAssertEqual(
            connection.readMessage()?.serialized, #"{"id":"after","ok":true,"result":"ok"}"#, file: file, line: line)
    }

    func testMalformedRequestsAreAnsweredAndTheConnectionKept() throws {
        let running = try RunningServer()
        let connection = try RawConnection(path: running.path)
        let cases: [(String, String)] = [
            (#"{"id":1,"command":"echo",}"#,
             #"{"id":null,"ok":false,"error":{"code":"malformed","message":"invalid JSON: expected a string key at byte 25, found '}'"}}"#),
            ("[1,2]", #"{"id":null,"ok":false,"error":{"code":"badRequest","message":"a request must be a JSON object"}}"#),
            (#"{"id":2}"#, #"{"id":2,"ok":false,"error":{"code":"badRequest","message":"a request needs a \"command\""}}"#),
            (#"{"id":3,"command":5}"#, #"{"id":3,"ok":false,"error":{"code":"badRequest","message":"'command' must be a string"}}"#),
            (#"{"id":[4],"command":"echo"}"#,
             #"{"id":null,"ok":false,"error":{"code":"badRequest","message":"'id' must be a string, number, boolean or null"}}"#),
            (#"{"id":5,"command":"echo","id":6}"#,
             #"{"id":null,"ok":false,"error":{"code":"malformed","message":"invalid JSON: duplicate key \"id\" at byte 25"}}"#),
        ]
        for (request, expected) in cases {
            connection.send(request + "\n")
            XCTAssertEqual(connection.readMessage()?.serialized, expected, request)
        }
        assertStillServes(connection)
    }

    func testInvalidUTF8IsMalformed() throws {
        let running = try RunningServer()
        let connection = try RawConnection(path: running.path)
        connection.send(Array(#"{"id":1,"command":"echo","value":""#.utf8) + [0xC3, 0x28] + Array("\"}\n".utf8))
        let response = connection.readMessage()
        XCTAssertEqual(response?.errorCode, "malformed")
        XCTAssertEqual(response?["error"]?["message"], .string("invalid JSON: invalid UTF-8 (byte 0xC3 then 0x28) at byte 34"))
        assertStillServes(connection)
    }

    func testBlankLinesAndCRLFAndSplitWritesAreFine() throws {
        let running = try RunningServer()
        let connection = try RawConnection(path: running.path)
        connection.send("\n  \r\n")
        connection.send(#"{"id":1,"command":"echo","#)
        usleep(20_000)
        connection.send(#""value":"crlf"}"# + "\r\n")
        XCTAssertEqual(connection.readMessage()?.serialized, #"{"id":1,"ok":true,"result":"crlf"}"#)
    }

    func testAOneMegabyteLineIsRefusedAndDiscarded() throws {
        let running = try RunningServer()
        let connection = try RawConnection(path: running.path)
        // Sent in pieces, so the server sees the line grow past the limit before its end.
        let huge = Array(#"{"id":1,"command":"echo","value":""#.utf8) + [UInt8](repeating: 0x61, count: 1 << 20) + Array("\"}\n".utf8)
        for start in stride(from: 0, to: huge.count, by: 100_000) {
            XCTAssertTrue(connection.send(Array(huge[start..<min(start + 100_000, huge.count)])))
        }
        XCTAssertEqual(
            connection.readMessage()?.serialized,
            #"{"id":null,"ok":false,"error":{"code":"lineTooLong","message":"request line longer than 65536 bytes; it was discarded"}}"#)
        assertStillServes(connection)
    }

    func testALineJustUnderTheLimitIsServed() throws {
        let running = try RunningServer { $0.maxLineBytes = 100 }
        let connection = try RawConnection(path: running.path)
        let prefix = #"{"id":1,"command":"echo","value":""#
        let fits = prefix + String(repeating: "b", count: 100 - prefix.utf8.count - 2) + "\"}"
        XCTAssertEqual(fits.utf8.count, 100)
        connection.send(fits + "\n")
        XCTAssertEqual(connection.readMessage()?["ok"], .bool(true))
        connection.send(prefix + String(repeating: "b", count: 100 - prefix.utf8.count - 1) + "\"}\n")
        XCTAssertEqual(connection.readMessage()?.errorCode, "lineTooLong")
        assertStillServes(connection)
    }

    func testRandomBytesGetErrorsAndTheConnectionStillServes() throws {
        let running = try RunningServer()
        let connection = try RawConnection(path: running.path)
        var generator = SystemRandomNumberGenerator()
        let noise = (0..<16384).map { _ in UInt8.random(in: 0...255, using: &generator) }
        XCTAssertTrue(connection.send(noise))
        connection.send("\n" + #"{"id":"after","command":"echo","value":"ok"}"# + "\n")
        var errors = 0
        while let message = connection.readMessage() {
            if message["id"] == .string("after") {
                XCTAssertEqual(message["result"], .string("ok"))
                break
            }
            XCTAssertEqual(message["ok"], .bool(false), message.serialized)
            XCTAssertTrue(["malformed", "badRequest"].contains(message.errorCode ?? ""), message.serialized)
            errors += 1
        }
        XCTAssertGreaterThan(errors, 0)
        XCTAssertEqual(running.server.clientCount, 1)
    }

    func testAClientThatHalfClosesStillGetsItsResponses() throws {
        let running = try RunningServer()
        let connection = try RawConnection(path: running.path)
        // The last request has no newline: the end of the stream ends it.
        connection.send(#"{"id":1,"command":"later","ms":100}"# + "\n" + #"{"id":2,"command":"echo"}"#)
        connection.shutdownWriting()
        XCTAssertEqual(connection.readMessage()?["id"], .int(2))
        XCTAssertEqual(connection.readMessage()?["id"], .int(1))
        XCTAssertTrue(connection.isClosedByServer())
        XCTAssertTrue(running.waitForClients(0))
    }

    /// Writing to a client that shut its reading side fails with EPIPE, which would raise
    /// SIGPIPE and end this test process if the server did not prevent it.
    func testWritingToAClientThatStoppedReadingRaisesNoSIGPIPE() throws {
        let running = try RunningServer()
        let deaf = try RawConnection(path: running.path)
        shutdown(deaf.fd, Int32(SHUT_RD))
        deaf.send(#"{"id":1,"command":"echo"}"# + "\n")
        XCTAssertTrue(running.waitForClients(0), "the server drops a client it cannot write to")
        let other = try RawConnection(path: running.path)
        assertStillServes(other)
    }

    func testAClientThatVanishesMidRequestDoesNotDisturbOthers() throws {
        let running = try RunningServer()
        let other = try RawConnection(path: running.path)
        do {
            let vanishing = try RawConnection(path: running.path)
            vanishing.send(#"{"id":1,"command":"later","ms":50}"# + "\n" + #"{"id":2,"command":"echo"}"#)
        }
        usleep(150_000)
        XCTAssertTrue(running.waitForClients(1))
        assertStillServes(other)
    }
}
