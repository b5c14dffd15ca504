import Foundation
import TonearmControl
import TonearmJSON
import TonearmNetwork
import XCTest

final class EventTests: XCTestCase {
    func testSubscribeAndUnsubscribe() throws {
        let running = try RunningServer()
        let connection = try RawConnection(path: running.path)
        connection.send(#"{"id":1,"command":"subscribe","topics":["state"]}"# + "\n")
        XCTAssertEqual(connection.readMessage()?.serialized, #"{"id":1,"ok":true,"result":{"topics":["state"]}}"#)

        running.server.publish(topic: "nowPlaying", event: .string("not for you"))
        running.server.publish(topic: "state", event: .object([("playing", .bool(true))]))
        XCTAssertEqual(connection.readMessage()?.serialized, #"{"event":"state","data":{"playing":true}}"#)

        connection.send(#"{"id":2,"command":"subscribe","topics":["bogus"]}"# + "\n")
        XCTAssertEqual(
            connection.readMessage()?.serialized,
            #"{"id":2,"ok":false,"error":{"code":"badArgument","message":"unknown topic 'bogus' (known: nowPlaying, state)"}}"#)
        connection.send(#"{"id":3,"command":"subscribe","topics":"state"}"# + "\n")
        XCTAssertEqual(connection.readMessage()?.errorCode, "badArgument")

        connection.send(#"{"id":4,"command":"subscribe"}"# + "\n")
        XCTAssertEqual(connection.readMessage()?["result"]?.serialized, #"{"topics":["nowPlaying","state"]}"#)
        running.server.publish(topic: "nowPlaying", event: .int(1))
        XCTAssertEqual(connection.readMessage()?.serialized, #"{"event":"nowPlaying","data":1}"#)

        connection.send(#"{"id":5,"command":"unsubscribe","topics":["nowPlaying"]}"# + "\n")
        XCTAssertEqual(connection.readMessage()?["result"]?.serialized, #"{"topics":["state"]}"#)
        connection.send(#"{"id":6,"command":"unsubscribe"}"# + "\n")
        XCTAssertEqual(connection.readMessage()?["result"]?.serialized, #"{"topics":[]}"#)
        running.server.publish(topic: "state", event: .int(2))
        connection.send(#"{"id":7,"command":"echo"}"# + "\n")
        XCTAssertEqual(connection.readMessage()?["id"], .int(7), "no event after unsubscribing")
    }

    /// Events about a client's own sessions go to that client alone, and only if it subscribed.
    func testAnEventForOneClientReachesOnlyThatClient() throws {
        let running = try RunningServer(topics: ["sessions"])
        let first = try ControlClient(path: running.path)
        let second = try ControlClient(path: running.path)
        let third = try ControlClient(path: running.path)
        _ = try first.request("subscribe")
        _ = try second.request("subscribe")
        let firstID = try XCTUnwrap(try first.request("whoami").intValue)
        let thirdID = try XCTUnwrap(try third.request("whoami").intValue)

        running.server.publish(topic: "sessions", event: .string("yours"), to: firstID)
        running.server.publish(topic: "sessions", event: .string("not subscribed"), to: thirdID)
        running.server.publish(topic: "sessions", event: .string("nobody"), to: 999)
        let event = try first.readEvent(timeout: 1)
        XCTAssertEqual(event?.topic, "sessions")
        XCTAssertEqual(event?.data, .string("yours"))
        XCTAssertNil(try second.readEvent(timeout: 0.1))
        XCTAssertNil(try third.readEvent(timeout: 0.1))
        XCTAssertNil(try first.readEvent(timeout: 0.05), "one event, once")
    }

    func testTheServerSaysWhichClientDisconnected() throws {
        let gone = LockedLines()
        let running = try RunningServer { $0.clientDisconnected = { gone.append(String($0)) } }
        var client: ControlClient? = try ControlClient(path: running.path)
        let id = try XCTUnwrap(try client?.request("whoami").intValue)
        XCTAssertTrue(gone.lines.isEmpty)
        client = nil
        let deadline = Date().addingTimeInterval(3)
        while gone.lines.isEmpty && Date() < deadline { usleep(2000) }
        XCTAssertEqual(gone.lines, [String(id)])
    }

    func testControlClientReadsEventsAndKeepsThoseThatArriveDuringARequest() throws {
        let running = try RunningServer()
        let client = try ControlClient(path: running.path)
        XCTAssertEqual(try client.request("subscribe", [("topics", .array([.string("state")]))]).serialized, #"{"topics":["state"]}"#)
        XCTAssertNil(try client.readEvent(timeout: 0.05))
        running.server.publish(topic: "state", event: .string("first"))
        XCTAssertEqual(try client.request("echo", [("value", .int(1))]), .int(1))
        running.server.publish(topic: "state", event: .string("second"))
        let first = try client.readEvent(timeout: 1)
        XCTAssertEqual(first?.topic, "state")
        XCTAssertEqual(first?.data, .string("first"))
        XCTAssertEqual(try client.readEvent(timeout: 1)?.data, .string("second"))
    }

    /// A subscriber that never reads while 50 MB of events go out: every publish returns (it
    /// hands the event to the server's loop and never waits for a client), the subscriber is
    /// disconnected, everybody else gets every event of theirs in order and carries on. How
    /// quick publishing is is a figure: a busy machine slows it without any fault.
    func testASubscriberThatStopsReadingIsDisconnectedAndNeverSlowsPublishing() throws {
        let logged = LockedLines()
        let running = try RunningServer { $0.log = { logged.append($0) } }

        let stalled = try RawConnection(path: running.path)
        stalled.send(#"{"id":1,"command":"subscribe"}"# + "\n")
        XCTAssertEqual(stalled.readMessage()?["ok"], .bool(true))

        // Another subscriber, reading, to a topic without the flood.
        let watcher = try ControlClient(path: running.path)
        _ = try watcher.request("subscribe", [("topics", .array([.string("state")]))])
        let received = LockedLines()
        let handover = Handover(value: watcher)
        let watching = Thread {
            while received.lines.count < 20, let event = try? handover.value.readEvent(timeout: 30) {
                received.append(event.data.serialized)
            }
        }
        watching.start()

        // The flood: 2000 events of 25 kB. Serialising is the caller's cost (and slow in a
        // debug build), so it is paid once, before the clock starts.
        let flood = PreparedEvent(topic: "nowPlaying", data: .string(String(repeating: "x", count: 25_000)))
        var slowest = 0.0
        let start = Date()
        for i in 0..<2000 {
            let before = Date()
            running.server.publish(flood)
            if i % 100 == 99 { running.server.publish(topic: "state", event: .int(i / 100)) }
            slowest = max(slowest, Date().timeIntervalSince(before))
        }
        let total = Date().timeIntervalSince(start)
        print(String(format: "events: 2000 publishes of 25 kB in %.3f s, the slowest %.1f ms", total, slowest * 1000))

        XCTAssertTrue(stalled.isClosedByServer(), "the stalled subscriber is disconnected")
        XCTAssertTrue(running.waitForClients(1))
        XCTAssertTrue(logged.lines.contains { $0.contains("stopped reading") }, "\(logged.lines)")

        let deadline = Date().addingTimeInterval(30)
        while received.lines.count < 20 && Date() < deadline { usleep(5000) }
        XCTAssertEqual(received.lines, (0..<20).map { String($0) })

        let latecomer = try ControlClient(path: running.path)
        XCTAssertEqual(try latecomer.request("echo", [("value", .string("still here"))]), .string("still here"))
    }

    func testTooManyClientsAreRefusedAndTheServerKeepsServing() throws {
        let running = try RunningServer { $0.maxClients = 32 }
        let results = LockedLines()
        let clients = LockedClients()
        runConcurrently(100) { i in
            do {
                let client = try ControlClient(path: running.path)
                clients.append(client)
                let answer = try client.request("echo", [("value", .int(i))])
                results.append(answer == .int(i) ? "ok" : "wrong answer \(answer.serialized)")
            } catch let error as ControlError {
                results.append(error.code ?? "local: \(error)")
            } catch {
                results.append("\(error)")
            }
        }
        let counts = Dictionary(grouping: results.lines, by: { $0 }).mapValues(\.count)
        XCTAssertEqual(counts, ["ok": 32, "tooManyClients": 68])
        XCTAssertEqual(running.server.clientCount, 32)

        clients.removeAll()
        XCTAssertTrue(running.waitForClients(0))
        let next = try ControlClient(path: running.path)
        XCTAssertEqual(try next.request("echo", [("value", .int(1))]), .int(1))
    }

    func testTheRefusalLineSaysWhy() throws {
        let running = try RunningServer { $0.maxClients = 1 }
        let first = try RawConnection(path: running.path)
        XCTAssertTrue(running.waitForClients(1))
        let second = try RawConnection(path: running.path)
        XCTAssertEqual(
            second.readMessage()?.serialized,
            #"{"ok":false,"error":{"code":"tooManyClients","message":"tonearmd serves at most 1 clients at once; try again later"}}"#)
        XCTAssertTrue(second.isClosedByServer())
        first.send(#"{"id":1,"command":"echo"}"# + "\n")
        XCTAssertEqual(first.readMessage()?["ok"], .bool(true))
    }
}

/// Clients kept open from several threads.
final class LockedClients: @unchecked Sendable {
    private let lock = NSLock()
    private var clients: [ControlClient] = []
    func append(_ client: ControlClient) { lock.withLock { clients.append(client) } }
    func removeAll() { lock.withLock { clients.removeAll() } }
}
