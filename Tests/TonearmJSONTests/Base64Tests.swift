import TonearmJSON
import XCTest

final class Base64Tests: XCTestCase {
    /// RFC 4648 section 10's test vectors, both ways.
    func testTheRFCVectors() {
        let vectors = [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64.encode(Array(plain.utf8)), encoded)
            XCTAssertEqual(Base64.decode(encoded), Array(plain.utf8), encoded)
        }
    }

    func testEveryByteValueRoundTrips() {
        var bytes = (0...255).map { UInt8($0) }
        for length in [0, 1, 2, 3, 254, 255, 256] {
            bytes = (0..<length).map { UInt8(($0 * 7 + 3) & 0xFF) }
            XCTAssertEqual(Base64.decode(Base64.encode(bytes)), bytes, "\(length) bytes")
        }
    }

    func testMalformedTextIsRefused() {
        for text in ["Zg=", "Zg", "Z===", "Zm9v!A==", "Zg==Zg==", "Zm 9v", "=Zm9", "Zm=v"] {
            XCTAssertNil(Base64.decode(text), text)
        }
    }
}
