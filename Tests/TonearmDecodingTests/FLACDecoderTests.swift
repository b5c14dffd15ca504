import Foundation
import TestSupport
import TonearmAudio
import TonearmDecoding
import XCTest

final class FLACDecoderTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tonearm-flac-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Decodes everything from the current position, left-justified.
    private func decodeAll(_ decoder: FLACDecoder) throws -> [Int32] {
        var out: [Int32] = []
        while let block = try decoder.nextBlock() { out.append(contentsOf: block) }
        return out
    }

    /// Tones plus seeded noise, as the integration fixtures use.
    private func signal(frames: Int, channels: Int, bits: Int, sampleRate: Int = 44100, seed: UInt64 = 1) -> [Int32] {
        FLACFixture(frames: frames, sampleRate: sampleRate, channels: channels, bitsPerSample: bits, seed: seed).samples()
    }

    private func leftJustified(_ samples: [Int32], bits: Int) -> [Int32] {
        samples.map { $0 << Int32(32 - bits) }
    }

    func testEveryBitDepthAndChannelCountDecodesExactly() throws {
        for (bits, channels, rate) in [(4, 1, 8000), (8, 1, 22050), (12, 2, 32000), (16, 2, 44100), (20, 3, 48000),
                                       (24, 6, 96000), (24, 8, 192000), (32, 2, 44100), (16, 2, 7), (16, 1, 655350)] {
            let samples = signal(frames: 5000, channels: channels, bits: bits, sampleRate: rate)
            let file = path("\(bits)-\(channels)-\(rate).flac")
            try LibFLACEncoder.write(samples, to: file, sampleRate: rate, channels: channels, bits: bits)
            let decoder = try FLACDecoder(path: file)
            XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: rate, channels: channels, bitsPerSample: bits))
            XCTAssertEqual(decoder.info.totalFrames, 5000)
            XCTAssertEqual(try decodeAll(decoder), leftJustified(samples, bits: bits), "\(bits)-bit \(channels) ch \(rate) Hz")
        }
    }

    func testSeeksAreSampleAccurateWithAndWithoutASeekTable() throws {
        let frames = 3 * 44100
        let samples = signal(frames: frames, channels: 2, bits: 16)
        for seekTable in [false, true] {
            let file = path("seek-\(seekTable).flac")
            try LibFLACEncoder.write(samples, to: file, sampleRate: 44100, channels: 2, bits: 16, blockSize: 4096, seekTable: seekTable)
            let decoder = try FLACDecoder(path: file)
            for target in [0, 1, 4095, 4096, 4097, 66150, 100_000, frames - 1, 12345, 0] {
                try decoder.seek(toFrame: target)
                XCTAssertEqual(decoder.position, target)
                let block = try XCTUnwrap(try decoder.nextBlock(), "a block after seeking to \(target)")
                let expected = leftJustified(Array(samples[(target * 2)..<min(samples.count, target * 2 + block.count)]), bits: 16)
                XCTAssertEqual(Array(block), expected, "seek to \(target), seek table: \(seekTable)")
            }
            try decoder.seek(toFrame: frames)
            XCTAssertNil(try decoder.nextBlock(), "seeking to the end leaves nothing")
            XCTAssertThrowsError(try decoder.seek(toFrame: frames + 1))
        }
    }

    /// A stream with no total in STREAMINFO: the length is unknown, not zero, and it plays.
    func testUnknownLengthIsNilAndDecodesFully() throws {
        let samples = signal(frames: 20000, channels: 2, bits: 16)
        let file = path("streamed.flac")
        try LibFLACEncoder.write(samples, to: file, sampleRate: 44100, channels: 2, bits: 16, knownLength: false)
        let decoder = try FLACDecoder(path: file)
        XCTAssertNil(decoder.info.totalFrames)
        XCTAssertNil(decoder.info.duration)
        XCTAssertEqual(try decodeAll(decoder), leftJustified(samples, bits: 16))
    }

    /// Frames of different sizes with sample-numbered headers (the variable block-size
    /// strategy), as some encoders write them.
    func testVariableBlockSizeStreamsDecodeExactly() throws {
        let sizes = [1152, 4096, 576, 4608, 192, 2048]
        var all: [Int32] = []
        var frames: [[UInt8]] = []
        var stream: FLACBytes?
        var offset = 0
        for (i, size) in sizes.enumerated() {
            let samples = signal(frames: size, channels: 2, bits: 16, seed: UInt64(i + 1))
            all += samples
            let file = path("single-\(i).flac")
            try LibFLACEncoder.write(samples, to: file, sampleRate: 44100, channels: 2, bits: 16, blockSize: size)
            let single = try FLACBytes(path: file)
            if stream == nil { stream = FLACBytes(bytes: Array(single.bytes[0..<(try single.audioOffset())])) }
            frames.append(FLACBytes.variableBlockSizeFrame(try single.audioFrames(), firstSample: offset))
            offset += size
        }
        var header = try XCTUnwrap(stream)
        header.minBlockSize = 192
        header.maxBlockSize = 4608
        header.totalSamples = offset
        header.clearMD5()
        let file = path("variable.flac")
        try FLACBytes(bytes: header.bytes + frames.flatMap { $0 }).write(to: file)

        let decoder = try FLACDecoder(path: file)
        XCTAssertEqual(decoder.minBlockSize, 192)
        XCTAssertEqual(decoder.maxBlockSize, 4608)
        XCTAssertEqual(try decodeAll(decoder), leftJustified(all, bits: 16))
        XCTAssertEqual(decoder.errorCounts.total, 0)

        // Seeking inside a variable-block-size stream is sample-accurate too.
        try decoder.seek(toFrame: 5300)
        let block = try XCTUnwrap(try decoder.nextBlock())
        XCTAssertEqual(Array(block.prefix(20)), leftJustified(Array(all[10600..<10620]), bits: 16))
    }

    func testMetadataIsReadAndTheFrontCoverIsPreferred() throws {
        let file = path("tagged.flac")
        let back = LibFLACEncoder.Picture(type: 4, mimeType: "image/png", width: 10, height: 20, data: [UInt8](repeating: 1, count: 100))
        let front = LibFLACEncoder.Picture(type: 3, mimeType: "image/jpeg", width: 300, height: 300, data: [UInt8](repeating: 2, count: 777))
        try LibFLACEncoder.write(signal(frames: 1000, channels: 2, bits: 16), to: file, sampleRate: 44100, channels: 2, bits: 16,
                                 tags: [("TITLE", "Song"), ("artist", "Band"), ("ALBUM", "Record"), ("ALBUMARTIST", "Various"),
                                        ("TRACKNUMBER", "3/12"), ("DISCNUMBER", "2"), ("DATE", "1999"), ("GENRE", "Jazz"),
                                        ("REPLAYGAIN_TRACK_GAIN", "-6.50 dB"), ("REPLAYGAIN_TRACK_PEAK", "0.98"),
                                        ("REPLAYGAIN_ALBUM_GAIN", "+1.25 dB")],
                                 pictures: [back, front])
        let info = try FLACDecoder(path: file, keepPictureData: true).info
        XCTAssertEqual(info.title, "Song")
        XCTAssertEqual(info.artist, "Band", "names are case-insensitive")
        XCTAssertEqual(info.album, "Record")
        XCTAssertEqual(info.albumArtist, "Various")
        XCTAssertEqual(info.trackNumber, 3)
        XCTAssertEqual(info.trackTotal, 12)
        XCTAssertEqual(info.discNumber, 2)
        XCTAssertEqual(info.date, "1999")
        XCTAssertEqual(info.genre, "Jazz")
        XCTAssertEqual(info.replayGain, ReplayGain(trackGain: -6.5, trackPeak: 0.98, albumGain: 1.25, albumPeak: nil))
        XCTAssertEqual(info.pictures.count, 2)
        let cover = try XCTUnwrap(info.preferredPicture)
        XCTAssertEqual(cover.type, Picture.frontCoverType)
        XCTAssertEqual(cover.typeName, "frontCover")
        XCTAssertEqual(cover.mimeType, "image/jpeg")
        XCTAssertEqual(cover.width, 300)
        XCTAssertEqual(cover.byteCount, 777)
        XCTAssertEqual(cover.data, [UInt8](repeating: 2, count: 777))
        XCTAssertNil(try FLACDecoder(path: file).info.pictures[0].data, "bytes only when asked for")
    }

    /// Some taggers put the cover in a Vorbis comment, as Ogg files carry it: it is a picture,
    /// not a tag of a hundred kilobytes of base64.
    func testACoverInAVorbisCommentIsAPicture() throws {
        let file = path("comment-cover.flac")
        let block = OggFixtures.pictureBlock(type: 3, mimeType: "image/png", description: "", width: 24, height: 16,
                                             data: TinyPNG.make(width: 24, height: 16))
        try LibFLACEncoder.write(signal(frames: 1000, channels: 2, bits: 16), to: file, sampleRate: 44100, channels: 2, bits: 16,
                                 tags: [("TITLE", "Song"), ("METADATA_BLOCK_PICTURE", Data(block).base64EncodedString())],
                                 pictures: [])
        let info = try FLACDecoder(path: file, keepPictureData: true).info
        XCTAssertEqual(info.comments.map(\.name), ["TITLE"])
        XCTAssertEqual(info.pictures.count, 1)
        XCTAssertEqual(info.pictures.first?.width, 24)
        XCTAssertEqual(info.pictures.first?.data, TinyPNG.make(width: 24, height: 16))
    }

    func testBadFilesFailWithTheirCause() throws {
        try Data().write(to: URL(fileURLWithPath: path("empty.flac")))
        try Data("hello, this is text\n".utf8).write(to: URL(fileURLWithPath: path("text.flac")))
        try Data("fLaC".utf8).write(to: URL(fileURLWithPath: path("marker-only.flac")))
        let cases: [(String, String)] = [
            (path("missing.flac"), "cannot open: No such file or directory"),
            (path("empty.flac"), "empty file"),
            (path("text.flac"), "not a FLAC file"),
            (path("marker-only.flac"), "corrupt metadata"),
            (directory.path, "cannot open: is a directory"),
        ]
        for (file, cause) in cases {
            XCTAssertThrowsError(try FLACDecoder(path: file)) { error in
                XCTAssertTrue("\(error)".hasPrefix(file + ": "), "\(error)")
                XCTAssertTrue("\(error)".contains(cause), "\(error) should say \(cause)")
            }
        }
    }

    func testAnID3TagInFrontIsSkipped() throws {
        let samples = signal(frames: 3000, channels: 2, bits: 16)
        let plain = path("plain.flac")
        try LibFLACEncoder.write(samples, to: plain, sampleRate: 44100, channels: 2, bits: 16)
        let tag: [UInt8] = Array("ID3".utf8) + [3, 0, 0, 0, 0, 0, 20] + [UInt8](repeating: 0, count: 20)
        let tagged = path("id3.flac")
        try Data(tag + [UInt8](Data(contentsOf: URL(fileURLWithPath: plain)))).write(to: URL(fileURLWithPath: tagged))
        XCTAssertEqual(try decodeAll(FLACDecoder(path: tagged)), leftJustified(samples, bits: 16))
    }

    func testTruncatedAudioIsReportedAfterWhatCouldBeDecoded() throws {
        let file = path("cut.flac")
        try LibFLACEncoder.write(signal(frames: 44100, channels: 2, bits: 16), to: file, sampleRate: 44100, channels: 2, bits: 16)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        try bytes.prefix(bytes.count * 6 / 10).write(to: URL(fileURLWithPath: file))
        let decoder = try FLACDecoder(path: file)
        var decoded = 0
        XCTAssertThrowsError(try { while let block = try decoder.nextBlock() { decoded += block.count / 2 } }()) { error in
            XCTAssertTrue("\(error)".contains("truncated: audio ends after"), "\(error)")
        }
        XCTAssertGreaterThan(decoded, 20000)
        XCTAssertLessThan(decoded, 44100)
    }

    func testCorruptFramesAreCountedNotFatal() throws {
        let file = path("corrupt.flac")
        let samples = signal(frames: 44100, channels: 2, bits: 16)
        try LibFLACEncoder.write(samples, to: file, sampleRate: 44100, channels: 2, bits: 16, blockSize: 4096)
        var flac = try FLACBytes(path: file)
        let audio = try flac.audioOffset()
        let start = audio + (flac.bytes.count - audio) / 3
        for i in stride(from: start, to: start + 40, by: 4) { flac.bytes[i] ^= 0x5A }
        try flac.write(to: file)
        let decoder = try FLACDecoder(path: file)
        XCTAssertThrowsError(try decodeAll(decoder)) { error in
            XCTAssertTrue("\(error)".contains("corrupt audio") || "\(error)".contains("truncated"), "\(error)")
        }
        XCTAssertGreaterThan(decoder.errorCounts.total, 0)
    }

    /// The frames' own format wins over a STREAMINFO that claims otherwise.
    func testFramesWinOverAWrongStreamInfo() throws {
        let samples = signal(frames: 10000, channels: 2, bits: 16)
        let file = path("liar.flac")
        try LibFLACEncoder.write(samples, to: file, sampleRate: 44100, channels: 2, bits: 16, blockSize: 4096)
        let original = try FLACBytes(path: file)
        let lies: [(String, (inout FLACBytes) -> Void)] = [
            ("small max block size", { $0.minBlockSize = 16; $0.maxBlockSize = 16 }),
            ("one channel", { $0.channels = 1 }),
            ("eight bits", { $0.bitsPerSample = 8 }),
        ]
        for (lie, patch) in lies {
            var liar = original
            patch(&liar)
            try liar.write(to: file)
            let decoder = try FLACDecoder(path: file)
            XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16), lie)
            XCTAssertEqual(try decodeAll(decoder), leftJustified(samples, bits: 16), lie)
        }
    }

    /// A STREAMINFO claiming one block size larger than the frames' has libFLAC number the
    /// frames by it and fill each gap with silence, 16 times the music here: it is refused as
    /// soon as a second frame shows that the short first one was not the last.
    func testAFixedBlockSizeLargerThanTheFramesIsRefused() throws {
        let samples = leftJustified(signal(frames: 10000, channels: 2, bits: 16), bits: 16)
        let file = path("padded.flac")
        try LibFLACEncoder.write(signal(frames: 10000, channels: 2, bits: 16), to: file, sampleRate: 44100, channels: 2, bits: 16,
                                 blockSize: 4096)
        var liar = try FLACBytes(path: file)
        liar.minBlockSize = 65535
        liar.maxBlockSize = 65535
        try liar.write(to: file)
        let decoder = try FLACDecoder(path: file)
        var decoded: [Int32] = []
        XCTAssertThrowsError(try { while let block = try decoder.nextBlock() { decoded += block } }()) { error in
            XCTAssertEqual("\(error)", "\(file): corrupt metadata: STREAMINFO gives blocks of 65535 frames, the first frame holds 4096")
        }
        XCTAssertEqual(decoded, Array(samples.prefix(2 * 4096)))
    }

    func testAChannelCountChangeMidStreamIsRefused() throws {
        let a = path("a.flac"), b = path("b.flac")
        try LibFLACEncoder.write(signal(frames: 8192, channels: 2, bits: 16), to: a, sampleRate: 44100, channels: 2, bits: 16, blockSize: 4096)
        try LibFLACEncoder.write(signal(frames: 8192, channels: 1, bits: 16), to: b, sampleRate: 44100, channels: 1, bits: 16, blockSize: 4096)
        let joined = path("joined.flac")
        try FLACBytes(bytes: try FLACBytes(path: a).bytes + FLACBytes(path: b).audioFrames()).write(to: joined)
        let decoder = try FLACDecoder(path: joined)
        XCTAssertThrowsError(try decodeAll(decoder)) { error in
            XCTAssertTrue("\(error)".contains("channel count (2 → 1 at frame 8192) changes mid-stream"), "\(error)")
        }
    }

    func testABitDepthDropMidStreamPlaysExactly() throws {
        let a = path("a24.flac"), b = path("b16.flac")
        let first = signal(frames: 4096, channels: 2, bits: 24)
        let second = signal(frames: 4096, channels: 2, bits: 16, seed: 9)
        try LibFLACEncoder.write(first, to: a, sampleRate: 48000, channels: 2, bits: 24, blockSize: 4096)
        try LibFLACEncoder.write(second, to: b, sampleRate: 48000, channels: 2, bits: 16, blockSize: 4096)
        var stream = try FLACBytes(path: a)
        stream.totalSamples = 8192
        stream.clearMD5()
        // B's single frame says "frame 0"; renumber it as frame 1 so it follows A's.
        let bFrame = FLACBytes.renumberedFrame(try FLACBytes(path: b).audioFrames(), frameNumber: 1)
        let joined = path("joined.flac")
        try FLACBytes(bytes: stream.bytes + bFrame).write(to: joined)
        let decoder = try FLACDecoder(path: joined)
        XCTAssertEqual(try decodeAll(decoder), leftJustified(first, bits: 24) + leftJustified(second, bits: 16))
    }
}
