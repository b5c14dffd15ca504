import TonearmAudio
import TonearmControlPlane
import XCTest
@testable import TonearmLibrary

/// A directory's record of its songs: every field back as it went in, and a damaged record
/// read as none rather than as wrong songs.
final class ListingRecordTests: XCTestCase {
    /// Each song's record entry, its time in nanoseconds `nanoseconds(n)` (its `modified`
    /// made the whole seconds of that), through a record and back.
    private func roundTrip(_ songs: [LibrarySong], nanoseconds: (Int) -> Int = { $0 * 1_000_000_000 + 123_456_789 },
                           file: StaticString = #filePath, line: UInt = #line) {
        let entries = songs.enumerated().map { n, song in
            var song = song
            let ns = nanoseconds(n)
            song.modified = ListingRecord.seconds(ns)
            return ListingRecord.Entry(song: song, modifiedNanoseconds: ns)
        }
        let record = ListingRecord.record(entries)
        let back = record.withUnsafeBytes { ListingRecord.entries($0) }
        XCTAssertEqual(back?.map(\.song), entries.map(\.song), file: file, line: line)
        XCTAssertEqual(back?.map(\.modifiedNanoseconds), entries.map(\.modifiedNanoseconds), file: file, line: line)
        XCTAssertEqual(record.withUnsafeBytes { ListingRecord.songs($0) }, entries.map(\.song), file: file, line: line)
    }

    /// Every combination of the optional figures and flags, each with a value that needs all of
    /// its bits (negative, fractional, infinite, NaN's bit pattern aside).
    func testEveryCombinationOfFiguresComesBack() {
        let reals: [Double] = [-0.5, 1e-300, 123.456, -Double.greatestFiniteMagnitude, .infinity]
        var songs: [LibrarySong] = []
        for mask in 0..<(1 << 7) {
            func real(_ n: Int) -> Double? { mask & (1 << n) != 0 ? reals[n] : nil }
            songs.append(LibrarySong(
                path: "A/\(mask).flac", tags: [(.title, "T\(mask)")], duration: real(0), sampleRate: 44_100 + mask,
                bitsPerSample: 16, channels: 2, size: mask << 40, hasPicture: mask & 32 != 0,
                replayGain: ReplayGain(trackGain: real(1), trackPeak: real(2), albumGain: real(3), albumPeak: real(4))))
        }
        // Times before 1970 and after, on a second and between two.
        roundTrip(songs) { n in n % 2 == 0 ? n * 1_000_000_007 : -n * 999_999_999 - n }
    }

    /// Whole seconds of a time in nanoseconds are rounded down, before 1970 too.
    func testSecondsOfATimeRoundDown() {
        XCTAssertEqual([0, 1, 999_999_999, 1_000_000_000, -1, -999_999_999, -1_000_000_000, -1_000_000_001, Int.min, Int.max].map(ListingRecord.seconds),
                       [0, 0, 0, 1, -1, -1, -1, -2, Int.min / 1_000_000_000 - 1, Int.max / 1_000_000_000])
    }

    func testNumbersAtTheirLimitsComeBack() {
        for number in [0, 1, 127, 128, 16_383, 16_384, Int(Int32.max), Int.max, Int.min, -1] {
            roundTrip([LibrarySong(path: "x", sampleRate: number, bitsPerSample: number, channels: number, size: number)],
                      nanoseconds: { _ in number })
            var bytes: [UInt8] = []
            ListingRecord.appendVarint(number, to: &bytes)
            XCTAssertLessThanOrEqual(bytes.count, 10)
            XCTAssertEqual(ListingRecord.unzigzag(ListingRecord.zigzag(number)), number)
        }
    }

    /// Every tag, several values of one, in the file's order; text that is not ASCII, empty,
    /// or holds the bytes other formats use as separators.
    func testTagsComeBackInTheirOrderWithTheirText() {
        let values = ["", "Sigur Rós", "東京事変", "a\u{1E}b\u{1F}c\n\0d", String(repeating: "long ", count: 5_000), "🎸"]
        var tags: [(tag: Tag, value: String)] = []
        for (n, tag) in Tag.allCases.enumerated() { tags.append((tag, values[n % values.count])) }
        tags.append((.artist, "Second Artist"))
        tags.append((.artist, "Third Artist"))
        roundTrip([LibrarySong(path: "Ünïcode/dir/ñame 🎵.flac", tags: tags, duration: 1)])
    }

    func testNoSongsAndManySongs() {
        roundTrip([])
        roundTrip((0..<3_000).map {
            LibrarySong(path: "Big/\($0).flac", tags: [(.title, "Title \($0)"), (.album, "Same Album")], duration: Double($0))
        })
    }

    /// A record cut anywhere, with a byte changed anywhere, or of another format, is none
    /// (or, where the change still makes a whole record, some songs; never a crash).
    func testADamagedRecordIsReadAsNone() {
        let songs = (0..<4).map { LibrarySong(path: "D/\($0).flac", tags: [(.title, "T\($0)"), (.genre, "G")], duration: 2.5) }
        let record = ListingRecord.record(songs.map { ListingRecord.Entry(song: $0, modifiedNanoseconds: 0) })
        for length in 0..<record.count {
            XCTAssertNil(Array(record[..<length]).withUnsafeBytes { ListingRecord.songs($0) }, "cut at \(length)")
        }
        for at in record.indices {
            for flip: UInt8 in [0x01, 0x80, 0xFF] {
                var damaged = record
                damaged[at] ^= flip
                _ = damaged.withUnsafeBytes { ListingRecord.songs($0) }
            }
        }
        XCTAssertNil((record + [0]).withUnsafeBytes { ListingRecord.songs($0) }, "a byte past the end")
        XCTAssertNil([0x05, 0x78, 0x9C].withUnsafeBytes { ListingRecord.songs($0) }, "not a whole stream")
        XCTAssertNil([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F].withUnsafeBytes { ListingRecord.songs($0) },
                     "a size no record has")
        // The expanded bytes of another format, and of a tag number no tag has.
        var other: [UInt8] = [ListingRecord.format + 1, 0]
        XCTAssertNil(Deflate.compressed(other).withUnsafeBytes { ListingRecord.songs($0) })
        other = [ListingRecord.format, 1, 1, 0x78, 0, 0, 0, 0, 0, 0, 1, 0xFF, 0x7F, 0]
        XCTAssertNil(Deflate.compressed(other).withUnsafeBytes { ListingRecord.songs($0) })
    }

    /// One inflater expands block after block, a damaged or cut block between them failing
    /// alone.
    func testOneInflaterExpandsManyBlocksAndADamagedOneFailsAlone() {
        let inflater = Deflate.Inflater()
        let blocks = (0..<50).map { n in Deflate.compressed((0..<(n * 97)).map { UInt8(truncatingIfNeeded: $0 * n) }) }
        for (n, block) in blocks.enumerated() {
            XCTAssertEqual(block.withUnsafeBytes { inflater.expanded($0) }, (0..<(n * 97)).map { UInt8(truncatingIfNeeded: $0 * n) })
            var damaged = block
            if damaged.count > 4 {
                damaged[damaged.count / 2] ^= 0x5A
                _ = damaged.withUnsafeBytes { inflater.expanded($0) }
                XCTAssertNil(Array(block.dropLast()).withUnsafeBytes { inflater.expanded($0) }, "cut \(n)")
                XCTAssertNil((block + [1]).withUnsafeBytes { inflater.expanded($0) }, "longer \(n)")
            }
        }
        XCTAssertEqual(blocks[7].withUnsafeBytes { inflater.expanded($0) }, (0..<(7 * 97)).map { UInt8(truncatingIfNeeded: $0 * 7) })
    }

    func testDeflateGivesBackWhatItWasGiven() {
        for bytes: [UInt8] in [[], [0], Array(repeating: 7, count: 100_000), (0..<65_536).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }] {
            let block = Deflate.compressed(bytes)
            XCTAssertEqual(block.withUnsafeBytes { Deflate.expanded($0) }, bytes)
        }
        XCTAssertLessThan(Deflate.compressed(Array(repeating: 7, count: 100_000)).count, 1_000)
    }

    /// Blocks are zlib's streams (`compress2`), in every database written so far, and
    /// libdeflate expands them: this one is fixed bytes, 120 bytes compressed by zlib at level 6
    /// (dynamic codes and back-references) behind their size, so that it holds whatever makes
    /// the blocks.
    func testABlockZlibMadeExpands() {
        let size: [UInt8] = [120]
        let zlib: [UInt8] = size + [
            0x78, 0x9C, 0xF3, 0x49, 0xCC, 0x2B, 0x49, 0x2D, 0xCA, 0x53, 0x08, 0xCE, 0xAE, 0x54, 0xD0, 0x57, 0xF0, 0x49, 0x2D, 0x01,
            0xF2, 0x14, 0xD2, 0x8A, 0xF2, 0x73, 0x15, 0x4A, 0x32, 0x52, 0x15, 0x3C, 0x12, 0x8B, 0x92, 0xF2, 0x4B, 0x8B, 0x40, 0x32,
            0x54, 0x56, 0x07, 0x00, 0xC0, 0x99, 0x28, 0xE4,
        ]
        let text = String(repeating: "Lantern Sky / Letter from the Harbour / ", count: 3)
        XCTAssertEqual(zlib.withUnsafeBytes { Deflate.expanded($0) }, Array(text.utf8))
        var checked = zlib
        checked[checked.count - 1] ^= 1
        XCTAssertNil(checked.withUnsafeBytes { Deflate.expanded($0) }, "its Adler-32 no longer matches")
    }
}
