import Foundation
import TestSupport
import TonearmAudio
import TonearmDecoding
import XCTest

final class VorbisDecoderTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        try XCTSkipUnless(toolsAvailable("oggenc", "oggdec", "vorbiscomment"), "vorbis-tools are not installed")
        directory = try TemporaryDirectory(prefix: "tonearm-vorbis")
    }

    override func tearDown() {
        directory = nil
    }

    private func path(_ name: String) -> String { directory.file(name) }

    /// Tones plus a little seeded noise, right-justified 16-bit.
    private func signal(frames: Int, channels: Int, sampleRate: Int = 44100, seed: UInt64 = 1) -> [Int32] {
        FLACFixture(frames: frames, sampleRate: sampleRate, channels: channels, bitsPerSample: 16, noiseLevel: 0.01, seed: seed).samples()
    }

    func testDecodesAsOggdecDoesIn24Bits() throws {
        for (channels, rate) in [(1, 44100), (2, 44100), (2, 48000)] {
            let frames = 2 * rate + 777
            let file = try OggFixtures.vorbis(signal(frames: frames, channels: channels, sampleRate: rate),
                                              channels: channels, sampleRate: rate, to: path("\(channels)-\(rate).ogg"))
            let decoder = try VorbisDecoder(path: file)
            XCTAssertEqual(decoder.info.codec, "Vorbis")
            XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: rate, channels: channels, bitsPerSample: 24))
            XCTAssertEqual(decoder.info.totalFrames, frames, "the encoder's priming and padding are not counted")
            let ours = try decodeAll(decoder)
            let reference = try OggFixtures.oggdec(file)
            XCTAssertEqual(reference.channels, channels)
            XCTAssertNil(within16BitLSB(ours, try reference.samples(), channels: channels), "\(channels) ch \(rate) Hz")
            XCTAssertEqual(decoder.position, frames)
            // Really 24 bits: most samples have low bits a 16-bit decode would not have.
            let fine = ours.filter { $0 & 0xFF00 != 0 }.count
            XCTAssertGreaterThan(fine, ours.count * 9 / 10)
        }
    }

    /// oggenc takes WAV's order (L R C LFE BL BR) and stores Vorbis' (L C R BL BR LFE); the
    /// decoder gives WAV's order back. (oggdec's own 5.1 order is not WAV's, so tones tell.)
    func testSixChannelsComeOutInWAVOrder() throws {
        let frequencies = [300.0, 450, 600, 150, 900, 1050]
        let rate = 48000
        var samples = [Int32](repeating: 0, count: rate * 6)
        for frame in 0..<rate {
            for c in 0..<6 {
                samples[frame * 6 + c] = Int32((0.4 * 32767 * sin(2 * Double.pi * frequencies[c] * Double(frame) / Double(rate))).rounded())
            }
        }
        let file = try OggFixtures.vorbis(samples, channels: 6, sampleRate: rate, to: path("six.ogg"))
        let decoded = normalised(try decodeAll(VorbisDecoder(path: file)))
        for c in 0..<6 {
            let levels = frequencies.map { toneAmplitude(decoded, channel: c, channels: 6, sampleRate: rate, frequency: $0) }
            XCTAssertEqual(levels.indices.max { levels[$0] < levels[$1] }, c, "channel \(c): \(levels)")
        }
    }

    func testGaplessPiecesJoinIntoTheContinuousSignal() throws {
        let lengths = [12345, 23457, 9871]
        let whole = signal(frames: lengths.reduce(0, +), channels: 2)
        var joined: [Int32] = []
        var start = 0
        for (i, length) in lengths.enumerated() {
            let piece = Array(whole[(start * 2)..<((start + length) * 2)])
            let file = try OggFixtures.vorbis(piece, channels: 2, sampleRate: 44100, to: path("piece-\(i).ogg"))
            let decoder = try VorbisDecoder(path: file)
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
            let snr = signalToNoise(joined, original, channels: 2, frames: (join - 512)..<(join + 512))
            XCTAssertGreaterThan(snr, 20, "the join at frame \(join) is clean")
        }
        XCTAssertGreaterThan(signalToNoise(joined, original, channels: 2, frames: 0..<(joined.count / 2)), 20)
    }

    func testSeeksAreSampleAccurate() throws {
        let frames = 3 * 44100 + 1001
        let file = try OggFixtures.vorbis(signal(frames: frames, channels: 2), channels: 2, sampleRate: 44100, to: path("seek.ogg"))
        let reference = try OggFixtures.oggdec(file).samples()
        let decoder = try VorbisDecoder(path: file)
        let continuous = try decodeAll(decoder)
        for target in [70001, 1, 4095, frames - 1000, 0, 44100] {
            try decoder.seek(toFrame: target)
            XCTAssertEqual(decoder.position, target)
            let rest = try decodeAll(decoder)
            XCTAssertEqual(rest.count, (frames - target) * 2, "seek to \(target)")
            XCTAssertNil(sampleMismatch(rest, Array(continuous[(target * 2)...]), channels: 2), "seek to \(target) decodes as playing through")
            XCTAssertNil(within16BitLSB(rest, Array(reference[(target * 2)...]), channels: 2), "seek to \(target) against oggdec")
        }
        try decoder.seek(toFrame: frames)
        XCTAssertNil(try decoder.nextBlock(), "seeking to the end leaves nothing")
        XCTAssertThrowsError(try decoder.seek(toFrame: frames + 1))
        XCTAssertThrowsError(try decoder.seek(toFrame: -1))
    }

    func testTagsAndThePictureReachTheTrackInfo() throws {
        let file = try OggFixtures.vorbis(signal(frames: 4410, channels: 2), channels: 2, sampleRate: 44100, to: path("tags.ogg"),
                                          arguments: ["-q", "2", "-t", "Song", "-a", "Band", "-l", "Record", "-N", "3/12",
                                                      "-c", "albumartist=Various", "-c", "DATE=1999", "-c", "REPLAYGAIN_TRACK_GAIN=-6.50 dB",
                                                      "-c", "REPLAYGAIN_TRACK_PEAK=0.98"])
        let png = TinyPNG.make(width: 24, height: 16)
        let block = OggFixtures.pictureBlock(type: 3, mimeType: "image/png", description: "Front", width: 24, height: 16, data: png)
        try runChecked("vorbiscomment", ["-a", "-t", "METADATA_BLOCK_PICTURE=" + Data(block).base64EncodedString(), file])
        let info = try VorbisDecoder(path: file, keepPictureData: true).info
        XCTAssertEqual(info.title, "Song")
        XCTAssertEqual(info.artist, "Band")
        XCTAssertEqual(info.album, "Record")
        XCTAssertEqual(info.albumArtist, "Various", "names are upper-cased")
        XCTAssertEqual(info.trackNumber, 3)
        XCTAssertEqual(info.trackTotal, 12)
        XCTAssertEqual(info.date, "1999")
        XCTAssertEqual(info.replayGain, ReplayGain(trackGain: -6.5, trackPeak: 0.98, albumGain: nil, albumPeak: nil))
        XCTAssertNil(info.comment("METADATA_BLOCK_PICTURE"), "a picture is not a comment")
        XCTAssertEqual(info.pictures.count, 1)
        let cover = try XCTUnwrap(info.preferredPicture)
        XCTAssertEqual(cover.type, Picture.frontCoverType)
        XCTAssertEqual(cover.mimeType, "image/png")
        XCTAssertEqual(cover.description, "Front")
        XCTAssertEqual(cover.width, 24)
        XCTAssertEqual(cover.height, 16)
        XCTAssertEqual(cover.byteCount, png.count)
        XCTAssertEqual(cover.data, png)
        XCTAssertNil(try VorbisDecoder(path: file).info.pictures.first?.data, "bytes only when asked for")
        XCTAssertEqual(try Decoders.metadata(fd: open(file, O_RDONLY), path: file).title, "Song")
    }

    func testAStreamThatCannotSeekPlaysWithoutALength() throws {
        let file = try OggFixtures.vorbis(signal(frames: 30000, channels: 2), channels: 2, sampleRate: 44100, to: path("stream.ogg"))
        let expected = try decodeAll(VorbisDecoder(path: file))
        let decoder = try VorbisDecoder(source: UnseekableSource(path: file))
        XCTAssertNil(decoder.info.totalFrames)
        XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: 44100, channels: 2, bitsPerSample: 24))
        XCTAssertNil(sampleMismatch(try decodeAll(decoder), expected, channels: 2))
        XCTAssertThrowsError(try decoder.seek(toFrame: 0)) { error in
            XCTAssertTrue("\(error)".contains("cannot seek to frame 0"), "\(error)")
        }
    }

    func testChainedLinksOfOneFormatPlayOnAndAnotherFormatIsRefused() throws {
        // Each link has its own serial number, as in a real chain. (libvorbisfile 1.3.7 loses
        // links of under about 8 kB in a seekable chain, so these are seconds long.)
        let a = try OggFixtures.vorbis(signal(frames: 100_000, channels: 2), channels: 2, sampleRate: 44100, to: path("a.ogg"),
                                       arguments: ["-s", "1"])
        let b = try OggFixtures.vorbis(signal(frames: 70000, channels: 2, seed: 2), channels: 2, sampleRate: 44100, to: path("b.ogg"),
                                       arguments: ["-s", "2"])
        let mono = try OggFixtures.vorbis(signal(frames: 70000, channels: 1), channels: 1, sampleRate: 44100, to: path("mono.ogg"),
                                          arguments: ["-s", "3"])
        let rate = try OggFixtures.vorbis(signal(frames: 70000, channels: 2, sampleRate: 48000), channels: 2, sampleRate: 48000,
                                          to: path("48k.ogg"), arguments: ["-s", "4"])
        let first = try decodeAll(VorbisDecoder(path: a)), second = try decodeAll(VorbisDecoder(path: b))

        let same = path("same.ogg")
        try concatenate([a, b], to: same)
        XCTAssertEqual(try VorbisDecoder(path: same).info.totalFrames, 170_000)
        for decoder in [try VorbisDecoder(path: same), try VorbisDecoder(source: UnseekableSource(path: same))] {
            XCTAssertNil(sampleMismatch(try decodeAll(decoder), first + second, channels: 2))
        }

        for (other, change) in [(mono, "channel count (2 → 1 at frame 100000) changes mid-stream"),
                                (rate, "sample rate (44100 Hz → 48000 Hz at frame 100000) changes mid-stream")] {
            let chained = path("chained.ogg")
            try concatenate([a, other], to: chained)
            for decoder in [try VorbisDecoder(path: chained), try VorbisDecoder(source: UnseekableSource(path: chained))] {
                var decoded: [Int32] = []
                XCTAssertThrowsError(try { while let block = try decoder.nextBlock() { decoded += block } }()) { error in
                    XCTAssertTrue("\(error)".contains(change), "\(error)")
                }
                XCTAssertNil(sampleMismatch(decoded, first, channels: 2), "the first link plays whole")
                XCTAssertThrowsError(try decoder.nextBlock(), "and the error stays")
            }
            XCTAssertEqual(try VorbisDecoder(path: chained).info.totalFrames, 100_000, "the length is what plays")
        }
    }

    func testEachLinksTagsBecomeTheTrackInfosAsTheLinkStarts() throws {
        // A station's chained stream: each song a link with its own comments.
        let a = try OggFixtures.vorbis(signal(frames: 100_000, channels: 2), channels: 2, sampleRate: 44100, to: path("a.ogg"),
                                       arguments: ["-s", "1", "-t", "First Song", "-a", "Station"])
        let b = try OggFixtures.vorbis(signal(frames: 70000, channels: 2, seed: 2), channels: 2, sampleRate: 44100, to: path("b.ogg"),
                                       arguments: ["-s", "2", "-t", "Second Song"])
        let chained = path("chained.ogg")
        try concatenate([a, b], to: chained)
        for decoder in [try VorbisDecoder(path: chained), try VorbisDecoder(source: UnseekableSource(path: chained))] {
            XCTAssertEqual(decoder.info.title, "First Song")
            XCTAssertEqual(decoder.tagChanges, 0)
            let changes = try linkTagChanges(decoder)
            XCTAssertEqual(changes.map(\.frame), [100_000], "the second link's tags come with its first block")
            XCTAssertEqual(changes.map(\.title), ["Second Song"])
            XCTAssertEqual(changes.map(\.artist), [nil], "the first link's other tags go with it")
        }
    }

    func testBadFilesFailWithOneClearError() throws {
        let good = try OggFixtures.vorbis(signal(frames: 4 * 44100, channels: 2), channels: 2, sampleRate: 44100, to: path("good.ogg"))
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: good)))
        let pages = try OggPages(path: good)
        // The three header packets end where the first page with a granule position begins.
        let headerEnd = pages.pages.prefix { $0.granulePosition == 0 }.reduce(0) { $0 + $1.bytes.count }
        var random = SeededRandom(seed: 7)
        let noise = (0..<20000).map { _ in UInt8(truncatingIfNeeded: random.next()) }

        try Data().write(to: directory.url("empty.ogg"))
        try Data(bytes.prefix(headerEnd + (bytes.count - headerEnd) * 6 / 10)).write(to: directory.url("cut.ogg"))
        try Data(bytes.prefix(headerEnd) + noise).write(to: directory.url("garbage.ogg"))
        try Data(noise).write(to: directory.url("noise.ogg"))
        try Data(bytes.prefix(100)).write(to: directory.url("header-only.ogg"))

        // The comment packet claims a vendor string, then a comment count, of 2 GB.
        for (name, offset) in [("huge-vendor.ogg", 7), ("huge-count.ogg", 11 + vendorLength(pages))] {
            var lying = pages
            let page = lying.pages[1].headerLength + offset
            lying.pages[1].bytes.replaceSubrange(page..<(page + 4), with: [0xF0, 0xFF, 0xFF, 0x7F])
            lying.pages[1].updateChecksum()
            try lying.write(to: path(name))
        }

        let cases: [(String, String)] = [
            ("empty.ogg", "empty file"),
            ("noise.ogg", "not an Ogg Vorbis file (not an Ogg file)"),
            ("header-only.ogg", "corrupt metadata: not this codec's stream"),
            ("garbage.ogg", "no audio frames"),
            ("huge-vendor.ogg", "corrupt metadata: corrupt header"),
            ("huge-count.ogg", "corrupt metadata: corrupt header"),
        ]
        for (name, cause) in cases {
            XCTAssertThrowsError(try Decoders.open(path: path(name))) { error in
                XCTAssertEqual("\(error)", path(name) + ": " + cause)
            }
        }

        // Cut short: what is there plays, then the cut is reported.
        let cut = try VorbisDecoder(path: path("cut.ogg"))
        var decoded = 0
        XCTAssertThrowsError(try { while let block = try cut.nextBlock() { decoded += block.count / 2 } }()) { error in
            XCTAssertTrue("\(error)".contains("truncated: audio ends after \(decoded) of "), "\(error)")
        }
        XCTAssertGreaterThan(decoded, 2 * 44100)
        XCTAssertLessThan(decoded, 3 * 44100)

        // Cut where too little of the last page is left to say how much is missing.
        let middle = pages.pages.count / 2
        let boundary = pages.pages.prefix(middle).reduce(0) { $0 + $1.bytes.count }
        try Data(bytes.prefix(boundary + 10)).write(to: directory.url("cut-header.ogg"))
        XCTAssertThrowsError(try decodeAll(VorbisDecoder(path: path("cut-header.ogg")))) { error in
            XCTAssertTrue("\(error)".hasSuffix(": decoder failed: the last Ogg page is cut short after frame \(pages.pages[middle - 1].granulePosition)"), "\(error)")
        }
        // Cut at a page boundary, or followed by a tag: nothing is cut short.
        try Data(bytes.prefix(boundary)).write(to: directory.url("at-page.ogg"))
        XCTAssertEqual(try decodeAll(VorbisDecoder(path: path("at-page.ogg"))).count / 2, Int(pages.pages[middle - 1].granulePosition))
        let id3v1 = Array("TAG".utf8) + [UInt8](repeating: 0x20, count: 125)
        try Data(bytes + id3v1).write(to: directory.url("id3v1.ogg"))
        XCTAssertEqual(try decodeAll(VorbisDecoder(path: path("id3v1.ogg"))).count / 2, 4 * 44100)
    }

    /// Some taggers put an ID3v2 tag in front of an Ogg file: the stream after it plays and seeks.
    func testAnID3v2TagInFrontIsSkipped() throws {
        let file = try OggFixtures.vorbis(signal(frames: 50000, channels: 2), channels: 2, sampleRate: 44100, to: path("plain.ogg"))
        let expected = try decodeAll(VorbisDecoder(path: file))
        let tag: [UInt8] = Array("ID3".utf8) + [3, 0, 0, 0, 0, 0, 20] + [UInt8](repeating: 0, count: 20)
        let tagged = path("id3.ogg")
        try Data(tag + [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))).write(to: URL(fileURLWithPath: tagged))
        let decoder = try Decoders.open(path: tagged)
        XCTAssertTrue(decoder is VorbisDecoder)
        XCTAssertEqual(decoder.info.totalFrames, 50000)
        XCTAssertNil(sampleMismatch(try decodeAll(decoder), expected, channels: 2))
        try decoder.seek(toFrame: 30000)
        XCTAssertNil(sampleMismatch(try decodeAll(decoder), Array(expected[60000...]), channels: 2))
    }

    func testOtherOggCodecsAreNotTakenForVorbis() throws {
        try XCTSkipUnless(toolsAvailable("flac", "opusenc"))
        let samples = signal(frames: 4410, channels: 2)
        let oggFLAC = path("flac.oga")
        try FLACFixture(frames: 4410, extraEncoderArguments: ["--ogg"]).write(to: oggFLAC)
        let head = try XCTUnwrap(FileHandle(forReadingAtPath: oggFLAC)?.readData(ofLength: 64))
        XCTAssertFalse(VorbisDecoder.recognizes(FileHead(bytes: [UInt8](head))))
        XCTAssertThrowsError(try Decoders.open(path: oggFLAC)) { error in
            XCTAssertEqual("\(error)", oggFLAC + ": not an Ogg Vorbis file (an Ogg file of another codec)")
        }
        let opusInOgg = try OggFixtures.opus(samples, channels: 2, sampleRate: 44100, to: path("opus.ogg"))
        XCTAssertThrowsError(try VorbisDecoder(path: opusInOgg)) { error in
            XCTAssertTrue("\(error)".contains("not an Ogg Vorbis file (an Ogg Opus file)"), "\(error)")
        }
        let vorbis = try OggFixtures.vorbis(samples, channels: 2, sampleRate: 44100, to: path("named.opus"))
        XCTAssertTrue(try Decoders.open(path: vorbis) is VorbisDecoder, "the bytes choose the plug-in, not the name")
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

    /// The vendor string's length in the comment packet (on the second page).
    private func vendorLength(_ pages: OggPages) -> Int {
        let page = pages.pages[1]
        let at = page.headerLength + 7
        return (0..<4).reduce(0) { $0 | Int(page.bytes[at + $1]) << (8 * $1) }
    }
}

/// Where a 24-bit decode rounded to 16 bits is more than 1 LSB off a 16-bit reference, or the
/// lengths differ; nil when it is within.
func within16BitLSB(_ ours: [Int32], _ reference: [Int32], channels: Int) -> String? {
    guard ours.count == reference.count else {
        return "got \(ours.count / channels) frames, the reference has \(reference.count / channels)"
    }
    for i in ours.indices {
        let rounded = (Int(ours[i] >> 8) + 128) >> 8
        let expected = Int(reference[i] >> 16)
        if abs(rounded - expected) > 1 {
            return "sample \(i) (frame \(i / channels), channel \(i % channels)): \(rounded) in 16 bits, the reference \(expected)"
        }
    }
    return nil
}

/// The offset (in frames, within ±`within`) at which `decoded` best matches `original`.
func bestAlignment(_ decoded: [Int32], _ original: [Int32], channels: Int, within: Int) -> Int {
    let frames = min(decoded.count, original.count) / channels
    var best = (offset: 0, score: -Double.infinity)
    for offset in -within...within {
        var score = 0.0
        for frame in stride(from: within, to: frames - within, by: 3) {
            for c in 0..<channels {
                score += Double(decoded[(frame + offset) * channels + c]) * Double(original[frame * channels + c])
            }
        }
        if score > best.score { best = (offset, score) }
    }
    return best.offset
}

/// Signal-to-noise ratio, in dB, of `decoded` against `original` over `frames`.
func signalToNoise(_ decoded: [Int32], _ original: [Int32], channels: Int, frames: Range<Int>) -> Double {
    var signal = 0.0, noise = 0.0
    for i in (frames.lowerBound * channels)..<(frames.upperBound * channels) {
        let s = Double(original[i]), d = Double(decoded[i])
        signal += s * s
        noise += (d - s) * (d - s)
    }
    return 10 * log10(signal / max(noise, 1))
}

/// Plays `decoder` to its end; where each change of its tags came (the first frame of the
/// block that brought it), with the title and artist then: a chained Ogg stream's links.
func linkTagChanges(_ decoder: any AudioDecoder) throws -> [(frame: Int, title: String?, artist: String?)] {
    var changes: [(frame: Int, title: String?, artist: String?)] = []
    var seen = decoder.tagChanges
    var start = decoder.position
    while try decoder.nextBlock() != nil {
        if decoder.tagChanges != seen {
            seen = decoder.tagChanges
            changes.append((start, decoder.info.title, decoder.info.artist))
        }
        start = decoder.position
    }
    return changes
}

/// A file read as a radio stream is: forwards only, with no length.
final class UnseekableSource: ByteSource {
    let name: String
    private let bytes: [UInt8]
    private(set) var offset: UInt64 = 0
    private(set) var atEnd = false

    init(path: String) throws {
        name = path
        bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    var isSeekable: Bool { false }
    var length: UInt64? { nil }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(DecodeError) -> Int {
        // Small, uneven reads, as a network gives.
        let n = min(buffer.count, bytes.count - Int(offset), 1000 + Int(offset % 537))
        atEnd = n == 0
        guard n > 0 else { return 0 }
        bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[Int(offset)..<(Int(offset) + n)])) }
        offset += UInt64(n)
        return n
    }

    func seek(to offset: UInt64) throws(DecodeError) {
        throw DecodeError(path: name, reason: .decoder("cannot seek a stream"))
    }
}
