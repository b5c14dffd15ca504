import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TestSupport
import TonearmAudio
@testable import TonearmDecoding
import XCTest

final class WAVDecoderTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory(prefix: "tonearm-wav")
    }

    override func tearDown() {
        directory = nil
    }

    private func path(_ name: String) -> String { directory.file(name) }

    private func open(_ file: String) throws -> any AudioDecoder {
        try WAVDecoder.open(FileSource(path: file), keepPictureData: false)
    }

    private func decodeAll(_ decoder: any AudioDecoder) throws -> [Int32] {
        var out: [Int32] = []
        while let block = try decoder.nextBlock() { out.append(contentsOf: block) }
        return out
    }

    private func leftJustified(_ samples: [Int32], bits: Int) -> [Int32] { samples.map { $0 << Int32(32 - bits) } }

    private func formatTag(_ file: String) throws -> Int { try WAVFile(path: file).formatTag }

    // MARK: Samples

    func testIntegerDepthsDecodeExactlyAsWrittenAndAsSoxReadsThem() throws {
        // sox writes 24/32-bit and multichannel files as WAVE_FORMAT_EXTENSIBLE; "wavpcm" forces tag 1.
        let cases: [(bits: Int, channels: Int, rate: Int, type: String?, tag: Int)] = [
            (8, 1, 8000, nil, 1), (8, 2, 22050, nil, 1), (16, 1, 22050, nil, 1), (16, 2, 44100, nil, 1),
            (24, 2, 48000, "wavpcm", 1), (32, 2, 96000, "wavpcm", 1), (24, 2, 48000, nil, 0xFFFE), (32, 1, 44100, nil, 0xFFFE),
            (16, 6, 48000, nil, 0xFFFE), (24, 8, 96000, nil, 0xFFFE),
        ]
        for c in cases {
            let samples = PCMFixtures.signal(frames: 5000, channels: c.channels, bits: c.bits, sampleRate: c.rate)
            let file = path("\(c.bits)-\(c.channels)-\(c.type ?? "wav").wav")
            try PCMFixtures.sox(samples, bits: c.bits, channels: c.channels, sampleRate: c.rate, to: file, type: c.type ?? "wav")
            let label = "\(c.bits)-bit \(c.channels) ch, format tag \(c.tag)"
            XCTAssertEqual(try formatTag(file), c.tag, label)
            let decoder = try open(file)
            XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: c.rate, channels: c.channels, bitsPerSample: c.bits), label)
            XCTAssertEqual(decoder.info.totalFrames, 5000, label)
            XCTAssertEqual(decoder.info.codec, "PCM")
            let decoded = try decodeAll(decoder)
            XCTAssertEqual(decoded, leftJustified(samples, bits: c.bits), label)
            XCTAssertEqual(decoded, try PCMFixtures.soxReference(file), label)
        }
    }

    /// Valid bits fewer than the container's: the format's bits are the valid ones, the
    /// padding bits are cleared.
    func testExtensibleValidBitsAreTheFormatsBits() throws {
        for (container, valid) in [(32, 24), (24, 20), (16, 12)] {
            let samples = PCMFixtures.signal(frames: 3000, channels: 2, bits: valid)
            var data = packLittleEndian(samples, bytesPerSample: container / 8, shift: container - valid)
            // Garbage in the padding bits of the first sample's lowest byte.
            data[0] |= 0x01
            let file = path("ext-\(valid)-in-\(container).wav")
            try PCMFixtures.write(WAVFile.header(channels: 2, sampleRate: 48000, containerBits: container, validBits: valid,
                                                 dataBytes: data.count) + data, to: file)
            let decoder = try open(file)
            XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: 48000, channels: 2, bitsPerSample: valid))
            XCTAssertEqual(decoder.info.headerFormat.bitsPerSample, container)
            XCTAssertEqual(try decodeAll(decoder), leftJustified(samples, bits: valid), "\(valid) in \(container)")
        }
        // ffmpeg's extensible file: six channels of 24 bits.
        let samples = PCMFixtures.signal(frames: 4000, channels: 6, bits: 24)
        let source = path("six.wav")
        try PCMFixtures.sox(samples, bits: 24, channels: 6, sampleRate: 48000, to: source)
        let file = path("six-ffmpeg.wav")
        try PCMFixtures.ffmpeg(source, ["-c:a", "pcm_s24le"], to: file)
        XCTAssertEqual(try formatTag(file), 0xFFFE)
        XCTAssertEqual(try decodeAll(open(file)), leftJustified(samples, bits: 24))
    }

    func testFloatIsConvertedTo24BitWithinOneStepOfSox() throws {
        let samples = PCMFixtures.signal(frames: 5000, channels: 2, bits: 24)
        let source = path("source.wav")
        try PCMFixtures.sox(samples, bits: 24, channels: 2, sampleRate: 44100, to: source)
        let f32 = path("f32.wav"), f64 = path("f64.wav"), f32x = path("f32-6ch.wav")
        try PCMFixtures.sox(samples, bits: 24, channels: 2, sampleRate: 44100, to: f32, extra: ["-e", "floating-point", "-b", "32"])
        try PCMFixtures.ffmpeg(source, ["-c:a", "pcm_f64le"], to: f64)
        try PCMFixtures.ffmpeg(source, ["-c:a", "pcm_f32le", "-ac", "6"], to: f32x)
        XCTAssertEqual(try formatTag(f32), 3)
        XCTAssertEqual(try WAVFile(path: f64).sampleFormatTag, 3)
        XCTAssertEqual(try formatTag(f32x), 0xFFFE)
        XCTAssertEqual(try WAVFile(path: f32x).sampleFormatTag, 3)
        for (file, bits) in [(f32, 32), (f64, 64)] {
            let decoder = try open(file)
            XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: 44100, channels: 2, bitsPerSample: 24))
            XCTAssertEqual(decoder.info.headerFormat.bitsPerSample, bits)
            XCTAssertEqual(decoder.info.codec, "PCM float")
            let decoded = try decodeAll(decoder)
            // A 24-bit sample is exact in a float: it comes back exactly.
            XCTAssertEqual(decoded, leftJustified(samples, bits: 24), "\(bits)-bit float")
            let reference = try PCMFixtures.soxReference(file)
            XCTAssertEqual(decoded.count, reference.count)
            let worst = zip(decoded, reference).map { abs(Int64($0) - Int64($1)) }.max() ?? 0
            XCTAssertLessThanOrEqual(worst, 256, "within one 24-bit step of sox")
        }
        let six = try open(f32x)
        XCTAssertEqual(six.info.format, StreamFormat(sampleRate: 44100, channels: 6, bitsPerSample: 24))
        let decoded = try decodeAll(six)
        XCTAssertEqual(decoded.count, 5000 * 6)
        let reference = try PCMFixtures.soxReference(f32x)
        XCTAssertLessThanOrEqual(zip(decoded, reference).map { abs(Int64($0) - Int64($1)) }.max() ?? 0, 256)
    }

    /// Past full scale clips; NaN is silence.
    func testFloatBeyondFullScaleClips() throws {
        let values: [Float] = [1.5, -2, 1, -1, .nan, 0.5, -0.5, .infinity, 0x1p-23, -0x1p-24]
        let data = values.flatMap { PCMFixtures.le32(Int($0.bitPattern)) }
        let file = path("loud.wav")
        try PCMFixtures.write(PCMFixtures.wav(PCMFixtures.fmt(tag: 3, channels: 1, sampleRate: 8000, bits: 32),
                                              PCMFixtures.riffChunk("data", data)), to: file)
        let top: Int32 = 0x7FFF_FF00
        XCTAssertEqual(try decodeAll(open(file)), [top, Int32.min, top, Int32.min, 0, 0x4000_0000, -0x4000_0000, top, 0x100, -0x100])
    }

    func testRF64DecodesExactly() throws {
        let samples = PCMFixtures.signal(frames: 6000, channels: 2, bits: 24)
        let source = path("source.wav")
        try PCMFixtures.sox(samples, bits: 24, channels: 2, sampleRate: 48000, to: source)
        let file = path("rf64.wav")
        try PCMFixtures.ffmpeg(source, ["-c:a", "pcm_s24le", "-rf64", "always", "-metadata", "title=Big"], to: file)
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: file)).prefix(4)), Array("RF64".utf8))
        let decoder = try open(file)
        XCTAssertEqual(decoder.info.totalFrames, 6000)
        XCTAssertEqual(decoder.info.title, "Big")
        XCTAssertEqual(try decodeAll(decoder), leftJustified(samples, bits: 24))
    }

    // MARK: Seeking

    func testSeeksAreExact() throws {
        let frames = 3 * 44100
        let samples = PCMFixtures.signal(frames: frames, channels: 2, bits: 16)
        let file = path("seek.wav")
        try PCMFixtures.sox(samples, bits: 16, channels: 2, sampleRate: 44100, to: file)
        let decoder = try open(file)
        for target in [66150, 0, 1, 4095, 4096, 4097, frames - 1, 12345, 0] {
            try decoder.seek(toFrame: target)
            XCTAssertEqual(decoder.position, target)
            let block = try XCTUnwrap(try decoder.nextBlock(), "a block after seeking to \(target)")
            XCTAssertEqual(Array(block), leftJustified(Array(samples[(2 * target)..<min(samples.count, 2 * target + block.count)]), bits: 16),
                           "seek to \(target)")
            XCTAssertEqual(decoder.position, target + block.count / 2)
        }
        try decoder.seek(toFrame: 100_000)
        XCTAssertEqual(try decodeAll(decoder), leftJustified(Array(samples[200_000...]), bits: 16), "to the end from a seek")
        try decoder.seek(toFrame: frames)
        XCTAssertNil(try decoder.nextBlock(), "seeking to the end leaves nothing")
        XCTAssertThrowsError(try decoder.seek(toFrame: frames + 1)) { error in
            XCTAssertEqual((error as? DecodeError)?.reason, .seekFailed(frame: frames + 1))
        }
        XCTAssertThrowsError(try decoder.seek(toFrame: -1))
    }

    // MARK: Tags

    func testInfoTagsReachTrackInfo() throws {
        let samples = PCMFixtures.signal(frames: 1000, channels: 2, bits: 16)
        let source = path("plain.wav")
        try PCMFixtures.sox(samples, bits: 16, channels: 2, sampleRate: 44100, to: source)
        let file = path("tagged.wav")
        try PCMFixtures.ffmpeg(source, ["-c:a", "copy", "-metadata", "title=Song", "-metadata", "artist=Bänd", "-metadata", "album=Record",
                                        "-metadata", "date=1999", "-metadata", "genre=Jazz", "-metadata", "track=3/12",
                                        "-metadata", "comment=Live", "-metadata", "copyright=(C) Label"], to: file)
        let decoder = try open(file)
        let info = decoder.info
        XCTAssertEqual(info.title, "Song")
        XCTAssertEqual(info.artist, "Bänd")
        XCTAssertEqual(info.album, "Record")
        XCTAssertEqual(info.date, "1999")
        XCTAssertEqual(info.genre, "Jazz")
        XCTAssertEqual(info.trackNumber, 3)
        XCTAssertEqual(info.trackTotal, 12)
        XCTAssertEqual(info.comment("COMMENT"), "Live")
        XCTAssertEqual(info.comment("COPYRIGHT"), "(C) Label")
        XCTAssertEqual(info.comment("ENCODER")?.hasPrefix("Lavf"), true)
        XCTAssertEqual(try decodeAll(decoder), leftJustified(samples, bits: 16))
        // Indexing a library reads the same tags without opening for play.
        let fd = Glibc.open(file, O_RDONLY)
        XCTAssertEqual(try Decoders.metadata(fd: fd, path: file).title, "Song")
    }

    /// Tags after the audio, in ISO-8859-1 or UTF-8, NUL-padded; ITRK and IPRT give one
    /// track number; an `id3 ` chunk's place is kept (a tag too short to read is passed over).
    func testTagsAfterTheDataAndTheID3ChunksPlace() throws {
        let samples = PCMFixtures.signal(frames: 999, channels: 1, bits: 16)
        let info = Array("INFO".utf8)
            + PCMFixtures.riffChunk("INAM", "Café".latin1Bytes + [0])
            + PCMFixtures.riffChunk("IART", Array("Motörhead".utf8) + [0, 0, 0])
            + PCMFixtures.riffChunk("ITRK", Array("7".utf8))
            + PCMFixtures.riffChunk("IPRT", Array("8".utf8))
            + PCMFixtures.riffChunk("IXYZ", Array("ignored".utf8))
            + PCMFixtures.riffChunk("ICMT", [0, 0])
        let id3 = Array("ID3".utf8) + [4, 0, 0, 0, 0, 0, 5] + [1, 2, 3, 4, 5]
        let bytes = PCMFixtures.wav(PCMFixtures.fmt(channels: 1, sampleRate: 22050, bits: 16),
                                    PCMFixtures.riffChunk("data", packLittleEndian(samples, bytesPerSample: 2, shift: 0)),
                                    PCMFixtures.riffChunk("LIST", info), PCMFixtures.riffChunk("id3 ", id3))
        let file = path("after.wav")
        try PCMFixtures.write(bytes, to: file)
        let decoder = try open(file)
        XCTAssertEqual(decoder.info.comments.map { "\($0.name)=\($0.value)" }, ["TITLE=Café", "ARTIST=Motörhead", "TRACKNUMBER=7"])
        let tag = try XCTUnwrap((decoder as? PCMFileDecoder)?.id3Tag)
        XCTAssertEqual(tag.length, UInt64(id3.count))
        XCTAssertEqual(Array(bytes[Int(tag.offset)..<Int(tag.offset + tag.length)]), id3)
        XCTAssertEqual(try decodeAll(decoder), leftJustified(samples, bits: 16), "the data chunk need not be last")
    }

    /// INFO's tags in mpd's order (title, artist, comment, date, album, track, genre, as its
    /// sndfile plug-in reads them), not the file's; those mpd does not read after them.
    func testINFOTagsComeInMpdsOrder() throws {
        let info = Array("INFO".utf8)
            + PCMFixtures.riffChunk("ISFT", Array("Lavf".utf8) + [0])
            + PCMFixtures.riffChunk("IGNR", Array("Jazz".utf8) + [0])
            + PCMFixtures.riffChunk("ICRD", Array("1961".utf8) + [0])
            + PCMFixtures.riffChunk("ITRK", Array("3".utf8) + [0])
            + PCMFixtures.riffChunk("IPRD", Array("Album".utf8) + [0])
            + PCMFixtures.riffChunk("ICMT", Array("Live".utf8) + [0])
            + PCMFixtures.riffChunk("IART", Array("Artist".utf8) + [0])
            + PCMFixtures.riffChunk("INAM", Array("Title".utf8) + [0])
            + PCMFixtures.riffChunk("ICOP", Array("(C)".utf8) + [0])
        var comments: [(name: String, value: String)] = []
        WAVDecoder.infoTags(info.dropFirst(4), into: &comments)
        XCTAssertEqual(comments.map { "\($0.name)=\($0.value)" },
                       ["TITLE=Title", "ARTIST=Artist", "COMMENT=Live", "DATE=1961", "ALBUM=Album", "TRACKNUMBER=3",
                        "GENRE=Jazz", "ENCODER=Lavf", "COPYRIGHT=(C)"])
    }

    /// An `id3 ` chunk's ID3v2 tag is read: its frames first, INFO filling what it lacks; a
    /// broken one leaves INFO's tags and the audio.
    func testTheID3ChunksTagComesFirstAndINFOFillsIn() throws {
        let samples = PCMFixtures.signal(frames: 500, channels: 2, bits: 16)
        let info = Array("INFO".utf8) + PCMFixtures.riffChunk("INAM", Array("Info title".utf8) + [0])
            + PCMFixtures.riffChunk("IART", Array("Info artist".utf8) + [0])
        let id3 = ID3Bytes.tag(version: 4, frames: [ID3Bytes.frame24("TIT2", ID3Bytes.text(3, "Tag title")),
                                                    ID3Bytes.frame24("TALB", ID3Bytes.text(3, "Tag album")),
                                                    ID3Bytes.frame24("TRCK", ID3Bytes.text(3, "4/9"))])
        func file(_ name: String, id3: [UInt8]) throws -> String {
            let path = self.path(name)
            try PCMFixtures.write(PCMFixtures.wav(PCMFixtures.fmt(channels: 2, sampleRate: 44100, bits: 16),
                                                  PCMFixtures.riffChunk("LIST", info), PCMFixtures.riffChunk("id3 ", id3),
                                                  PCMFixtures.riffChunk("data", packLittleEndian(samples, bytesPerSample: 2, shift: 0))),
                                  to: path)
            return path
        }
        let tagged = try open(try file("id3.wav", id3: id3))
        XCTAssertEqual(tagged.info.comments.map { "\($0.name)=\($0.value)" },
                       ["TITLE=Tag title", "ALBUM=Tag album", "TRACKNUMBER=4/9", "ARTIST=Info artist"])
        XCTAssertEqual(try decodeAll(tagged), leftJustified(samples, bits: 16))
        let fd = Glibc.open(path("id3.wav"), O_RDONLY)
        XCTAssertEqual(try Decoders.metadata(fd: fd, path: path("id3.wav")).album, "Tag album")

        let broken = try open(try file("broken-id3.wav", id3: Array(id3.prefix(10)) + [0xFF, 0xFF]))
        XCTAssertEqual(broken.info.title, "Info title")
        XCTAssertEqual(try decodeAll(broken), leftJustified(samples, bits: 16))
    }

    // MARK: Sizes

    /// A data size of 0 or 0xFFFFFFFF (a WAV written to a pipe) runs to the end of the file.
    func testStreamedDataSizesRunToTheEnd() throws {
        let samples = PCMFixtures.signal(frames: 5001, channels: 2, bits: 16)
        let data = packLittleEndian(samples, bytesPerSample: 2, shift: 0)
        for size in [0, 0xFFFF_FFFF] {
            let file = path("streamed-\(size).wav")
            try PCMFixtures.write(PCMFixtures.wav(PCMFixtures.fmt(channels: 2, sampleRate: 44100, bits: 16),
                                                  Array("data".utf8) + PCMFixtures.le32(size) + data + [0x11]), to: file)
            let decoder = try open(file)
            XCTAssertEqual(decoder.info.totalFrames, 5001, "data size \(size); a stray byte at the end is no frame")
            XCTAssertEqual(try decodeAll(decoder), leftJustified(samples, bits: 16))
        }
        // ffmpeg writing to a pipe.
        let source = path("source.wav")
        try PCMFixtures.sox(samples, bits: 16, channels: 2, sampleRate: 44100, to: source)
        let piped = path("piped.wav")
        _ = FileManager.default.createFile(atPath: piped, contents: nil)
        try runChecked(try which("ffmpeg"), ["-nostdin", "-loglevel", "error", "-i", source, "-f", "wav", "-"], stdoutPath: piped)
        XCTAssertEqual(try decodeAll(open(piped)), leftJustified(samples, bits: 16))
    }

    /// A stream that cannot seek plays up to its end, its tags before the data are read.
    func testAStreamThatCannotSeekPlays() throws {
        let samples = PCMFixtures.signal(frames: 10000, channels: 2, bits: 24)
        let file = path("stream.wav")
        let source = path("source.wav")
        try PCMFixtures.sox(samples, bits: 24, channels: 2, sampleRate: 48000, to: source)
        try PCMFixtures.ffmpeg(source, ["-c:a", "pcm_s24le", "-metadata", "title=Radio"], to: file)
        let stream = ForwardOnlySource(bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: file))), name: "http://radio/stream.wav")
        let decoder = try WAVDecoder.open(stream, keepPictureData: false)
        XCTAssertEqual(decoder.info.title, "Radio")
        XCTAssertEqual(decoder.info.totalFrames, 10000)
        XCTAssertThrowsError(try decoder.seek(toFrame: 10))
        XCTAssertEqual(try decodeAll(decoder), leftJustified(samples, bits: 24))
    }

    func testATruncatedFilePlaysWhatItHoldsThenSaysSo() throws {
        let samples = PCMFixtures.signal(frames: 44100, channels: 2, bits: 16)
        let file = path("cut.wav")
        try PCMFixtures.sox(samples, bits: 16, channels: 2, sampleRate: 44100, to: file)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        let header = bytes.count - 44100 * 4
        // Cut inside a frame: the partial frame is not played.
        try bytes.prefix(header + 20000 * 4 + 3).write(to: URL(fileURLWithPath: file))
        let decoder = try open(file)
        XCTAssertEqual(decoder.info.totalFrames, 44100)
        var decoded: [Int32] = []
        XCTAssertThrowsError(try { while let block = try decoder.nextBlock() { decoded += block } }()) { error in
            XCTAssertEqual((error as? DecodeError)?.reason, .truncated(decodedFrames: 20000, expectedFrames: 44100))
            XCTAssertTrue("\(error)".hasPrefix(file + ": truncated"), "\(error)")
        }
        XCTAssertEqual(decoded, leftJustified(Array(samples[..<40000]), bits: 16))
    }

    // MARK: Bad input

    func testBadFilesFailWithTheirCause() throws {
        let fmt = PCMFixtures.fmt(channels: 2, sampleRate: 44100, bits: 16)
        let data = PCMFixtures.riffChunk("data", [UInt8](repeating: 0, count: 64))
        var random = SeededRandom(seed: 7)
        let cases: [(String, [UInt8], String)] = [
            ("empty.wav", [], "empty file"),
            ("riff.wav", Array("RIFF".utf8), "not a WAV file (its RIFF header ends after 4 bytes)"),
            ("avi.wav", Array("RIFF".utf8) + PCMFixtures.le32(100) + Array("AVI ".utf8) + [UInt8](repeating: 0, count: 100),
             "not a WAV file (a RIFF file of type 'AVI ')"),
            ("random.wav", (0..<4096).map { _ in UInt8(truncatingIfNeeded: random.next()) }, "not a WAV file (no 'RIFF'…'WAVE' header)"),
            ("fmt4g.wav", PCMFixtures.wav(Array("fmt ".utf8) + PCMFixtures.le32(0xFFFF_FFF0) + Array(fmt[8...]), data),
             "corrupt metadata: 'fmt ' chunk claims 4294967280 bytes, past the end of the file"),
            ("junk.wav", PCMFixtures.wav(PCMFixtures.riffChunk("JUNK", [1, 2, 3, 4], size: 1_000_000), fmt, data),
             "corrupt metadata: 'JUNK' chunk at byte 12 claims 1000000 bytes, past the end of the file"),
            ("short-fmt.wav", PCMFixtures.wav(PCMFixtures.riffChunk("fmt ", [1, 0, 2, 0]), data), "'fmt ' chunk of 4 bytes (at least 16)"),
            ("adpcm.wav", PCMFixtures.wav(PCMFixtures.fmt(tag: 2, channels: 2, sampleRate: 44100, bits: 4, blockAlign: 2048), data),
             "unsupported: WAV format 2 (ADPCM)"),
            ("mp3.wav", PCMFixtures.wav(PCMFixtures.fmt(tag: 0x55, channels: 2, sampleRate: 44100, bits: 0, blockAlign: 1), data),
             "unsupported: WAV format 85 (MP3)"),
            ("zero-channels.wav", PCMFixtures.wav(PCMFixtures.fmt(channels: 0, sampleRate: 44100, bits: 16, blockAlign: 4), data),
             "'fmt ' chunk gives 0 channels"),
            ("nine-channels.wav", PCMFixtures.wav(PCMFixtures.fmt(channels: 9, sampleRate: 44100, bits: 16), data),
             "unsupported: 9 channels (at most 8)"),
            ("zero-rate.wav", PCMFixtures.wav(PCMFixtures.fmt(channels: 2, sampleRate: 0, bits: 16), data), "'fmt ' chunk gives sample rate 0"),
            ("bad-align.wav", PCMFixtures.wav(PCMFixtures.fmt(channels: 2, sampleRate: 44100, bits: 24, blockAlign: 4), data),
             "block align 4 does not hold 2 channels of 24 bits"),
            ("no-data.wav", PCMFixtures.wav(fmt), "no 'data' chunk"),
            ("no-fmt.wav", PCMFixtures.wav(data), "no 'fmt ' chunk"),
            ("no-frames.wav", PCMFixtures.wav(fmt, PCMFixtures.riffChunk("data", [1, 2, 3]), PCMFixtures.riffChunk("LIST", [])), "no audio frames"),
            ("tiny-chunks.wav", PCMFixtures.wav([UInt8](Array(repeating: Array("JUNK".utf8) + [0, 0, 0, 0], count: 150_000).joined()), fmt, data),
             "no 'fmt ' chunk in the first 100000 chunks"),
        ]
        for (name, bytes, cause) in cases {
            let file = path(name)
            try PCMFixtures.write(bytes, to: file)
            XCTAssertThrowsError(try open(file), name) { error in
                XCTAssertTrue("\(error)".hasPrefix(file + ": "), "\(error)")
                XCTAssertTrue("\(error)".contains(cause), "\(error) should say \(cause)")
            }
            XCTAssertThrowsError(try WAVDecoder.metadata(FileSource(path: file)), name)
        }
        // Many tiny chunks, then the real ones, within the bound: they play.
        let file = path("many-chunks.wav")
        try PCMFixtures.write(PCMFixtures.wav([UInt8](Array(repeating: Array("JUNK".utf8) + [0, 0, 0, 0], count: 50_000).joined()), fmt, data), to: file)
        XCTAssertEqual(try decodeAll(open(file)).count, 32)
    }

    /// A data chunk whose size runs past the end of the file: what is there plays, then the
    /// truncation is reported.
    func testADataChunkPastTheEndIsATruncation() throws {
        let samples = PCMFixtures.signal(frames: 100, channels: 1, bits: 16)
        let file = path("past-end.wav")
        try PCMFixtures.write(PCMFixtures.wav(PCMFixtures.fmt(channels: 1, sampleRate: 8000, bits: 16),
                                              PCMFixtures.riffChunk("data", packLittleEndian(samples, bytesPerSample: 2, shift: 0), size: 1000)),
                              to: file)
        let decoder = try open(file)
        XCTAssertEqual(decoder.info.totalFrames, 500)
        XCTAssertEqual(try decoder.nextBlock().map(Array.init), leftJustified(samples, bits: 16))
        XCTAssertThrowsError(try decoder.nextBlock()) { error in
            XCTAssertEqual((error as? DecodeError)?.reason, .truncated(decodedFrames: 100, expectedFrames: 500))
        }
    }

    /// Bytes after the last chunk, read as chunks, are walked over and end the walk.
    func testGarbageAfterTheChunksIsHarmless() throws {
        let samples = PCMFixtures.signal(frames: 3000, channels: 2, bits: 16)
        let file = path("garbage.wav")
        try PCMFixtures.sox(samples, bits: 16, channels: 2, sampleRate: 44100, to: file)
        var random = SeededRandom(seed: 3)
        let garbage = (0..<5000).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        try PCMFixtures.write([UInt8](try Data(contentsOf: URL(fileURLWithPath: file))) + garbage, to: file)
        XCTAssertEqual(try decodeAll(open(file)), leftJustified(samples, bits: 16))
    }

    /// An encoder's real ADPCM file is refused by name, as is an ID3v2 tag in front of a WAV
    /// passed over.
    func testRealADPCMIsRefusedAndAnID3TagInFrontIsSkipped() throws {
        let samples = PCMFixtures.signal(frames: 4000, channels: 2, bits: 16)
        let source = path("source.wav")
        try PCMFixtures.sox(samples, bits: 16, channels: 2, sampleRate: 44100, to: source)
        let adpcm = path("adpcm.wav")
        try PCMFixtures.ffmpeg(source, ["-c:a", "adpcm_ms"], to: adpcm)
        XCTAssertThrowsError(try Decoders.open(path: adpcm)) { error in
            XCTAssertEqual((error as? DecodeError)?.reason, .unsupported("WAV format 2 (ADPCM)"))
        }
        let tag: [UInt8] = Array("ID3".utf8) + [3, 0, 0, 0, 0, 0, 20] + [UInt8](repeating: 0, count: 20)
        let tagged = path("id3-in-front.wav")
        try PCMFixtures.write(tag + [UInt8](try Data(contentsOf: URL(fileURLWithPath: source))), to: tagged)
        XCTAssertEqual(try decodeAll(Decoders.open(path: tagged)), leftJustified(samples, bits: 16))
    }

    // MARK: The registry

    func testTheRegistryFindsAWAVByItsBytesWhateverItsName() throws {
        let samples = PCMFixtures.signal(frames: 2000, channels: 2, bits: 16)
        let file = path("sound.dat")
        try PCMFixtures.sox(samples, bits: 16, channels: 2, sampleRate: 44100, to: file, type: "wav")
        let decoder = try Decoders.open(path: file)
        XCTAssertTrue(decoder is PCMFileDecoder)
        XCTAssertEqual(try decodeAll(decoder), leftJustified(samples, bits: 16))
        XCTAssertTrue(Decoders.isAudioName("a.WAV"))
        XCTAssertTrue(Decoders.isAudioName("a.wave"))
        XCTAssertTrue(Decoders.plugIn(forName: "x.wav") == WAVDecoder.self)
        XCTAssertEqual(WAVDecoder.name, "sndfile")
        // A text file named .wav: the WAV plug-in says why it is not one.
        let text = path("notes.wav")
        try PCMFixtures.write(Array("hello\n".utf8), to: text)
        XCTAssertThrowsError(try Decoders.open(path: text)) { error in
            XCTAssertTrue("\(error)".contains("not a WAV file"), "\(error)")
        }
    }
}

/// A source read once from start to end, like a network stream: no seeking, no length.
final class ForwardOnlySource: ByteSource {
    let name: String
    private let bytes: [UInt8]
    private(set) var offset: UInt64 = 0
    private(set) var atEnd = false

    init(bytes: [UInt8], name: String) {
        self.bytes = bytes
        self.name = name
    }

    var isSeekable: Bool { false }
    var length: UInt64? { nil }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(DecodeError) -> Int {
        // Small reads, as a socket gives.
        let n = min(buffer.count, bytes.count - Int(offset), 1000)
        for i in 0..<n { buffer[i] = bytes[Int(offset) + i] }
        offset += UInt64(n)
        atEnd = n == 0
        return n
    }

    /// Only back to the start, which the registry's look at the first bytes needs (a network
    /// source keeps its first bytes for that).
    func seek(to offset: UInt64) throws(DecodeError) {
        guard offset <= 64 else { throw DecodeError(path: name, reason: .decoder("cannot seek a stream")) }
        self.offset = offset
        atEnd = false
    }
}
