import XCTest
@testable import TonearmLibrary

final class SongMatcherTests: XCTestCase {
    /// Every value of up to four bytes from an alphabet with both cases and the bytes on each
    /// side of the capitals and the small letters, against every part of up to three: in place,
    /// the ASCII comparison answers as lower-casing the value whole and searching it does; with
    /// a byte past ASCII in either it declines (nil).
    func testContainsIgnoringASCIICaseAgreesWithLowercasingWhole() {
        let alphabet: [UInt8] = Array("@AaZz[`{m".utf8)
        func all(upTo length: Int) -> [[UInt8]] {
            var words: [[UInt8]] = [[]], last: [[UInt8]] = [[]]
            for _ in 0..<length {
                last = last.flatMap { word in alphabet.map { word + [$0] } }
                words += last
            }
            return words
        }
        let parts = Set(all(upTo: 3).map { Array(String(decoding: $0, as: UTF8.self).lowercased().utf8) })
        for value in all(upTo: 4) {
            let lowered = Array(String(decoding: value, as: UTF8.self).lowercased().utf8)
            for part in parts {
                let expected = part.isEmpty || (part.count <= lowered.count
                    && (0...(lowered.count - part.count)).contains { Array(lowered[$0..<($0 + part.count)]) == part })
                let found = value.withUnsafeBytes { SongMatcher.containsIgnoringASCIICase($0, String(decoding: part, as: UTF8.self)) }
                XCTAssertEqual(found, expected, "\(value) \(part)")
            }
        }
        XCTAssertNil(Array("Caf\u{E9} Lantern".utf8).withUnsafeBytes { SongMatcher.containsIgnoringASCIICase($0, "lantern") })
        XCTAssertNil(Array("Lantern".utf8).withUnsafeBytes { SongMatcher.containsIgnoringASCIICase($0, "caf\u{E9}") })
        XCTAssertEqual(Array("Lantern".utf8).withUnsafeBytes { SongMatcher.containsIgnoringASCIICase($0, "lanterns") }, false)
    }

    /// A byte past ASCII is seen wherever it lies, in a word read whole or in the bytes after.
    func testIsASCIISeesAHighByteAnywhere() {
        for count in 0...20 {
            let plain = [UInt8](repeating: UInt8(ascii: "a"), count: count)
            XCTAssertTrue(plain.withUnsafeBytes(SongMatcher.isASCII), "\(count)")
            for at in 0..<count {
                for high: UInt8 in [0x80, 0xC3, 0xFF] {
                    var bytes = plain
                    bytes[at] = high
                    XCTAssertFalse(bytes.withUnsafeBytes(SongMatcher.isASCII), "\(high) at \(at) of \(count)")
                }
            }
        }
    }
}
