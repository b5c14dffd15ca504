import TonearmControl
import TonearmJSON
import XCTest

final class ControlRequestTests: XCTestCase {
    func testArgumentAccessors() {
        let request = ControlRequest(
            clientID: 1, id: .int(1), command: "seek",
            arguments: .object([
                ("s", .string("x")), ("i", .int(3)), ("whole", .double(4)), ("d", .double(2.5)), ("b", .bool(false)),
                ("n", .null),
            ]))
        XCTAssertEqual(try request.string("s"), "x")
        XCTAssertEqual(try request.int("i"), 3)
        XCTAssertEqual(try request.int("whole"), 4)
        XCTAssertEqual(try request.double("i"), 3)
        XCTAssertEqual(try request.double("d"), 2.5)
        XCTAssertEqual(try request.bool("b"), false)
        XCTAssertNil(try request.optionalString("missing"))
        XCTAssertNil(try request.optionalInt("n"))
        XCTAssertNil(try request.optionalDouble("n"))
        XCTAssertNil(try request.optionalBool("missing"))
        XCTAssertEqual(try request.optionalInt("i"), 3)

        func message(_ body: () throws(ArgumentError) -> Void) -> String? {
            do { try body() } catch { return error.description }
            return nil
        }
        XCTAssertEqual(message { () throws(ArgumentError) in _ = try request.double("s") }, "'s' must be a number")
        XCTAssertEqual(message { () throws(ArgumentError) in _ = try request.int("d") }, "'d' must be an integer")
        XCTAssertEqual(message { () throws(ArgumentError) in _ = try request.string("i") }, "'i' must be a string")
        XCTAssertEqual(message { () throws(ArgumentError) in _ = try request.bool("s") }, "'s' must be true or false")
        XCTAssertEqual(message { () throws(ArgumentError) in _ = try request.string("missing") }, "'missing' is required (a string)")
        XCTAssertEqual(message { () throws(ArgumentError) in _ = try request.optionalString("i") }, "'i' must be a string")
        XCTAssertEqual(message { () throws(ArgumentError) in _ = try request.int("n") }, "'n' is required (an integer)")
    }

    func testAReplyAnswersOnceWithTheRequestID() {
        let delivered = LockedLines()
        let logged = LockedLines()
        let reply = Reply(clientID: 3, id: .string("a"), command: "echo", log: { logged.append($0) }) {
            delivered.append(String(decoding: $0, as: UTF8.self))
        }
        reply.succeed(.int(1))
        reply.fail(code: ControlErrorCode.internal, message: "too late")
        XCTAssertEqual(delivered.lines, [#"{"id":"a","ok":true,"result":1}"# + "\n"])
        XCTAssertEqual(logged.lines, ["control: 'echo' from client 3 was answered twice; the second answer is dropped"])
    }

    func testAReplyReleasedUnansweredAnswersInternal() {
        let delivered = LockedLines()
        let logged = LockedLines()
        do {
            _ = Reply(clientID: 4, id: .int(9), command: "drop", log: { logged.append($0) }) {
                delivered.append(String(decoding: $0, as: UTF8.self))
            }
        }
        XCTAssertEqual(
            delivered.lines,
            [#"{"id":9,"ok":false,"error":{"code":"internal","message":"the daemon dropped the request without answering"}}"# + "\n"])
        XCTAssertEqual(logged.lines, ["control: 'drop' from client 4 was dropped without an answer"])
    }

    func testErrorsAnsweredByTheHandler() {
        let delivered = LockedLines()
        let deliver: @Sendable ([UInt8]) -> Void = { delivered.append(String(decoding: $0, as: UTF8.self)) }
        Reply(clientID: 1, id: .int(1), command: "rewind", log: nil, deliver: deliver).failUnknownCommand()
        Reply(clientID: 1, id: .int(2), command: "seek", log: nil, deliver: deliver)
            .fail(ArgumentError(key: "position", description: "'position' must be a number"))
        XCTAssertEqual(delivered.lines, [
            #"{"id":1,"ok":false,"error":{"code":"unknownCommand","message":"unknown command 'rewind'"}}"# + "\n",
            #"{"id":2,"ok":false,"error":{"code":"badArgument","message":"'position' must be a number"}}"# + "\n",
        ])
    }
}
