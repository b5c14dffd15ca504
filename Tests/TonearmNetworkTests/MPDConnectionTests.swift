import NIOCore
import NIOEmbedded
import Synchronization
@testable import TonearmNetwork
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

    private func connect(_ service: MPDService) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try service.admit(channel)
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/mpd.sock")).wait()
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
