import TonearmStreams
import XCTest

final class ICYMetadataTests: XCTestCase {
    /// A metadata block as a server sends it: the length byte, the text, NUL padding.
    private func block(_ text: [UInt8]) -> [UInt8] {
        let blocks = (text.count + 15) / 16
        return [UInt8(blocks)] + text + [UInt8](repeating: 0, count: blocks * 16 - text.count)
    }

    private func block(_ text: String) -> [UInt8] { block(Array(text.utf8)) }

    /// Feeds `stream` in pieces of the given sizes (cycled) and returns the audio and titles.
    private func demux(_ stream: [UInt8], interval: Int, pieces: [Int]) -> (audio: [UInt8], titles: [String?]) {
        var demuxer = ICYDemuxer(interval: interval)
        var audio: [UInt8] = []
        var titles: [String?] = []
        var at = 0
        var i = 0
        while at < stream.count {
            let n = min(pieces[i % pieces.count], stream.count - at)
            stream[at..<(at + n)].withUnsafeBytes { bytes in
                demuxer.feed(bytes, audio: { audio.append(contentsOf: $0) }, metadata: { titles.append($0.title) })
            }
            at += n
            i += 1
        }
        return (audio, titles)
    }

    func testAudioAndTitlesComeOutWhateverTheReadSizes() {
        let interval = 16
        let audio = (0..<(interval * 5 + 7)).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) }
        let titles = ["A - One", "B - Two", "", "C - Three", "D - Four"]
        var stream: [UInt8] = []
        for (k, chunk) in stride(from: 0, to: audio.count, by: interval).enumerated() {
            let piece = Array(audio[chunk..<min(audio.count, chunk + interval)])
            stream += piece
            if piece.count == interval { stream += block("StreamTitle='\(titles[k])';") }
        }
        // Every split: one byte at a time, blocks cut in the length byte and in the text.
        for pieces in [[1], [2], [3], [5, 1], [16], [17], [33], [7, 11, 13], [stream.count]] {
            let result = demux(stream, interval: interval, pieces: pieces)
            XCTAssertEqual(result.audio, audio, "pieces \(pieces)")
            XCTAssertEqual(result.titles, ["A - One", "B - Two", nil, "C - Three", "D - Four"], "pieces \(pieces)")
        }
    }

    func testALengthOfZeroMeansNoMetadata() {
        let stream: [UInt8] = [1, 2, 3, 4, 0, 5, 6, 7, 8, 0, 9]
        let result = demux(stream, interval: 4, pieces: [1])
        XCTAssertEqual(result.audio, [1, 2, 3, 4, 5, 6, 7, 8, 9])
        XCTAssertEqual(result.titles, [])
    }

    func testQuotesInsideATitleAndOtherKeysAfterIt() {
        XCTAssertEqual(ICYMetadata(block: Array("StreamTitle='Guns N' Roses - Don't Cry';StreamUrl='http://x/';".utf8))?.title,
                       "Guns N' Roses - Don't Cry")
        XCTAssertEqual(ICYMetadata(block: Array("StreamTitle='It';s a ';' title';".utf8))?.title, "It';s a ';' title")
        XCTAssertEqual(ICYMetadata(block: Array("StreamUrl='u';StreamTitle='Second key';".utf8))?.title, "Second key")
        // No closing quote: the rest of the text.
        XCTAssertEqual(ICYMetadata(block: Array("StreamTitle='Cut off".utf8))?.title, "Cut off")
    }

    func testLatin1AndUTF8() {
        XCTAssertEqual(ICYMetadata(block: Array("StreamTitle='Björk - Jóga';".utf8))?.title, "Björk - Jóga")
        // The same in Latin-1: not valid UTF-8, so read as Latin-1.
        let latin1: [UInt8] = Array("StreamTitle='Bj".utf8) + [0xF6] + Array("rk - J".utf8) + [0xF3] + Array("ga';".utf8)
        XCTAssertEqual(ICYMetadata(block: latin1)?.title, "Björk - Jóga")
    }

    func testEmptyTitlesPaddingAndGarbage() {
        XCTAssertEqual(ICYMetadata(block: Array("StreamTitle='';".utf8)), ICYMetadata(title: nil))
        XCTAssertEqual(ICYMetadata(block: Array("StreamTitle='   ';".utf8)), ICYMetadata(title: nil))
        XCTAssertEqual(ICYMetadata(block: block("StreamTitle='Padded';").dropFirst().map { $0 })?.title, "Padded")
        // Without a StreamTitle the title stays as it was.
        XCTAssertNil(ICYMetadata(block: Array("StreamUrl='http://x/';".utf8)))
        XCTAssertNil(ICYMetadata(block: [0xFF, 0xFE, 0x00, 0x41]))
        XCTAssertNil(ICYMetadata(block: []))
        XCTAssertNil(ICYMetadata(block: Array("NotStreamTitle='x';".utf8)))
        // Random bytes of every length never crash and never yield more than a title.
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        for length in 0..<300 {
            var bytes: [UInt8] = []
            for _ in 0..<length {
                seed = seed &* 6364136223846793005 &+ 1442695040888963407
                bytes.append(UInt8(truncatingIfNeeded: seed >> 33))
            }
            _ = ICYMetadata(block: bytes)
            _ = ICYMetadata(block: Array("StreamTitle='".utf8) + bytes)
            let result = demux(bytes, interval: 3, pieces: [1, 4])
            XCTAssertLessThanOrEqual(result.audio.count, bytes.count)
        }
    }

    func testTheLargestBlockAndABlockCutInTheMiddle() {
        let title = String(repeating: "x", count: 255 * 16 - 16)
        let text = Array("StreamTitle='\(title)';".utf8)
        XCTAssertLessThanOrEqual(text.count, 255 * 16)
        let stream: [UInt8] = [1, 2, 255] + text + [UInt8](repeating: 0, count: 255 * 16 - text.count) + [3, 4]
        let result = demux(stream, interval: 2, pieces: [100])
        XCTAssertEqual(result.audio, [1, 2, 3, 4])
        XCTAssertEqual(result.titles, [title])
        // The stream ends inside a block: the audio before it stands, no title.
        let cut = demux(Array(stream[..<1000]), interval: 2, pieces: [100])
        XCTAssertEqual(cut.audio, [1, 2])
        XCTAssertEqual(cut.titles, [])
    }

    func testBackoffDoublesToItsLimitAndStartsAgain() {
        var backoff = ReconnectBackoff()
        XCTAssertEqual((0..<10).map { _ in backoff.take() }, [0.5, 1, 2, 4, 8, 16, 30, 30, 30, 30])
        backoff.reset()
        XCTAssertEqual(backoff.take(), 0.5)
    }

    func testWhichFirstFailuresArePermanent() {
        XCTAssertTrue(StreamError.Reason.httpStatus(404, "Not Found").isPermanent)
        XCTAssertTrue(StreamError.Reason.httpStatus(403, "Forbidden").isPermanent)
        XCTAssertFalse(StreamError.Reason.httpStatus(503, "Service Unavailable").isPermanent)
        XCTAssertTrue(StreamError.Reason.unknownHost("x").isPermanent)
        XCTAssertTrue(StreamError.Reason.certificate("x").isPermanent)
        XCTAssertFalse(StreamError.Reason.refused("x").isPermanent)
        XCTAssertFalse(StreamError.Reason.timeout("x").isPermanent)
        XCTAssertEqual(StreamError(url: "http://h/s", reason: .httpStatus(404, "Not Found")).description,
                       "http://h/s: HTTP 404 Not Found")
    }
}
