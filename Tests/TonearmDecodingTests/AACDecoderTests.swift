import Foundation
import TestSupport
import TonearmAudio
import TonearmDecoding
import XCTest

final class AACDecoderTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        try XCTSkipUnless(toolsAvailable("ffmpeg", "faad"), "ffmpeg makes the AAC fixtures, faad is the reference decoder")
        directory = try TemporaryDirectory(prefix: "tonearm-aac")
    }

    override func tearDown() { directory = nil }

    private func decodeAll(_ decoder: any AudioDecoder) throws -> [Int32] {
        var out: [Int32] = []
        while let block = try decoder.nextBlock() { out.append(contentsOf: block) }
        return out
    }

    /// ffmpeg's AAC starts with 1024 frames of priming, in the edit list; libfaad (and so the
    /// `faad` CLI) gives nothing for the first access unit, so its output starts with the music
    /// and runs on into the last unit's padding.
    func testDecodeEqualsTheReferenceDecoderSampleForSample() throws {
        for (channels, frames) in [(2, 2 * 44100 + 333), (1, 44100 + 1)] {
            let samples = MP4Fixtures.signal(frames: frames, channels: channels)
            let file = try MP4Fixtures.encode(samples, to: directory.file("ref-\(channels).m4a"), codec: "aac", channels: channels)
            let decoder = try Decoders.open(path: file)
            XCTAssertEqual(decoder.info.codec, "AAC")
            XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: 44100, channels: channels, bitsPerSample: 16))
            XCTAssertEqual(decoder.info.totalFrames, frames)
            XCTAssertEqual(decoder.position, 0)
            let first = try XCTUnwrap(try decoder.nextBlock())
            XCTAssertEqual(decoder.position, first.count / channels)
            let decoded = Array(first) + (try decodeAll(decoder))
            XCTAssertEqual(decoded.count, frames * channels, "exactly the music, \(channels) ch")
            // faad writes a mono stream as two identical channels.
            let stereo = try MP4Fixtures.faadReference(file)
            let reference = channels == 1 ? stride(from: 0, to: stereo.count, by: 2).map { stereo[$0] } : stereo
            XCTAssertGreaterThanOrEqual(reference.count, decoded.count)
            XCTAssertTrue(decoded == Array(reference.prefix(decoded.count)), "\(channels) ch equals faad's output")
            XCTAssertEqual(decoder.position, frames)
        }
    }

    /// The lag (in frames) at which `part` best matches `whole` (channel 0), searched in ±`range`.
    private func bestLag(_ part: ArraySlice<Int32>, in whole: [Int32], at frame: Int, channels: Int, range: Int) -> Int {
        var best = (lag: 0, score: -Double.infinity)
        let window = 2048
        for lag in -range...range {
            var dot = 0.0
            for i in stride(from: 0, to: window, by: 2) {
                let a = Double(part[part.startIndex + (frame + i) * channels] >> 16)
                let b = Double(whole[(frame + i + lag) * channels])
                dot += a * b
            }
            if dot > best.score { best = (lag, dot) }
        }
        return best.lag
    }

    /// One continuous signal, cut in three pieces of odd lengths, each encoded on its own:
    /// each piece decodes to exactly its length, and the pieces joined line up with the whole.
    func testPiecesOfOneSignalJoinWithoutAGap() throws {
        let lengths = [30011, 44101, 25013]
        let whole = MP4Fixtures.signal(frames: lengths.reduce(0, +), channels: 2, seed: 7)
        var joined: [Int32] = []
        var start = 0
        for (i, length) in lengths.enumerated() {
            let piece = Array(whole[(start * 2)..<((start + length) * 2)])
            let file = try MP4Fixtures.encode(piece, to: directory.file("piece\(i).m4a"), codec: "aac")
            let decoder = try Decoders.open(path: file)
            XCTAssertEqual(decoder.info.totalFrames, length)
            let decoded = try decodeAll(decoder)
            XCTAssertEqual(decoded.count, length * 2, "piece \(i) is exactly its length")
            joined += decoded
            start += length
        }
        XCTAssertEqual(joined.count, whole.count)
        for frame in [2000, 30011 - 1024, 30011 + 500, 74112 - 300, 80000] {
            XCTAssertEqual(bestLag(joined[...], in: whole.map { $0 }, at: frame, channels: 2, range: 1100), 0, "aligned at frame \(frame)")
        }
    }

    /// iTunes' gapless tag wins over the edit list; without either the first unit is skipped.
    func testTheITunesGaplessTagSetsPrimingAndLength() throws {
        let frames = 50000
        let file = try MP4Fixtures.encode(MP4Fixtures.signal(frames: frames), to: directory.file("smpb.m4a"), codec: "aac")
        let plain = try decodeAll(Decoders.open(path: file))
        XCTAssertEqual(plain.count, frames * 2)

        // The same audio with no edit list and an iTunSMPB giving ffmpeg's 1024 frames of
        // priming and a length 100 frames short of the music.
        var mp4 = try MP4Bytes(path: file)
        try mp4.rename(["moov", "trak", "edts"], to: "free")
        let units = (frames + 1024 + 1023) / 1024
        let smpb = String(format: " 00000000 %08X %08X %016X 00000000 00000000", 1024, units * 1024 - 1024 - frames + 100, frames - 100)
        try mp4.append(MP4Bytes.freeform("iTunSMPB", smpb), into: ["moov", "udta", "meta", "ilst"])
        let tagged = directory.file("tagged.m4a")
        try mp4.write(to: tagged)
        let decoder = try Decoders.open(path: tagged)
        XCTAssertEqual(decoder.info.totalFrames, frames - 100)
        XCTAssertNil(decoder.info.comment("ITUNSMPB"), "the gapless tag is not a comment")
        let decoded = try decodeAll(decoder)
        XCTAssertEqual(decoded.count, (frames - 100) * 2)
        XCTAssertTrue(decoded == Array(plain.prefix(decoded.count)))

        // Neither: all that libfaad gives, from the second unit to the end of the last.
        var bare = try MP4Bytes(path: file)
        try bare.rename(["moov", "trak", "edts"], to: "free")
        let untold = directory.file("untold.m4a")
        try bare.write(to: untold)
        let raw = try decodeAll(Decoders.open(path: untold))
        XCTAssertEqual(raw.count, (frames + 1024 - 1024) * 2, "ffmpeg's last unit is cut in its time-to-sample table")
        XCTAssertTrue(Array(raw.prefix(plain.count)) == plain)
    }

    /// Exact against the decode from the start when the encoder uses no perceptual noise
    /// substitution: libfaad's noise generator cannot be set, so after a seek noise bands get
    /// other (equally random) noise.
    func testSeeksAreSampleAccurate() throws {
        let frames = 3 * 44100 + 321
        let file = try MP4Fixtures.encode(MP4Fixtures.signal(frames: frames, seed: 3), to: directory.file("seek.m4a"), codec: "aac", arguments: ["-aac_pns", "0"])
        let decoder = try Decoders.open(path: file)
        let all = try decodeAll(decoder)
        XCTAssertEqual(all.count, frames * 2)
        for target in [66150, 0, 1, 1023, 1024, 1025, 2047, frames - 1, 12345, 0] {
            try decoder.seek(toFrame: target)
            XCTAssertEqual(decoder.position, target)
            let block = try XCTUnwrap(try decoder.nextBlock(), "a block after seeking to \(target)")
            XCTAssertTrue(Array(block) == Array(all[(target * 2)..<(target * 2 + block.count)]), "seek to \(target)")
            var rest = Array(block)
            while rest.count < 8192, let more = try decoder.nextBlock() { rest += more }
            XCTAssertTrue(rest == Array(all[(target * 2)..<min(all.count, target * 2 + rest.count)]), "the blocks after seeking to \(target)")
        }
        try decoder.seek(toFrame: frames)
        XCTAssertNil(try decoder.nextBlock(), "seeking to the end leaves nothing")
        XCTAssertThrowsError(try decoder.seek(toFrame: frames + 1))
    }
}

extension AACDecoderTests {
    /// A raw ADTS stream (.aac, no MP4 around it): all that libfaad gives, as the `faad` CLI
    /// writes it, and seeks land on the frame asked for.
    func testAnADTSStreamEqualsTheReferenceDecoder() throws {
        // Long enough (about 100 kB) that the scan reads its headers in more than one go.
        let frames = 6 * 44100 + 77
        let m4a = try MP4Fixtures.encode(MP4Fixtures.signal(frames: frames, seed: 4), to: directory.file("adts.m4a"), codec: "aac",
                                         arguments: ["-aac_pns", "0"])
        let file = directory.file("plain.aac")
        try runChecked("ffmpeg", ["-v", "error", "-y", "-i", m4a, "-c:a", "copy", "-f", "adts", file])
        let decoder = try Decoders.open(path: file)
        XCTAssertEqual(decoder.info.codec, "AAC")
        XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16))
        let units = (frames + 1024 + 1023) / 1024
        XCTAssertEqual(decoder.info.totalFrames, (units - 1) * 1024, "every frame but the first, padding included")
        let decoded = try decodeAll(decoder)
        XCTAssertEqual(decoded.count, (units - 1) * 1024 * 2)
        // faad 2.11 (Debian 13) writes the stream's first frame too, which faad 2.10 and this
        // decoder leave out; the rest is the same.
        var reference = try MP4Fixtures.faadReference(file)
        if reference.count == units * 1024 * 2 { reference.removeFirst(1024 * 2) }
        XCTAssertTrue(decoded == reference, "equals faad's output")
        XCTAssertTrue(Array(decoded.prefix(frames * 2)) == (try decodeAll(Decoders.open(path: m4a))), "the music as in MP4")
        for target in [50000, 1024, 3] {
            try decoder.seek(toFrame: target)
            let block = try XCTUnwrap(try decoder.nextBlock())
            XCTAssertTrue(Array(block) == Array(decoded[(target * 2)..<(target * 2 + block.count)]), "seek to \(target)")
        }

        // An ID3v2 tag in front is skipped; a frame cut short at the end is dropped.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        bytes.removeLast(3)
        let tagged = directory.file("tagged.aac")
        try Data(Array("ID3".utf8) + [3, 0, 0, 0, 0, 0, 20] + [UInt8](repeating: 0, count: 20) + bytes).write(to: URL(fileURLWithPath: tagged))
        let cut = try decodeAll(Decoders.open(path: tagged))
        XCTAssertEqual(cut.count, (units - 2) * 1024 * 2)
        XCTAssertTrue(cut == Array(decoded.prefix(cut.count)))

        // Tags as a raw stream carries them: ID3v2 in front, APEv2 at the end. They are read, and
        // the frames are the untagged file's.
        for (name, arguments) in [("id3.aac", ["-write_id3v2", "1"]), ("ape.aac", ["-write_apetag", "1"])] {
            let path = directory.file(name)
            try runChecked("ffmpeg", ["-v", "error", "-y", "-i", file] + arguments + ["-c:a", "copy", "-metadata", "title=Raw Title",
                                      "-metadata", "artist=Raw Artist", "-metadata", "track=4", "-f", "adts", path])
            let tagged = try Decoders.open(path: path, keepPictureData: true)
            XCTAssertEqual(tagged.info.comments.first { $0.name == "TITLE" }?.value, "Raw Title", name)
            XCTAssertEqual(tagged.info.comments.first { $0.name == "ARTIST" }?.value, "Raw Artist", name)
            XCTAssertEqual(tagged.info.comments.first { $0.name == "TRACKNUMBER" }?.value, "4", name)
            XCTAssertEqual(tagged.info.totalFrames, decoder.info.totalFrames, name)
            XCTAssertTrue(try decodeAll(tagged) == decoded, "\(name): the frames between the tags")
        }

        // Damaged at random: it plays (what is left of it) or fails with a DecodeError.
        var random = SeededRandom(seed: 31)
        let damaged = directory.file("damaged.aac")
        for _ in 0..<100 {
            var copy = bytes
            for _ in 0..<3 { copy[Int(random.next() % UInt64(copy.count))] = UInt8(truncatingIfNeeded: random.next()) }
            try Data(copy).write(to: URL(fileURLWithPath: damaged))
            do {
                let decoder = try Decoders.open(path: damaged)
                while try decoder.nextBlock() != nil {}
            } catch {
                XCTAssertTrue("\(error)".hasPrefix(damaged + ": "), "\(error)")
            }
        }
    }
}

extension AACDecoderTests {
    /// 5.1 comes out in WAV order (front left, right, centre, LFE, back left, right), as faad
    /// writes it.
    func testFivePointOneIsInWAVOrderAsTheReferenceWritesIt() throws {
        let frames = 30000
        let file = try MP4Fixtures.encode(MP4Fixtures.signal(frames: frames, channels: 6), to: directory.file("six.m4a"), codec: "aac",
                                          channels: 6, arguments: ["-b:a", "384k"])
        let decoder = try Decoders.open(path: file)
        XCTAssertEqual(decoder.info.format.channels, 6)
        let decoded = try decodeAll(decoder)
        XCTAssertEqual(decoded.count, frames * 6)
        let reference = try MP4Fixtures.faadReference(file)
        XCTAssertTrue(decoded == Array(reference.prefix(decoded.count)))
    }
}
