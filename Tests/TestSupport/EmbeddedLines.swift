import NIOCore
import NIOEmbedded
import XCTest

/// A line protocol's handlers on an `EmbeddedChannel`, as the MPD and control-socket tests
/// drive them: text in, the lines written back out.
extension EmbeddedChannel {
    public func send(_ text: String) throws {
        try writeInbound(ByteBuffer(string: text))
    }

    /// Every line written to the client since the last call.
    public func sentLines() throws -> [String] {
        var text = ""
        while let buffer = try readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
        XCTAssertTrue(text.isEmpty || text.hasSuffix("\n"), "a line written in pieces: \(text)")
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }
}
