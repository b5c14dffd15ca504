import Foundation
import TestSupport
import TonearmAudio
import TonearmDecoding
import XCTest

#if canImport(Glibc)
import Glibc
#endif

final class MP4DemuxerTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        try XCTSkipUnless(toolsAvailable("ffmpeg"), "ffmpeg makes the MP4 fixtures")
        directory = try TemporaryDirectory(prefix: "tonearm-mp4")
    }

    override func tearDown() { directory = nil }

    private func decodeAll(_ decoder: any AudioDecoder) throws -> [Int32] {
        var out: [Int32] = []
        while let block = try decoder.nextBlock() { out.append(contentsOf: block) }
        return out
    }

    private func metadata(_ path: String) throws -> TrackInfo {
        let fd = open(path, O_RDONLY)
        XCTAssertGreaterThanOrEqual(fd, 0)
        return try Decoders.metadata(fd: fd, path: path)
    }

    func testMoovBeforeOrAfterMdatDecodesTheSame() throws {
        let samples = MP4Fixtures.signal(frames: 30000)
        for codec in ["aac", "alac"] {
            let atEnd = try MP4Fixtures.encode(samples, to: directory.file("end-\(codec).m4a"), codec: codec)
            let atStart = try MP4Fixtures.encode(samples, to: directory.file("start-\(codec).m4a"), codec: codec,
                                                 arguments: ["-movflags", "+faststart"])
            let ends = try MP4Bytes(path: atEnd), starts = try MP4Bytes(path: atStart)
            XCTAssertLessThan(try XCTUnwrap(ends.box(["mdat"])).start, try XCTUnwrap(ends.box(["moov"])).start)
            XCTAssertLessThan(try XCTUnwrap(starts.box(["moov"])).start, try XCTUnwrap(starts.box(["mdat"])).start)
            let a = try decodeAll(Decoders.open(path: atEnd)), b = try decodeAll(Decoders.open(path: atStart))
            XCTAssertEqual(a.count, 30000 * 2, codec)
            XCTAssertTrue(a == b, codec)
        }
    }

    func testTagsAndTheCoverReachTrackInfo() throws {
        let cover = directory.file("cover.jpg")
        try runChecked("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "color=red:s=24x16", "-frames:v", "1", cover])
        let file = try MP4Fixtures.encode(
            MP4Fixtures.signal(frames: 20000), to: directory.file("tagged.m4a"), codec: "aac",
            arguments: ["-map", "0", "-map", "1", "-c:v", "copy", "-disposition:v", "attached_pic",
                        "-metadata", "title=Song", "-metadata", "artist=Band", "-metadata", "album=Record",
                        "-metadata", "album_artist=Various", "-metadata", "date=1999", "-metadata", "genre=Jazz",
                        "-metadata", "track=3/12", "-metadata", "disc=2/3", "-metadata", "composer=Bach"],
            inputs: [cover])
        var mp4 = try MP4Bytes(path: file)
        try mp4.append(MP4Bytes.freeform("replaygain_track_gain", "-6.50 dB") + MP4Bytes.freeform("REPLAYGAIN_TRACK_PEAK", "0.98")
                       + MP4Bytes.freeform("MusicBrainz Album Id", "abc"),
                       into: ["moov", "udta", "meta", "ilst"])
        try mp4.write(to: file)
        let jpeg = [UInt8](try Data(contentsOf: URL(fileURLWithPath: cover)))

        for (info, kept) in [(try Decoders.open(path: file, keepPictureData: true).info, true),
                             (try Decoders.open(path: file).info, false), (try metadata(file), false)] {
            XCTAssertEqual(info.codec, "AAC")
            XCTAssertEqual(info.totalFrames, 20000)
            XCTAssertEqual(info.title, "Song")
            XCTAssertEqual(info.artist, "Band")
            XCTAssertEqual(info.album, "Record")
            XCTAssertEqual(info.albumArtist, "Various")
            XCTAssertEqual(info.date, "1999")
            XCTAssertEqual(info.genre, "Jazz")
            XCTAssertEqual(info.comment("TRACKNUMBER"), "3/12")
            XCTAssertEqual(info.trackNumber, 3)
            XCTAssertEqual(info.trackTotal, 12)
            XCTAssertEqual(info.discNumber, 2)
            XCTAssertEqual(info.discTotal, 3)
            XCTAssertEqual(info.comment("COMPOSER"), "Bach")
            XCTAssertEqual(info.replayGain, ReplayGain(trackGain: -6.5, trackPeak: 0.98, albumGain: nil, albumPeak: nil))
            XCTAssertEqual(info.comment("MUSICBRAINZ ALBUM ID"), "abc")
            // In MPD's order, not the file's (ffmpeg writes the title first, the album artist
            // third); the items mpd does not list follow in file order.
            XCTAssertEqual(info.comments.map(\.name), [
                "ARTIST", "ALBUM", "TITLE", "TRACKNUMBER", "GENRE", "DATE", "COMPOSER", "DISCNUMBER", "ALBUMARTIST",
                "ENCODER", "REPLAYGAIN_TRACK_GAIN", "REPLAYGAIN_TRACK_PEAK", "MUSICBRAINZ ALBUM ID",
            ])
            XCTAssertEqual(info.pictures.count, 1)
            let picture = try XCTUnwrap(info.preferredPicture)
            XCTAssertEqual(picture.type, Picture.frontCoverType)
            XCTAssertEqual(picture.mimeType, "image/jpeg")
            XCTAssertEqual(picture.byteCount, jpeg.count)
            XCTAssertEqual(picture.width, 24)
            XCTAssertEqual(picture.height, 16)
            XCTAssertEqual(picture.data, kept ? jpeg : nil, "bytes only when asked for")
        }
    }

    /// Each broken file gives one error naming the file and the cause, without a crash, a hang
    /// or an allocation of what a box claims.
    func testBadFilesFailWithTheirCause() throws {
        let samples = MP4Fixtures.signal(frames: 44100)
        let good = try MP4Fixtures.encode(samples, to: directory.file("good.m4a"), codec: "aac")
        let fast = try MP4Fixtures.encode(samples, to: directory.file("fast.m4a"), codec: "alac", arguments: ["-movflags", "+faststart"])
        let original = try MP4Bytes(path: good)
        let stbl = ["moov", "trak", "mdia", "minf", "stbl"]

        func variant(_ name: String, _ edit: (inout MP4Bytes) throws -> Void) throws -> String {
            var bytes = original
            try edit(&bytes)
            let path = directory.file(name)
            try bytes.write(to: path)
            return path
        }
        let cases: [(String, String)] = [
            (try variant("huge-moov.m4a") { try $0.patch(["moov"], at: 0, to: 0xFFFF_FFF0) }, "past the end of its container"),
            (try variant("tiny-trak.m4a") { try $0.patch(["moov", "trak"], at: 0, to: 4) }, "smaller than its header"),
            (try variant("wide-small.m4a") {
                try $0.patch(["moov", "trak"], at: 8, to: 0)
                try $0.patch(["moov", "trak"], at: 12, to: 8)
                try $0.patch(["moov", "trak"], at: 0, to: 1)
            }, "smaller than its header"),
            (try variant("wide-huge.m4a") {
                try $0.patch(["moov", "trak"], at: 8, to: 0x7FFF_FFFF)
                try $0.patch(["moov", "trak"], at: 0, to: 1)
            }, "past the end of its container"),
            (try variant("zero-stsd.m4a") { try $0.patch(stbl + ["stsd"], at: 0, to: 0) }, "lacks one of"),
            (try variant("billion.m4a") { try $0.patch(stbl + ["stsz"], at: 16, to: 1_000_000_000) }, "claims 1000000000 samples"),
            (try variant("stsc-zero.m4a") { try $0.patch(stbl + ["stsc"], at: 20, to: 0) }, "'stsc' entry 0 is out of range"),
            (try variant("no-moov.m4a") { try $0.rename(["moov"], to: "free") }, "no 'moov' box"),
            (try variant("cut-before-moov.m4a") { $0.bytes.removeLast($0.bytes.count - $0.box(["moov"])!.start - 20) }, "past the end"),
        ]
        for (file, cause) in cases {
            for attempt in ["open", "metadata"] {
                XCTAssertThrowsError(try attempt == "open" ? Decoders.open(path: file).info : metadata(file)) { error in
                    XCTAssertTrue("\(error)".hasPrefix(file + ": "), "\(error)")
                    XCTAssertTrue("\(error)".contains(cause), "\(attempt): \(error) should say \(cause)")
                }
            }
        }

        try Data().write(to: URL(fileURLWithPath: directory.file("empty.m4a")))
        var random = SeededRandom(seed: 11)
        try Data((0..<5000).map { _ in UInt8(truncatingIfNeeded: random.next()) }).write(to: URL(fileURLWithPath: directory.file("noise.m4a")))
        try Data([0xFF, 0xF1, 0x50, 0x80, 0xFF, 0xFF, 0xFC] + [UInt8](repeating: 0x11, count: 100))
            .write(to: URL(fileURLWithPath: directory.file("cut.aac")))
        for (file, cause) in [(directory.file("empty.m4a"), "empty file"), (directory.file("noise.m4a"), "not an MP4 file"),
                              (directory.file("cut.aac"), "not an ADTS AAC stream (no whole frame)")] {
            XCTAssertThrowsError(try Decoders.open(path: file)) { error in
                XCTAssertEqual("\(error)", file + ": " + ("\(error)".dropFirst(file.count + 2)))
                XCTAssertTrue("\(error)".contains(cause), "\(error) should say \(cause)")
            }
        }

        // Audio cut short: what is there plays, then the cut is reported.
        var cut = try MP4Bytes(path: fast)
        cut.bytes.removeLast(cut.bytes.count * 4 / 10)
        let cutFile = directory.file("cut.m4a")
        try cut.write(to: cutFile)
        let decoder = try Decoders.open(path: cutFile)
        XCTAssertEqual(decoder.info.totalFrames, 44100)
        var decoded = 0
        XCTAssertThrowsError(try { while let block = try decoder.nextBlock() { decoded += block.count / 2 } }()) { error in
            XCTAssertTrue("\(error)".contains("truncated: audio ends after"), "\(error)")
        }
        XCTAssertGreaterThan(decoded, 10000)
        XCTAssertLessThan(decoded, 44100)
    }

    func testCorruptAudioIsCountedAndPlaysOnAsSilence() throws {
        let file = try MP4Fixtures.encode(MP4Fixtures.signal(frames: 44100), to: directory.file("corrupt.m4a"), codec: "alac")
        var mp4 = try MP4Bytes(path: file)
        let mdat = try XCTUnwrap(mp4.box(["mdat"]))
        for i in stride(from: mdat.start + mdat.size / 2, to: mdat.start + mdat.size / 2 + 64, by: 3) { mp4.bytes[i] ^= 0xA5 }
        try mp4.write(to: file)
        let decoder = try Decoders.open(path: file)
        var decoded = 0
        XCTAssertThrowsError(try { while let block = try decoder.nextBlock() { decoded += block.count / 2 } }()) { error in
            XCTAssertTrue("\(error)".contains("corrupt audio"), "\(error)")
        }
        XCTAssertEqual(decoded, 44100, "a corrupt frame is replaced by silence of its length")

        // A corrupt frame whose table says it lasts a day is not made a day of silence.
        var long = try MP4Bytes(path: file)
        try long.patch(["moov", "trak", "mdia", "minf", "stbl", "stts"], at: 20, to: 0x7FFF_FFFF)
        long.bytes[try XCTUnwrap(long.box(["mdat"])).start + 8] = 0xA0
        try long.write(to: file)
        XCTAssertThrowsError(try decodeAll(Decoders.open(path: file))) { error in
            XCTAssertTrue("\(error)".contains("sample 0 lasts 2147483647 frames"), "\(error)")
        }
    }
}

extension MP4DemuxerTests {
    /// Bytes changed at random, half of them in 'moov', many times over: each file opens and
    /// plays, or fails with a `DecodeError` naming it; none crashes or hangs.
    func testRandomDamageNeverCrashes() throws {
        for codec in ["aac", "alac"] {
            let file = try MP4Fixtures.encode(MP4Fixtures.signal(frames: 9000), to: directory.file("fuzz-\(codec).m4a"), codec: codec,
                                              arguments: ["-metadata", "title=Fuzz"])
            let original = try MP4Bytes(path: file)
            let moov = try XCTUnwrap(original.box(["moov"]))
            var random = SeededRandom(seed: codec == "aac" ? 21 : 22)
            let damaged = directory.file("damaged-\(codec).m4a")
            var played = 0, refused = 0
            for _ in 0..<200 {
                var bytes = original
                for _ in 0..<(1 + Int(random.next() % 4)) {
                    let inMoov = random.next() % 2 == 0
                    let at = inMoov ? moov.start + Int(random.next() % UInt64(moov.size)) : Int(random.next() % UInt64(bytes.bytes.count))
                    bytes.bytes[at] = random.next() % 3 == 0 ? 0xFF : UInt8(truncatingIfNeeded: random.next())
                }
                try bytes.write(to: damaged)
                do {
                    let decoder = try Decoders.open(path: damaged)
                    while try decoder.nextBlock() != nil {}
                    if let total = decoder.info.totalFrames, total > 0 { try decoder.seek(toFrame: total / 2) }
                    _ = try Decoders.metadata(fd: open(damaged, O_RDONLY), path: damaged)
                    played += 1
                } catch {
                    XCTAssertTrue("\(error)".hasPrefix(damaged + ": "), "\(error)")
                    refused += 1
                }
            }
            XCTAssertEqual(played + refused, 200, codec)
            XCTAssertGreaterThan(refused, 0, codec)
        }
    }
}
