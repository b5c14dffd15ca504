import Foundation
import TestSupport
import TonearmAudio
@testable import TonearmDecoding
import XCTest

final class AIFFDecoderTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory(prefix: "tonearm-aiff")
    }

    override func tearDown() {
        directory = nil
    }

    private func path(_ name: String) -> String { directory.file(name) }

    private func open(_ file: String) throws -> any AudioDecoder {
        try AIFFDecoder.open(FileSource(path: file), keepPictureData: false)
    }

    private func decodeAll(_ decoder: any AudioDecoder) throws -> [Int32] {
        var out: [Int32] = []
        while let block = try decoder.nextBlock() { out.append(contentsOf: block) }
        return out
    }

    private func leftJustified(_ samples: [Int32], bits: Int) -> [Int32] { samples.map { $0 << Int32(32 - bits) } }

    private func formType(_ file: String) throws -> String {
        String(decoding: try Data(contentsOf: URL(fileURLWithPath: file))[8..<12], as: UTF8.self)
    }

    // MARK: Samples

    func testIntegerDepthsAndRatesDecodeExactlyAsWrittenAndAsSoxReadsThem() throws {
        let cases: [(bits: Int, channels: Int, rate: Int)] = [
            (8, 1, 8000), (8, 2, 11025), (16, 2, 44100), (16, 1, 22050), (24, 2, 48000), (24, 6, 96000),
            (32, 2, 192_000), (16, 8, 32000), (16, 2, 7),
        ]
        for c in cases {
            let samples = PCMFixtures.signal(frames: 5000, channels: c.channels, bits: c.bits, sampleRate: c.rate)
            let file = path("\(c.bits)-\(c.channels)-\(c.rate).aiff")
            try PCMFixtures.sox(samples, bits: c.bits, channels: c.channels, sampleRate: c.rate, to: file)
            let label = "\(c.bits)-bit \(c.channels) ch \(c.rate) Hz"
            XCTAssertEqual(try formType(file), "AIFF", label)
            let decoder = try open(file)
            XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: c.rate, channels: c.channels, bitsPerSample: c.bits), label)
            XCTAssertEqual(decoder.info.totalFrames, 5000, label)
            let decoded = try decodeAll(decoder)
            XCTAssertEqual(decoded, leftJustified(samples, bits: c.bits), label)
            XCTAssertEqual(decoded, try PCMFixtures.soxReference(file), label)
        }
    }

    /// AIFF-C: uncompressed big-endian, 'sowt' little-endian, 32- and 64-bit float.
    func testAIFFCVariantsDecode() throws {
        let samples = PCMFixtures.signal(frames: 5000, channels: 2, bits: 24)
        let source = path("source.wav")
        try PCMFixtures.sox(samples, bits: 24, channels: 2, sampleRate: 48000, to: source)
        let sixteen = samples.map { $0 >> 8 }
        let source16 = path("source16.wav")
        try PCMFixtures.sox(sixteen, bits: 16, channels: 2, sampleRate: 48000, to: source16)

        let none = path("none.aifc")
        try PCMFixtures.sox(samples, bits: 24, channels: 2, sampleRate: 48000, to: none)
        let sowt16 = path("sowt16.aiff"), sowt24 = path("sowt24.aifc")
        try PCMFixtures.ffmpeg(source16, ["-c:a", "pcm_s16le"], to: sowt16)
        try PCMFixtures.write(PCMFixtures.aiff(type: "AIFC", PCMFixtures.comm(channels: 2, frames: 5000, bits: 24, sampleRate: 48000, compression: "sowt"),
                                               PCMFixtures.ssnd(packLittleEndian(samples, bytesPerSample: 3, shift: 0))), to: sowt24)
        for (file, expected, bits) in [(none, samples, 24), (sowt16, sixteen, 16), (sowt24, samples, 24)] {
            XCTAssertEqual(try formType(file), "AIFC", file)
            let decoder = try open(file)
            XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: 48000, channels: 2, bitsPerSample: bits), file)
            let decoded = try decodeAll(decoder)
            XCTAssertEqual(decoded, leftJustified(expected, bits: bits), file)
            // sox reads 'sowt' of 16 bits only.
            if file != sowt24 { XCTAssertEqual(decoded, try PCMFixtures.soxReference(file), file) }
        }

        let fl32 = path("fl32.aiff"), fl64 = path("fl64.aiff"), soxFloat = path("sox-float.aifc")
        try PCMFixtures.ffmpeg(source, ["-c:a", "pcm_f32be"], to: fl32)
        try PCMFixtures.ffmpeg(source, ["-c:a", "pcm_f64be"], to: fl64)
        try PCMFixtures.sox(samples, bits: 24, channels: 2, sampleRate: 48000, to: soxFloat, extra: ["-e", "floating-point", "-b", "32"])
        for (file, bits) in [(fl32, 32), (fl64, 64), (soxFloat, 32)] {
            let decoder = try open(file)
            XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: 48000, channels: 2, bitsPerSample: 24), file)
            XCTAssertEqual(decoder.info.headerFormat.bitsPerSample, bits, file)
            XCTAssertEqual(decoder.info.codec, "PCM float")
            let decoded = try decodeAll(decoder)
            XCTAssertEqual(decoded, leftJustified(samples, bits: 24), "a 24-bit sample is exact in a float: \(file)")
            if bits == 32 {
                let reference = try PCMFixtures.soxReference(file)
                XCTAssertEqual(decoded.count, reference.count)
                XCTAssertLessThanOrEqual(zip(decoded, reference).map { abs(Int64($0) - Int64($1)) }.max() ?? 0, 256, file)
            }
        }
    }

    func testOtherCompressionsAreRefusedByName() throws {
        let source = path("source.wav")
        try PCMFixtures.sox(PCMFixtures.signal(frames: 1000, channels: 1, bits: 16), bits: 16, channels: 1, sampleRate: 8000, to: source)
        let ulaw = path("ulaw.aiff")
        try PCMFixtures.ffmpeg(source, ["-c:a", "pcm_mulaw"], to: ulaw)
        XCTAssertThrowsError(try open(ulaw)) { error in
            XCTAssertEqual((error as? DecodeError)?.reason, .unsupported("AIFF-C compression 'ulaw'"))
        }
    }

    /// The sample rate is an 80-bit extended number; a fraction is rounded.
    func testExtendedSampleRates() throws {
        XCTAssertEqual(AIFFDecoder.extended80(PCMFixtures.extended80(44100)[...]), 44100)
        XCTAssertEqual(AIFFDecoder.extended80([0x40, 0x0E, 0xAC, 0x44, 0, 0, 0, 0, 0, 0][...]), 44100)
        XCTAssertEqual(AIFFDecoder.extended80(PCMFixtures.extended80(22254.545454545)[...]), 22254.545454545, accuracy: 1e-6)
        XCTAssertEqual(AIFFDecoder.extended80([UInt8](repeating: 0, count: 10)[...]), 0)
        XCTAssertTrue(AIFFDecoder.extended80([0x7F, 0xFF, 0xC0, 0, 0, 0, 0, 0, 0, 0][...]).isNaN)
        let data = packBigEndian16(PCMFixtures.signal(frames: 100, channels: 1, bits: 16))
        let file = path("mac.aiff")
        try PCMFixtures.write(PCMFixtures.aiff(PCMFixtures.comm(channels: 1, frames: 100, bits: 16, sampleRate: 22254.545454545),
                                               PCMFixtures.ssnd(data)), to: file)
        XCTAssertEqual(try open(file).info.format.sampleRate, 22255)
    }

    /// Fewer bits than the container: left-justified, padding cleared, the format's bits the real ones.
    func testOddSampleSizesAndAnSSNDOffset() throws {
        let samples = PCMFixtures.signal(frames: 2000, channels: 2, bits: 12)
        var data = PCMFixtures.packBigEndian(samples.map { $0 << 4 }, bytesPerSample: 2)
        data[1] |= 0x03
        let file = path("twelve.aiff")
        try PCMFixtures.write(PCMFixtures.aiff(PCMFixtures.iffChunk("FVER", [0xA2, 0x80, 0x51, 0x40]),
                                               PCMFixtures.comm(channels: 2, frames: 2000, bits: 12, sampleRate: 32000),
                                               PCMFixtures.ssnd(data, offset: 12)), to: file)
        let decoder = try open(file)
        XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: 32000, channels: 2, bitsPerSample: 12))
        XCTAssertEqual(try decodeAll(decoder), leftJustified(samples, bits: 12))
    }

    // MARK: Seeking

    func testSeeksAreExact() throws {
        let frames = 2 * 48000
        let samples = PCMFixtures.signal(frames: frames, channels: 2, bits: 24, sampleRate: 48000)
        let file = path("seek.aiff")
        try PCMFixtures.sox(samples, bits: 24, channels: 2, sampleRate: 48000, to: file)
        let decoder = try open(file)
        for target in [48000, 0, 1, 4095, 4096, frames - 1, 777, 0] {
            try decoder.seek(toFrame: target)
            XCTAssertEqual(decoder.position, target)
            let block = try XCTUnwrap(try decoder.nextBlock(), "a block after seeking to \(target)")
            XCTAssertEqual(Array(block), leftJustified(Array(samples[(2 * target)..<min(samples.count, 2 * target + block.count)]), bits: 24),
                           "seek to \(target)")
        }
        try decoder.seek(toFrame: frames)
        XCTAssertNil(try decoder.nextBlock())
        XCTAssertThrowsError(try decoder.seek(toFrame: frames + 1))
    }

    // MARK: Tags

    func testTextChunksAndTheID3ChunkReachTrackInfo() throws {
        let samples = PCMFixtures.signal(frames: 1000, channels: 2, bits: 16)
        let source = path("plain.aiff")
        try PCMFixtures.sox(samples, bits: 16, channels: 2, sampleRate: 44100, to: source)
        let file = path("tagged.aiff")
        try PCMFixtures.ffmpeg(source, ["-c:a", "copy", "-metadata", "title=Song", "-metadata", "author=Bänd",
                                        "-metadata", "copyright=(C) Label", "-metadata", "comment=Live", "-write_id3v2", "1"], to: file)
        let decoder = try open(file)
        XCTAssertEqual(decoder.info.title, "Song")
        XCTAssertEqual(decoder.info.artist, "Bänd")
        XCTAssertEqual(decoder.info.comment("COPYRIGHT"), "(C) Label")
        XCTAssertEqual(decoder.info.comment("COMMENT"), "Live")
        // ffmpeg puts the ID3 chunk after SSND.
        let tag = try XCTUnwrap((decoder as? PCMFileDecoder)?.id3Tag)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        XCTAssertEqual(Array(bytes[Int(tag.offset)..<Int(tag.offset) + 3]), Array("ID3".utf8))
        XCTAssertEqual(Array(bytes[Int(tag.offset) - 8..<Int(tag.offset) - 4]), Array("ID3 ".utf8))
        XCTAssertEqual(try decodeAll(decoder), leftJustified(samples, bits: 16))

        // By hand: ISO-8859-1, several ANNO, NUL-padded, after the sound.
        let hand = path("hand.aiff")
        try PCMFixtures.write(PCMFixtures.aiff(PCMFixtures.comm(channels: 1, frames: 10, bits: 16, sampleRate: 8000),
                                               PCMFixtures.ssnd([UInt8](repeating: 0, count: 20)),
                                               PCMFixtures.iffChunk("NAME", "Déjà vu".latin1Bytes + [0, 0]),
                                               PCMFixtures.iffChunk("AUTH", Array("Cœur".utf8)),
                                               PCMFixtures.iffChunk("ANNO", Array("one".utf8)),
                                               PCMFixtures.iffChunk("ANNO", Array("two".utf8))), to: hand)
        let info = try AIFFDecoder.metadata(FileSource(path: hand))
        XCTAssertEqual(info.comments.map { "\($0.name)=\($0.value)" }, ["TITLE=Déjà vu", "ARTIST=Cœur", "COMMENT=one", "COMMENT=two"])
        XCTAssertEqual(info.totalFrames, 10)
    }

    // MARK: Truncation and bad input

    func testATruncatedFilePlaysWhatItHoldsThenSaysSo() throws {
        let samples = PCMFixtures.signal(frames: 44100, channels: 2, bits: 16)
        let file = path("cut.aiff")
        try PCMFixtures.sox(samples, bits: 16, channels: 2, sampleRate: 44100, to: file)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        let header = bytes.count - 44100 * 4
        try bytes.prefix(header + 30000 * 4 + 1).write(to: URL(fileURLWithPath: file))
        let decoder = try open(file)
        var decoded: [Int32] = []
        XCTAssertThrowsError(try { while let block = try decoder.nextBlock() { decoded += block } }()) { error in
            XCTAssertEqual((error as? DecodeError)?.reason, .truncated(decodedFrames: 30000, expectedFrames: 44100))
        }
        XCTAssertEqual(decoded, leftJustified(Array(samples[..<60000]), bits: 16))
    }

    func testBadFilesFailWithTheirCause() throws {
        let comm = PCMFixtures.comm(channels: 2, frames: 16, bits: 16, sampleRate: 44100)
        let ssnd = PCMFixtures.ssnd([UInt8](repeating: 0, count: 64))
        var random = SeededRandom(seed: 11)
        let cases: [(String, [UInt8], String)] = [
            ("empty.aiff", [], "empty file"),
            ("form.aiff", Array("FORM".utf8), "not an AIFF file (its FORM header ends after 4 bytes)"),
            ("8svx.aiff", Array("FORM".utf8) + PCMFixtures.be32(100) + Array("8SVX".utf8) + [UInt8](repeating: 0, count: 100),
             "not an AIFF file (an IFF file of type '8SVX')"),
            ("random.aiff", (0..<4096).map { _ in UInt8(truncatingIfNeeded: random.next()) }, "not an AIFF file (no 'FORM'…'AIFF' header)"),
            ("comm4g.aiff", PCMFixtures.aiff(Array("COMM".utf8) + PCMFixtures.be32(0xFFFF_FFF0) + Array(comm[8...]), ssnd),
             "'COMM' chunk claims 4294967280 bytes, past the end of the file"),
            ("past-end.aiff", PCMFixtures.aiff(PCMFixtures.iffChunk("MARK", [0, 0], size: 5_000_000), comm, ssnd),
             "'MARK' chunk at byte 12 claims 5000000 bytes, past the end of the file"),
            ("zero-channels.aiff", PCMFixtures.aiff(PCMFixtures.comm(channels: 0, frames: 16, bits: 16, sampleRate: 44100), ssnd),
             "'COMM' chunk gives 0 channels"),
            ("zero-rate.aiff", PCMFixtures.aiff(PCMFixtures.comm(channels: 2, frames: 16, bits: 16, sampleRate: 0), ssnd),
             "'COMM' chunk gives sample rate 0"),
            ("zero-bits.aiff", PCMFixtures.aiff(PCMFixtures.comm(channels: 2, frames: 16, bits: 0, sampleRate: 44100), ssnd),
             "'COMM' chunk gives 0 bits a sample"),
            ("40-bits.aiff", PCMFixtures.aiff(PCMFixtures.comm(channels: 2, frames: 16, bits: 40, sampleRate: 44100), ssnd),
             "unsupported: 40-bit AIFF samples"),
            ("short-comm.aiff", PCMFixtures.aiff(PCMFixtures.iffChunk("COMM", [0, 2, 0, 0]), ssnd), "'COMM' chunk of 4 bytes (at least 18)"),
            ("short-aifc.aiff", PCMFixtures.aiff(type: "AIFC", comm, ssnd), "'COMM' chunk of 18 bytes (at least 22)"),
            ("bad-offset.aiff", PCMFixtures.aiff(comm, PCMFixtures.iffChunk("SSND", PCMFixtures.be32(1000) + PCMFixtures.be32(0))),
             "'SSND' offset 1000 is past its chunk's 8 bytes"),
            ("no-ssnd.aiff", PCMFixtures.aiff(comm), "no 'SSND' chunk"),
            ("no-comm.aiff", PCMFixtures.aiff(ssnd), "no 'COMM' chunk"),
            ("no-frames.aiff", PCMFixtures.aiff(PCMFixtures.comm(channels: 2, frames: 0, bits: 16, sampleRate: 44100), ssnd), "no audio frames"),
            ("tiny-chunks.aiff", PCMFixtures.aiff([UInt8](Array(repeating: Array("MARK".utf8) + [0, 0, 0, 0], count: 120_000).joined()), comm, ssnd),
             "no 'COMM' chunk in the first 100000 chunks"),
        ]
        for (name, bytes, cause) in cases {
            let file = path(name)
            try PCMFixtures.write(bytes, to: file)
            XCTAssertThrowsError(try open(file), name) { error in
                XCTAssertTrue("\(error)".hasPrefix(file + ": "), "\(error)")
                XCTAssertTrue("\(error)".contains(cause), "\(error) should say \(cause)")
            }
        }
    }

    func testTheRegistryFindsAnAIFFByItsBytesWhateverItsName() throws {
        let samples = PCMFixtures.signal(frames: 2000, channels: 2, bits: 16)
        let file = path("sound.dat")
        try PCMFixtures.sox(samples, bits: 16, channels: 2, sampleRate: 44100, to: file, type: "aiff")
        XCTAssertEqual(try decodeAll(Decoders.open(path: file)), leftJustified(samples, bits: 16))
        for name in ["a.aif", "a.AIFF", "a.aifc"] { XCTAssertTrue(Decoders.plugIn(forName: name) == AIFFDecoder.self, name) }
        XCTAssertEqual(AIFFDecoder.name, "sndfile")
    }

    private func packBigEndian16(_ samples: [Int32]) -> [UInt8] { PCMFixtures.packBigEndian(samples, bytesPerSample: 2) }
}
