import TonearmAudio
import TonearmControlPlane
import TonearmSQLite

/// A directory's songs as one record (`directories.listing`), compressed: what the index keeps
/// of a song. A listing of the directory (`lsinfo`, a whole library's `listallinfo`, the web
/// remote's browser) reads its one row; a query reads the records of the directories the tag
/// index (`TagIndex`) names; a scan reads a directory's record to learn what it had.
///
/// The bytes, before compression: a format byte, the number of songs, then each song: its path,
/// a varint of flags (picture, and which of duration and the four ReplayGain figures follow,
/// as 8-byte doubles), sample rate, bits, channels, size, modification time in nanoseconds
/// (zigzag), and its tags in the file's order (tag number, value). A string is its UTF-8
/// length, then its bytes.
enum ListingRecord {
    static let format: UInt8 = 2

    /// A song as a record keeps it: with its modification time to the nanosecond, which a
    /// scan compares with the file's.
    struct Entry {
        var song: LibrarySong
        var modifiedNanoseconds: Int
    }

    static func record(_ entries: [Entry]) -> [UInt8] {
        var out: [UInt8] = [format]
        out.reserveCapacity(entries.count * 256)
        appendVarint(entries.count, to: &out)
        for entry in entries {
            let song = entry.song
            append(song.path, to: &out)
            let reals = [song.duration, song.replayGain.trackGain, song.replayGain.trackPeak,
                         song.replayGain.albumGain, song.replayGain.albumPeak]
            var flags = song.hasPicture ? 1 : 0
            for (n, real) in reals.enumerated() where real != nil { flags |= 4 << n }
            appendVarint(flags, to: &out)
            for case let real? in reals {
                withUnsafeBytes(of: real.bitPattern.littleEndian) { out += $0 }
            }
            for number in [song.sampleRate, song.bitsPerSample, song.channels, song.size] { appendVarint(number, to: &out) }
            appendVarint(zigzag(entry.modifiedNanoseconds), to: &out)
            appendVarint(song.tags.count, to: &out)
            for (tag, value) in song.tags {
                appendVarint(tag.index, to: &out)
                append(value, to: &out)
            }
        }
        return Deflate.compressed(out)
    }

    /// The songs of a record; nil when `block` is not a whole record of this format.
    static func songs(_ block: UnsafeRawBufferPointer, _ inflater: Deflate.Inflater = Deflate.Inflater()) -> [LibrarySong]? {
        entries(block, inflater)?.map(\.song)
    }

    /// The songs of a record with their times to the nanosecond; nil when `block` is not a
    /// whole record of this format.
    static func entries(_ block: UnsafeRawBufferPointer, _ inflater: Deflate.Inflater = Deflate.Inflater()) -> [Entry]? {
        guard let bytes = inflater.expanded(block) else { return nil }
        return bytes.withUnsafeBytes { raw -> [Entry]? in
            var entries: [Entry] = []
            let whole = try? forEachSong(raw) { view in
                guard let entry = entry(at: view.start, in: raw) else { return false }
                entries.append(entry)
                return true
            }
            return whole == true ? entries : nil
        }
    }

    /// A song of an expanded record, read in place: its path, its tags' numbers and values,
    /// its duration, and where it starts (`entry(at:in:)` makes the whole song of it). Valid
    /// while the record's bytes are.
    struct SongView {
        var index = 0
        var start = 0
        var path = UnsafeRawBufferPointer(start: nil, count: 0)
        var duration: Double?
        var tags: [(tag: Int, value: UnsafeRawBufferPointer)] = []
    }

    /// Calls `body` with each song of the expanded record `raw`, in place (one view, its
    /// tags' array used again for each song), until it returns false. False when the record
    /// is not whole (and `body` may have seen songs of it) or `body` stopped.
    static func forEachSong(_ raw: UnsafeRawBufferPointer, _ body: (SongView) throws(CommandFailure) -> Bool) throws(CommandFailure) -> Bool {
        var reader = Reader(raw)
        guard reader.byte() == format, let count = reader.varint(), count >= 0, count <= raw.count else { return false }
        var view = SongView()
        for index in 0..<count {
            view.index = index
            view.start = reader.offset
            view.tags.removeAll(keepingCapacity: true)
            guard let path = reader.text(), let flags = reader.varint() else { return false }
            view.path = path
            view.duration = nil
            for n in 0..<5 where flags & (4 << n) != 0 {
                guard let bits = reader.fixed64() else { return false }
                if n == 0 { view.duration = Double(bitPattern: bits) }
            }
            guard reader.varint() != nil, reader.varint() != nil, reader.varint() != nil, reader.varint() != nil,
                  reader.varint() != nil, let tagCount = reader.varint(), tagCount >= 0, tagCount <= raw.count else { return false }
            for _ in 0..<tagCount {
                guard let tag = reader.varint(), let value = reader.text() else { return false }
                view.tags.append((tag, value))
            }
            guard try body(view) else { return false }
        }
        return reader.atEnd
    }

    /// The song that starts at `start` in the expanded record `raw` (a `SongView`'s start);
    /// nil when its bytes are not a whole song.
    static func entry(at start: Int, in raw: UnsafeRawBufferPointer) -> Entry? {
        var reader = Reader(raw)
        reader.offset = start
        guard let path = reader.string(), let flags = reader.varint() else { return nil }
        var cut = false
        func real(_ n: Int) -> Double? {
            guard flags & (4 << n) != 0 else { return nil }
            guard let bits = reader.fixed64() else { cut = true; return nil }
            return Double(bitPattern: bits)
        }
        let (duration, trackGain, trackPeak, albumGain, albumPeak) = (real(0), real(1), real(2), real(3), real(4))
        guard !cut else { return nil }
        guard let rate = reader.varint(), let bits = reader.varint(), let channels = reader.varint(),
              let size = reader.varint(), let modified = reader.varint(), let tagCount = reader.varint(),
              tagCount >= 0, tagCount <= raw.count else { return nil }
        var tags: [(tag: Tag, value: String)] = []
        tags.reserveCapacity(tagCount)
        for _ in 0..<tagCount {
            guard let index = reader.varint(), let tag = Tag(index: index), let value = reader.string() else { return nil }
            tags.append((tag, value))
        }
        let nanoseconds = unzigzag(modified)
        let song = LibrarySong(
            path: path, tags: tags, duration: duration, sampleRate: rate, bitsPerSample: bits, channels: channels,
            size: size, modified: seconds(nanoseconds), hasPicture: flags & 1 != 0,
            replayGain: ReplayGain(trackGain: trackGain, trackPeak: trackPeak, albumGain: albumGain, albumPeak: albumPeak))
        return Entry(song: song, modifiedNanoseconds: nanoseconds)
    }

    /// Whole seconds of a time in nanoseconds, rounded down (before 1970 too).
    static func seconds(_ nanoseconds: Int) -> Int {
        nanoseconds / 1_000_000_000 - (nanoseconds % 1_000_000_000 < 0 ? 1 : 0)
    }

    // MARK: Bytes

    static func appendVarint(_ number: Int, to out: inout [UInt8]) {
        var rest = UInt64(bitPattern: Int64(number))
        while rest >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        out.append(UInt8(rest))
    }

    static func append(_ text: String, to out: inout [UInt8]) {
        appendVarint(text.utf8.count, to: &out)
        out += text.utf8
    }

    static func zigzag(_ n: Int) -> Int { (n << 1) ^ (n >> (Int.bitWidth - 1)) }
    static func unzigzag(_ n: Int) -> Int { Int(bitPattern: UInt(bitPattern: n) >> 1) ^ -(n & 1) }

    /// Reads a record's bytes front to back; every read is nil past the end.
    struct Reader {
        private let bytes: UnsafeRawBufferPointer
        private var at = 0
        /// Where the next read starts.
        var offset: Int {
            get { at }
            set { at = min(max(newValue, 0), bytes.count) }
        }

        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        var atEnd: Bool { at == bytes.count }

        mutating func byte() -> UInt8? {
            guard at < bytes.count else { return nil }
            defer { at += 1 }
            return bytes[at]
        }

        /// A varint of at most ten bytes (any 64-bit pattern).
        mutating func varint() -> Int? {
            var value: UInt64 = 0
            for shift in stride(from: 0, to: 70, by: 7) {
                guard let byte = byte() else { return nil }
                value |= UInt64(byte & 0x7F) << UInt64(shift)
                if byte < 0x80 { return Int(Int64(bitPattern: value)) }
            }
            return nil
        }

        mutating func fixed64() -> UInt64? {
            guard bytes.count - at >= 8 else { return nil }
            var value: UInt64 = 0
            for n in 0..<8 { value |= UInt64(bytes[at + n]) << UInt64(8 * n) }
            at += 8
            return value
        }

        mutating func string() -> String? {
            guard let count = varint(), count >= 0, count <= bytes.count - at else { return nil }
            defer { at += count }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[at..<(at + count)]), as: UTF8.self)
        }

        /// A string's bytes, in place.
        mutating func text() -> UnsafeRawBufferPointer? {
            guard let count = varint(), count >= 0, count <= bytes.count - at else { return nil }
            defer { at += count }
            return UnsafeRawBufferPointer(rebasing: bytes[at..<(at + count)])
        }

        /// What is left, all of it.
        mutating func rest() -> UnsafeRawBufferPointer {
            defer { at = bytes.count }
            return UnsafeRawBufferPointer(rebasing: bytes[at...])
        }
    }
}
