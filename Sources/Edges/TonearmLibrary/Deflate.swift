import CZlib

/// zlib, wrapped once: a block of bytes compressed whole and expanded whole (a directory's
/// listing, `ListingRecord`). The compressed block starts with the expanded size (a varint), so
/// that expanding it allocates once.
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

    /// One zlib stream made once and reset for each block: a query expanding the records of
    /// hundreds of directories sets zlib up once, not once per record (which took as long as
    /// expanding them).
    final class Inflater {
        private var stream = z_stream()
        private var ready = false

        init() {
            ready = inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK
        }

        deinit {
            if ready { inflateEnd(&stream) }
        }

        /// The bytes `block` was made of; nil when it is not a whole block of ours.
        func expanded(_ block: UnsafeRawBufferPointer) -> [UInt8]? {
            var reader = ListingRecord.Reader(block)
            guard ready, let count = reader.varint(), count >= 0, count <= Deflate.largestExpanded else { return nil }
            let rest = reader.rest()
            if count == 0 { return rest.isEmpty ? [] : nil }
            guard !rest.isEmpty, inflateReset(&stream) == Z_OK else { return nil }
            var out = [UInt8](repeating: 0, count: count)
            let status = out.withUnsafeMutableBufferPointer { target -> Int32 in
                stream.next_in = UnsafeMutablePointer(mutating: rest.baseAddress!.assumingMemoryBound(to: Bytef.self))
                stream.avail_in = uInt(rest.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(count)
                return inflate(&stream, Z_FINISH)
            }
            // Whole: the stream ends where the block does, and gives exactly what it claims.
            return status == Z_STREAM_END && stream.avail_in == 0 && stream.avail_out == 0 ? out : nil
        }
    }
}
