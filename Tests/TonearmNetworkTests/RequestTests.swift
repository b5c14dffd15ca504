import Foundation
import Synchronization
import TonearmControl
import TonearmJSON
import TonearmNetwork
import XCTest

final class RequestTests: XCTestCase {
    func testResponsesEchoTheRequestID() throws {
        let running = try RunningServer()
        let connection = try RawConnection(path: running.path)
        connection.send(#"{"id":1,"command":"echo","value":{"x":[1,"two"]}}"# + "\n")
        XCTAssertEqual(connection.readMessage()?.serialized, #"{"id":1,"ok":true,"result":{"x":[1,"two"]}}"#)

        for id in [#""abc""#, "2.5", "true", "null"] {
            connection.send(#"{"command":"echo","value":7,"id":"# + id + "}\n")
            XCTAssertEqual(connection.readMessage()?.serialized, #"{"id":"# + id + #","ok":true,"result":7}"#)
        }
        connection.send(#"{"command":"echo"}"# + "\n")
        XCTAssertEqual(connection.readMessage()?.serialized, #"{"id":null,"ok":true,"result":null}"#)
    }

    func testHandlerErrorsAndUnknownCommands() throws {
        let running = try RunningServer()
        let connection = try RawConnection(path: running.path)
        connection.send(#"{"id":1,"command":"add","a":2,"b":3.0}"# + "\n")
        XCTAssertEqual(connection.readMessage()?["result"], .int(5))
        connection.send(#"{"id":2,"command":"add","a":2,"b":"3"}"# + "\n")
        XCTAssertEqual(
            connection.readMessage()?.serialized,
            #"{"id":2,"ok":false,"error":{"code":"badArgument","message":"'b' must be an integer"}}"#)
        connection.send(#"{"id":3,"command":"add","a":2}"# + "\n")
        XCTAssertEqual(connection.readMessage()?["error"]?["message"], .string("'b' is required (an integer)"))
        connection.send(#"{"id":4,"command":"rewind"}"# + "\n")
        XCTAssertEqual(
            connection.readMessage()?.serialized,
            #"{"id":4,"ok":false,"error":{"code":"unknownCommand","message":"unknown command 'rewind'"}}"#)
    }

    func testResponsesComeAsTheyCompleteNotInRequestOrder() throws {
        let running = try RunningServer()
        let connection = try RawConnection(path: running.path)
        connection.send(#"{"id":"slow","command":"later","ms":200}"# + "\n" + #"{"id":"fast","command":"echo"}"# + "\n")
        XCTAssertEqual(connection.readMessage()?["id"], .string("fast"))
        XCTAssertEqual(connection.readMessage()?.serialized, #"{"id":"slow","ok":true,"result":"late"}"#)
    }

    func testARequestDroppedWithoutAnAnswerIsAnsweredInternal() throws {
        let logged = LockedLines()
        let running = try RunningServer { $0.log = { logged.append($0) } }
        let connection = try RawConnection(path: running.path)
        connection.send(#"{"id":9,"command":"drop"}"# + "\n")
        let response = connection.readMessage()
        XCTAssertEqual(response?["id"], .int(9))
        XCTAssertEqual(response?.errorCode, "internal")
        XCTAssertTrue(logged.lines.contains { $0.contains("'drop'") && $0.contains("without an answer") }, "\(logged.lines)")
    }

    func testConcurrentClientsEachGetTheirOwnAnswers() throws {
        let running = try RunningServer()
        let failures = LockedLines()
        runConcurrently(8) { client in
            do {
                let connection = try ControlClient(path: running.path)
                for i in 0..<100 {
                    let sum = try connection.request("add", [("a", .int(client)), ("b", .int(i))])
                    if sum != .int(client + i) { failures.append("client \(client): \(client)+\(i) = \(sum.serialized)") }
                    if i % 25 == 0 {
                        let late = try connection.request("later", [("ms", .int(5))])
                        if late != .string("late") { failures.append("client \(client): later = \(late.serialized)") }
                    }
                }
            } catch {
                failures.append("client \(client): \(error)")
            }
        }
        XCTAssertEqual(failures.lines, [])
    }
}

/// Lines gathered from several threads.
final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []
    func append(_ line: String) { lock.withLock { storage.append(line) } }
    var lines: [String] { lock.withLock { storage } }
}

/// Replies completed on other threads, while events are published from yet another, must all
/// wake the server: a lost wake-up once left answers waiting until the client spoke again. A
/// client here speaks again only once answered, so a lost wake-up leaves the last answers
/// waiting for good; the 30 s a reply may take, and the five minutes for all 6000, bound only
/// that hang (a busy machine makes the rounds slow, not lost).
final class WakeUpTests: XCTestCase {
    func testEveryLateReplyArrivesWithoutTheClientSpeakingAgain() throws {
        let running = try RunningServer()
        let publisher = Thread {
            for _ in 0..<3000 {
                running.server.publish(topic: "state", event: .int(1))
                usleep(50)
            }
        }
        publisher.start()
        let clients = 4
        let rounds = 1500
        let done = DispatchGroup()
        let missing = Mutex(0)
        for _ in 0..<clients {
            done.enter()
            Thread {
                defer { done.leave() }
                guard let connection = try? RawConnection(path: running.path) else { return }
                for id in 0..<rounds {
                    // Answered from another thread after 0–1 ms: the reply races the server's poll.
                    connection.send(#"{"id":\#(id),"command":"later","ms":\#(id % 2)}"# + "\n")
                    if connection.readMessage(timeout: 30)?["id"]?.intValue != id {
                        missing.withLock { $0 += 1 }
                        return
                    }
                }
            }.start()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 300), .success)
        XCTAssertEqual(missing.withLock { $0 }, 0, "a reply waited more than 30 s for a wake-up")
    }
}
