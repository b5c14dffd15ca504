import Foundation
import TestSupport
import XCTest

/// The measuring instruments, checked against independent tools before anything relies on them.
final class TestSupportTests: XCTestCase {
    /// A capture whose writer died keeps a data size of 0 or 0xFFFFFFFF: the rest of the file counts.
    func testWAVDataSizeRepair() throws {
        let samples: [Int32] = [1, -1, 32767, -32768, 1234, -4321]
        let body = packLittleEndian(samples, bytesPerSample: 2, shift: 0)
        for size in [0, 0xFFFF_FFFF, 1_000_000] {
            var bytes = WAVFile.header(channels: 2, sampleRate: 44100, containerBits: 16, validBits: 16, dataBytes: body.count) + body
            let sizeOffset = bytes.count - body.count - 4
            for i in 0..<4 { bytes[sizeOffset + i] = UInt8((size >> (8 * i)) & 0xFF) }
            let wav = try WAVFile(bytes: bytes + [0x7F])  // and half a sample of junk at the end
            XCTAssertTrue(wav.dataSizeRepaired, "size \(size)")
            XCTAssertEqual(wav.frames, 3, "size \(size)")
            XCTAssertEqual(try wav.samples(), samples.map { $0 << 16 }, "size \(size)")
        }
    }

    /// 12-bit samples in an extensible WAV (16-bit container) come out as v << 20; 24-bit
    /// ones in 3 bytes as v << 8.
    func testWAVLeftJustification() throws {
        let twelve: [Int32] = [2047, -2048, 5, -948]
        let body12 = packLittleEndian(twelve, bytesPerSample: 2, shift: 4)
        let wav12 = try WAVFile(bytes: WAVFile.header(channels: 1, sampleRate: 8000, containerBits: 16, validBits: 12,
                                                      dataBytes: body12.count) + body12)
        XCTAssertEqual(wav12.validBitsPerSample, 12)
        XCTAssertEqual(try wav12.samples(), twelve.map { $0 << 20 })
        let twentyFour: [Int32] = [8_388_607, -8_388_608, -1, 0x123456]
        let body24 = packLittleEndian(twentyFour, bytesPerSample: 3, shift: 0)
        let wav24 = try WAVFile(bytes: WAVFile.header(channels: 2, sampleRate: 8000, containerBits: 24, validBits: 24,
                                                      dataBytes: body24.count) + body24)
        XCTAssertEqual(wav24.alsaFormatName, "S24_3LE")
        XCTAssertEqual(try wav24.samples(), twentyFour.map { $0 << 8 })
    }

    /// STREAMINFO as FLACBytes reads it agrees with metaflac, and edits land where metaflac looks.
    func testStreamInfoFieldsAgreeWithMetaflac() throws {
        guard toolsAvailable("flac", "metaflac") else { throw XCTSkip("flac is not installed; run ./scripts/setup") }
        let directory = try TemporaryDirectory()
        let path = try FLACFixture(frames: 12345, sampleRate: 96000, channels: 3, bitsPerSample: 20, blockSize: 2048)
            .write(to: directory.file("x.flac"))
        func metaflac() throws -> [String] {
            try runChecked("metaflac", ["--show-min-blocksize", "--show-max-blocksize", "--show-sample-rate",
                                        "--show-channels", "--show-bps", "--show-total-samples", path])
                .stdout.split(separator: "\n").map(String.init)
        }
        var bytes = try FLACBytes(path: path)
        XCTAssertEqual(try metaflac(), ["\(bytes.minBlockSize)", "\(bytes.maxBlockSize)", "\(bytes.sampleRate)",
                                        "\(bytes.channels)", "\(bytes.bitsPerSample)", "\(bytes.totalSamples)"])
        XCTAssertEqual([bytes.sampleRate, bytes.channels, bytes.bitsPerSample, bytes.totalSamples], [96000, 3, 20, 12345])
        bytes.maxBlockSize = 16
        bytes.channels = 6
        bytes.bitsPerSample = 24
        bytes.sampleRate = 44100
        try bytes.write(to: path)
        XCTAssertEqual(try metaflac(), ["2048", "16", "44100", "6", "24", "12345"])
        XCTAssertEqual(try bytes.metadataBlocks().first?.type, 0)
    }

    /// The generator is deterministic and honours its bit depth.
    func testFixtureSamples() {
        for bits in [8, 12, 16, 20, 24, 32] {
            let fixture = FLACFixture(frames: 2000, channels: 2, bitsPerSample: bits, tones: [Tone(440, level: 0.9)], noiseLevel: 0.2)
            let samples = fixture.samples()
            XCTAssertEqual(samples, fixture.samples(), "\(bits)-bit: not deterministic")
            let limit = Int64(1) << (bits - 1)
            XCTAssertTrue(samples.allSatisfy { Int64($0) >= -limit && Int64($0) < limit }, "\(bits)-bit: out of range")
            XCTAssertGreaterThan(Int64(samples.map { abs(Int64($0)) }.max() ?? 0), limit / 2, "\(bits)-bit: too quiet")
            XCTAssertNotEqual(Array(samples[0..<100].enumerated().filter { $0.offset % 2 == 0 }.map(\.element)),
                              Array(samples[0..<100].enumerated().filter { $0.offset % 2 == 1 }.map(\.element)),
                              "\(bits)-bit: channels are identical")
        }
    }

    /// The Goertzel meter reads a known tone's level and ignores others.
    func testToneAmplitude() {
        let samples = (0..<48000).map { Float(0.25 * sin(2 * Double.pi * 1000 * Double($0) / 48000)) }
        XCTAssertEqual(toneAmplitude(samples, channel: 0, channels: 1, sampleRate: 48000, frequency: 1000), 0.25, accuracy: 0.001)
        XCTAssertLessThan(toneAmplitude(samples, channel: 0, channels: 1, sampleRate: 48000, frequency: 1250), 0.001)
    }

    func testPlaySummaryParsing() {
        let stderr = "[1/3] x\nCannot connect to server socket\nplayed 3 files in 3.02 s: 1 underruns, 2 device losses\n"
        XCTAssertEqual(PlaySummary(stderr: stderr), PlaySummary(files: 3, seconds: 3.02, underruns: 1, deviceLosses: 2))
    }
}
