import Foundation
@testable import TonearmConfig
import XCTest

final class TOMLErrorTests: XCTestCase {
    /// The error `text` is refused with; a test failure when it is accepted.
    func refusal(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> TOMLError? {
        do {
            let doc = try TOMLTable.parse(text)
            XCTFail("accepted: \(doc)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    func assertRefused(
        _ text: String, _ kind: TOMLError.Kind, line: Int, column: Int, _ message: String? = nil,
        file: StaticString = #filePath, sourceLine: UInt = #line
    ) {
        guard let error = refusal(text, file: file, line: sourceLine) else { return }
        XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: sourceLine)
        XCTAssertEqual(error.line, line, "line of \(error)", file: file, line: sourceLine)
        XCTAssertEqual(error.column, column, "column of \(error)", file: file, line: sourceLine)
        if let message {
            XCTAssertTrue(error.message.contains(message), "'\(error.message)' lacks '\(message)'", file: file, line: sourceLine)
        }
    }

    // MARK: Descriptions

    func testDescriptionNamesFileLineAndColumn() {
        do {
            _ = try TOMLTable.parse("a = 1\nb = \"x\\q\"\n", fileName: "board.toml")
            XCTFail("accepted")
        } catch {
            XCTAssertEqual(error.description, #"board.toml:2:7: invalid escape '\q'"#)
        }
        XCTAssertEqual(refusal("a = 1\nb = \"x\\q\"\n")?.description, #"invalid escape '\q' (line 2, column 7)"#)
    }

    // MARK: Redefinition

    func testDuplicateKeys() {
        assertRefused("a = 1\na = 2", .duplicateKey, line: 2, column: 1, "duplicate key 'a' (first defined at line 1)")
        assertRefused("[t]\nx = 1\n\n  x = \"again\"", .duplicateKey, line: 4, column: 3, "duplicate key 'x'")
        assertRefused("a.b = 1\na.b = 2", .duplicateKey, line: 2, column: 3, "duplicate key 'a.b'")
        assertRefused("\"a\" = 1\na = 2", .duplicateKey, line: 2, column: 1)
        assertRefused("t = { a = 1, a = 2 }", .duplicateKey, line: 1, column: 14)
        assertRefused("[a.b]\n[a]\nb = 1", .duplicateKey, line: 3, column: 1)
    }

    func testValuesAreNotTables() {
        assertRefused("a = 1\na.b = 2", .duplicateKey, line: 2, column: 1, "'a' was set at line 1 to an integer, not a table")
        assertRefused("a = 1\n[a]", .duplicateKey, line: 2, column: 2)
        assertRefused("a = 1\n[a.b]", .duplicateKey, line: 2, column: 2)
        assertRefused("a = { x = 1 }\n[a]", .duplicateKey, line: 2, column: 2, "inline table")
        assertRefused("a = { x = 1 }\na.y = 2", .duplicateKey, line: 2, column: 1, "inline table, which cannot be extended")
        assertRefused("a = { x = 1 }\n[a.b]", .duplicateKey, line: 2, column: 2)
        assertRefused("a = [1]\n[[a]]", .duplicateKey, line: 2, column: 3, "only arrays made by [[a]] grow")
        assertRefused("a = [{}]\n[[a]]", .duplicateKey, line: 2, column: 3)
    }

    func testRedefinedTables() {
        assertRefused("[a]\nx = 1\n[a]", .redefinedTable, line: 3, column: 2, "table [a] is defined twice (first at line 1)")
        assertRefused("[a.b]\n[a]\n[a]", .redefinedTable, line: 3, column: 2)
        assertRefused("[ a . \"b c\" ]\n[a.'b c']", .redefinedTable, line: 2, column: 4, #"table [a."b c"]"#)
        assertRefused("a.b = 1\n[a]", .redefinedTable, line: 2, column: 2, "already defined by dotted keys at line 1")
        assertRefused("[fruit]\napple.color = \"red\"\n[fruit.apple]", .redefinedTable, line: 3, column: 8)
        assertRefused("[[a]]\n[a]", .redefinedTable, line: 2, column: 2, "clashes with the array of tables [[a]]")
        assertRefused("[a]\n[[a]]", .redefinedTable, line: 2, column: 3, "clashes with the table [a]")
    }

    func testDottedKeysCannotReopenHeaderTables() {
        // TOML 1.0: dotted keys may not add to a table a header defined or made.
        assertRefused("[a.b]\nz = 9\n[a]\nb.t = 1", .redefinedTable, line: 4, column: 1, "cannot add to table [a.b], which is defined at line 1")
        assertRefused("[a.b.c]\n[a]\nb.c.t = 1", .redefinedTable, line: 3, column: 1)
        assertRefused("[[a.b]]\n[a]\nb.y = 2", .redefinedTable, line: 3, column: 1, "array of tables [[a.b]]")
    }

    // MARK: Dates

    func testDatesAndTimesAreRefusedByName() {
        for (text, column) in [
            ("d = 1979-05-27", 5), ("dt = 1979-05-27T07:32:00Z", 6), ("dt = 1979-05-27 07:32:00", 6),
            ("dt = 1979-05-27T00:32:00.999999-07:00", 6), ("[t]\nx = [1, 07:32:00]", 9),
        ] {
            guard let error = refusal(text) else { continue }
            XCTAssertEqual(error.kind, .unsupportedDate, text)
            XCTAssertTrue(error.message.hasPrefix("dates are not supported"), error.message)
            XCTAssertEqual(error.line, text.contains("\n") ? 2 : 1, text)
            XCTAssertEqual(error.column, column, text)
        }
    }

    // MARK: Strings

    func testBadEscapes() {
        assertRefused(#"s = "a\qb""#, .invalidString, line: 1, column: 7, #"invalid escape '\q'"#)
        assertRefused(#"s = "\x41""#, .invalidString, line: 1, column: 6, #"invalid escape '\x'"#)
        assertRefused(#"s = "\u12""#, .invalidString, line: 1, column: 6, #"\u needs 4 hexadecimal digits"#)
        assertRefused(#"s = "\U0001F3B""#, .invalidString, line: 1, column: 6, #"\U needs 8"#)
        assertRefused(#"s = "\uD800""#, .invalidString, line: 1, column: 6, "not a Unicode scalar value")
        assertRefused(#"s = "\U00110000""#, .invalidString, line: 1, column: 6, #"\U00110000 is not a Unicode scalar value"#)
        assertRefused("s = \"a\\ b\"", .invalidString, line: 1, column: 7, "invalid escape: a backslash followed by ' '")
        assertRefused("s = \"a\\\nb\"", .invalidString, line: 1, column: 7, "invalid escape: a backslash followed by a newline")
        assertRefused("s = \"\"\"a\\ b\"\"\"", .invalidString, line: 1, column: 9)
    }

    func testUnterminatedStrings() {
        assertRefused("s = \"abc", .invalidString, line: 1, column: 5, "unterminated string")
        assertRefused("s = \"abc\nt = 1", .invalidString, line: 1, column: 5, "unterminated string")
        assertRefused("s = 'abc\n'", .invalidString, line: 1, column: 5)
        assertRefused("x = 1\ns = \"\"\"abc\n\ndef\"\"", .invalidString, line: 2, column: 5, "unterminated multi-line string")
        assertRefused("s = '''abc", .invalidString, line: 1, column: 5)
        assertRefused("s = \"abc\\", .invalidString, line: 1, column: 5)
    }

    func testControlCharactersInStringsAndComments() {
        assertRefused("s = \"a\u{01}b\"", .invalidString, line: 1, column: 7, #"control character U+0001 in a string; write it as \u0001"#)
        assertRefused("s = 'a\u{7F}b'", .invalidString, line: 1, column: 7, "U+007F")
        assertRefused("s = \"\"\"a\rb\"\"\"", .invalidString, line: 1, column: 9, "control character U+000D")
        assertRefused("s = \"a\rb\"", .invalidString, line: 1, column: 7, "control character U+000D")
        assertRefused("a = 1 # x\u{00}y", .syntax, line: 1, column: 10, "control character U+0000 in a comment")
        assertRefused("a = 1\r", .syntax, line: 1, column: 6)
    }

    func testMultiLineStringsCannotBeKeys() {
        assertRefused("\"\"\"k\"\"\" = 1", .syntax, line: 1, column: 1, "multi-line")
    }

    // MARK: Numbers

    func testInvalidNumbers() {
        for (token, reason) in [
            ("01", "leading zeros"), ("-01", "leading zeros"), ("00.5", "leading zeros"), ("1__0", "underscore"),
            ("_1", "underscore"), ("1_", "underscore"), ("1_.5", "underscore"), ("0x", "digits are missing"),
            ("-0x1", "a sign is not allowed"), ("+0b1", "a sign is not allowed"), ("0x_1", "underscore"),
            ("1.", "both sides"), (".5", "both sides"), ("-.5", "both sides"), ("1.e5", "both sides"),
            ("1e", "exponent"), ("1e+", "exponent"), ("0b102", "binary digit"), ("0o8", "octal digit"),
            ("0xG", "hexadecimal digit"), ("1.5.2", "decimal digit"), ("+-1", "decimal digit"), ("0X1", "decimal digit"),
            ("1e5.5", "decimal digit"), ("++1", "decimal digit"), ("-", "digits are missing"), ("inf1", "strings need quotes"),
        ] {
            guard let error = refusal("n = \(token)") else { continue }
            XCTAssertTrue(error.kind == .invalidNumber || error.kind == .syntax, "\(token): \(error)")
            XCTAssertEqual(error.column, 5, token)
            XCTAssertTrue(error.message.contains(reason), "\(token): '\(error.message)' lacks '\(reason)'")
        }
    }

    func testNumbersOutOfRange() {
        for token in ["9223372036854775808", "-9223372036854775809", "0xFFFFFFFFFFFFFFFF", "0x8000000000000000", "1e400", "-1e400"] {
            guard let error = refusal("n = \(token)") else { continue }
            XCTAssertEqual(error.kind, .numberOutOfRange, token)
            XCTAssertEqual(error.message, "\(token.contains("e") ? "float" : "integer") '\(token)' is out of range")
        }
    }

    // MARK: Grammar

    func testSyntaxErrors() {
        assertRefused("a 1", .syntax, line: 1, column: 3, "expected '=' after the key 'a', found '1'")
        assertRefused("a =", .syntax, line: 1, column: 4, "expected a value, found the end of the text")
        assertRefused("a =\nb = 1", .syntax, line: 1, column: 4, "expected a value, found a newline")
        assertRefused("a = # nothing", .syntax, line: 1, column: 5, "found '#'")
        assertRefused("device = default", .syntax, line: 1, column: 10, "found 'default' (strings need quotes)")
        assertRefused("a = True", .syntax, line: 1, column: 5)
        assertRefused("a = 1 b = 2", .syntax, line: 1, column: 7, "expected the end of the line, found 'b'")
        assertRefused("= 1", .syntax, line: 1, column: 1, "expected a key, found '='")
        assertRefused("a. = 1", .syntax, line: 1, column: 4, "expected a key")
        assertRefused("a.b.", .syntax, line: 1, column: 5, "found the end of the text")
        assertRefused("ké = 1", .syntax, line: 1, column: 2, "expected '=' after the key 'k', found 'é'")
        assertRefused("[a", .syntax, line: 1, column: 3, "expected ']'")
        assertRefused("[]", .syntax, line: 1, column: 2, "expected a key")
        assertRefused("[[a]", .syntax, line: 1, column: 5, "expected ']]'")
        assertRefused("[[a] ]", .syntax, line: 1, column: 5)
        assertRefused("[a]b = 1", .syntax, line: 1, column: 4, "expected the end of the line")
        assertRefused("x = 1\n\n[a]]", .syntax, line: 3, column: 4)
    }

    func testArrayErrors() {
        assertRefused("a = [1 2]", .syntax, line: 1, column: 8, "expected ',' or ']' in an array, found '2'")
        assertRefused("a = [1,,2]", .syntax, line: 1, column: 8, "expected a value, found ','")
        assertRefused("a = [,]", .syntax, line: 1, column: 6)
        assertRefused("a = [1,\n2\n", .syntax, line: 3, column: 1, "unterminated array (it opens at line 1)")
        assertRefused("a = [\n  1, # ok\n  x\n]", .syntax, line: 3, column: 3, "found 'x'")
    }

    func testInlineTableErrors() {
        assertRefused("t = { a = 1, }", .syntax, line: 1, column: 14, "trailing comma")
        assertRefused("t = { , }", .syntax, line: 1, column: 7)
        assertRefused("t = { a = 1\n}", .syntax, line: 1, column: 12, "must close on the line it opens")
        assertRefused("t = {\na = 1 }", .syntax, line: 1, column: 6)
        assertRefused("t = { a = 1 b = 2 }", .syntax, line: 1, column: 13, "expected ',' or '}' in an inline table")
        assertRefused("t = { a = 1", .syntax, line: 1, column: 12, "unterminated inline table")
        assertRefused("t = { a = 1 # c\n}", .syntax, line: 1, column: 13)
    }

    func testNestingIsBounded() {
        let depth = TOMLTable.maximumDepth
        // At the limit it parses ...
        XCTAssertNoThrow(try TOMLTable.parse("a = " + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1)))
        // ... one deeper it is refused, and garbage far deeper does not exhaust the stack.
        for text in [
            "a = " + String(repeating: "[", count: depth + 1) + String(repeating: "]", count: depth + 1),
            "a = " + String(repeating: "[", count: 50_000),
            "a = " + String(repeating: "{ a = ", count: 20_000),
            "a = " + String(repeating: "[{a=", count: 20_000),
            String(repeating: "a.", count: 20_000) + "a = 1",
            "[" + String(repeating: "a.", count: 20_000) + "a]",
            "[[" + String(repeating: "a.", count: 20_000) + "a]]",
        ] {
            XCTAssertEqual(refusal(text)?.kind, .tooDeep, String(text.prefix(20)))
        }
    }

    func testBytesThatAreNotUTF8() throws {
        for (bytes, line, column) in [
            ([0x61, 0x20, 0x3D, 0x20, 0x22, 0xFF, 0x22] as [UInt8], 1, 6),
            (Array("a = 1\n# caf".utf8) + [0xC3], 2, 6),
            (Array("a = 1\nb = \"é".utf8) + [0xED, 0xA0, 0x80, 0x22], 2, 7),  // an encoded surrogate
            (Array("x = \"".utf8) + [0xC0, 0xAF, 0x22], 1, 6),  // an overlong '/'
        ] {
            do {
                _ = try TOMLTable.parse(bytes: bytes, fileName: nil)
                XCTFail("accepted \(bytes)")
            } catch {
                XCTAssertEqual(error.kind, .invalidUTF8)
                XCTAssertEqual(error.line, line, "\(bytes)")
                XCTAssertEqual(error.column, column, "\(bytes)")
            }
        }
    }

    // MARK: Files

    func testLoadReadsAFileAndNamesItInErrors() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tonearm-toml-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let good = directory.appendingPathComponent("good.toml").path
        try Data("[output]\ndevice = \"hw:0\"\n".utf8).write(to: URL(fileURLWithPath: good))
        XCTAssertEqual(try TOMLTable.load(path: good)["output"]?["device"], "hw:0")

        let bad = directory.appendingPathComponent("bad.toml").path
        try Data("a = 1\na = 2\n".utf8).write(to: URL(fileURLWithPath: bad))
        XCTAssertThrowsError(try TOMLTable.load(path: bad)) { error in
            XCTAssertEqual("\(error)", "\(bad):2:1: duplicate key 'a' (first defined at line 1)")
        }

        let binary = directory.appendingPathComponent("binary.toml").path
        try Data([0x61, 0x3D, 0x22, 0xFE, 0x22]).write(to: URL(fileURLWithPath: binary))
        XCTAssertThrowsError(try TOMLTable.load(path: binary)) { error in
            XCTAssertEqual("\(error)", "\(binary):1:4: the text is not valid UTF-8")
        }

        let large = directory.appendingPathComponent("large.toml").path
        try Data(repeating: 0x23, count: TOMLTable.maximumFileSize + 1).write(to: URL(fileURLWithPath: large))
        XCTAssertThrowsError(try TOMLTable.load(path: large)) { error in
            XCTAssertEqual("\(error)", "cannot read \(large): larger than 1024 KiB, too large for a board profile")
        }

        XCTAssertThrowsError(try TOMLTable.load(path: directory.path)) { error in
            XCTAssertEqual("\(error)", "cannot read \(directory.path): Is a directory")
            XCTAssertEqual((error as? TOMLError)?.kind, .unreadableFile)
            XCTAssertEqual((error as? TOMLError)?.line, 0)
        }
    }

    func testLoadOfAMissingFile() {
        XCTAssertThrowsError(try TOMLTable.load(path: "/nonexistent/tonearm.toml")) { error in
            XCTAssertEqual("\(error)", "cannot read /nonexistent/tonearm.toml: No such file or directory")
        }
    }

    // MARK: Garbage

    /// Random bytes are refused with a place inside the text, never a crash.
    func testRandomBytesAreRefused() {
        var random = SplitMix64(seed: 0x7043_6F6E_6669_67)
        for _ in 0..<3000 {
            let bytes = (0..<Int.random(in: 4...120, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            do {
                let doc = try TOMLTable.parse(bytes: bytes, fileName: nil)
                XCTFail("accepted \(bytes): \(doc)")
            } catch {
                assertPlaced(error, in: bytes)
            }
        }
    }

    /// Soups of TOML's own tokens reach deep into the parser; whatever they are, the parser
    /// answers with a table or a placed error.
    func testTokenSoupNeverCrashes() {
        let tokens = [
            "[", "]", "[[", "]]", "{", "}", "=", ",", ".", "\"", "'", "\"\"\"", "'''", "\\", "\\u", "\\U0001F3B5", "#",
            "\n", "\r\n", "\r", " ", "\t", "a", "b", "1", "0x", "1_0", "e", "+", "-", "inf", "nan", "true", ":", "é", "♫",
            "1979-05-27", "a = ", "[a]", "[[a]]", "a.b = 1", "{ x = 1 }", "\u{0}", "\u{7F}",
        ]
        var random = SplitMix64(seed: 42)
        var accepted = 0
        for _ in 0..<4000 {
            let text = (0..<Int.random(in: 1...24, using: &random)).map { _ in tokens.randomElement(using: &random)! }.joined()
            do {
                _ = try TOMLTable.parse(text)
                accepted += 1
            } catch {
                assertPlaced(error, in: Array(text.utf8))
            }
        }
        XCTAssertGreaterThan(accepted, 0, "the soup should sometimes be valid TOML")
    }

    /// Every prefix of a real profile either parses or is refused with a place.
    func testTruncatedProfilesNeverCrash() {
        let bytes = Array(DaemonConfigTests.fullProfile.utf8)
        for end in 0...bytes.count {
            do {
                _ = try TOMLTable.parse(bytes: Array(bytes[..<end]), fileName: nil)
            } catch {
                assertPlaced(error, in: Array(bytes[..<end]))
            }
        }
    }

    func assertPlaced(_ error: TOMLError, in bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        XCTAssertTrue((1...lines.count).contains(error.line), "\(error) in \(lines.count) lines", file: file, line: line)
        guard (1...lines.count).contains(error.line) else { return }
        XCTAssertTrue((1...lines[error.line - 1].count + 1).contains(error.column), "\(error)", file: file, line: line)
    }
}

/// A small seeded generator, so that a failure found once is found again.
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
