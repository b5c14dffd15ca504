import TonearmSystem

#if canImport(Glibc)
import Glibc
#endif

/// Where a decoder's bytes come from: a file, or a network stream. Decoders ask it for bytes,
/// their position, a seek and the length; the questions they ask often cost no system call.
public protocol ByteSource: AnyObject {
    /// The path or URL, for errors.
    var name: String { get }
    /// Reads up to `buffer.count` bytes; 0 at the end.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(DecodeError) -> Int
    /// The offset of the next byte `read` returns.
    var offset: UInt64 { get }
    /// Whether `seek` can work (a file; not a live stream).
    var isSeekable: Bool { get }
    func seek(to offset: UInt64) throws(DecodeError)
    /// The total length, when known.
    var length: UInt64? { get }
    /// Whether the last read met the end.
    var atEnd: Bool { get }
    /// The media type its server gave (a station's `Content-Type`), when it has one.
    var mimeType: String? { get }
}

extension ByteSource {
    public var mimeType: String? { nil }

    /// Reads exactly `count` bytes at `offset`, or fewer at the end; the position is restored.
    public func peek(_ count: Int, at offset: UInt64) throws(DecodeError) -> [UInt8] {
        let saved = self.offset
        try seek(to: offset)
        let bytes = try readUpTo(count)
        try seek(to: saved)
        return bytes
    }

    /// Reads `count` bytes, or fewer at the end.
    public func readUpTo(_ count: Int) throws(DecodeError) -> [UInt8] {
        let raw = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 1)
        defer { raw.deallocate() }
        var got = 0
        while got < count {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: raw[got...]))
            if n == 0 { break }
            got += n
        }
        return Array(raw[..<got])
    }
}

/// A file read through its descriptor, which it owns and closes.
public final class FileSource: ByteSource {
    public let name: String
    public let fd: Int32
    public private(set) var offset: UInt64 = 0
    public private(set) var atEnd = false
    private var knownLength: UInt64?

    /// Opens `path` for reading.
    public convenience init(path: String) throws(DecodeError) {
        let fd = FileName.withPath(path) { Glibc.open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw DecodeError(path: path, reason: .cannotOpen(String(cString: strerror(errno)))) }
        self.init(fd: fd, name: path)
    }

    /// Takes `fd` (at its start); it is closed when this goes.
    public init(fd: Int32, name: String) {
        self.fd = fd
        self.name = name
    }

    deinit { close(fd) }

    public var isSeekable: Bool { true }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(DecodeError) -> Int {
        guard buffer.count > 0 else { return 0 }
        var n: Int
        repeat { n = Glibc.read(fd, buffer.baseAddress, buffer.count) } while n < 0 && errno == EINTR
        guard n >= 0 else {
            if errno == EISDIR { throw DecodeError(path: name, reason: .cannotOpen("is a directory")) }
            throw DecodeError(path: name, reason: .cannotOpen(String(cString: strerror(errno))))
        }
        offset += UInt64(n)
        atEnd = n == 0
        return n
    }

    public func seek(to offset: UInt64) throws(DecodeError) {
        guard lseek(fd, off_t(offset), SEEK_SET) >= 0 else {
            throw DecodeError(path: name, reason: .decoder("cannot seek to byte \(offset): \(String(cString: strerror(errno)))"))
        }
        self.offset = offset
        atEnd = false
    }

    public var length: UInt64? {
        if knownLength == nil {
            var st = stat()
            if fstat(fd, &st) == 0 { knownLength = UInt64(st.st_size) }
        }
        return knownLength
    }
}
