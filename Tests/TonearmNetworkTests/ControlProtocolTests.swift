import NIOCore
import NIOEmbedded
import Synchronization
import TestSupport
import TonearmControl
import TonearmJSON
@testable import TonearmNetwork
import XCTest

/// The control protocol's handlers on `EmbeddedChannel`s: framing, answers, subscriptions,
/// half-close, the output and client limits, with no socket and no other thread.
final class ControlProtocolTests: XCTestCase {
    /// Requests the handler has not answered yet, to answer when a test chooses.
    private let held = HeldReplies()
    private let logged = LockedLines()
    private let disconnected = LockedLines()

    private func makeService(_ configure: (inout ControlServerOptions) -> Void = { _ in }) -> ControlService {
        var options = ControlServerOptions(path: "unused", topics: ["nowPlaying", "state"])
        let (logged, disconnected) = (logged, disconnected)
        options.log = { logged.append($0) }
        options.clientDisconnected = { disconnected.append(String($0)) }
        configure(&options)
        let held = held
        return ControlService(options: options, status: ServerStatus()) { request, reply in
            switch request.command {
            case "echo": reply.succeed(request["value"] ?? .null)
            case "hold": held.replies.withLock { $0.append((request, reply)) }
            default: reply.failUnknownCommand()
            }
        }
    }

    private func connect(_ service: ControlService) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try service.admit(channel)
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/control.sock")).wait()
        return channel
    }

    private func takeHeld() -> [(ControlRequest, Reply)] {
        held.replies.withLock { held in
            defer { held = [] }
            return held
        }
    }

    func testBadInputIsAnsweredByTheServerAndTheConnectionStays() throws {
        let service = makeService { $0.maxLineBytes = 40 }
        let channel = try connect(service)
        try channel.send("\n \t\r\n")
        try channel.send(#"{"id":1,"command":"echo",}"# + "\n")
        try channel.send("[1]\n" + #"{"id":2}"# + "\n" + #"{"id":3,"command":5}"# + "\n" + #"{"id":{},"command":"echo"}"# + "\n")
        try channel.send(#"{"id":4,"command":"echo","value":"a long value, over forty bytes"}"# + "\n")
        try channel.send(#"{"id":5,"command":"echo","value":"ok"}"# + "\r\n")
        XCTAssertEqual(try channel.sentLines(), [
            #"{"id":null,"ok":false,"error":{"code":"malformed","message":"invalid JSON: expected a string key at byte 25, found '}'"}}"#,
            #"{"id":null,"ok":false,"error":{"code":"badRequest","message":"a request must be a JSON object"}}"#,
            #"{"id":2,"ok":false,"error":{"code":"badRequest","message":"a request needs a \"command\""}}"#,
            #"{"id":3,"ok":false,"error":{"code":"badRequest","message":"'command' must be a string"}}"#,
            #"{"id":null,"ok":false,"error":{"code":"badRequest","message":"'id' must be a string, number, boolean or null"}}"#,
            #"{"id":null,"ok":false,"error":{"code":"lineTooLong","message":"request line longer than 40 bytes; it was discarded"}}"#,
            #"{"id":5,"ok":true,"result":"ok"}"#,
        ])
        XCTAssertTrue(channel.isActive)
    }

    func testRepliesComeWhenAnsweredAndADroppedOneAnswersInternal() throws {
        let service = makeService()
        let channel = try connect(service)
        try channel.send(#"{"id":"a","command":"hold"}"# + "\n" + #"{"id":"b","command":"hold"}"# + "\n" + #"{"id":"c","command":"echo"}"# + "\n")
        XCTAssertEqual(try channel.sentLines(), [#"{"id":"c","ok":true,"result":null}"#])
        var replies = takeHeld()
        XCTAssertEqual(replies.map { $0.0.clientID }, [1, 1])
        replies[1].1.succeed(.string("second"))
        XCTAssertEqual(try channel.sentLines(), [#"{"id":"b","ok":true,"result":"second"}"#])
        replies.removeAll()
        XCTAssertEqual(
            try channel.sentLines(),
            [#"{"id":"a","ok":false,"error":{"code":"internal","message":"the daemon dropped the request without answering"}}"#])
        XCTAssertEqual(logged.lines, ["control: 'hold' from client 1 was dropped without an answer"])
    }

    func testEventsFollowTheSubscribeResponseAndReachOnlyTheirSubscribers() throws {
        let service = makeService()
        let first = try connect(service)
        let second = try connect(service)
        try first.send(#"{"id":1,"command":"subscribe","topics":["state"]}"# + "\n")
        try second.send(#"{"id":1,"command":"subscribe","topics":["bogus"]}"# + "\n")
        XCTAssertEqual(try second.sentLines(), [
            #"{"id":1,"ok":false,"error":{"code":"badArgument","message":"unknown topic 'bogus' (known: nowPlaying, state)"}}"#,
        ])
        service.publish(PreparedEvent(topic: "state", data: .int(1)).line, topic: "state")
        service.publish(PreparedEvent(topic: "nowPlaying", data: .int(2)).line, topic: "nowPlaying")
        XCTAssertEqual(try first.sentLines(), [#"{"id":1,"ok":true,"result":{"topics":["state"]}}"#, #"{"event":"state","data":1}"#])
        XCTAssertEqual(try second.sentLines(), [])

        try second.send(#"{"id":2,"command":"subscribe"}"# + "\n")
        XCTAssertEqual(try second.sentLines(), [#"{"id":2,"ok":true,"result":{"topics":["nowPlaying","state"]}}"#])
        service.publish(PreparedEvent(topic: "state", data: .int(3)).line, topic: "state", only: 2)
        XCTAssertEqual(try first.sentLines(), [])
        XCTAssertEqual(try second.sentLines(), [#"{"event":"state","data":3}"#])

        try first.send(#"{"id":3,"command":"unsubscribe"}"# + "\n")
        service.publish(PreparedEvent(topic: "state", data: .int(4)).line, topic: "state")
        XCTAssertEqual(try first.sentLines(), [#"{"id":3,"ok":true,"result":{"topics":[]}}"#])
        XCTAssertEqual(try second.sentLines(), [#"{"event":"state","data":4}"#])
    }

    func testAHalfClosedClientGetsItsAnswersThenIsClosed() throws {
        let service = makeService()
        let channel = try connect(service)
        // The last request has no newline: the end of input ends it.
        try channel.send(#"{"id":1,"command":"hold"}"# + "\n" + #"{"id":2,"command":"echo"}"#)
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        XCTAssertEqual(try channel.sentLines(), [#"{"id":2,"ok":true,"result":null}"#])
        XCTAssertTrue(channel.isActive, "one answer is still to come")
        takeHeld()[0].1.succeed(.string("late"))
        XCTAssertEqual(try channel.sentLines(), [#"{"id":1,"ok":true,"result":"late"}"#])
        channel.embeddedEventLoop.run()
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(disconnected.lines, ["1"])
        XCTAssertEqual(service.status.clientCount.load(ordering: .relaxed), 0)
    }

    func testAClientThatStopsReadingIsDisconnectedAndLogged() throws {
        let service = makeService()
        let stalled = try connect(service)
        let other = try connect(service)
        try stalled.send(#"{"id":1,"command":"subscribe"}"# + "\n")
        try other.send(#"{"id":1,"command":"subscribe"}"# + "\n")
        // What a real channel does once more than maxPendingOutputBytes wait for the socket.
        stalled.isWritable = false
        stalled.pipeline.fireChannelWritabilityChanged()
        stalled.embeddedEventLoop.run()
        XCTAssertFalse(stalled.isActive)
        XCTAssertEqual(disconnected.lines, ["1"])
        XCTAssertTrue(logged.lines.contains { $0.hasPrefix("control: client 1 disconnected:") && $0.contains("(it stopped reading)") }, "\(logged.lines)")

        service.publish(PreparedEvent(topic: "state", data: .int(1)).line, topic: "state")
        XCTAssertEqual(try other.sentLines().last, #"{"event":"state","data":1}"#)
        XCTAssertEqual(service.status.clientCount.load(ordering: .relaxed), 1)
    }

    func testAClientOverTheLimitIsToldWhyAndClosed() throws {
        let service = makeService { $0.maxClients = 1 }
        let first = try connect(service)
        let refused = try connect(service)
        XCTAssertEqual(try refused.sentLines(), [], "decided at the end of the loop's turn")
        refused.embeddedEventLoop.run()
        XCTAssertEqual(try refused.sentLines(), [
            #"{"ok":false,"error":{"code":"tooManyClients","message":"tonearmd serves at most 1 clients at once; try again later"}}"#,
        ])
        XCTAssertFalse(refused.isActive)
        XCTAssertEqual(logged.lines, ["control: refused a client: 1 already connected"])
        XCTAssertEqual(disconnected.lines, [], "a refused client was never a client")

        try first.send(#"{"id":1,"command":"echo"}"# + "\n")
        XCTAssertEqual(try first.sentLines(), [#"{"id":1,"ok":true,"result":null}"#])
        // Its place is free as soon as it closes, not a turn of the loop later, when the close
        // future completes: a client accepted in the same turn was refused for a while.
        first.pipeline.close(promise: nil)
        let next = try connect(service)
        try next.send(#"{"id":1,"command":"echo"}"# + "\n")
        XCTAssertEqual(try next.sentLines(), [#"{"id":1,"ok":true,"result":null}"#], "the freed place is taken")
    }

    /// Many clients hang up and one connects at once, with the server full: the listener's
    /// event can come before their hang-ups in the same turn of the loop, and the newcomer was
    /// refused although their places were free by the end of the turn.
    func testAClientArrivingAsOthersLeaveIsServedOnceTheTurnIsDone() throws {
        let service = makeService { $0.maxClients = 1 }
        let leaving = try connect(service)
        let arriving = try connect(service)
        leaving.pipeline.close(promise: nil)
        arriving.embeddedEventLoop.run()
        try arriving.send(#"{"id":1,"command":"echo"}"# + "\n")
        XCTAssertEqual(try arriving.sentLines(), [#"{"id":1,"ok":true,"result":null}"#])
        XCTAssertEqual(logged.lines, [])
    }

    func testConnectionsTheServerClosesAreNotReportedAsDisconnected() throws {
        let service = makeService()
        let channel = try connect(service)
        service.stopping = true
        _ = service.roster.clients[1]?.close()
        channel.embeddedEventLoop.run()
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(disconnected.lines, [])
    }
}

final class HeldReplies: Sendable {
    let replies = Mutex<[(ControlRequest, Reply)]>([])
}
