import Foundation
import TonearmControl
import TonearmJSON
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The client on its own; with a server, see TonearmNetworkTests.
final class ClientTests: XCTestCase {
    func testTheClientSaysWhenNothingListens() throws {
        let directory = try TemporaryDirectory(prefix: "tonearm-socket")
        let path = directory.file("control.sock")
        XCTAssertThrowsError(try ControlClient(path: path)) { error in
            XCTAssertEqual(
                (error as? ControlError)?.description,
                "cannot connect to tonearmd at \(path): No such file or directory (is the daemon running?)")
        }
        try makeStaleSocket(at: path)
        XCTAssertThrowsError(try ControlClient(path: path)) { error in
            XCTAssertEqual(
                (error as? ControlError)?.description,
                "cannot connect to tonearmd at \(path): Connection refused (is the daemon running?)")
        }
    }

    func testAPathTooLongForASocketIsExplained() throws {
        let path = "/tmp/" + String(repeating: "n", count: 120)
        XCTAssertThrowsError(try ControlClient(path: path)) { error in
            XCTAssertEqual(
                (error as? ControlError)?.description,
                "cannot connect to tonearmd at \(path): the path is too long for a Unix socket")
        }
    }
}
