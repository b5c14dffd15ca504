import Foundation
import TestSupport
import TonearmAudio
import TonearmDecoding
import TonearmStreams
import XCTest

final class HTTPSourceTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var flac: String!
    private var flacBytes: [UInt8]!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory(prefix: "tonearm-radio")
        flac = directory.file("station.flac")
        let samples = FLACFixture(frames: 44100, sampleRate: 44100, channels: 2, bitsPerSample: 16, seed: 3).samples()
        try LibFLACEncoder.write(samples, to: flac, sampleRate: 44100, channels: 2, bits: 16)
        flacBytes = Array(try Data(contentsOf: URL(fileURLWithPath: flac)))
    }

    override func tearDown() { directory = nil }

    private func options(noData: Int = 10) -> HTTPSource.Options {
        var options = HTTPSource.Options()
        options.noDataTimeoutSeconds = noData
        options.connectTimeoutMilliseconds = 5000
        options.backoff = ReconnectBackoff(first: 0.2, limit: 1)
        return options
    }

    /// Everything `source` gives until the end of its current connection.
    private func readConnection(_ source: HTTPSource) throws -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 3000)
        while true {
            let n = try chunk.withUnsafeMutableBytes { try source.read(into: $0) }
            if n == 0 { return out }
            out += chunk[..<n]
        }
    }

    private func states(_ log: EventLog<StreamEvent>) -> [StreamState] {
        log.events.compactMap { if case .state(let s) = $0 { s } else { nil } }
    }

    func testAStreamOfKnownLengthIsReadToItsEndAndEnds() throws {
        let station = try RadioStation(file: flac)
        let log = EventLog<StreamEvent>()
        let source = HTTPSource(url: station.url("/length"), options: options(), onEvent: log.record)
        XCTAssertEqual(try readConnection(source), flacBytes)
        XCTAssertFalse(try source.nextConnection(), "a stream whose length was said and sent has ended")
        XCTAssertEqual(states(log), [.playing, .finished(nil)])
        let request = try XCTUnwrap(station.requests.first)
        XCTAssertTrue(request.contains("icy=1"), request)
        XCTAssertTrue(request.contains("ua=Tonearm"), request)
        XCTAssertTrue(log.events.contains(.station(StationInfo(name: "Tonearm Test Radio", genre: "Test", contentType: "audio/flac"))))
        XCTAssertEqual(source.mimeType, "audio/flac", "what chooses a decoder when the first bytes do not")
    }

    func testAFastStationReadSlowlyIsPausedAndResumedWithoutLosingAByte() throws {
        // Ten times the buffer: the transfer pauses each time the buffer fills.
        let big = directory.file("big.flac")
        let samples = FLACFixture(frames: 10 * 44100, sampleRate: 44100, channels: 2, bitsPerSample: 16, seed: 5).samples()
        try LibFLACEncoder.write(samples, to: big, sampleRate: 44100, channels: 2, bits: 16)
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: big)))
        var opts = options()
        opts.bufferMilliseconds = 100
        let station = try RadioStation(file: big, arguments: ["--metaint", "5000", "--titles", "Slow - Reader"])
        let source = HTTPSource(url: station.url("/length"), options: opts)
        // Nothing read yet: the buffer fills and the transfer pauses.
        XCTAssertTrue(waitUntil(timeout: 20) { source.pauses > 0 }, "the transfer never paused")
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 700)
        while true {
            let n = try chunk.withUnsafeMutableBytes { try source.read(into: $0) }
            if n == 0 { break }
            out += chunk[..<n]
        }
        XCTAssertGreaterThan(bytes.count, 10 * 128 * 1024)
        XCTAssertEqual(out.count, bytes.count)
        XCTAssertTrue(out == bytes, "the bytes differ")
    }

    func testAStationSlowerThanItsEstimatePlaysBeforeItsPrebufferIsFull() throws {
        // 1411 kbit/s assumed for FLAC: 2 s of it is more than the whole file, which the
        // station sends over about 10 s. The first byte comes after the buffer's time instead.
        let rate = flacBytes.count / 10
        let station = try RadioStation(file: flac, arguments: ["--rate", String(rate)])
        let log = EventLog<StreamEvent>()
        var opts = options()
        opts.bufferMilliseconds = 2000
        let source = HTTPSource(url: station.url(), options: opts, onEvent: log.record)
        XCTAssertGreaterThan(1411 * 1000 / 8 * 2, flacBytes.count)
        let head = try source.readUpTo(4)
        XCTAssertEqual(head, Array(flacBytes[..<4]))
        XCTAssertFalse(log.events.contains { if case .state(.reconnecting) = $0 { true } else { false } },
                       "the first bytes came before the connection ended: \(log.events)")
        source.close()
    }

    func testChunkedTransferAndARedirectGiveTheSameBytes() throws {
        let station = try RadioStation(file: flac)
        for path in ["/chunked", "/redirect", "/stream"] {
            let source = HTTPSource(url: station.url(path), options: options())
            XCTAssertEqual(try readConnection(source), flacBytes, path)
        }
        XCTAssertTrue(station.requests.contains { $0.hasPrefix("REQUEST /stream") })
    }

    func testICYBlocksAreTakenOutAndTitlesToldInOrder() throws {
        let titles = ["Artist One - First", "Guns N' Roses - Don't Cry", "Björk - Jóga"]
        let station = try RadioStation(file: flac, arguments: ["--metaint", "1000", "--title-every", "20", "--titles"] + titles)
        let log = EventLog<StreamEvent>()
        let source = HTTPSource(url: station.url(), options: options(), onEvent: log.record)
        XCTAssertEqual(try readConnection(source), flacBytes)
        let told = log.events.compactMap { if case .title(let t) = $0 { t } else { nil } }
        XCTAssertEqual(told, titles)
        XCTAssertTrue(log.events.contains { if case .station(let s) = $0 { s.metadataInterval == 1000 } else { false } })
    }

    func testLatin1TitlesAreRead() throws {
        let station = try RadioStation(file: flac, arguments: ["--metaint", "4000", "--latin1", "--titles", "Björk - Jóga"])
        let log = EventLog<StreamEvent>()
        let source = HTTPSource(url: station.url(), options: options(), onEvent: log.record)
        XCTAssertEqual(try readConnection(source), flacBytes)
        XCTAssertTrue(log.events.contains(.title("Björk - Jóga")))
    }

    func testAFLACStationDecodesThroughTheFormatBlindOpen() throws {
        let station = try RadioStation(file: flac, arguments: ["--metaint", "777", "--titles", "A - B"])
        let source = HTTPSource(url: station.url(), options: options())
        let decoder = try Decoders.open(source)
        XCTAssertEqual(decoder.info.format, StreamFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16))
        var decoded: [Int32] = []
        while let block = try decoder.nextBlock() { decoded += block }
        let reference = try Decoders.open(path: flac)
        var expected: [Int32] = []
        while let block = try reference.nextBlock() { expected += block }
        XCTAssertEqual(decoded, expected)
    }

    func testA404OnTheFirstConnectionFailsTheStream() throws {
        let station = try RadioStation(file: flac)
        for (path, code) in [("/missing", 404), ("/forbidden", 403)] {
            let log = EventLog<StreamEvent>()
            let source = HTTPSource(url: station.url(path), options: options(), onEvent: log.record)
            XCTAssertThrowsError(try readConnection(source)) { error in
                let message = String(describing: error)
                XCTAssertTrue(message.hasPrefix(station.url(path) + ": cannot open: HTTP \(code)"), message)
            }
            guard case .finished(let failure?) = states(log).last, case .httpStatus(code, _) = failure.reason else {
                return XCTFail("\(path): \(states(log))")
            }
        }
    }

    func testAnUnknownHostFailsAndARefusedConnectionIsTriedAgain() throws {
        let log = EventLog<StreamEvent>()
        let unknown = HTTPSource(url: "http://no-such-station.invalid/stream", options: options(), onEvent: log.record)
        XCTAssertThrowsError(try readConnection(unknown)) { XCTAssertTrue(String(describing: $0).contains("unknown host"), "\($0)") }

        // A port nothing listens on: the station may be restarting, so it is tried again.
        let station = try RadioStation(file: flac)
        let url = station.url()
        station.kill()
        let refused = EventLog<StreamEvent>()
        let source = HTTPSource(url: url, options: options(), onEvent: refused.record)
        XCTAssertTrue(refused.wait { events in
            events.contains { if case .state(.reconnecting(2, let e)) = $0, case .refused = e.reason { true } else { false } }
        }, "\(refused.events)")
        try station.start()
        XCTAssertEqual(try readConnection(source), flacBytes)
    }

    func testASilentServerTimesOutAndIsTriedAgain() throws {
        let station = try RadioStation(file: flac)
        let log = EventLog<StreamEvent>()
        let source = HTTPSource(url: station.url("/silent"), options: options(noData: 1), onEvent: log.record)
        XCTAssertTrue(log.wait { events in
            events.contains { if case .state(.reconnecting(1, let e)) = $0, case .timeout = e.reason { true } else { false } }
        }, "\(log.events)")
        // Meanwhile a read waits, and a cancel ends it.
        let done = EventLog<String>()
        let reader = Thread {
            var byte = [UInt8](repeating: 0, count: 1)
            do {
                _ = try byte.withUnsafeMutableBytes { try source.read(into: $0) }
                done.record("returned")
            } catch {
                done.record("threw \(error)")
            }
        }
        reader.start()
        source.cancel()
        XCTAssertTrue(done.wait { !$0.isEmpty })
        XCTAssertEqual(done.events.count, 1)
        XCTAssertTrue(done.events[0].hasPrefix("threw"), done.events[0])
        XCTAssertTrue(source.isCancelled)
    }

    func testAStationKilledAndStartedAgainPlaysAgain() throws {
        // Paced at about the FLAC's own rate, so the kill lands in the middle.
        let station = try RadioStation(file: flac, arguments: ["--rate", "40000"])
        let log = EventLog<StreamEvent>()
        var opts = options()
        opts.bufferMilliseconds = 100
        let source = HTTPSource(url: station.url(), options: opts, onEvent: log.record)
        var first = [UInt8](repeating: 0, count: 5000)
        var got = 0
        while got < first.count {
            got += try first.withUnsafeMutableBytes { try source.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[got...])) }
        }
        station.kill()
        let rest = try readConnection(source)
        XCTAssertLessThan(got + rest.count, flacBytes.count, "the kill cut the stream short")
        XCTAssertEqual(Array(flacBytes[..<(got + rest.count)]), first + rest)
        XCTAssertTrue(log.wait { events in events.contains { if case .state(.reconnecting) = $0 { true } else { false } } })
        try station.start()
        XCTAssertTrue(try source.nextConnection())
        XCTAssertEqual(try readConnection(source), flacBytes, "the new connection's bytes, from the start")
        let seen = states(log)
        let reconnecting = try XCTUnwrap(seen.firstIndex { if case .reconnecting = $0 { true } else { false } })
        XCTAssertEqual(seen.first, .playing)
        XCTAssertTrue(seen[reconnecting...].contains(.playing), "\(seen)")
    }

    func testTheBeginningCanBeReadAgainButNotSoughtPast() throws {
        let station = try RadioStation(file: flac)
        let source = HTTPSource(url: station.url(), options: options())
        let head = try source.readUpTo(64)
        try source.seek(to: 0)
        XCTAssertEqual(try source.readUpTo(64), head)
        XCTAssertThrowsError(try source.seek(to: 1_000_000))
        XCTAssertFalse(source.isSeekable)
    }

    func testASelfSignedCertificateIsRefusedUntilItsCAIsGiven() throws {
        let certificate = directory.file("station.pem")
        let key = directory.file("station.key")
        try runChecked("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                                   "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", certificate])
        let station = try RadioStation(file: flac, certificate: certificate, key: key)
        XCTAssertTrue(station.url().hasPrefix("https://"))
        let log = EventLog<StreamEvent>()
        let refused = HTTPSource(url: station.url("/length"), options: options(), onEvent: log.record)
        XCTAssertThrowsError(try readConnection(refused)) { error in
            XCTAssertTrue(String(describing: error).contains("certificate not trusted"), "\(error)")
        }
        guard case .finished(let failure?) = states(log).last, case .certificate = failure.reason else {
            return XCTFail("\(states(log))")
        }
        var trusting = options()
        trusting.caFile = certificate
        let source = HTTPSource(url: station.url("/length"), options: trusting)
        XCTAssertEqual(try readConnection(source), flacBytes)
    }
}
