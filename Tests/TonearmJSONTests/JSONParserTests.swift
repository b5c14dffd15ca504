import Foundation
import TonearmJSON
import XCTest

final class JSONParserTests: XCTestCase {
    // MARK: Values

    func testParsesEveryKindAndKeepsKeyOrder() throws {
        let text = #" { "z" : -3, "a":1.5 ,"big":12345678901234567890, "e":1E3, "t":true,"f":false,"n":null, "list":[ 1 ,[ ], {} ], "s":"x" } "#
        XCTAssertEqual(
            try JSONValue.parse(text),
            .object([
                ("z", .int(-3)), ("a", .double(1.5)), ("big", .double(12345678901234567168)), ("e", .double(1000)),
                ("t", .bool(true)), ("f", .bool(false)), ("n", .null),
                ("list", .array([.int(1), .array([]), .object([])])), ("s", .string("x")),
            ]))
    }

    func testScalarsAtTopLevel() throws {
        XCTAssertEqual(try JSONValue.parse("0"), .int(0))
        XCTAssertEqual(try JSONValue.parse("-0"), .int(0))
        XCTAssertEqual(try JSONValue.parse("-0.0"), .double(-0.0))
        XCTAssertEqual(try JSONValue.parse("\"\""), .string(""))
        XCTAssertEqual(try JSONValue.parse("\nnull\t\r "), .null)
        XCTAssertEqual(try JSONValue.parse("2.5e-3"), .double(0.0025))
        XCTAssertEqual(try JSONValue.parse("1e+2"), .double(100))
    }

    func testIntegersThatFitIntStayInts() throws {
        XCTAssertEqual(try JSONValue.parse(String(Int.max)), .int(Int.max))
        XCTAssertEqual(try JSONValue.parse(String(Int.min)), .int(Int.min))
        XCTAssertEqual(try JSONValue.parse("9223372036854775808"), .double(9223372036854775808))
        XCTAssertEqual(try JSONValue.parse("-9223372036854775809"), .double(-9223372036854775808.0))
    }

    func testStringEscapes() throws {
        XCTAssertEqual(
            try JSONValue.parse(#""q\" b\\ s\/ \b\f\n\r\t \u0041\u00e9\u20AC \ud83c\udfb5 \u0000""#),
            .string("q\" b\\ s/ \u{08}\u{0C}\n\r\t Aé€ \u{1F3B5} \u{0}"))
        XCTAssertEqual(try JSONValue.parse("\"Ünïcødé 🎵\""), .string("Ünïcødé 🎵"))
    }

    func testUTF8BytesOverload() throws {
        XCTAssertEqual(try JSONValue.parse(Array("[\"é\"]".utf8)), .array([.string("é")]))
        let bytes: [UInt8] = Array(#"{"k":1}"#.utf8)
        let value = try bytes.withUnsafeBufferPointer { (buffer) throws(JSONParseError) in try JSONValue.parse(buffer) }
        XCTAssertEqual(value["k"], .int(1))
    }

    // MARK: Round trips

    func testRoundTripsThroughSerialized() throws {
        let values: [JSONValue] = [
            .null, .bool(true), .int(0), .int(Int.min), .int(Int.max), .double(1.5), .double(-2.25e-8), .double(1e300),
            .string(""), .string("quote \" backslash \\ newline \n bell \u{07} del \u{7F} é 🎵 \u{0}"),
            .array([]), .object([]),
            .object([
                ("title", .string("Kind of Blue")), ("tracks", .array([.int(1), .int(2)])),
                ("nested", .object([("deeper", .array([.object([("x", .null)])]))])),
            ]),
        ]
        for value in values {
            XCTAssertEqual(try JSONValue.parse(value.serialized), value, value.serialized)
        }
    }

    func testAgreesWithFoundation() throws {
        let text = #"{"a":[1,2.5,"x",{"b":null}],"c":"\u00e9\ud83c\udfb5","d":true}"#
        let ours = try JSONValue.parse(text).serialized
        let theirs = try JSONSerialization.jsonObject(with: Data(ours.utf8)) as? NSDictionary
        let original = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary
        XCTAssertEqual(theirs, original)
    }

    // MARK: Accessors

    func testAccessors() throws {
        let value = try JSONValue.parse(#"{"s":"x","i":3,"d":2.0,"h":2.5,"b":true,"a":[1],"o":{"k":null},"n":null}"#)
        XCTAssertEqual(value["s"]?.stringValue, "x")
        XCTAssertEqual(value["i"]?.intValue, 3)
        XCTAssertEqual(value["d"]?.intValue, 2)
        XCTAssertNil(value["h"]?.intValue)
        XCTAssertEqual(value["i"]?.doubleValue, 3)
        XCTAssertEqual(value["h"]?.doubleValue, 2.5)
        XCTAssertEqual(value["b"]?.boolValue, true)
        XCTAssertEqual(value["a"]?.arrayValue, [.int(1)])
        XCTAssertEqual(value["o"]?.objectValue?.first?.0, "k")
        XCTAssertEqual(value["n"]?.isNull, true)
        XCTAssertNil(value["missing"])
        XCTAssertNil(value["s"]?.intValue)
        XCTAssertNil(value["i"]?.stringValue)
        XCTAssertNil(value["i"]?.boolValue)
        XCTAssertNil(JSONValue.int(1)["k"])
        XCTAssertNil(JSONValue.double(1e300).intValue)
    }

    // MARK: Errors

    private func assertError(
        _ text: String, _ kind: JSONParseError.Kind, at offset: Int, _ message: String? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        assertError(Array(text.utf8), kind, at: offset, message, file: file, line: line)
    }

    private func assertError(
        _ bytes: [UInt8], _ kind: JSONParseError.Kind, at offset: Int, _ message: String? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        do {
            let value = try JSONValue.parse(bytes)
            XCTFail("parsed \(value.serialized)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.kind, kind, error.description, file: file, line: line)
            XCTAssertEqual(error.offset, offset, error.description, file: file, line: line)
            XCTAssertTrue(error.description.contains("at byte \(offset)"), error.description, file: file, line: line)
            if let message { XCTAssertEqual(error.description, message, file: file, line: line) }
        }
    }

    func testStructuralErrorsNameWhatAndWhere() {
        assertError(#"{"a":1 "b":2}"#, .unexpectedCharacter, at: 7, "expected ',' or '}' at byte 7, found '\"'")
        assertError("[1,2,]", .unexpectedCharacter, at: 5, "expected a value at byte 5, found ']'")
        assertError(#"{"a":1,}"#, .unexpectedCharacter, at: 7, "expected a string key at byte 7, found '}'")
        assertError("{a:1}", .unexpectedCharacter, at: 1)
        assertError("{'a':1}", .unexpectedCharacter, at: 1)
        assertError(#"{"a" 1}"#, .unexpectedCharacter, at: 5, "expected ':' at byte 5, found '1'")
        assertError("[1 2]", .unexpectedCharacter, at: 3, "expected ',' or ']' at byte 3, found '2'")
        assertError("[1] [2]", .trailingCharacters, at: 4)
        assertError("// note\n1", .unexpectedCharacter, at: 0)
        assertError("[1 /* c */]", .unexpectedCharacter, at: 3)
        assertError("NaN", .unexpectedCharacter, at: 0)
        assertError("-Infinity", .invalidNumber, at: 1)
        assertError("tru", .unexpectedEnd, at: 0)
        assertError("trve", .unexpectedCharacter, at: 0, "expected 'true' at byte 0, found 'v'")
        assertError("\u{FEFF}1", .unexpectedCharacter, at: 0)
    }

    func testEndOfInput() {
        assertError("", .unexpectedEnd, at: 0, "expected a value at byte 0, found end of input")
        assertError("   ", .unexpectedEnd, at: 3)
        assertError(#"{"a":"#, .unexpectedEnd, at: 5)
        assertError("[1,", .unexpectedEnd, at: 3)
        assertError(#"{"a":1"#, .unexpectedEnd, at: 6, "expected ',' or '}' at byte 6, found end of input")
        assertError(#""abc"#, .unexpectedEnd, at: 4)
        assertError(#""\"#, .unexpectedEnd, at: 2)
        assertError(#""\u12"#, .unexpectedEnd, at: 5)
    }

    func testNumberErrors() {
        assertError("01", .invalidNumber, at: 0, "a number must not have a leading zero at byte 0")
        assertError("-", .unexpectedEnd, at: 1)
        assertError("-a", .invalidNumber, at: 1)
        assertError("1.", .unexpectedEnd, at: 2)
        assertError("1.e5", .invalidNumber, at: 2)
        assertError(".5", .unexpectedCharacter, at: 0)
        assertError("1e", .unexpectedEnd, at: 2)
        assertError("1e+", .unexpectedEnd, at: 3)
        assertError("+1", .unexpectedCharacter, at: 0)
        assertError("0x10", .trailingCharacters, at: 1)
        assertError("[1e400]", .numberOutOfRange, at: 1)
        assertError("-1e400", .numberOutOfRange, at: 0)
    }

    func testStringErrors() {
        assertError(#""\x""#, .invalidEscape, at: 1, #"invalid escape '\x' in a string at byte 1"#)
        assertError(#""\u12G4""#, .invalidEscape, at: 1)
        assertError(#""\ud83c""#, .unpairedSurrogate, at: 1, #"unpaired surrogate \uD83C at byte 1"#)
        assertError(#""\ud83cx""#, .unpairedSurrogate, at: 1)
        assertError(#""\ud83c\u0041""#, .unpairedSurrogate, at: 1)
        assertError(#""a\udfb5""#, .unpairedSurrogate, at: 2)
        assertError("\"a\nb\"", .controlCharacter, at: 2, #"control character 0x0A in a string (escape it as \n) at byte 2"#)
        assertError("\"\t\"", .controlCharacter, at: 1)
        assertError(#"{"k":1,"k":2}"#, .duplicateKey, at: 7, #"duplicate key "k" at byte 7"#)
    }

    func testDuplicateKeysInLargeObjects() {
        let members = (0..<40).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        XCTAssertEqual(try JSONValue.parse("{\(members)}")["k39"], .int(39))
        let duplicated = "{\(members),\"k3\":0}"
        assertError(duplicated, .duplicateKey, at: duplicated.utf8.count - 7)
    }

    func testInvalidUTF8() {
        let cases: [([UInt8], Int)] = [
            ([0x22, 0xFF, 0x22], 1),  // never valid
            ([0x22, 0x61, 0xC3, 0x22], 2),  // lead without continuation
            ([0x22, 0xC0, 0xAF, 0x22], 1),  // overlong '/'
            ([0x22, 0xE0, 0x80, 0xAF, 0x22], 1),  // overlong
            ([0x22, 0xED, 0xA0, 0x80, 0x22], 1),  // encoded surrogate
            ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1),  // above U+10FFFF
            ([0x22, 0xE2, 0x82], 1),  // truncated at the end
            ([0x22, 0x80, 0x22], 1),  // lone continuation
            ([0x5B, 0xFF, 0x5D], 1),  // outside a string
        ]
        for (bytes, offset) in cases { assertError(bytes, .invalidUTF8, at: offset) }
    }

    func testNestingLimit() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        XCTAssertNoThrow(try JSONValue.parse(ok))
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        assertError(deep, .tooDeep, at: 64, "arrays and objects nested deeper than 64 at byte 64")
        let objects = String(repeating: #"{"a":"#, count: 100_000)
        assertError(objects, .tooDeep, at: 64 * 5)
        XCTAssertNoThrow(try JSONValue.parse("[[[1]]]", maxDepth: 3))
        XCTAssertThrowsError(try JSONValue.parse("[[[1]]]", maxDepth: 2))
    }

    // MARK: Robustness

    /// Random bytes, and valid documents with bytes flipped, cut or inserted: the parser must
    /// answer (a value or an error with an offset inside the input) and never crash; what it
    /// accepts must survive a round trip.
    func testRandomInputNeverCrashes() {
        var generator = SplitMix64(seed: 0x70AE_A2E1)
        let seeds = [
            #"{"id":1,"command":"play","path":"Kind of Blue/01 So What.flac","seconds":12.5}"#,
            #"[true,false,null,-0.5e+3,"\u00e9\ud83c\udfb5\n",{"a":[{}]}]"#,
            "{\"t\":\"Ünïcødé 🎵\",\"n\":[1,2,3]}",
        ].map { Array($0.utf8) }
        let interesting: [UInt8] = Array(#"{}[]",:\u0123456789eE+-.tfnrl "#.utf8) + [0x00, 0x0A, 0x80, 0xBF, 0xC3, 0xED, 0xF0, 0xFF]
        var accepted = 0
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 4 == 0 {
                bytes = (0..<Int(generator.next() % 64)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            } else {
                bytes = seeds[round % seeds.count]
                for _ in 0...(generator.next() % 4) {
                    let position = Int(generator.next() % UInt64(bytes.count + 1))
                    let byte = interesting[Int(generator.next() % UInt64(interesting.count))]
                    switch generator.next() % 4 {
                    case 0 where position < bytes.count: bytes[position] = byte
                    case 1: bytes.insert(byte, at: position)
                    case 2 where position < bytes.count: bytes.remove(at: position)
                    default: bytes.removeLast(bytes.count - position)
                    }
                }
            }
            do {
                let value = try JSONValue.parse(bytes)
                accepted += 1
                let again = try JSONValue.parse(value.serialized)
                XCTAssertEqual(again.serialized, value.serialized)
            } catch {
                XCTAssertTrue((0...bytes.count).contains(error.offset), "\(error) for \(bytes)")
            }
        }
        XCTAssertGreaterThan(accepted, 100, "mutations should leave some documents valid")
    }
}

/// A small deterministic generator, so a failure can be reproduced.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
