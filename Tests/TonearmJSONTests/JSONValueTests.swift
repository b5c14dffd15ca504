import TonearmJSON
import XCTest

final class JSONValueTests: XCTestCase {
    func testSerialisesEveryKindAndKeepsKeyOrder() {
        let value: JSONValue = .object([
            ("z", .int(-3)), ("a", .double(1.5)), ("whole", .double(3)), ("nan", .double(.nan)),
            ("s", .string("quote \" backslash \\ newline \n tab \t bell \u{07} é")),
            ("list", .array([.bool(true), .bool(false), .null])),
        ])
        XCTAssertEqual(
            value.serialized,
            #"{"z":-3,"a":1.5,"whole":3,"nan":null,"s":"quote \" backslash \\ newline \n tab \t bell \u0007 é","list":[true,false,null]}"#)
    }

    func testOptionalsBecomeNull() {
        XCTAssertEqual(JSONValue(nil as String?), .null)
        XCTAssertEqual(JSONValue(nil as Int?), .null)
        XCTAssertEqual(JSONValue(nil as Double?), .null)
        XCTAssertEqual(JSONValue("x" as String?), .string("x"))
    }

    func testOutputParsesWithAStandardParser() throws {
        let value: JSONValue = .object([("title", .string("Ünïcødé \u{1F3B5} \"q\"")), ("n", .int(7))])
        let parsed = try JSONSerialization.jsonObject(with: Data(value.serialized.utf8)) as? [String: Any]
        XCTAssertEqual(parsed?["title"] as? String, "Ünïcødé \u{1F3B5} \"q\"")
        XCTAssertEqual(parsed?["n"] as? Int, 7)
    }

    func testEveryASCIICharacterIsWrittenAsAStandardParserReadsIt() throws {
        for byte in UInt8(0)..<0x80 {
            let text = "a" + String(decoding: [byte], as: UTF8.self) + "b"
            let written = JSONValue.array([.string(text)]).serialized
            let expected: String
            switch byte {
            case 0x22: expected = #"["a\"b"]"#
            case 0x5C: expected = #"["a\\b"]"#
            case 0x0A: expected = #"["a\nb"]"#
            case 0x0D: expected = #"["a\rb"]"#
            case 0x09: expected = #"["a\tb"]"#
            case 0..<0x20:
                let hex = String(byte, radix: 16)
                expected = #"["a\u"# + String(repeating: "0", count: 4 - hex.count) + hex + #"b"]"#
            default: expected = "[\"\(text)\"]"
            }
            XCTAssertEqual(written, expected, "byte \(byte)")
            let parsed = try JSONSerialization.jsonObject(with: Data(written.utf8)) as? [String]
            XCTAssertEqual(parsed, [text], "byte \(byte)")
        }
    }

    func testIntegersAndWholeDoublesAreWrittenInDecimal() {
        let ints = [0, 1, -1, 9, 10, -10, 99, 100, 12345, -98765, Int.max, Int.min, Int.max - 1]
        for i in ints {
            XCTAssertEqual(JSONValue.int(i).serialized, String(i))
        }
        XCTAssertEqual(JSONValue.double(-0.0).serialized, "0")
        XCTAssertEqual(JSONValue.double(-42).serialized, "-42")
        XCTAssertEqual(JSONValue.double(1e15).serialized, String(1e15))
        XCTAssertEqual(JSONValue.double(0.25).serialized, "0.25")
        XCTAssertEqual(JSONValue.double(.infinity).serialized, "null")
    }

    func testTheBytesAreTheTextAndEscapesSitBetweenRuns() {
        let value: JSONValue = .object([("k\"", .string("\"\"x\\y\u{1F}é\n")), ("e", .string(""))])
        XCTAssertEqual(value.serialized, #"{"k\"":"\"\"x\\y\u001fé\n","e":""}"#)
        XCTAssertEqual(value.serializedBytes, Array(value.serialized.utf8))
    }
}
