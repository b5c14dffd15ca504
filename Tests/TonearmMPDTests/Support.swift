import NIOCore
import NIOEmbedded
import XCTest

extension EmbeddedChannel {
    func send(_ text: String) throws {
        try writeInbound(ByteBuffer(string: text))
    }

    /// Every line written to the client since the last call.
    func sentLines() throws -> [String] {
        var text = ""
        while let buffer = try readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
        XCTAssertTrue(text.isEmpty || text.hasSuffix("\n"), "a line written in pieces: \(text)")
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }
}
