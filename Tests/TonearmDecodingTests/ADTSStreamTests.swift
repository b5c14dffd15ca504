import Foundation
import TestSupport
import TonearmAudio
import TonearmDecoding
import XCTest

/// ADTS AAC from a source that cannot seek, as an internet radio station sends it: it decodes
/// to exactly what the file of the same bytes gives (the same libfaad), from wherever it starts.
final class ADTSStreamTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        try XCTSkipUnless(toolsAvailable("ffmpeg"), "ffmpeg makes the AAC fixtures")
        directory = try TemporaryDirectory(prefix: "tonearm-adts-stream")
    }

    override func tearDown() { directory = nil }

    /// Bytes as a network stream gives them: no length, no seek, and reads of at most `piece`
    /// bytes. `rewind` lets a reader go back over what it read, as `HTTPSource` does for the
    /// first bytes a decoder is chosen by; without it any seek fails.
    private final class StreamBytes: ByteSource {
        let name: String
        let bytes: [UInt8]
        let piece: Int
        let rewind: Bool
        let mimeType: String?
        private(set) var offset: UInt64 = 0
        private(set) var atEnd = false
        private(set) var reads = 0

        init(_ bytes: [UInt8], name: String = "http://127.0.0.1/stream", piece: Int = 1000, rewind: Bool = false,
             mimeType: String? = nil) {
            self.bytes = bytes
            self.mimeType = mimeType
            self.name = name
            self.piece = piece
            self.rewind = rewind
        }

        var isSeekable: Bool { false }
        var length: UInt64? { nil }

        func read(into buffer: UnsafeMutableRawBufferPointer) throws(DecodeError) -> Int {
            reads += 1
            let n = min(buffer.count, piece, bytes.count - Int(offset))
            if n > 0 { buffer.copyBytes(from: bytes[Int(offset)..<(Int(offset) + n)]) }
            offset += UInt64(n)
            atEnd = n == 0
            return n
        }

        func seek(to target: UInt64) throws(DecodeError) {
            guard rewind, target <= offset else { throw DecodeError(path: name, reason: .decoder("a live stream cannot seek to byte \(target)")) }
            offset = target
            atEnd = false
        }
    }

    /// `frames` of the test signal encoded by ffmpeg's AAC-LC encoder straight to ADTS, without
    /// perceptual noise substitution (libfaad's noise generator starts anew with a decoder).
    private func adts(_ name: String, frames: Int, channels: Int = 2, sampleRate: Int = 44100, seed: UInt64 = 5) throws -> String {
        try MP4Fixtures.encode(MP4Fixtures.signal(frames: frames, channels: channels, sampleRate: sampleRate, seed: seed),
                               to: directory.file(name), codec: "aac", sampleRate: sampleRate, channels: channels,
                               arguments: ["-aac_pns", "0", "-f", "adts"])
    }

    private func contents(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }

    /// Where each frame starts, by the lengths in the headers.
    private func frameStarts(_ bytes: [UInt8]) -> [Int] {
        var starts: [Int] = []
        var at = 0
        while at + 7 <= bytes.count, bytes[at] == 0xFF, bytes[at + 1] & 0xF6 == 0xF0 {
            starts.append(at)
            at += Int(bytes[at + 3] & 3) << 11 | Int(bytes[at + 4]) << 3 | Int(bytes[at + 5] >> 5)
        }
        return starts
    }

    /// All blocks, and the error that ended them, if any.
    private func decodeAll(_ decoder: any AudioDecoder) -> (samples: [Int32], error: DecodeError?) {
        var out: [Int32] = []
        do throws(DecodeError) {
            while let block = try decoder.nextBlock() { out.append(contentsOf: block) }
            return (out, nil)
        } catch {
            return (out, error)
        }
    }

    /// The one DecodeError opening `bytes` as a stream gives (nil if it opens).
    private func openError(_ bytes: [UInt8], name: String = "http://127.0.0.1/stream") -> DecodeError? {
        do throws(DecodeError) {
            _ = try MP4Decoder.open(StreamBytes(bytes, name: name), keepPictureData: false)
            return nil
        } catch {
            return error
        }
    }

    func testAStreamDecodesToTheSameSamplesAsTheFile() throws {
        // Stereo at 44.1 kHz, and mono at 22.05 kHz, whose rate libfaad doubles (a core rate
        // HE-AAC may use): the stream and the file say the same rate and give the same frames.
        for (channels, rate) in [(2, 44100), (1, 22050)] {
            let file = try adts("lc-\(channels)-\(rate).aac", frames: 3 * rate + 111, channels: channels, sampleRate: rate)
            let fromFile = try Decoders.open(path: file)
            let expected = decodeAll(fromFile)
            XCTAssertNil(expected.error)
            let outputRate = rate <= 24000 ? 2 * rate : rate
            XCTAssertEqual(fromFile.info.format, StreamFormat(sampleRate: outputRate, channels: channels, bitsPerSample: 16))
            let indexed = try MP4Decoder.metadata(FileSource(path: file))
            XCTAssertEqual(indexed.format, fromFile.info.format, "a library scan says the rate the frames play at")

            // Chosen by its first bytes, as a station's stream is, read in small pieces.
            let source = StreamBytes(try contents(file), rewind: true)
            let stream = try Decoders.open(source)
            XCTAssertEqual(stream.info.codec, "AAC")
            XCTAssertEqual(stream.info.format, fromFile.info.format)
            XCTAssertNil(stream.info.totalFrames, "a stream has no length")
            XCTAssertEqual(stream.position, 0)
            let streamed = decodeAll(stream)
            XCTAssertNil(streamed.error)
            XCTAssertEqual(streamed.samples.count, expected.samples.count)
            XCTAssertTrue(streamed.samples == expected.samples, "\(channels) ch \(rate) Hz: the file's samples")
            XCTAssertEqual(stream.position, expected.samples.count / channels)
            XCTAssertGreaterThan(source.reads, 20, "read as it comes, not at once")
        }
    }

    func testAStreamCannotSeekButStaysWhereItIs() throws {
        let file = try adts("seek.aac", frames: 20000)
        let stream = try MP4Decoder.open(StreamBytes(try contents(file)), keepPictureData: false)
        XCTAssertNoThrow(try stream.seek(toFrame: 0), "where it is")
        let first = try XCTUnwrap(try stream.nextBlock())
        XCTAssertEqual(stream.position, first.count / 2)
        for target in [0, 5000, stream.position + 1] {
            XCTAssertThrowsError(try stream.seek(toFrame: target)) { error in
                XCTAssertEqual((error as? DecodeError)?.reason, .seekFailed(frame: target))
            }
        }
        XCTAssertNotNil(try stream.nextBlock(), "a refused seek leaves it playing on")
    }

    /// A reconnection starts anywhere: the first whole frame confirmed by the next is where the
    /// stream starts, and from the frame after it (libfaad's first gives nothing) the samples
    /// are the file's.
    func testAStreamStartingMidFrameResyncsAndThenEqualsTheFile() throws {
        let file = try adts("mid.aac", frames: 2 * 44100)
        let bytes = try contents(file)
        let starts = frameStarts(bytes)
        XCTAssertEqual(starts.count, (2 * 44100 + 1024 + 1023) / 1024, "ffmpeg's priming, the music, the padding")
        let all = decodeAll(try Decoders.open(path: file)).samples
        for dropped in [1, 7, 100, starts[3], starts[10] + 2, starts[40] - 1] {
            let k = try XCTUnwrap(starts.firstIndex { $0 >= dropped })
            let stream = try MP4Decoder.open(StreamBytes(Array(bytes[dropped...])), keepPictureData: false)
            let streamed = decodeAll(stream)
            XCTAssertNil(streamed.error, "starting mid-frame is no error: \(dropped)")
            let expected = Array(all[(k * 1024 * 2)...])
            XCTAssertEqual(streamed.samples.count, expected.count, "from frame \(k + 1) on, after dropping \(dropped) bytes")
            XCTAssertTrue(streamed.samples == expected, "the file's samples from frame \(k + 1), after dropping \(dropped) bytes")
        }
    }

    /// A station's URL often has no suffix, and a reconnection can start in the middle of a
    /// frame that no plug-in recognises: the server's Content-Type chooses the decoder then.
    func testAStationStartingMidFrameIsChosenByItsContentType() throws {
        let wav = try EncodedFixtures.signalWAV(frames: 2 * 44100, to: directory.file("station.wav"))
        let mp3 = directory.file("station.mp3")
        try runChecked("lame", ["--quiet", "-b", "128", wav, mp3])
        let stations: [(file: String, type: String, plugIn: any DecoderPlugIn.Type)] = [
            (try adts("station.aac", frames: 2 * 44100), "audio/aacp", MP4Decoder.self),
            (mp3, "audio/mpeg", MP3Decoder.self),
        ]
        for station in stations {
            let bytes = Array(try contents(station.file)[1001...])
            let url = "http://radio.example/live"
            XCTAssertThrowsError(try Decoders.plugIn(for: StreamBytes(bytes, name: url, rewind: true))) { error in
                XCTAssertEqual((error as? DecodeError)?.reason, .unrecognised, "\(station.type): mid-frame bytes alone say nothing")
            }
            let source = StreamBytes(bytes, name: url, rewind: true, mimeType: "  \(station.type.uppercased()); charset=x")
            XCTAssertTrue(try Decoders.plugIn(for: source) == station.plugIn, station.type)
            let decoded = decodeAll(try Decoders.open(StreamBytes(bytes, name: url, rewind: true, mimeType: station.type)))
            XCTAssertNil(decoded.error, station.type)
            XCTAssertGreaterThan(decoded.samples.count, 2 * 44100, "\(station.type): most of the 2 s play")
        }
    }

    func testGarbageBetweenFramesIsSkippedAndCountedAsLostSync() throws {
        let file = try adts("garbage.aac", frames: 44100)
        let bytes = try contents(file)
        let starts = frameStarts(bytes)
        let all = decodeAll(try Decoders.open(path: file)).samples
        var random = SeededRandom(seed: 9)
        let garbage = (0..<700).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        let spliced = Array(bytes[..<starts[20]]) + garbage + Array(bytes[starts[20]...])
        let streamed = decodeAll(try MP4Decoder.open(StreamBytes(spliced), keepPictureData: false))
        XCTAssertTrue(streamed.samples == all, "every frame plays, as in the file")
        guard case .decodeErrors(let counts)? = streamed.error?.reason else {
            return XCTFail("the skip is counted: \(String(describing: streamed.error))")
        }
        XCTAssertEqual(counts.lostSync, 1)
        XCTAssertEqual(counts.total, 1)

        // A frame cut short (a lost piece of the stream): the frames after it play as the file's
        // once the overlap of the lost one is past.
        let cut = Array(bytes[..<(starts[30] + 150)]) + Array(bytes[starts[31]...])
        let resumed = decodeAll(try MP4Decoder.open(StreamBytes(cut), keepPictureData: false))
        XCTAssertNotNil(resumed.error, "the lost frame is counted")
        let tail = (starts.count - 34) * 1024 * 2
        XCTAssertGreaterThan(resumed.samples.count, tail)
        XCTAssertTrue(Array(resumed.samples.suffix(tail)) == Array(all.suffix(tail)), "the file's samples after the lost frame")

        // A frame cut short at the end is dropped, as a file's is.
        let truncated = Array(bytes[..<(starts[starts.count - 1] + 8)])
        let truncatedFile = directory.file("truncated.aac")
        try Data(truncated).write(to: URL(fileURLWithPath: truncatedFile))
        let fromFile = decodeAll(try Decoders.open(path: truncatedFile))
        let fromStream = decodeAll(try MP4Decoder.open(StreamBytes(truncated), keepPictureData: false))
        XCTAssertNil(fromStream.error)
        XCTAssertTrue(fromStream.samples == fromFile.samples)
        XCTAssertEqual(fromStream.samples.count, (starts.count - 2) * 1024 * 2)
    }

    func testAChangeOfFormatMidStreamIsAFormatChange() throws {
        let first = try contents(try adts("first.aac", frames: 20000))
        let second = try contents(try adts("second.aac", frames: 20000, channels: 1, sampleRate: 48000))
        let expected = decodeAll(try Decoders.open(path: directory.file("first.aac"))).samples
        let streamed = decodeAll(try MP4Decoder.open(StreamBytes(first + second), keepPictureData: false))
        XCTAssertTrue(streamed.samples == expected, "the first format plays to its end")
        guard case .formatChange(let what)? = streamed.error?.reason else {
            return XCTFail("a format change: \(String(describing: streamed.error))")
        }
        XCTAssertTrue(what.contains("44100 Hz 2 ch") && what.contains("48000 Hz 1 ch"), what)
    }

    /// Bad input gives one DecodeError naming the stream, at once: never a hang or a crash.
    func testBadStreamsGiveOneClearError() throws {
        let name = "http://127.0.0.1/bad"
        let bytes = try contents(try adts("bad.aac", frames: 10000))
        let starts = frameStarts(bytes)
        XCTAssertEqual(openError([], name: name)?.reason, .empty)
        var random = SeededRandom(seed: 3)
        let noise = (0..<200_000).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        XCTAssertEqual(openError(noise, name: name)?.reason, .notFormat("not an ADTS AAC stream (no frame in 65536 bytes)"))
        XCTAssertEqual(openError(Array(noise.prefix(3000)), name: name)?.reason, .notFormat("not an ADTS AAC stream (no whole frame)"))
        // A header, then garbage; a header cut short.
        XCTAssertEqual(openError(Array(bytes.prefix(7)) + noise.prefix(5000), name: name)?.reason,
                       .notFormat("not an ADTS AAC stream (no whole frame)"))
        XCTAssertEqual(openError(Array(bytes.prefix(100)), name: name)?.reason, .notFormat("not an ADTS AAC stream (no whole frame)"))
        // One frame, which libfaad only primes with.
        XCTAssertEqual(openError(Array(bytes[..<starts[1]]), name: name)?.reason, .noAudio)
        // An MP4 file needs its boxes, which a stream cannot seek to.
        let m4a = try MP4Fixtures.encode(MP4Fixtures.signal(frames: 5000), to: directory.file("x.m4a"), codec: "aac")
        XCTAssertEqual(openError(try contents(m4a), name: name)?.reason, .unsupported("MP4 from a source that cannot seek"))
        // A program config element for the channels.
        var pce = bytes
        for at in starts { pce[at + 2] &= 0xFE; pce[at + 3] &= 0x3F }
        XCTAssertEqual(openError(pce, name: name)?.reason, .unsupported("ADTS AAC whose channels are set by a program config element"))
        XCTAssertEqual(openError(Array(noise.prefix(3000)), name: name)?.description.hasPrefix(name + ": "), true)

        // An ID3v2 tag claiming 2 GB in front: passed over, the frames play.
        let tagged = Array("ID3".utf8) + [3, 0, 0, 0x7F, 0x7F, 0x7F, 0x7F] + bytes
        let played = decodeAll(try MP4Decoder.open(StreamBytes(tagged), keepPictureData: false))
        XCTAssertNil(played.error)
        XCTAssertEqual(played.samples.count, (starts.count - 1) * 1024 * 2)

        // Damaged at random: it plays what it can, or fails with one DecodeError naming it.
        for _ in 0..<60 {
            var copy = bytes
            for _ in 0..<4 { copy[Int(random.next() % UInt64(copy.count))] = UInt8(truncatingIfNeeded: random.next()) }
            do {
                let decoder = try MP4Decoder.open(StreamBytes(copy, name: name), keepPictureData: false)
                while try decoder.nextBlock() != nil {}
            } catch {
                XCTAssertTrue("\(error)".hasPrefix(name + ": "), "\(error)")
            }
        }
    }
}
