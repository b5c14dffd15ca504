import Foundation
import TestSupport
import TonearmAudio
import TonearmDecoding
import XCTest

final class MP3DecoderTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        try XCTSkipUnless(toolsAvailable("lame", "mpg123"), "lame and mpg123 are needed (scripts/setup)")
        directory = try TemporaryDirectory(prefix: "tonearm-mp3")
    }

    override func tearDown() { directory = nil }

    private func path(_ name: String) -> String { directory.file(name) }

    private func signal(frames: Int, channels: Int, sampleRate: Int = 44100, noise: Double = 0.05, seed: UInt64 = 1) -> [Int32] {
        FLACFixture(frames: frames, sampleRate: sampleRate, channels: channels, bitsPerSample: 16, noiseLevel: noise, seed: seed).samples()
    }

    private func decodeAll(_ decoder: any AudioDecoder) throws -> [Int32] {
        var out: [Int32] = []
        while let block = try decoder.nextBlock() { out.append(contentsOf: block) }
        return out
    }

    private func reason(of call: () throws -> Void) -> DecodeError.Reason? {
        do {
            try call()
            return nil
        } catch let error as DecodeError {
            return error.reason
        } catch {
            XCTFail("not a DecodeError: \(error)")
            return nil
        }
    }

    /// A file whose bytes are not a stream: `isSeekable` false, no length, as a network stream.
    private final class StreamSource: ByteSource {
        let file: FileSource
        init(_ path: String) throws { file = try FileSource(path: path) }
        var name: String { file.name }
        func read(into buffer: UnsafeMutableRawBufferPointer) throws(DecodeError) -> Int { try file.read(into: buffer) }
        var offset: UInt64 { file.offset }
        var isSeekable: Bool { false }
        func seek(to offset: UInt64) throws(DecodeError) { throw DecodeError(path: name, reason: .decoder("a stream cannot seek")) }
        var length: UInt64? { nil }
        var atEnd: Bool { file.atEnd }
    }

    // MARK: Decoding

    func testDecodesAsMpg123DoesSampleForSample() throws {
        // MPEG-1 at 44.1 and 48 kHz, CBR and VBR; MPEG-2 (22.05 kHz) and MPEG-2.5 (8 kHz).
        for (channels, rate, mode) in [(2, 44100, ["-b", "192"]), (1, 44100, ["-V", "4"]), (2, 48000, ["-V", "2"]), (1, 48000, ["-b", "96"]),
                                       (2, 22050, ["-b", "64"]), (1, 8000, ["-V", "6"])] {
            let frames = 40_000 + 77 * channels
            let file = try MP3Fixture.encode(signal(frames: frames, channels: channels, sampleRate: rate), channels: channels,
                                             sampleRate: rate, to: path("\(channels)-\(rate)-\(mode[0]).mp3"), arguments: mode)
            let reference = try MP3Fixture.referenceDecode(file)
            XCTAssertEqual(reference.count, frames * channels, "mpg123 itself decodes gaplessly")
            let decoder = try MP3Decoder(path: file)
            XCTAssertEqual(decoder.info.codec, "MP3")
            XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: rate, channels: channels, bitsPerSample: 24))
            XCTAssertEqual(decoder.info.totalFrames, frames, "the LAME header's count, without priming and padding")
            XCTAssertTrue(decoder.lengthIsExact)
            XCTAssertNil(sampleMismatch(try decodeAll(decoder), reference, channels: channels), "\(channels) ch \(rate) Hz \(mode)")
            XCTAssertEqual(decoder.position, frames)
        }
    }

    /// MPEG Layer II (ffmpeg's encoder): no gapless header, so the length is the scanned one
    /// and the decode is mpg123's, sample for sample.
    func testLayerIIDecodesAsMpg123Does() throws {
        try XCTSkipUnless(toolsAvailable("ffmpeg"), "ffmpeg makes the Layer II fixture")
        let wav = path("in.wav")
        try WAVFile.write(signal(frames: 33_333, channels: 2, sampleRate: 48000), channels: 2, sampleRate: 48000, to: wav)
        let file = path("layer2.mp2")
        try runChecked("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-i", wav, "-c:a", "mp2", "-b:a", "192k", file])
        let reference = try MP3Fixture.referenceDecode(file)
        let decoder = try Decoders.open(path: file)
        XCTAssertEqual(decoder.info.codec, "MP2")
        XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: 48000, channels: 2, bitsPerSample: 24))
        XCTAssertEqual(decoder.info.totalFrames, reference.count / 2)
        XCTAssertNil(sampleMismatch(try decodeAll(decoder), reference, channels: 2))
    }

    /// One continuous signal cut into three pieces of odd lengths: each piece decodes to
    /// exactly its own length, and the pieces back to back line up with the original with no
    /// gap or overlap at the joins.
    func testGaplessPiecesJoinWithoutGapOrOverlap() throws {
        let lengths = [30011, 27457, 41233]
        let original = signal(frames: lengths.reduce(0, +), channels: 1, noise: 0.2, seed: 7)
        var joined: [Int32] = []
        var start = 0
        for (i, length) in lengths.enumerated() {
            let file = try MP3Fixture.encode(Array(original[start..<(start + length)]), channels: 1, sampleRate: 44100,
                                             to: path("piece\(i).mp3"), arguments: ["-b", "256"])
            let decoded = try decodeAll(try MP3Decoder(path: file))
            XCTAssertEqual(decoded.count, length, "piece \(i) decodes to its own length")
            joined += decoded.map { $0 >> 16 }
            start += length
        }
        XCTAssertEqual(joined.count, original.count)
        // Around each join, the offset that best matches the original is 0, and the match is close.
        var join = 0
        for length in lengths.dropLast() {
            join += length
            let window = (join - 2048)..<(join + 2048)
            func error(_ offset: Int) -> Double {
                joined.withUnsafeBufferPointer { decoded in
                    original.withUnsafeBufferPointer { source in
                        var sum = 0.0
                        for i in window {
                            let d = Double(decoded[i + offset] - source[i])
                            sum += d * d
                        }
                        return sum
                    }
                }
            }
            let best = (-600...600).min { error($0) < error($1) }
            XCTAssertEqual(best, 0, "the join at frame \(join) is shifted")
            let energy = window.reduce(0.0) { $0 + Double(original[$1]) * Double(original[$1]) }
            let snr = 10 * log10(energy / error(0))
            // Measured: 19.4 and 19.6 dB (lame cuts the white noise above 19.5 kHz).
            XCTAssertGreaterThan(snr, 15, "the join at frame \(join) is not the original signal (SNR \(snr) dB)")
        }
    }

    func testSeeksAreSampleAccurate() throws {
        let frames = 3 * 44100 + 123
        for mode in [["-b", "192"], ["-V", "3"]] {
            let file = try MP3Fixture.encode(signal(frames: frames, channels: 2), channels: 2, sampleRate: 44100,
                                             to: path("seek\(mode[0]).mp3"), arguments: mode)
            let reference = try MP3Fixture.referenceDecode(file)
            let decoder = try MP3Decoder(path: file)
            for target in [66150, 1, 1151, 1152, 1153, 576, 100_000, frames - 1, 12345, 0] {
                try decoder.seek(toFrame: target)
                XCTAssertEqual(decoder.position, target)
                let block = try XCTUnwrap(try decoder.nextBlock(), "a block after seeking to \(target)")
                let expected = Array(reference[(target * 2)..<min(reference.count, target * 2 + block.count)])
                XCTAssertNil(sampleMismatch(Array(block), expected, channels: 2), "seek to \(target), \(mode)")
            }
            try decoder.seek(toFrame: 50_000)
            XCTAssertNil(sampleMismatch(try decodeAll(decoder), Array(reference[100_000...]), channels: 2), "the rest after a seek")
            try decoder.seek(toFrame: frames)
            XCTAssertNil(try decoder.nextBlock(), "seeking to the end leaves nothing")
            XCTAssertThrowsError(try decoder.seek(toFrame: frames + 1))
        }
    }

    /// Without a Xing/Info header (`lame -t`) the file is scanned for its exact length when
    /// played; a library scan takes libmpg123's estimate and reads no audio.
    func testWithoutAXingHeaderTheLengthComesFromAScan() throws {
        let frames = 2 * 44100
        let file = try MP3Fixture.encode(signal(frames: frames, channels: 2), channels: 2, sampleRate: 44100,
                                         to: path("noxing.mp3"), arguments: ["-b", "128", "-t"])
        let reference = try MP3Fixture.referenceDecode(file)
        let decoder = try MP3Decoder(path: file)
        XCTAssertTrue(decoder.lengthIsExact)
        XCTAssertEqual(decoder.info.totalFrames, reference.count / 2)
        XCTAssertNil(sampleMismatch(try decodeAll(decoder), reference, channels: 2))
        let estimate = try XCTUnwrap(try MP3Decoder.metadata(try FileSource(path: file)).totalFrames)
        XCTAssertEqual(Double(estimate), Double(reference.count / 2), accuracy: 1152 * 2, "the estimate is within two MPEG frames")
    }

    /// Junk before the first frame (here more than libmpg123's resync limit of 1024 bytes) is
    /// skipped, in a file and in a stream, and the LAME header still counts.
    func testJunkBeforeTheFirstFrameIsSkipped() throws {
        let frames = 20_000
        let clean = try MP3Fixture.encode(signal(frames: frames, channels: 2), channels: 2, sampleRate: 44100,
                                          to: path("clean.mp3"), arguments: ["-b", "128"])
        let reference = try MP3Fixture.referenceDecode(clean)
        let junky = path("junky.mp3")
        let junk = Array("RIFF".utf8) + [UInt8](repeating: 0, count: 3000)
        try Data(junk + [UInt8](try Data(contentsOf: URL(fileURLWithPath: clean)))).write(to: URL(fileURLWithPath: junky))
        let decoder = try MP3Decoder(path: junky)
        XCTAssertEqual(decoder.info.totalFrames, frames)
        XCTAssertNil(sampleMismatch(try decodeAll(decoder), reference, channels: 2))
        XCTAssertNil(sampleMismatch(try decodeAll(try MP3Decoder.open(try StreamSource(junky), keepPictureData: false)), reference, channels: 2))
    }

    /// A stream that cannot seek and has no length still plays, gaplessly; its length is
    /// unknown (a station may relay many files after the first one's header).
    func testANonSeekableStreamPlays() throws {
        let frames = 30_011
        let file = try MP3Fixture.encode(signal(frames: frames, channels: 2), channels: 2, sampleRate: 44100,
                                         to: path("stream.mp3"), arguments: ["-b", "160", "--tt", "Streamed", "--id3v2-only"])
        let reference = try MP3Fixture.referenceDecode(file)
        let decoder = try MP3Decoder.open(try StreamSource(file), keepPictureData: false)
        XCTAssertNil(decoder.info.totalFrames)
        XCTAssertEqual(decoder.info.title, "Streamed")
        XCTAssertNil(sampleMismatch(try decodeAll(decoder), reference, channels: 2))
        XCTAssertThrowsError(try decoder.seek(toFrame: 0)) { error in
            XCTAssertEqual((error as? DecodeError)?.reason, .seekFailed(frame: 0))
        }
        // A station's stream: no Xing header at all.
        let raw = try MP3Fixture.encode(signal(frames: frames, channels: 1), channels: 1, sampleRate: 48000,
                                        to: path("radio.mp3"), arguments: ["-b", "128", "-t"])
        let radio = try MP3Decoder.open(try StreamSource(raw), keepPictureData: false)
        XCTAssertNil(radio.info.totalFrames)
        XCTAssertNil(sampleMismatch(try decodeAll(radio), try MP3Fixture.referenceDecode(raw)))
    }

    // MARK: Tags

    func testLameTagsAndTheCoverReachTrackInfo() throws {
        let cover = path("cover.png")
        let png = TinyPNG.make(width: 24, height: 16)
        try Data(png).write(to: URL(fileURLWithPath: cover))
        for v2Only in [false, true] {
            let file = try MP3Fixture.encode(
                signal(frames: 20_000, channels: 2), channels: 2, sampleRate: 44100, to: path("tagged-\(v2Only).mp3"),
                arguments: ["-b", "128", "--tt", "Title é", "--ta", "Artist", "--tl", "Album", "--ty", "2021", "--tn", "3/12",
                            "--tg", "Rock", "--ti", cover, "--tv", "TXXX=REPLAYGAIN_TRACK_GAIN=-6.50 dB",
                            "--tv", "TPE2=Album Artist", "--tv", "TPOS=1/2"] + (v2Only ? ["--id3v2-only"] : []))
            let decoder = try MP3Decoder(path: file, keepPictureData: true)
            let info = decoder.info
            XCTAssertEqual(info.title, "Title é")
            XCTAssertEqual(info.artist, "Artist")
            XCTAssertEqual(info.album, "Album")
            XCTAssertEqual(info.albumArtist, "Album Artist")
            XCTAssertEqual(info.comment("TRACKNUMBER"), "3/12")
            XCTAssertEqual(info.trackNumber, 3)
            XCTAssertEqual(info.trackTotal, 12)
            XCTAssertEqual(info.discNumber, 1)
            XCTAssertEqual(info.date, "2021")
            XCTAssertEqual(info.genre, "Rock")
            XCTAssertEqual(info.replayGain.trackGain, -6.5)
            XCTAssertEqual(info.comments.filter { $0.name == "TITLE" }.count, 1, "ID3v1 is not read when there is an ID3v2 tag")
            XCTAssertEqual(info.pictures.count, 1)
            let picture = try XCTUnwrap(info.pictures.first)
            XCTAssertEqual(picture.type, 0, "lame writes its APIC as type 0, 'other'")
            XCTAssertEqual(info.preferredPicture, picture)
            XCTAssertEqual(picture.mimeType, "image/png")
            XCTAssertEqual(picture.data, png)
            XCTAssertEqual(picture.byteCount, png.count)
            XCTAssertEqual([picture.width, picture.height], [24, 16])
            XCTAssertEqual(try decodeAll(decoder).count, 20_000 * 2, "the tags are not audio")

            let scanned = try Decoders.metadata(fd: open(file, O_RDONLY), path: file)
            XCTAssertEqual(scanned.totalFrames, 20_000)
            XCTAssertEqual(scanned.title, "Title é")
            XCTAssertNil(scanned.pictures.first?.data, "a library scan keeps no picture bytes")
            XCTAssertEqual(scanned.pictures.first?.byteCount, png.count)
        }
    }

    func testAHandWrittenID3v24TagAndAnAPETagAreRead() throws {
        let plain = try MP3Fixture.encode(signal(frames: 15_000, channels: 1), channels: 1, sampleRate: 48000,
                                          to: path("plain.mp3"), arguments: ["-b", "64"])
        let audio = [UInt8](try Data(contentsOf: URL(fileURLWithPath: plain)))
        let reference = try MP3Fixture.referenceDecode(plain)

        let v24 = ID3Bytes.tag(version: 4, frames: [
            ID3Bytes.frame24("TIT2", ID3Bytes.text(3, "Grüße ★")),
            ID3Bytes.frame24("TPE1", ID3Bytes.text(3, "One") + [0] + Array("Two".utf8)),
            ID3Bytes.frame24("TDRC", ID3Bytes.text(3, "2024-05-06")),
            ID3Bytes.frame24("TCON", ID3Bytes.text(3, "(17)")),
        ])
        let tagged = path("v24.mp3")
        try Data(v24 + audio).write(to: URL(fileURLWithPath: tagged))
        let decoder = try MP3Decoder(path: tagged)
        XCTAssertEqual(decoder.info.title, "Grüße ★")
        XCTAssertEqual(decoder.info.comments.filter { $0.name == "ARTIST" }.map(\.value), ["One", "Two"])
        XCTAssertEqual(decoder.info.date, "2024-05-06")
        XCTAssertEqual(decoder.info.genre, "Rock")
        XCTAssertNil(sampleMismatch(try decodeAll(decoder), reference))

        // mp3gain's layout: audio, APE tag, ID3v1 tag.
        let ape = APEBytes.tag(items: [("Title", "APE title"), ("Artist", "APE artist"), ("Year", "1999"), ("Track", "4/9"),
                                       ("REPLAYGAIN_TRACK_GAIN", "-3.20 dB"), ("REPLAYGAIN_TRACK_PEAK", "0.912")], header: true)
        let v1 = ID3Bytes.v1(title: "v1 title", artist: "v1 artist", track: 4, genre: 17)
        let apeFile = path("ape.mp3")
        try Data(audio + ape + v1).write(to: URL(fileURLWithPath: apeFile))
        let apeDecoder = try MP3Decoder(path: apeFile)
        XCTAssertEqual(apeDecoder.info.title, "APE title", "APE wins over ID3v1")
        XCTAssertEqual(apeDecoder.info.artist, "APE artist")
        XCTAssertEqual(apeDecoder.info.date, "1999")
        XCTAssertEqual(apeDecoder.info.comment("TRACKNUMBER"), "4/9")
        XCTAssertEqual(apeDecoder.info.genre, "Rock", "ID3v1 fills in what APE lacks")
        XCTAssertEqual(apeDecoder.info.replayGain.trackGain, -3.2)
        XCTAssertEqual(apeDecoder.info.replayGain.trackPeak, 0.912)
        XCTAssertNil(sampleMismatch(try decodeAll(apeDecoder), reference), "the end tags are not audio")

        let v1File = path("v1.mp3")
        try Data(audio + v1).write(to: URL(fileURLWithPath: v1File))
        let v1Info = try MP3Decoder(path: v1File).info
        XCTAssertEqual(v1Info.title, "v1 title")
        XCTAssertEqual(v1Info.trackNumber, 4)
    }

    // MARK: Bad input

    func testATruncatedFileIsReportedAfterWhatCouldBeDecoded() throws {
        let frames = 3 * 44100
        let file = try MP3Fixture.encode(signal(frames: frames, channels: 2), channels: 2, sampleRate: 44100,
                                         to: path("whole.mp3"), arguments: ["-b", "128"])
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        let cut = path("cut.mp3")
        try Data(bytes.prefix(bytes.count * 6 / 10)).write(to: URL(fileURLWithPath: cut))
        let decoder = try MP3Decoder(path: cut)
        XCTAssertEqual(decoder.info.totalFrames, frames, "the Xing header's count")
        var decoded = 0
        let reason = reason {
            while let block = try decoder.nextBlock() { decoded += block.count / 2 }
        }
        guard case .truncated(let got, let expected)? = reason else { return XCTFail("not truncated: \(String(describing: reason))") }
        XCTAssertEqual(expected, frames)
        XCTAssertEqual(got, decoded)
        XCTAssertGreaterThan(decoded, frames / 2)
        XCTAssertLessThan(decoded, frames * 7 / 10)
    }

    func testGarbageAfterAValidStartIsOneClearError() throws {
        let frames = 3 * 44100
        let file = try MP3Fixture.encode(signal(frames: frames, channels: 2), channels: 2, sampleRate: 44100,
                                         to: path("good.mp3"), arguments: ["-b", "128"])
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        var random = SeededRandom(seed: 3)
        let garbage = (0..<(bytes.count / 2)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        let bad = path("garbage.mp3")
        try Data(bytes.prefix(bytes.count / 2) + garbage).write(to: URL(fileURLWithPath: bad))
        let decoder = try MP3Decoder(path: bad)
        let reason = reason { _ = try decodeAll(decoder) }
        guard case .decoder(let why)? = reason else { return XCTFail("garbage where audio should be: \(String(describing: reason))") }
        XCTAssertTrue(why.hasPrefix("failed to find valid MPEG data within limit on resync at frame "), why)
        // The header alone, then garbage, is not an MP3 stream at all.
        let headerOnly = path("header.mp3")
        try Data(bytes.prefix(4) + garbage.prefix(5000)).write(to: URL(fileURLWithPath: headerOnly))
        XCTAssertEqual(self.reason { _ = try MP3Decoder(path: headerOnly) }, .notFormat("not an MP3 file (no MPEG audio frame)"))
    }

    /// Bytes after the last frame that no tag reader knows (Lyrics3, a broken tag) end the
    /// music; they are no error once every frame the file counts has played.
    func testJunkAfterTheLastFrameIsTheEnd() throws {
        let frames = 20_000
        var random = SeededRandom(seed: 5)
        let junk = (0..<5000).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        for xing in [true, false] {
            let clean = try MP3Fixture.encode(signal(frames: frames, channels: 2), channels: 2, sampleRate: 44100,
                                              to: path("end-\(xing).mp3"), arguments: ["-b", "128"] + (xing ? [] : ["-t"]))
            let reference = try MP3Fixture.referenceDecode(clean)
            let junky = path("end-junk-\(xing).mp3")
            try Data([UInt8](try Data(contentsOf: URL(fileURLWithPath: clean))) + junk).write(to: URL(fileURLWithPath: junky))
            let decoder = try MP3Decoder(path: junky)
            XCTAssertEqual(decoder.info.totalFrames, reference.count / 2, "Xing header: \(xing)")
            XCTAssertNil(sampleMismatch(try decodeAll(decoder), reference, channels: 2), "Xing header: \(xing)")
        }
    }

    func testEmptyRandomAndHugeTagFilesFailClearly() throws {
        let empty = path("empty.mp3")
        _ = FileManager.default.createFile(atPath: empty, contents: Data())
        XCTAssertEqual(reason { _ = try MP3Decoder(path: empty) }, .empty)
        XCTAssertEqual(reason { _ = try Decoders.open(path: empty) }, .empty)

        var random = SeededRandom(seed: 11)
        for size in [3, 100, 70_000] {
            let noise = path("noise\(size).mp3")
            try Data((0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) }).write(to: URL(fileURLWithPath: noise))
            XCTAssertEqual(reason { _ = try Decoders.open(path: noise) }, .notFormat("not an MP3 file (no MPEG audio frame)"))
        }

        let audio = [UInt8](try Data(contentsOf: URL(fileURLWithPath: try MP3Fixture.encode(
            signal(frames: 10_000, channels: 1), channels: 1, sampleRate: 44100, to: path("small.mp3"), arguments: ["-b", "64"]))))
        for sizeBytes: [UInt8] in [[0x7F, 0x7F, 0x7F, 0x7F], [0xFF, 0xFF, 0xFF, 0xFF], [0x00, 0x10, 0x00, 0x00]] {
            let huge = path("huge.mp3")
            try Data([0x49, 0x44, 0x33, 3, 0, 0] + sizeBytes + audio).write(to: URL(fileURLWithPath: huge))
            guard case .badMetadata(let why)? = reason(of: { _ = try Decoders.open(path: huge) }) else {
                return XCTFail("an ID3 tag larger than its file is not reported")
            }
            XCTAssertTrue(why.contains("ID3v2 tag claims"), why)
        }
        let onlyTag = path("onlytag.mp3")
        try Data(ID3Bytes.tag(version: 3, frames: [ID3Bytes.frame23("TIT2", ID3Bytes.text(0, "No audio"))]))
            .write(to: URL(fileURLWithPath: onlyTag))
        XCTAssertEqual(reason { _ = try MP3Decoder(path: onlyTag) }, .noAudio)
    }

    /// Recognition wants a header with no reserved or free-format field, and a second header
    /// of the same stream where the first frame ends when the head reaches that far.
    func testRecognitionIsStrict() throws {
        // MPEG-1 Layer III, 128 kbit/s, 44.1 kHz, no padding, joint stereo: 417-byte frames.
        let header: [UInt8] = [0xFF, 0xFB, 0x90, 0x64]
        let frame = header + [UInt8](repeating: 0, count: 413)
        XCTAssertTrue(MP3Decoder.recognizes(FileHead(bytes: Array(header + [UInt8](repeating: 0, count: 60)))))
        XCTAssertTrue(MP3Decoder.recognizes(FileHead(bytes: frame + header)))
        XCTAssertFalse(MP3Decoder.recognizes(FileHead(bytes: frame + [0xFF, 0xF3, 0x90, 0x64])), "an MPEG-2 frame after an MPEG-1 one")
        XCTAssertFalse(MP3Decoder.recognizes(FileHead(bytes: frame + [0x12, 0x34, 0x56, 0x78])), "no second frame")
        let broken: [(String, [UInt8])] = [
            ("sync", [0xFF, 0x1B, 0x90, 0x64]), ("reserved version", [0xFF, 0xEB, 0x90, 0x64]), ("reserved layer", [0xFF, 0xF9, 0x90, 0x64]),
            ("free format", [0xFF, 0xFB, 0x00, 0x64]), ("bad bit rate", [0xFF, 0xFB, 0xF0, 0x64]),
            ("reserved sample rate", [0xFF, 0xFB, 0x9C, 0x64]), ("reserved emphasis", [0xFF, 0xFB, 0x90, 0x66]),
            ("ADTS AAC", [0xFF, 0xF1, 0x50, 0x80]),
        ]
        for (what, bytes) in broken {
            XCTAssertFalse(MP3Decoder.recognizes(FileHead(bytes: bytes + [UInt8](repeating: 0, count: 60))), what)
        }
        // Every real fixture is recognised from its first 64 bytes.
        for (channels, mode) in [(1, ["-b", "32"]), (2, ["-b", "320"]), (2, ["-V", "0"])] {
            let file = try MP3Fixture.encode(signal(frames: 5000, channels: channels), channels: channels, sampleRate: 44100,
                                             to: path("r\(channels)\(mode[1]).mp3"), arguments: mode)
            let head = try XCTUnwrap(FileHandle(forReadingAtPath: file)?.readData(ofLength: 64))
            XCTAssertTrue(MP3Decoder.recognizes(FileHead(bytes: [UInt8](head))), "\(mode)")
        }
    }

    // MARK: The registry and the CLI

    func testTheRegistryPicksMP3ByContentAndTheCLIShowsIt() throws {
        let frames = 12_345
        let file = try MP3Fixture.encode(signal(frames: frames, channels: 2), channels: 2, sampleRate: 44100,
                                         to: path("by-content.dat"), arguments: ["-V", "5", "--tt", "Named", "--id3v2-only"])
        XCTAssertEqual(try Decoders.plugIn(for: try FileSource(path: file)).name, "mpg123")
        let decoder = try Decoders.open(path: file)
        XCTAssertEqual(decoder.info.codec, "MP3")
        XCTAssertEqual(decoder.info.totalFrames, frames)
        XCTAssertTrue(Decoders.isAudioName("a.MP3"))
        XCTAssertTrue(Decoders.isAudioName("b.mp2"))

        let bare = try MP3Fixture.encode(signal(frames: frames, channels: 1), channels: 1, sampleRate: 44100,
                                         to: path("bare.dat"), arguments: ["-b", "128"])
        XCTAssertEqual(try Decoders.open(path: bare).info.codec, "MP3", "no tag in front either")

        let result = try runChecked(try tonearmBinary(), ["info", file])
        XCTAssertTrue(result.stdout.contains("MP3 24-bit 44100 Hz 2 ch"), result.stdout)
        let json = try runChecked(try tonearmBinary(), ["info", "--json", file])
        XCTAssertTrue(json.stdout.contains("\"codec\":\"MP3\""), json.stdout)
        XCTAssertTrue(json.stdout.contains("\"totalFrames\":\(frames)"), json.stdout)
    }
}
