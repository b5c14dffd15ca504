import NIOCore
import NIOEmbedded
@testable import TonearmNetwork
import XCTest

/// The line framing every line protocol on the edge shares, with no socket.
final class LineFrameDecoderTests: XCTestCase {
    private func makeChannel(maxLineBytes: Int = 8) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineFrameDecoder(maxLineBytes: maxLineBytes)))
        return channel
    }

    private func send(_ channel: EmbeddedChannel, _ text: String) throws {
        try channel.writeInbound(ByteBuffer(string: text))
    }

    private func received(_ channel: EmbeddedChannel) throws -> [String] {
        var lines: [String] = []
        while let line = try channel.readInbound(as: InboundLine.self) {
            switch line {
            case .line(let bytes): lines.append(String(buffer: bytes))
            case .tooLong: lines.append("<too long>")
            }
        }
        return lines
    }

    func testLinesArriveWholeWhateverTheReadsAndCRLFIsAccepted() throws {
        let channel = try makeChannel()
        try send(channel, "ab")
        XCTAssertEqual(try received(channel), [])
        try send(channel, "c\r\nde\n\n\r\n")
        XCTAssertEqual(try received(channel), ["abc", "de", "", ""])
    }

    func testTheLimitCountsEveryByteBeforeTheNewline() throws {
        let channel = try makeChannel()
        try send(channel, "12345678\n1234567\r\n12345678\r\nok\n")
        XCTAssertEqual(try received(channel), ["12345678", "1234567", "<too long>", "ok"])
    }

    func testALongLineIsSaidAsSoonAsItIsKnownAndDroppedUpToItsNewline() throws {
        let channel = try makeChannel()
        try send(channel, "123456789")
        XCTAssertEqual(try received(channel), ["<too long>"], "before its newline comes")
        try send(channel, String(repeating: "x", count: 100))
        try send(channel, "still the long line\nnext\n")
        XCTAssertEqual(try received(channel), ["next"], "said once")
    }

    func testTheLastLineMayLackItsNewline() throws {
        let channel = try makeChannel()
        try send(channel, "first\nlast")
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        XCTAssertEqual(try received(channel), ["first", "last"])
    }

    func testALongLineCutByTheEndOfInputIsNotPassedOn() throws {
        let channel = try makeChannel()
        try send(channel, "1234567890")
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        XCTAssertEqual(try received(channel), ["<too long>"])
    }
}
