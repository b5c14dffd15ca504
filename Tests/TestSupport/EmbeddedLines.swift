import NIOCore
import NIOEmbedded

/// A line protocol's handlers on an `EmbeddedChannel`, as the MPD and control-socket tests
/// drive them: text in, the lines written back out.
extension EmbeddedChannel {
    /// What was written to the client ends inside a line: each line is to be written whole.
    public struct LineInPieces: Error, CustomStringConvertible {
        public let text: String
        public var description: String { "a line written in pieces: \(text)" }
    }

    public func send(_ text: String) throws {
        try writeInbound(ByteBuffer(string: text))
    }

    /// Every line written to the client since the last call; throws when the last is not whole.
    public func sentLines() throws -> [String] {
        var text = ""
        while let buffer = try readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
        guard text.isEmpty || text.hasSuffix("\n") else { throw LineInPieces(text: text) }
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }
}
