import Foundation
import TestSupport
import TonearmAudio
import TonearmDecoding
import XCTest

final class OpusDecoderTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        try XCTSkipUnless(toolsAvailable("opusenc", "opusdec"), "opus-tools are not installed")
        directory = try TemporaryDirectory(prefix: "tonearm-opus")
    }

    override func tearDown() {
        directory = nil
    }

    private func path(_ name: String) -> String { directory.file(name) }

    /// Tones plus a little seeded noise, right-justified 16-bit.
    private func signal(frames: Int, channels: Int, sampleRate: Int = 48000, seed: UInt64 = 1) -> [Int32] {
        FLACFixture(frames: frames, sampleRate: sampleRate, channels: channels, bitsPerSample: 16, noiseLevel: 0.01, seed: seed).samples()
    }

    /// opusdec's float output as left-justified 24-bit samples, rounded as the decoder rounds.
    private func reference(_ file: String) throws -> [Int32] {
        try OggFixtures.opusdec(file).map { x in
            Int32(min(8_388_607, max(-8_388_608, (x * 8_388_608).rounded(.toNearestOrEven)))) << 8
        }
    }

    func testDecodesAsOpusdecDoesAt48kHz() throws {
        for (channels, rate) in [(1, 48000), (2, 48000), (2, 44100), (1, 22050)] {
            let frames = 2 * rate + 777
            let file = try OggFixtures.opus(signal(frames: frames, channels: channels, sampleRate: rate),
                                            channels: channels, sampleRate: rate, to: path("\(channels)-\(rate).opus"))
            let decoder = try OpusDecoder(path: file)
            XCTAssertEqual(decoder.info.codec, "Opus")
            XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: 48000, channels: channels, bitsPerSample: 24))
            let expected = try reference(file)
            if rate == 48000 {
                XCTAssertEqual(decoder.info.totalFrames, frames, "the pre-skip and the padding are not counted")
            }
            XCTAssertEqual(decoder.info.totalFrames, expected.count / channels)
            let ours = try decodeAll(decoder)
            XCTAssertNil(within24BitLSB(ours, expected, channels: channels), "\(channels) ch from \(rate) Hz")
        }
    }

    func testGaplessPiecesJoinIntoTheContinuousSignal() throws {
        let lengths = [12345, 23457, 9871]
        let whole = signal(frames: lengths.reduce(0, +), channels: 2)
        var joined: [Int32] = []
        var start = 0
        for (i, length) in lengths.enumerated() {
            let piece = Array(whole[(start * 2)..<((start + length) * 2)])
            let file = try OggFixtures.opus(piece, channels: 2, sampleRate: 48000, to: path("piece-\(i).opus"))
            let decoder = try OpusDecoder(path: file)
            XCTAssertEqual(decoder.info.totalFrames, length)
            let decoded = try decodeAll(decoder)
            XCTAssertEqual(decoded.count, length * 2, "piece \(i) decodes to exactly its own length")
            joined += decoded
            start += length
        }
        let original = whole.map { $0 << 16 }
        XCTAssertEqual(bestAlignment(joined, original, channels: 2, within: 64), 0)
        var join = 0
        for length in lengths.dropLast() {
            join += length
            let snr = signalToNoise(joined, original, channels: 2, frames: (join - 480)..<(join + 480))
            XCTAssertGreaterThan(snr, 15, "the join at frame \(join) is clean")
        }
        XCTAssertGreaterThan(signalToNoise(joined, original, channels: 2, frames: 0..<(joined.count / 2)), 15)
    }

    func testSeeksAreSampleAccurate() throws {
        let frames = 3 * 48000 + 1001
        let file = try OggFixtures.opus(signal(frames: frames, channels: 2), channels: 2, sampleRate: 48000, to: path("seek.opus"))
        let expected = try reference(file)
        let decoder = try OpusDecoder(path: file)
        for target in [70001, 1, 4095, frames - 1000, 0, 48000] {
            try decoder.seek(toFrame: target)
            XCTAssertEqual(decoder.position, target)
            let rest = try decodeAll(decoder)
            XCTAssertEqual(rest.count, (frames - target) * 2, "seek to \(target)")
            let from = Array(expected[(target * 2)...])
            // Decoding starts before the frame, where the decoder's state converges to that of
            // playing through: the frames are the reference's from their first, to within
            // what the state's memory leaves (from the file's start, exactly).
            XCTAssertEqual(bestAlignment(rest, from, channels: 2, within: 32), 0, "seek to \(target)")
            let start = 0..<min(480, rest.count / 2)
            XCTAssertGreaterThan(signalToNoise(rest, from, channels: 2, frames: start), 60, "seek to \(target)")
            XCTAssertGreaterThan(signalToNoise(rest, from, channels: 2, frames: 0..<(rest.count / 2)), 60, "seek to \(target)")
            if target < 9600 { XCTAssertNil(within24BitLSB(rest, from, channels: 2), "seek to \(target)") }
        }
        try decoder.seek(toFrame: frames)
        XCTAssertNil(try decoder.nextBlock(), "seeking to the end leaves nothing")
        XCTAssertThrowsError(try decoder.seek(toFrame: frames + 1))
    }

    func testTagsThePictureAndR128GainReachTheTrackInfo() throws {
        let png = path("cover.png")
        try Data(TinyPNG.make(width: 24, height: 16)).write(to: URL(fileURLWithPath: png))
        let file = try OggFixtures.opus(signal(frames: 4800, channels: 2), channels: 2, sampleRate: 48000, to: path("tags.opus"),
                                        arguments: ["--title", "Song", "--artist", "Band", "--album", "Record",
                                                    "--tracknumber", "3/12", "--date", "1999", "--comment", "albumartist=Various",
                                                    "--comment", "R128_TRACK_GAIN=-2304", "--comment", "R128_ALBUM_GAIN=64",
                                                    "--picture", "3|image/png|Front||" + png])
        let info = try OpusDecoder(path: file, keepPictureData: true).info
        XCTAssertEqual(info.title, "Song")
        XCTAssertEqual(info.artist, "Band")
        XCTAssertEqual(info.album, "Record")
        XCTAssertEqual(info.albumArtist, "Various", "names are upper-cased")
        XCTAssertEqual(info.trackNumber, 3)
        XCTAssertEqual(info.trackTotal, 12)
        XCTAssertEqual(info.date, "1999")
        // Q7.8 dB against −23 LUFS, plus 5 dB for ReplayGain's −18 LUFS: −9 + 5 and 0.25 + 5.
        XCTAssertEqual(info.comment("REPLAYGAIN_TRACK_GAIN"), "-4.00 dB")
        XCTAssertEqual(info.comment("REPLAYGAIN_ALBUM_GAIN"), "5.25 dB")
        XCTAssertEqual(info.replayGain, ReplayGain(trackGain: -4, trackPeak: nil, albumGain: 5.25, albumPeak: nil))
        XCTAssertEqual(info.comment("R128_TRACK_GAIN"), "-2304", "the R128 tags stay")
        let cover = try XCTUnwrap(info.preferredPicture)
        XCTAssertEqual(info.pictures.count, 1)
        XCTAssertEqual(cover.type, Picture.frontCoverType)
        XCTAssertEqual(cover.mimeType, "image/png")
        XCTAssertEqual(cover.description, "Front")
        XCTAssertEqual(cover.width, 24)
        XCTAssertEqual(cover.height, 16)
        XCTAssertEqual(cover.data, TinyPNG.make(width: 24, height: 16))
        XCTAssertNil(try OpusDecoder(path: file).info.pictures.first?.data, "bytes only when asked for")

        // ReplayGain tags of the file's own win over R128 ones.
        let both = try OggFixtures.opus(signal(frames: 4800, channels: 2), channels: 2, sampleRate: 48000, to: path("both.opus"),
                                        arguments: ["--comment", "R128_TRACK_GAIN=-2304", "--comment", "R128_ALBUM_GAIN=64",
                                                    "--comment", "REPLAYGAIN_TRACK_GAIN=-6.50 dB"])
        let gains = try OpusDecoder(path: both).info
        XCTAssertEqual(gains.replayGain, ReplayGain(trackGain: -6.5, trackPeak: nil, albumGain: 5.25, albumPeak: nil))
        XCTAssertEqual(gains.comments.filter { $0.name == "REPLAYGAIN_TRACK_GAIN" }.count, 1)
    }

    /// The header's output gain is applied to the frames, as opusdec applies it.
    func testTheHeaderOutputGainIsApplied() throws {
        let file = try OggFixtures.opus(signal(frames: 48000, channels: 2), channels: 2, sampleRate: 48000, to: path("plain.opus"))
        var pages = try OggPages(path: file)
        let gainAt = pages.pages[0].headerLength + 16
        pages.pages[0].bytes.replaceSubrange(gainAt..<(gainAt + 2), with: [0x00, 0xFA])  // −6 dB in Q7.8 (−1536)
        pages.pages[0].updateChecksum()
        let quieter = path("quieter.opus")
        try pages.write(to: quieter)
        let plain = try decodeAll(OpusDecoder(path: file)), gained = try decodeAll(OpusDecoder(path: quieter))
        XCTAssertEqual(gained.count, plain.count)
        XCTAssertNil(within24BitLSB(gained, try reference(quieter), channels: 2))
        let ratio = rms(gained) / rms(plain)
        XCTAssertEqual(ratio, 0.501, accuracy: 0.01)
    }

    func testAStreamThatCannotSeekPlaysWithoutALength() throws {
        let file = try OggFixtures.opus(signal(frames: 30000, channels: 2), channels: 2, sampleRate: 48000, to: path("stream.opus"))
        let expected = try decodeAll(OpusDecoder(path: file))
        let decoder = try OpusDecoder(source: UnseekableSource(path: file))
        XCTAssertNil(decoder.info.totalFrames)
        XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: 48000, channels: 2, bitsPerSample: 24))
        XCTAssertNil(sampleMismatch(try decodeAll(decoder), expected, channels: 2))
        XCTAssertThrowsError(try decoder.seek(toFrame: 0))
    }

    func testChainedLinksOfOneFormatPlayOnAndAnotherChannelCountIsRefused() throws {
        let a = try OggFixtures.opus(signal(frames: 100_000, channels: 2), channels: 2, sampleRate: 48000, to: path("a.opus"),
                                     arguments: ["--serial", "1"])
        let b = try OggFixtures.opus(signal(frames: 70000, channels: 2, seed: 2), channels: 2, sampleRate: 48000, to: path("b.opus"),
                                     arguments: ["--serial", "2"])
        let mono = try OggFixtures.opus(signal(frames: 70000, channels: 1), channels: 1, sampleRate: 48000, to: path("mono.opus"),
                                        arguments: ["--serial", "3"])
        let first = try decodeAll(OpusDecoder(path: a)), second = try decodeAll(OpusDecoder(path: b))

        let same = path("same.opus")
        try concatenate([a, b], to: same)
        XCTAssertEqual(try OpusDecoder(path: same).info.totalFrames, 170_000)
        for decoder in [try OpusDecoder(path: same), try OpusDecoder(source: UnseekableSource(path: same))] {
            XCTAssertNil(sampleMismatch(try decodeAll(decoder), first + second, channels: 2))
        }

        let chained = path("chained.opus")
        try concatenate([a, mono], to: chained)
        XCTAssertEqual(try OpusDecoder(path: chained).info.totalFrames, 100_000, "the length is what plays")
        for decoder in [try OpusDecoder(path: chained), try OpusDecoder(source: UnseekableSource(path: chained))] {
            var decoded: [Int32] = []
            XCTAssertThrowsError(try { while let block = try decoder.nextBlock() { decoded += block } }()) { error in
                XCTAssertTrue("\(error)".contains("channel count (2 → 1 at frame 100000) changes mid-stream"), "\(error)")
            }
            XCTAssertNil(sampleMismatch(decoded, first, channels: 2), "the first link plays whole")
        }
    }

    func testEachLinksTagsBecomeTheTrackInfosAsTheLinkStarts() throws {
        // A station's chained stream: each song a link with its own comments.
        let a = try OggFixtures.opus(signal(frames: 100_000, channels: 2), channels: 2, sampleRate: 48000, to: path("a.opus"),
                                     arguments: ["--serial", "1", "--title", "First Song", "--artist", "Station"])
        let b = try OggFixtures.opus(signal(frames: 70000, channels: 2, seed: 2), channels: 2, sampleRate: 48000, to: path("b.opus"),
                                     arguments: ["--serial", "2", "--title", "Second Song"])
        let chained = path("chained.opus")
        try concatenate([a, b], to: chained)
        for decoder in [try OpusDecoder(path: chained), try OpusDecoder(source: UnseekableSource(path: chained))] {
            XCTAssertEqual(decoder.info.title, "First Song")
            XCTAssertEqual(decoder.tagChanges, 0)
            let changes = try linkTagChanges(decoder)
            XCTAssertEqual(changes.map(\.frame), [100_000], "the second link's tags come with its first block")
            XCTAssertEqual(changes.map(\.title), ["Second Song"])
            XCTAssertEqual(changes.map(\.artist), [nil], "the first link's other tags go with it")
        }
    }

    func testBadFilesFailWithOneClearError() throws {
        let good = try OggFixtures.opus(signal(frames: 4 * 48000, channels: 2), channels: 2, sampleRate: 48000, to: path("good.opus"))
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: good)))
        let pages = try OggPages(path: good)
        let headerEnd = pages.pages[0].bytes.count + pages.pages[1].bytes.count
        var random = SeededRandom(seed: 7)
        let noise = (0..<20000).map { _ in UInt8(truncatingIfNeeded: random.next()) }

        try Data().write(to: directory.url("empty.opus"))
        try Data(bytes.prefix(headerEnd + (bytes.count - headerEnd) * 6 / 10)).write(to: directory.url("cut.opus"))
        try Data(bytes.prefix(headerEnd) + noise).write(to: directory.url("garbage.opus"))
        try Data(noise).write(to: directory.url("noise.opus"))
        try Data(bytes.prefix(pages.pages[0].bytes.count)).write(to: directory.url("header-only.opus"))

        // The OpusTags packet claims a vendor string, then a comment count, of 2 GB.
        let vendorLength = (0..<4).reduce(0) { $0 | Int(pages.pages[1].bytes[pages.pages[1].headerLength + 8 + $1]) << (8 * $1) }
        for (name, offset) in [("huge-vendor.opus", 8), ("huge-count.opus", 12 + vendorLength)] {
            var lying = pages
            let at = lying.pages[1].headerLength + offset
            lying.pages[1].bytes.replaceSubrange(at..<(at + 4), with: [0xF0, 0xFF, 0xFF, 0x7F])
            lying.pages[1].updateChecksum()
            try lying.write(to: path(name))
        }

        let cases: [(String, String)] = [
            ("empty.opus", "empty file"),
            ("noise.opus", "not an Ogg Opus file (not an Ogg file)"),
            ("header-only.opus", "corrupt metadata: corrupt header"),
            ("huge-vendor.opus", "corrupt metadata: corrupt header"),
            ("huge-count.opus", "corrupt metadata: corrupt header"),
            ("garbage.opus", "corrupt metadata: invalid timestamps"),
        ]
        for (name, cause) in cases {
            XCTAssertThrowsError(try Decoders.open(path: path(name))) { error in
                XCTAssertEqual("\(error)", path(name) + ": " + cause)
            }
        }

        let cut = try OpusDecoder(path: path("cut.opus"))
        var decoded = 0
        XCTAssertThrowsError(try { while let block = try cut.nextBlock() { decoded += block.count / 2 } }()) { error in
            XCTAssertTrue("\(error)".contains("truncated: audio ends after \(decoded) of "), "\(error)")
        }
        XCTAssertGreaterThan(decoded, 48000)
        XCTAssertLessThan(decoded, 4 * 48000)
    }

    func testAnOggFileHoldingOpusPlaysThroughTheOpusPlugIn() throws {
        let samples = signal(frames: 9600, channels: 2)
        let file = try OggFixtures.opus(samples, channels: 2, sampleRate: 48000, to: path("really-opus.ogg"))
        let decoder = try Decoders.open(path: file)
        XCTAssertTrue(decoder is OpusDecoder, "\(type(of: decoder))")
        XCTAssertEqual(decoder.info.totalFrames, 9600)
        XCTAssertNil(within24BitLSB(try decodeAll(decoder), try reference(file), channels: 2))
        let head = try XCTUnwrap(FileHandle(forReadingAtPath: file)?.readData(ofLength: 64))
        XCTAssertFalse(VorbisDecoder.recognizes(FileHead(bytes: [UInt8](head))))
        XCTAssertTrue(OpusDecoder.recognizes(FileHead(bytes: [UInt8](head))))
    }

    // MARK: Helpers

    private func decodeAll(_ decoder: some AudioDecoder) throws -> [Int32] {
        var out: [Int32] = []
        while let block = try decoder.nextBlock() { out.append(contentsOf: block) }
        return out
    }

    private func concatenate(_ files: [String], to path: String) throws {
        try Data(files.flatMap { [UInt8](try Data(contentsOf: URL(fileURLWithPath: $0))) }).write(to: URL(fileURLWithPath: path))
    }

    private func rms(_ samples: [Int32]) -> Double {
        (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))).squareRoot()
    }
}

/// Where two left-justified 24-bit decodes differ by more than 1 LSB, or the lengths differ;
/// nil when they are within.
func within24BitLSB(_ ours: [Int32], _ reference: [Int32], channels: Int) -> String? {
    guard ours.count == reference.count else {
        return "got \(ours.count / channels) frames, the reference has \(reference.count / channels)"
    }
    for i in ours.indices where abs(Int(ours[i] >> 8) - Int(reference[i] >> 8)) > 1 {
        return "sample \(i) (frame \(i / channels), channel \(i % channels)): \(ours[i] >> 8), the reference \(reference[i] >> 8)"
    }
    return nil
}
