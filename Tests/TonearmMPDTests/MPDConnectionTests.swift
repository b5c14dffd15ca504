import CAllocationCounter
import NIOCore
import NIOEmbedded
import Synchronization
@testable import TonearmMPD
import TestSupport
import TonearmNetwork
import XCTest

/// The MPD connection's own part on `EmbeddedChannel`s: the greeting, one request at a time,
/// command lists, `idle`/`noidle`, quoting, and the limits.
final class MPDConnectionTests: XCTestCase {
    private final class Held: Sendable {
        let requests = Mutex<[(MPDRequest, MPDReply)]>([])
    }

    private let held = Held()

    private func makeService(_ configure: (inout MPDServerOptions) -> Void = { _ in }) -> MPDService {
        var options = MPDServerOptions(host: nil)
        options.connectionTimeout = nil
        configure(&options)
        let held = held
        return MPDService(options: options, status: ServerStatus()) { request, reply in
            held.requests.withLock { $0.append((request, reply)) }
        }
    }

    /// A client of the Unix socket, or of TCP from `address`; on `loop`, which other clients
    /// may share, or a loop of its own.
    private func connect(_ service: MPDService, from address: String? = nil, on loop: EmbeddedEventLoop = EmbeddedEventLoop()) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(loop: loop)
        // Connected first, as an accepted socket is: the server sees its peer's address.
        let peer = try address.map { try SocketAddress(ipAddress: $0, port: 40000) } ?? SocketAddress(unixDomainSocketPath: "/mpd.sock")
        try channel.connect(to: peer).wait()
        try service.admit(channel)
        return channel
    }

    private func taken() -> [(MPDRequest, MPDReply)] {
        held.requests.withLock { held in
            defer { held = [] }
            return held
        }
    }

    func testTheGreetingNamesTheProtocolVersion() throws {
        let channel = try connect(makeService())
        XCTAssertEqual(try channel.sentLines(), ["OK MPD 0.23.5"])
    }

    func testARequestWaitsForItsAnswerAndTheNextLineForIt() throws {
        let channel = try connect(makeService())
        _ = try channel.sentLines()
        try channel.send("status\nplayid \"12\"\n")
        var held = taken()
        XCTAssertEqual(held.map(\.0.commands), [[MPDCommand("status")]])
        XCTAssertEqual(try channel.sentLines(), [])
        held[0].1.send(Array("state: stop\nOK\n".utf8))
        XCTAssertEqual(try channel.sentLines(), ["state: stop", "OK"])
        held = taken()
        XCTAssertEqual(held.map(\.0.commands), [[MPDCommand("playid", ["12"])]])
        held[0].1.send(Array("OK\n".utf8))
        XCTAssertEqual(try channel.sentLines(), ["OK"])
    }

    func testLinesQueuedBehindASlowAnswerAndAnsweredAtOnceGoOutInOrder() throws {
        // The handler answers `status` on the loop, as the plug-in does; anything else later.
        let slow = held
        let service = MPDService(options: { var o = MPDServerOptions(host: nil); o.connectionTimeout = nil; return o }(),
                                 status: ServerStatus()) { request, reply in
            if request.commands.first?.name == "status" {
                reply.send(Array("state: play\nOK\n".utf8))
            } else {
                slow.requests.withLock { $0.append((request, reply)) }
            }
        }
        let channel = try connect(service)
        _ = try channel.sentLines()
        let count = MPDConnection.maxQueuedLines - 1
        try channel.send("listall\n" + String(repeating: "status\n", count: count) + "ping\n")
        var held = taken()
        XCTAssertEqual(held.map(\.0.commands), [[MPDCommand("listall")]])
        XCTAssertEqual(try channel.sentLines(), [])
        held[0].1.send(Array("file: a.flac\nOK\n".utf8))
        XCTAssertEqual(try channel.sentLines(), ["file: a.flac", "OK"] + Array(repeating: ["state: play", "OK"], count: count).flatMap { $0 })
        held = taken()
        XCTAssertEqual(held.map(\.0.commands), [[MPDCommand("ping")]])
        held[0].1.send(Array("OK\n".utf8))
        XCTAssertEqual(try channel.sentLines(), ["OK"])
    }

    func testACommandListGoesWholeWithItsKind() throws {
        let channel = try connect(makeService())
        _ = try channel.sentLines()
        try channel.send("command_list_ok_begin\nclear\nadd \"A B/c.flac\"\ncommand_list_end\n")
        let held = taken()
        XCTAssertEqual(held.count, 1)
        XCTAssertEqual(held[0].0.commands, [MPDCommand("clear"), MPDCommand("add", ["A B/c.flac"])])
        XCTAssertTrue(held[0].0.isList)
        XCTAssertTrue(held[0].0.listOK)
        try channel.send("command_list_end\n")
        held[0].1.send(Array("list_OK\nlist_OK\nOK\n".utf8))
        XCTAssertEqual(try channel.sentLines(), ["list_OK", "list_OK", "OK", "ACK [1@0] {command_list_end} not in a command list"])
    }

    func testIdleAnswersWithWhatChangedOnlyThen() throws {
        let service = makeService()
        let channel = try connect(service)
        _ = try channel.sentLines()
        try channel.send("idle player mixer\n")
        XCTAssertEqual(try channel.sentLines(), [])
        service.changed(["playlist"])
        XCTAssertEqual(try channel.sentLines(), [])
        service.changed(["mixer", "player"])
        XCTAssertEqual(try channel.sentLines(), ["changed: player", "changed: mixer", "OK"])
        // What changed before an idle is told at once: the playlist, kept since.
        try channel.send("idle\n")
        XCTAssertEqual(try channel.sentLines(), ["changed: playlist", "OK"])
        // noidle ends an idle with nothing; outside one, it gets no answer.
        try channel.send("idle\nnoidle\nnoidle\nping\n")
        XCTAssertEqual(try channel.sentLines(), ["OK"])
        XCTAssertEqual(taken().map(\.0.commands), [[MPDCommand("ping")]])
        XCTAssertEqual(taken().count, 0)
    }

    func testAnyOtherCommandWhileIdlingClosesTheConnection() throws {
        let channel = try connect(makeService())
        _ = try channel.sentLines()
        try channel.send("idle\nstatus\n")
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(taken().count, 0)
    }

    func testAnUnknownIdleEventAndBadQuotingAreRefused() throws {
        let channel = try connect(makeService())
        _ = try channel.sentLines()
        try channel.send("idle player nonsense\nfind \"artist\nfind \"a\"b\n\n")
        XCTAssertEqual(try channel.sentLines(), [
            "ACK [2@0] {idle} Unrecognized idle event: nonsense",
            "ACK [2@0] {} missing closing '\"'",
            "ACK [2@0] {} space expected after closing '\"'",
            "ACK [5@0] {} No command given",
        ])
        XCTAssertTrue(channel.isActive)
    }

    func testALineTooLongIsRefusedAndTheConnectionClosed() throws {
        let channel = try connect(makeService { $0.maxLineBytes = 16 })
        _ = try channel.sentLines()
        try channel.send(String(repeating: "x", count: 40) + "\n")
        XCTAssertEqual(try channel.sentLines(), ["ACK [2@0] {} line longer than 16 bytes"])
        XCTAssertFalse(channel.isActive)
    }

    func testACommandListOverItsLimitClosesTheConnection() throws {
        let channel = try connect(makeService { $0.maxCommandListBytes = 30 })
        _ = try channel.sentLines()
        try channel.send("command_list_begin\n" + String(repeating: "add \"some/file.flac\"\n", count: 3))
        XCTAssertEqual(try channel.sentLines(), ["ACK [52@0] {} command list larger than 30 bytes"])
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(taken().count, 0)
    }

    func testACommandListOverItsCountClosesTheConnection() throws {
        let service = makeService { $0.maxCommandListCommands = 3 }
        let channel = try connect(service)
        _ = try channel.sentLines()
        try channel.send("command_list_begin\nping\nping\nping\ncommand_list_end\n")
        taken().first?.1.send(Array("OK\n".utf8))
        XCTAssertEqual(try channel.sentLines(), ["OK"])
        try channel.send("command_list_begin\nping\nping\nping\nping\n")
        XCTAssertEqual(try channel.sentLines(), ["ACK [52@0] {} command list longer than 3 commands"])
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(taken().count, 0)
    }

    func testTheClientOverTheLimitIsToldAndClosed() throws {
        let service = makeService { $0.maxClients = 1 }
        let first = try connect(service)
        XCTAssertEqual(try first.sentLines(), ["OK MPD 0.23.5"])
        let second = try connect(service)
        XCTAssertEqual(try second.sentLines(), ["ACK [52@0] {} too many clients: tonearmd serves at most 1 at once"])
        XCTAssertFalse(second.isActive)
    }

    func testCloseClosesAndAHalfClosedClientGetsItsAnswersFirst() throws {
        let channel = try connect(makeService())
        _ = try channel.sentLines()
        try channel.send("ping\n")
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        XCTAssertTrue(channel.isActive)
        taken()[0].1.send(Array("OK\n".utf8))
        XCTAssertEqual(try channel.sentLines(), ["OK"])
        XCTAssertFalse(channel.isActive)

        let other = try connect(makeService())
        try other.send("close\n")
        XCTAssertFalse(other.isActive)
    }

    // MARK: Slow readers

    /// A socket that has taken none of what was written to it until the test says so, as the
    /// socket of a client that reads slowly, or not at all.
    private final class HeldWrites: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        private var held: [(NIOAny, EventLoopPromise<Void>?)] = []

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            held.append((data, promise))
        }

        func flush(context: ChannelHandlerContext) {}

        /// What the client never took fails, as a socket's pending writes do when it closes.
        func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
            let dropped = held
            held = []
            for (_, promise) in dropped { promise?.fail(ChannelError.ioOnClosedChannel) }
            context.close(mode: mode, promise: promise)
        }

        /// The client reads what was written first.
        func takeOne(_ context: ChannelHandlerContext) {
            guard !held.isEmpty else { return }
            let (data, promise) = held.removeFirst()
            context.writeAndFlush(data, promise: promise)
        }

        var count: Int { held.count }
    }

    /// A client behind `HeldWrites`, and a way to make it read one write.
    private func connectHeld(_ service: MPDService) throws -> (EmbeddedChannel, HeldWrites, read: () -> Void) {
        let channel = EmbeddedChannel()
        let held = HeldWrites()
        try channel.pipeline.syncOperations.addHandler(held)
        let context = try channel.pipeline.syncOperations.context(handler: held)
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/mpd.sock")).wait()
        try service.admit(channel)
        return (channel, held, { held.takeOne(context) })
    }

    func testAClientThatReadsSlowlyGetsItsWholeAnswerInOrderHoweverLongItTakes() throws {
        let service = makeService { $0.connectionTimeout = .seconds(60) }
        let (channel, held, read) = try connectHeld(service)
        read()
        XCTAssertEqual(try channel.sentLines(), ["OK MPD 0.23.5"])
        try channel.send("playlistinfo\nstatus\n")
        let request = taken()
        XCTAssertEqual(request.map(\.0.commands), [[MPDCommand("playlistinfo")]])
        request[0].1.send(Array("file: a.flac\nPos: 0\nfile: b.flac\nPos: 1\nOK\n".utf8))
        // The answer waits for the client for 50 s, then is read; the next is asked and
        // waits as long: each write it takes starts the timeout over.
        channel.embeddedEventLoop.advanceTime(by: .seconds(50))
        XCTAssertEqual(held.count, 1)
        read()
        XCTAssertEqual(try channel.sentLines(), ["file: a.flac", "Pos: 0", "file: b.flac", "Pos: 1", "OK"])
        taken()[0].1.send(Array("state: play\nOK\n".utf8))
        channel.embeddedEventLoop.advanceTime(by: .seconds(50))
        XCTAssertTrue(channel.isActive, "a client that reads, however slowly, is kept")
        read()
        XCTAssertEqual(try channel.sentLines(), ["state: play", "OK"])
        XCTAssertTrue(channel.isActive)
    }

    func testAClientThatReadsNothingOfItsAnswerIsClosedWhenTheTimeoutIsUp() throws {
        let logged = Mutex<[String]>([])
        let service = makeService {
            $0.connectionTimeout = .seconds(60)
            $0.log = { line in logged.withLock { $0.append(line) } }
        }
        let (channel, held, read) = try connectHeld(service)
        read()
        XCTAssertEqual(try channel.sentLines(), ["OK MPD 0.23.5"])
        try channel.send("listallinfo\n")
        taken()[0].1.send(Array("file: a.flac\nOK\n".utf8))
        channel.embeddedEventLoop.advanceTime(by: .seconds(59))
        XCTAssertTrue(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        XCTAssertFalse(channel.isActive, "its answer waited 60 s for it")
        XCTAssertEqual(held.count, 0, "what waited for it was dropped with the connection")
        XCTAssertEqual(logged.withLock { $0 }, ["mpd: client 1 disconnected: it took none of its answer for 60 s (it stopped reading)"])
    }

    func testAClientThatReadsNothingWhileItsLongAnswerIsMadeIsClosedToo() throws {
        let service = makeService { $0.connectionTimeout = .seconds(60) }
        let (channel, _, read) = try connectHeld(service)
        read()
        XCTAssertEqual(try channel.sentLines(), ["OK MPD 0.23.5"])
        try channel.send("listallinfo\n")
        let reply = taken()[0].1
        // The first part is handed over; the next would be made once it is written.
        let written = Mutex<[Bool]>([])
        reply.write(Array("file: a.flac\n".utf8)) { ok in written.withLock { $0.append(ok) } }
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        XCTAssertFalse(channel.isActive, "a long answer the client stopped reading is not waited for forever")
        XCTAssertEqual(written.withLock { $0 }, [false], "the maker of the answer is told to stop")
    }

    // MARK: Password

    func testIdleBeforeThePasswordIsRefusedAndTheTimeoutKept() throws {
        let channel = try connect(makeService {
            $0.password = "secret"
            $0.connectionTimeout = .seconds(60)
        })
        _ = try channel.sentLines()
        try channel.send("idle\nnoidle\n")
        XCTAssertEqual(try channel.sentLines(), [#"ACK [4@0] {idle} you don't have permission for "idle""#])
        XCTAssertEqual(taken().count, 0)
        channel.embeddedEventLoop.advanceTime(by: .seconds(59))
        XCTAssertTrue(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        XCTAssertFalse(channel.isActive, "a client without the password that asked to idle still times out")
    }

    func testThePasswordIsCheckedHereAndEachRequestSaysWhetherItWasGiven() throws {
        let channel = try connect(makeService {
            $0.password = "secret"
            $0.connectionTimeout = .seconds(60)
        })
        _ = try channel.sentLines()
        try channel.send("status\n")
        var held = taken()
        XCTAssertEqual(held.map(\.0.authorized), [false])
        try XCTUnwrap(held.first).1.send(Array("ACK [4@0] {status} you don't have permission for \"status\"\n".utf8))
        _ = try channel.sentLines()
        try channel.send("password secret\n")
        XCTAssertEqual(try channel.sentLines(), ["OK"])
        XCTAssertEqual(taken().count, 0, "the password never leaves the connection")
        try channel.send("status\n")
        held = taken()
        XCTAssertEqual(held.map(\.0.commands), [[MPDCommand("status")]])
        XCTAssertEqual(held.map(\.0.authorized), [true])
        try XCTUnwrap(held.first).1.send(Array("OK\n".utf8))
        // Now idling is allowed, and lifts the timeout.
        try channel.send("idle\n")
        channel.embeddedEventLoop.advanceTime(by: .seconds(120))
        XCTAssertTrue(channel.isActive)
        XCTAssertEqual(try channel.sentLines(), ["OK"])
        try channel.send("noidle\npassword\npassword a b\n")
        XCTAssertEqual(try channel.sentLines(), ["OK", "ACK [2@0] {password} too few arguments", "ACK [2@0] {password} too many arguments"])
    }

    func testWrongPasswordsAreAnsweredLaterEachTimeAndTheThirdClosesTheConnection() throws {
        let channel = try connect(makeService {
            $0.password = "secret"
            $0.passwordDelay = .milliseconds(500)
        })
        let loop = channel.embeddedEventLoop
        _ = try channel.sentLines()
        try channel.send("password a\nping\n")
        loop.advanceTime(by: .milliseconds(499))
        XCTAssertEqual(try channel.sentLines(), [])
        XCTAssertEqual(taken().count, 0, "what follows a wrong password waits for its answer")
        loop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(try channel.sentLines(), ["ACK [3@0] {password} incorrect password"])
        let held = taken()
        XCTAssertEqual(held.map(\.0.commands), [[MPDCommand("ping")]])
        try XCTUnwrap(held.first).1.send(Array("OK\n".utf8))
        XCTAssertEqual(try channel.sentLines(), ["OK"])
        try channel.send("password b\n")
        loop.advanceTime(by: .milliseconds(999))
        XCTAssertEqual(try channel.sentLines(), [])
        loop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(try channel.sentLines(), ["ACK [3@0] {password} incorrect password"])
        try channel.send("password c\n")
        loop.advanceTime(by: .milliseconds(1999))
        XCTAssertEqual(try channel.sentLines(), [])
        XCTAssertTrue(channel.isActive)
        loop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(try channel.sentLines(), ["ACK [3@0] {password} incorrect password (3 wrong, closing the connection)"])
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(taken().count, 0)
    }

    func testGuessesFromOneAddressSlowDownWhateverTheConnectionAndARightOneWaitsAsLong() throws {
        let service = makeService {
            $0.password = "secret"
            $0.passwordDelay = .milliseconds(500)
            $0.maxPasswordDelay = .milliseconds(1500)
        }
        // One loop for every client, as the server's.
        let loop = EmbeddedEventLoop()
        let first = try connect(service, from: "192.0.2.1", on: loop)
        try first.send("password a\n")
        loop.advanceTime(by: .milliseconds(500))
        XCTAssertEqual(try first.sentLines(), ["OK MPD 0.23.5", "ACK [3@0] {password} incorrect password"])
        // A new connection from there does not start over.
        let second = try connect(service, from: "192.0.2.1", on: loop)
        _ = try second.sentLines()
        try second.send("password b\n")
        loop.advanceTime(by: .milliseconds(999))
        XCTAssertEqual(try second.sentLines(), [])
        loop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(try second.sentLines(), ["ACK [3@0] {password} incorrect password"])
        // Nor does giving up on an answer: the guess counted when it came.
        let third = try connect(service, from: "192.0.2.1", on: loop)
        try third.send("password c\n")
        try third.close().wait()
        // Another address is not slowed down.
        let other = try connect(service, from: "192.0.2.2", on: loop)
        _ = try other.sentLines()
        try other.send("password secret\n")
        XCTAssertEqual(try other.sentLines(), ["OK"])
        // The right one from there waits as long as a wrong one would (three wrong: 2 s, at most 1.5 s)…
        let owner = try connect(service, from: "192.0.2.1", on: loop)
        _ = try owner.sentLines()
        try owner.send("password secret\nstatus\n")
        loop.advanceTime(by: .milliseconds(1499))
        XCTAssertEqual(try owner.sentLines(), [])
        XCTAssertEqual(taken().count, 0)
        loop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(try owner.sentLines(), ["OK"])
        XCTAssertEqual(taken().map(\.0.authorized), [true])
        // …and then the address's slate is clean.
        let later = try connect(service, from: "192.0.2.1", on: loop)
        _ = try later.sentLines()
        try later.send("password secret\n")
        XCTAssertEqual(try later.sentLines(), ["OK"])
    }

    func testWrongPasswordsAreForgottenAfterAWhileAndTheirAddressesBounded() {
        var failures = PasswordFailures(memory: .seconds(600), capacity: 2)
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        XCTAssertEqual(failures.failed(from: "a", now: start), 1)
        XCTAssertEqual(failures.failed(from: "a", now: start + .seconds(10)), 2)
        XCTAssertEqual(failures.recent(from: "a", now: start + .seconds(609)), 2)
        XCTAssertEqual(failures.recent(from: "a", now: start + .seconds(610)), 0, "forgotten 10 minutes after the last")
        XCTAssertEqual(failures.failed(from: "a", now: start + .seconds(700)), 1)
        XCTAssertEqual(failures.failed(from: "b", now: start + .seconds(701)), 1)
        // Full: the address wrong longest ago makes room.
        XCTAssertEqual(failures.failed(from: "c", now: start + .seconds(702)), 1)
        XCTAssertEqual(failures.recent(from: "a", now: start + .seconds(703)), 0)
        XCTAssertEqual(failures.recent(from: "b", now: start + .seconds(703)), 1)
        failures.forget("b")
        XCTAssertEqual(failures.recent(from: "b", now: start + .seconds(703)), 0)
    }

    func testAPasswordInACommandListIsRefusedAndNothingInTheListRuns() throws {
        let channel = try connect(makeService { $0.password = "secret" })
        _ = try channel.sentLines()
        try channel.send("command_list_ok_begin\nping\npassword secret\nstatus\ncommand_list_end\nstatus\n")
        XCTAssertEqual(try channel.sentLines(), ["ACK [3@1] {password} the password must be sent alone, not in a command list"])
        XCTAssertEqual(taken().map(\.0.authorized), [false], "only the status after the list, still without the password")
    }

    func testANulByteInARequestIsRefused() throws {
        let channel = try connect(makeService())
        _ = try channel.sentLines()
        try channel.send("add \"A/one.flac\0../../x\"\nsetvol 5\0\n")
        XCTAssertEqual(try channel.sentLines(), ["ACK [2@0] {} a request may not hold a NUL byte", "ACK [2@0] {} a request may not hold a NUL byte"])
        XCTAssertEqual(taken().count, 0)
        XCTAssertTrue(channel.isActive)
        XCTAssertThrowsError(try MPDTokens.split(Array("ping\0".utf8))) { XCTAssertEqual($0 as? MPDError, .argument("a request may not hold a NUL byte")) }
    }

    // MARK: Places

    func testOneAddressMayHoldOnlyItsShareOfThePlaces() throws {
        let service = makeService {
            $0.maxClients = 7
            $0.maxClientsPerAddress = 2
        }
        let first = try connect(service, from: "192.0.2.1")
        _ = try connect(service, from: "192.0.2.1")
        let third = try connect(service, from: "192.0.2.1")
        XCTAssertEqual(try third.sentLines(), ["ACK [52@0] {} too many clients: tonearmd serves at most 2 from 192.0.2.1 at once"])
        XCTAssertFalse(third.isActive)
        // Another address is not held back by it, nor are the box's own clients (loopback, the
        // Unix socket): they are all one address, and only the whole limit bounds them.
        XCTAssertEqual(try connect(service, from: "192.0.2.2").sentLines(), ["OK MPD 0.23.5"])
        for _ in 0..<3 { XCTAssertEqual(try connect(service, from: "127.0.0.1").sentLines(), ["OK MPD 0.23.5"]) }
        XCTAssertEqual(try connect(service).sentLines(), ["OK MPD 0.23.5"])
        XCTAssertEqual(try connect(service, from: "::1").sentLines(), ["ACK [52@0] {} too many clients: tonearmd serves at most 7 at once"])
        // A place given back may be taken again.
        try first.close().wait()
        XCTAssertEqual(try connect(service, from: "192.0.2.1").sentLines(), ["OK MPD 0.23.5"])
        XCTAssertEqual(service.roster.clients.count, 7)
    }

    func testAClientWithoutThePasswordMakesRoomForTheNext() throws {
        let left = Mutex<[Int]>([])
        let service = makeService {
            $0.password = "secret"
            $0.maxClients = 3
            $0.maxClientsPerAddress = 2
            $0.clientDisconnected = { id in left.withLock { $0.append(id) } }
        }
        let a1 = try connect(service, from: "192.0.2.1")
        let a2 = try connect(service, from: "192.0.2.1")
        _ = try a1.sentLines()
        // The address is full: its oldest stranger goes.
        let a3 = try connect(service, from: "192.0.2.1")
        XCTAssertEqual(try a1.sentLines(), ["ACK [4@0] {} closed to make room for another client: no password given"])
        XCTAssertFalse(a1.isActive)
        XCTAssertEqual(try a3.sentLines(), ["OK MPD 0.23.5"])
        XCTAssertEqual(left.withLock { $0 }, [1])
        try a2.send("password secret\n")
        try a3.send("password secret\n")
        // Both have given it: nobody makes room.
        let a4 = try connect(service, from: "192.0.2.1")
        XCTAssertEqual(try a4.sentLines(), ["ACK [52@0] {} too many clients: tonearmd serves at most 2 from 192.0.2.1 at once"])
        // The server is full: a stranger from any address goes, even one whose address is not full.
        let b1 = try connect(service, from: "192.0.2.2")
        let c1 = try connect(service, from: "192.0.2.3")
        XCTAssertEqual(try b1.sentLines(), ["OK MPD 0.23.5", "ACK [4@0] {} closed to make room for another client: no password given"])
        XCTAssertEqual(try c1.sentLines(), ["OK MPD 0.23.5"])
        XCTAssertTrue(a2.isActive && a3.isActive)
        XCTAssertEqual(left.withLock { $0 }, [1, 4])
    }

    // MARK: Long command lists

    func testALongCommandListIsReadInLinearTimeAndGoesWholeInOrder() throws {
        // What reading a list asks of the heap grows in proportion to its length: twice the
        // lines, twice the bytes (a copy of the list per line made it four times, 7 GB for 20,000).
        var allocated: [Int: UInt64] = [:]
        for count in [10_000, 20_000] {
            let channel = try connect(makeService())
            _ = try channel.sentLines()
            let list = ByteBuffer(string: "command_list_ok_begin\n" + (0..<count).map { "setvol \($0 % 101)\n" }.joined() + "command_list_end\n")
            allocation_counter_start()
            try channel.writeInbound(list)
            _ = allocation_counter_stop()
            allocated[count] = allocation_counter_bytes()
            let held = taken()
            XCTAssertEqual(held.count, 1)
            XCTAssertEqual(held.first?.0.commands.count, count)
            XCTAssertEqual(held.first?.0.commands.prefix(3), [MPDCommand("setvol", ["0"]), MPDCommand("setvol", ["1"]), MPDCommand("setvol", ["2"])])
            XCTAssertEqual(held.first?.0.commands.last, MPDCommand("setvol", ["\((count - 1) % 101)"]))
            held.first?.1.send(Array((String(repeating: "list_OK\n", count: count) + "OK\n").utf8))
            let answer = try channel.sentLines()
            XCTAssertEqual(answer.count, count + 1)
            XCTAssertEqual(answer.last, "OK")
        }
        let (half, whole) = (allocated[10_000] ?? 0, allocated[20_000] ?? 0)
        XCTAssertLessThan(Double(whole), 2.5 * Double(half), "bytes allocated to read 10,000 lines: \(half); 20,000: \(whole)")
    }

    func testTokensUnquoteAndQuoteBack() throws {
        XCTAssertEqual(try MPDTokens.split(Array(#"find "(artist == 'A \"B\"')" window 0:2"#.utf8)),
                       ["find", #"(artist == 'A "B"')"#, "window", "0:2"])
        XCTAssertEqual(try MPDTokens.split(Array("  a\t b  ".utf8)), ["a", "b"])
        XCTAssertEqual(try MPDTokens.split(Array(#"add "with \\ backslash""#.utf8)), ["add", #"with \ backslash"#])
        XCTAssertEqual(try MPDTokens.split(Array(#"add """#.utf8)), ["add", ""])
        XCTAssertEqual(MPDTokens.quoted(#"A "B" \ C"#), #""A \"B\" \\ C""#)
        XCTAssertThrowsError(try MPDTokens.split(Array(#"add "x"#.utf8)))
    }
}
