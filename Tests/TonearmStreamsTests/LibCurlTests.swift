import CCurl
import Foundation
import TestSupport
import TonearmDecoding
@testable import TonearmStreams
import XCTest

final class LibCurlTests: XCTestCase {
    func testAMissingLibcurlFailsTheStreamAtOnceWithOneClearError() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-libcurl")
        let file = directory.file("station.flac")
        try Data(repeating: 0, count: 1000).write(to: URL(fileURLWithPath: file))
        let station = try RadioStation(file: file)
        let log = EventLog<StreamEvent>()
        let url = station.url()
        let source = HTTPSource(url: url, options: HTTPSource.Options(), library: "libcurl-missing.so.9", onEvent: log.record)
        var chunk = [UInt8](repeating: 0, count: 100)
        XCTAssertThrowsError(try chunk.withUnsafeMutableBytes { try source.read(into: $0) }) { error in
            XCTAssertEqual("\(error)", url + ": cannot open: internet radio needs libcurl (libcurl4): "
                + "libcurl-missing.so.9: cannot open shared object file: No such file or directory")
        }
        let why = "libcurl-missing.so.9: cannot open shared object file: No such file or directory"
        XCTAssertEqual(log.events, [.state(.finished(StreamError(url: url, reason: .noLibrary(why))))],
                       "failed for good, not reconnecting")
        XCTAssertTrue(StreamError.Reason.noLibrary(why).isPermanent)
        source.close()
        XCTAssertEqual(station.requests, [], "nothing was asked of the station")
    }

    func testALibraryWithoutCurlsFunctionsIsRefusedAndAFailedLoadIsTriedAgain() throws {
        for _ in 0..<2 {
            XCTAssertThrowsError(try LibCurl.load("libz.so.1")) { error in
                let why = (error as? LibCurl.LoadError)?.why ?? "\(error)"
                XCTAssertTrue(why.contains("undefined symbol: curl_easy_init"), why)
            }
            XCTAssertThrowsError(try LibCurl.load("libcurl-missing.so.9")) { error in
                let why = (error as? LibCurl.LoadError)?.why ?? "\(error)"
                XCTAssertTrue(why.hasPrefix("libcurl-missing.so.9: cannot open shared object file"), why)
            }
        }
    }

    func testLibcurlIsLoadedOnceAndAnswers() throws {
        let first = try LibCurl.load()
        let again = try LibCurl.load()
        XCTAssertEqual(unsafeBitCast(first.easyInit, to: UnsafeRawPointer.self),
                       unsafeBitCast(again.easyInit, to: UnsafeRawPointer.self))
        // libcurl's wording changed over releases ("Couldn't", "Could not"); the subject did not.
        let text = String(cString: first.easyStrerror(CURLE_COULDNT_CONNECT))
        XCTAssertTrue(text.hasSuffix(" connect to server"), text)
        let easy = try XCTUnwrap(first.easyInit())
        defer { first.easyCleanup(easy) }
        XCTAssertEqual(first.setoptLong(easy, CURLOPT_VERBOSE, 0), CURLE_OK)
        XCTAssertEqual(first.setoptPointer(easy, CURLOPT_URL, "http://127.0.0.1/"), CURLE_OK)
        var code = -1
        XCTAssertEqual(first.getinfoLong(easy, CURLINFO_RESPONSE_CODE, &code), CURLE_OK)
        XCTAssertEqual(code, 0, "no response yet")
    }
}
