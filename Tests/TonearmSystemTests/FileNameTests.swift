import TonearmSystem
import XCTest

final class FileNameTests: XCTestCase {
    func testUTF8NamesAreThemselves() {
        for name in ["", "plain.flac", "Café — Élan/01 ♫.flac", "日本語.flac", "emoji 🎵.flac"] {
            XCTAssertEqual(FileName.string(Array(name.utf8)), name)
            XCTAssertEqual(FileName.bytes(name), Array(name.utf8))
        }
    }

    func testAnyBytesComeBackTheSame() {
        var generator = SystemRandomNumberGenerator()
        let cases: [[UInt8]] = [
            [0x63, 0x61, 0x66, 0xE9],  // Latin-1 "café"
            [0xFF, 0xFE, 0x80],  // no UTF-8 at all
            [0xE2, 0x82],  // a sequence cut short
            [0xC3, 0xA9, 0xE9, 0xC3, 0xA9],  // valid, invalid, valid
            [0xF4, 0x90, 0x80, 0x80],  // beyond U+10FFFF
            [0xED, 0xA0, 0x80],  // a surrogate's encoding
        ] + (0..<200).map { _ in (0..<Int.random(in: 1...24, using: &generator)).map { _ in UInt8.random(in: 1...255, using: &generator) } }
        for raw in cases {
            let name = FileName.string(raw)
            XCTAssertEqual(FileName.bytes(name), raw, "\(raw) → \(name.unicodeScalars.map { String($0.value, radix: 16) })")
            FileName.withPath(name) { pointer in
                XCTAssertEqual(Array(UnsafeBufferPointer(start: pointer, count: raw.count)).map { UInt8(bitPattern: $0) }, raw)
                XCTAssertEqual(pointer[raw.count], 0)
            }
        }
        XCTAssertEqual(FileName.string([0x63, 0x61, 0x66, 0xE9]), "caf\u{10FFE9}")
    }
}
