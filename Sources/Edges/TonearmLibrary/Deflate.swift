import CDeflate
import CZlib

/// A block of bytes compressed whole and expanded whole (a directory's listing,
/// `ListingRecord`; a tag's row, `TagIndex`), in zlib's format: made by zlib, expanded by
/// libdeflate. The compressed block starts with the expanded size (a varint), so that expanding
/// it allocates once.
///
/// Why two libraries for one format, each wrapped here only: libdeflate expands a whole buffer
/// in a third of the time zlib's streaming `inflate` takes (the records of the bench's 20,000
/// tracks: 12–14 ms against 35–37 ms; a title search expands hundreds of them), but its
/// compressor allocates 668 KB where zlib's takes about 270 KB, and made for each record it
/// cost a full scan more CPU. zlib compresses the records to the same size (1,737,219 bytes
/// for those, libdeflate's level 6 1,737,471).
enum Deflate {
    /// Past this the size a block claims is not believed (a damaged record).
    static let largestExpanded = 1 << 28

    static func compressed(_ bytes: [UInt8]) -> [UInt8] {
        if bytes.isEmpty { return [0] }
        var out: [UInt8] = []
        ListingRecord.appendVarint(bytes.count, to: &out)
        let header = out.count
        var room = compressBound(uLong(bytes.count))
        out += [UInt8](repeating: 0, count: Int(room))
        let status = out.withUnsafeMutableBufferPointer { target in
            bytes.withUnsafeBufferPointer { source in
                compress2(target.baseAddress! + header, &room, source.baseAddress, uLong(source.count), Z_DEFAULT_COMPRESSION)
            }
        }
        // compressBound is enough for any input: only memory running out fails, which the
        // allocator above would have met first.
        precondition(status == Z_OK, "zlib compress2 failed: \(status)")
        out.removeLast(out.count - header - Int(room))
        return out
    }

    /// The bytes `block` was made of; nil when it is not a whole block of ours.
    static func expanded(_ block: UnsafeRawBufferPointer) -> [UInt8]? {
        Inflater().expanded(block)
    }

    /// One decompressor made once for many blocks: a query expanding the records of hundreds
    /// of directories sets it up once.
    final class Inflater {
        private let decompressor: OpaquePointer?

        init() {
            decompressor = libdeflate_alloc_decompressor()
        }

        deinit {
            if let decompressor { libdeflate_free_decompressor(decompressor) }
        }

        /// The bytes `block` was made of; nil when it is not a whole block of ours.
        func expanded(_ block: UnsafeRawBufferPointer) -> [UInt8]? {
            var reader = ListingRecord.Reader(block)
            guard let decompressor, let count = reader.varint(), count >= 0, count <= Deflate.largestExpanded else { return nil }
            let rest = reader.rest()
            if count == 0 { return rest.isEmpty ? [] : nil }
            guard !rest.isEmpty else { return nil }
            var whole = false
            let out = [UInt8](unsafeUninitializedCapacity: count) { target, initialized in
                var read = 0, written = 0
                let result = libdeflate_zlib_decompress_ex(
                    decompressor, rest.baseAddress, rest.count, target.baseAddress, count, &read, &written)
                // Whole: the stream ends where the block does, and gives exactly what it claims.
                whole = result == LIBDEFLATE_SUCCESS && read == rest.count && written == count
                initialized = whole ? count : 0
            }
            return whole ? out : nil
        }
    }
}
