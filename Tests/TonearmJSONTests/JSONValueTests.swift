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
}
