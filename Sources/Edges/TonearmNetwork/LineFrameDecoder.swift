#if canImport(Glibc)
import Glibc
#endif
import NIOCore

/// What `LineFrameDecoder` passes on.
public enum InboundLine: Equatable {
    /// The bytes before a `\n`, without a `\r` just before it.
    case line(ByteBuffer)
    /// A line longer than the limit. Said once per line; its bytes are dropped.
    case tooLong
}

/// Splits a byte stream into lines ending in `\n`, for any line protocol on the edge (the
/// control socket's JSON lines, MPD's commands). A `\r` before the `\n` is dropped; it counts
/// towards `maxLineBytes` like any byte before the newline.
///
/// A line longer than `maxLineBytes` is passed on as `.tooLong` as soon as it is known to be,
/// and the rest of it is dropped as it arrives, up to its newline: a client never makes the
/// server hold more than the limit, and the connection goes on with the next line. At the end
/// of input the last line may lack its newline.
///
/// (NIOExtras' `LineBasedFrameDecoder` has no limit, and reports a last line without a
/// newline as an error.)
public struct LineFrameDecoder: NIOSingleStepByteToMessageDecoder {
    public typealias InboundOut = InboundLine

    public let maxLineBytes: Int
    /// Dropping the rest of a line that was too long.
    private var discarding = false
    /// Readable bytes already searched for a newline, so a line arriving in pieces is scanned once.
    private var scanned = 0

    public init(maxLineBytes: Int) {
        precondition(maxLineBytes > 0)
        self.maxLineBytes = maxLineBytes
    }

    public mutating func decode(buffer: inout ByteBuffer) throws -> InboundLine? {
        while true {
            guard let length = Self.newline(in: buffer, after: scanned) else {
                if discarding {
                    buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                    scanned = 0
                    return nil
                }
                if buffer.readableBytes > maxLineBytes {
                    buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                    scanned = 0
                    discarding = true
                    return .tooLong
                }
                scanned = buffer.readableBytes
                return nil
            }
            scanned = 0
            if discarding {
                discarding = false
                buffer.moveReaderIndex(forwardBy: length + 1)
                continue
            }
            if length > maxLineBytes {
                buffer.moveReaderIndex(forwardBy: length + 1)
                return .tooLong
            }
            let line = buffer.readSlice(length: length)!
            buffer.moveReaderIndex(forwardBy: 1)
            return .line(Self.droppingCarriageReturn(line))
        }
    }

    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> InboundLine? {
        if let line = try decode(buffer: &buffer) { return line }
        // What is left is a last line without its newline (the rest of a long line was dropped).
        guard buffer.readableBytes > 0 else { return nil }
        scanned = 0
        return .line(Self.droppingCarriageReturn(buffer.readSlice(length: buffer.readableBytes)!))
    }

    /// Where the first `\n` is, counted from the reader index, searching from `start` on.
    /// (memchr: a client's long command list is many lines to a read, each searched once.)
    private static func newline(in buffer: ByteBuffer, after start: Int) -> Int? {
        buffer.withUnsafeReadableBytes { bytes in
            guard start < bytes.count, let base = bytes.baseAddress,
                  let found = memchr(base + start, 0x0A, bytes.count - start) else { return nil }
            return base.distance(to: UnsafeRawPointer(found))
        }
    }

    private static func droppingCarriageReturn(_ line: ByteBuffer) -> ByteBuffer {
        guard line.readableBytes > 0, line.getInteger(at: line.writerIndex - 1, as: UInt8.self) == 0x0D else { return line }
        return line.getSlice(at: line.readerIndex, length: line.readableBytes - 1)!
    }
}
