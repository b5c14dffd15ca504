import TonearmConfig
import XCTest

/// Parses `text`, failing the test (not crashing it) when it is refused.
func parseTOML(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> TOMLTable {
    do {
        return try TOMLTable.parse(text)
    } catch {
        XCTFail("refused: \(error)", file: file, line: line)
        return TOMLTable()
    }
}

final class TOMLParserTests: XCTestCase {
    // MARK: Layout

    func testEmptyAndCommentOnlyDocuments() {
        XCTAssertEqual(parseTOML(""), [:])
        XCTAssertEqual(parseTOML("\n\n  \t\n"), [:])
        XCTAssertEqual(parseTOML("# only a comment"), [:])
        XCTAssertEqual(parseTOML("# café ♫\n   # indented\n"), [:])
    }

    func testCommentsAfterValuesAndHashesInsideStrings() {
        let doc = parseTOML("""
            # heading comment
            a = 1 # trailing comment
            b = "x # not a comment"   # but this is
            c = 'also # kept'
            [t] # after a header
            d = true#no space needed
            """)
        XCTAssertEqual(doc, ["a": 1, "b": "x # not a comment", "c": "also # kept", "t": ["d": true]])
    }

    func testCRLFLineEndingsAndByteOrderMark() {
        XCTAssertEqual(parseTOML("a = 1\r\n[t]\r\nb = \"x\"\r\n"), ["a": 1, "t": ["b": "x"]])
        XCTAssertEqual(parseTOML("\u{FEFF}a = 1\n"), ["a": 1])
    }

    func testWhitespaceAroundEqualsDotsAndHeaders() {
        let doc = parseTOML("a\t=\t1\n  b=2\nc . d = 3\n[ t . u ]\ne = 4\n")
        XCTAssertEqual(doc, ["a": 1, "b": 2, "c": ["d": 3], "t": ["u": ["e": 4]]])
    }

    // MARK: Keys

    func testBareAndQuotedKeysKeepTheirOrder() {
        let doc = parseTOML(#"""
            bare_key-1 = 1
            1234 = 2
            "quoted key" = 3
            'literal "key"' = 4
            "" = 5
            "ʎǝʞ" = 6
            "a.b" = 7
            "esc\u0041ped" = 8
            true = 9
            """#)
        XCTAssertEqual(doc.keys, ["bare_key-1", "1234", "quoted key", #"literal "key""#, "", "ʎǝʞ", "a.b", "escAped", "true"])
        XCTAssertEqual(doc["a.b"], 7)
        XCTAssertEqual(doc["escAped"], 8)
        XCTAssertNil(doc["a"])
    }

    func testDottedKeysCreateTables() {
        let doc = parseTOML(#"""
            name = "Orange"
            physical.color = "orange"
            physical.shape = "round"
            site."google.com" = true
            3.14159 = "pi"
            a.b.c.d = 1
            a.b.e = 2
            """#)
        XCTAssertEqual(doc["physical"], ["color": "orange", "shape": "round"])
        XCTAssertEqual(doc["site"]?["google.com"], true)
        XCTAssertEqual(doc["3"]?["14159"], "pi")
        XCTAssertEqual(doc["a"], ["b": ["c": ["d": 1], "e": 2]])
        XCTAssertEqual(doc.keys, ["name", "physical", "site", "3", "a"])
    }

    func testHeadersMayDefineSubTablesOfDottedTables() {
        let doc = parseTOML("""
            [fruit]
            apple.color = "red"
            apple.taste.sweet = true
            [fruit.apple.texture]
            smooth = true
            """)
        XCTAssertEqual(doc["fruit"], ["apple": ["color": "red", "taste": ["sweet": true], "texture": ["smooth": true]]])
    }

    // MARK: Strings

    func testBasicStringEscapes() {
        let doc = parseTOML(#"s = "tab\tq\"b\\n\nu\u00E9U\U0001F3B5 \b\f\r end""#)
        XCTAssertEqual(doc["s"], "tab\tq\"b\\n\nuéU🎵 \u{08}\u{0C}\r end")
        XCTAssertEqual(parseTOML(#"s = "\u0000""#)["s"], "\u{0}")
        XCTAssertEqual(parseTOML("s = \"raw\ttab and ünïcødé ♫\"")["s"], "raw\ttab and ünïcødé ♫")
        XCTAssertEqual(parseTOML(#"s = """#)["s"], "")
    }

    func testLiteralStringsKeepBackslashes() {
        let doc = parseTOML(#"""
            winpath = 'C:\Users\nodejs\templates'
            quoted = 'Tom "Dubs" Preston-Werner'
            regex = '<\i\c*\s*>'
            empty = ''
            """#)
        XCTAssertEqual(doc["winpath"], #"C:\Users\nodejs\templates"#)
        XCTAssertEqual(doc["quoted"], #"Tom "Dubs" Preston-Werner"#)
        XCTAssertEqual(doc["regex"], #"<\i\c*\s*>"#)
        XCTAssertEqual(doc["empty"], "")
    }

    func testMultiLineBasicStrings() {
        let doc = parseTOML(#"""
            s1 = """
            Roses are red
            Violets are blue"""
            s2 = """
            The quick brown \


              fox jumps over \
                the lazy dog."""
            s3 = """Here are two quotation marks: "". Simple enough."""
            s4 = """Here are three quotation marks: ""\"."""
            s5 = """"This," she said, "is just a pointless statement.""""
            s6 = """trailing backslash then spaces \   
              joined"""
            s7 = """\tescapes \u00E9 work"""
            """#)
        XCTAssertEqual(doc["s1"], "Roses are red\nViolets are blue")
        XCTAssertEqual(doc["s2"], "The quick brown fox jumps over the lazy dog.")
        XCTAssertEqual(doc["s3"], #"Here are two quotation marks: "". Simple enough."#)
        XCTAssertEqual(doc["s4"], #"Here are three quotation marks: """."#)
        XCTAssertEqual(doc["s5"], #""This," she said, "is just a pointless statement.""#)
        XCTAssertEqual(doc["s6"], "trailing backslash then spaces joined")
        XCTAssertEqual(doc["s7"], "\tescapes é work")
        XCTAssertEqual(parseTOML("s = \"\"\"\r\none\r\ntwo\"\"\"")["s"], "one\ntwo")
        XCTAssertEqual(parseTOML("s = \"\"\"\"\"\"")["s"], "")
    }

    func testMultiLineLiteralStrings() {
        let doc = parseTOML(#"""
            regex2 = '''I [dw]on't need \d{2} apples'''
            lines = '''
            The first newline is
            trimmed in raw strings.
               All other whitespace
               is preserved.
            '''
            quot15 = '''Here are fifteen quotation marks: """""""""""""""'''
            apos15 = "Here are fifteen apostrophes: '''''''''''''''"
            str = ''''That,' she said, 'is still pointless.''''
            """#)
        XCTAssertEqual(doc["regex2"], #"I [dw]on't need \d{2} apples"#)
        XCTAssertEqual(doc["lines"], "The first newline is\ntrimmed in raw strings.\n   All other whitespace\n   is preserved.\n")
        XCTAssertEqual(doc["quot15"], .string("Here are fifteen quotation marks: " + String(repeating: "\"", count: 15)))
        XCTAssertEqual(doc["apos15"], "Here are fifteen apostrophes: '''''''''''''''")
        XCTAssertEqual(doc["str"], "'That,' she said, 'is still pointless.'")
    }

    // MARK: Numbers and booleans

    func testIntegers() {
        let doc = parseTOML("""
            a = +99
            b = 42
            c = 0
            d = -17
            e = 1_000
            f = 5_349_221
            g = -0
            h = +0
            hex1 = 0xDEADBEEF
            hex2 = 0xdead_beef
            oct = 0o755
            bin = 0b1101_0110
            max = 9223372036854775807
            min = -9223372036854775808
            hexmax = 0x7FFFFFFFFFFFFFFF
            """)
        XCTAssertEqual(doc, [
            "a": 99, "b": 42, "c": 0, "d": -17, "e": 1000, "f": 5_349_221, "g": 0, "h": 0,
            "hex1": 0xDEAD_BEEF, "hex2": 0xDEAD_BEEF, "oct": 0o755, "bin": 0b1101_0110,
            "max": .integer(Int.max), "min": .integer(Int.min), "hexmax": .integer(Int.max),
        ])
    }

    func testFloats() {
        let doc = parseTOML("""
            a = +1.0
            b = 3.1415
            c = -0.01
            d = 5e+22
            e = 1e06
            f = -2E-2
            g = 6.626e-34
            h = 224_617.445_991_228
            i = -0.0
            j = 0.0
            k = 1e1_0
            l = 9_223_372_036_854_775_808.0
            """)
        XCTAssertEqual(doc, [
            "a": 1.0, "b": 3.1415, "c": -0.01, "d": 5e22, "e": 1e6, "f": -0.02, "g": 6.626e-34,
            "h": 224_617.445_991_228, "i": -0.0, "j": 0.0, "k": 1e10, "l": 9.223372036854775808e18,
        ])
        XCTAssertEqual(doc["i"]?.float?.sign, .minus)
    }

    func testInfinityAndNaN() {
        let doc = parseTOML("a = inf\nb = +inf\nc = -inf\nd = nan\ne = +nan\nf = -nan\n")
        XCTAssertEqual(doc["a"], .float(.infinity))
        XCTAssertEqual(doc["b"], .float(.infinity))
        XCTAssertEqual(doc["c"], .float(-.infinity))
        for key in ["d", "e", "f"] { XCTAssertEqual(doc[key]?.float?.isNaN, true, key) }
    }

    func testBooleans() {
        XCTAssertEqual(parseTOML("t = true\nf = false\n"), ["t": true, "f": false])
    }

    // MARK: Arrays and inline tables

    func testArrays() {
        let doc = parseTOML(#"""
            integers = [ 1, 2, 3 ]
            colors = [ "red", "yellow", "green" ]
            nested = [ [ 1, 2 ], ["a", 'b', """c"""] ]
            mixed = [ 0.1, 2, "three", true, [], {} ]
            contributors = [
              "Foo Bar <foo@example.com>",
              { name = "Baz Qux", email = "bazqux@example.com", url = "https://example.com/bazqux" }
            ]
            empty = [ ]
            trailing = [1,2,]
            """#)
        XCTAssertEqual(doc["integers"], [1, 2, 3])
        XCTAssertEqual(doc["colors"], ["red", "yellow", "green"])
        XCTAssertEqual(doc["nested"], [[1, 2], ["a", "b", "c"]])
        XCTAssertEqual(doc["mixed"], [0.1, 2, "three", true, [], [:]])
        XCTAssertEqual(doc["contributors"]?.array?.count, 2)
        XCTAssertEqual(doc["contributors"]?.array?[1]["email"], "bazqux@example.com")
        XCTAssertEqual(doc["empty"], [])
        XCTAssertEqual(doc["trailing"], [1, 2])
    }

    func testMultiLineArraysWithCommentsAndTrailingComma() {
        let doc = parseTOML("""
            numbers = [
              1, # one
              2,

              # a comment on its own line
              3,
            ]
            pairs = [ [ 1,
                2 ], [
              3, 4 ] # after the last element
            ]
            after = "still read"
            """)
        XCTAssertEqual(doc["numbers"], [1, 2, 3])
        XCTAssertEqual(doc["pairs"], [[1, 2], [3, 4]])
        XCTAssertEqual(doc["after"], "still read")
        XCTAssertEqual(doc.line(of: "after"), 12)
    }

    func testInlineTables() {
        let doc = parseTOML("""
            name = { first = "Tom", last = "Preston-Werner" }
            point = {x=1,y=2}
            animal = { type.name = "pug", type.size = "small" }
            empty = {}
            deep = { a = { b = [1, { c = 2 }] } }
            spread = { list = [
              1,
              2,
            ], after = true }
            """)
        XCTAssertEqual(doc["name"], ["first": "Tom", "last": "Preston-Werner"])
        XCTAssertEqual(doc["point"], ["x": 1, "y": 2])
        XCTAssertEqual(doc["animal"], ["type": ["name": "pug", "size": "small"]])
        XCTAssertEqual(doc["empty"], [:])
        XCTAssertEqual(doc["deep"]?["a"]?["b"], [1, ["c": 2]])
        XCTAssertEqual(doc["spread"], ["list": [1, 2], "after": true])
        XCTAssertEqual(doc["name"]?.table?.keys, ["first", "last"])
    }

    // MARK: Tables

    func testTablesAndSubTables() {
        let doc = parseTOML(#"""
            top = 0
            [table-1]
            key1 = "some string"
            key2 = 123
            [table-2]
            key1 = 456
            [dog."tater.man"]
            type.name = "pug"
            [ j . "ʞ" . 'l' ]
            [x.y.z.w] # super-tables are made on the way
            [x] # and may be defined afterwards
            k = 1
            [empty]
            """#)
        XCTAssertEqual(doc, [
            "top": 0,
            "table-1": ["key1": "some string", "key2": 123],
            "table-2": ["key1": 456],
            "dog": ["tater.man": ["type": ["name": "pug"]]],
            "j": ["ʞ": ["l": [:]]],
            "x": ["y": ["z": ["w": [:]]], "k": 1],
            "empty": [:],
        ])
        XCTAssertEqual(doc.keys, ["top", "table-1", "table-2", "dog", "j", "x", "empty"])
    }

    func testArraysOfTables() {
        let doc = parseTOML("""
            [[products]]
            name = "Hammer"
            sku = 738594937

            [[products]]  # an empty element

            [[products]]
            name = "Nail"
            color = "gray"

            [[fruits]]
            name = "apple"
            [fruits.physical]
            color = "red"
            [[fruits.varieties]]
            name = "red delicious"
            [[fruits.varieties]]
            name = "granny smith"

            [[fruits]]
            name = "banana"
            [[fruits.varieties]]
            name = "plantain"
            """)
        XCTAssertEqual(doc["products"], [["name": "Hammer", "sku": 738594937], [:], ["name": "Nail", "color": "gray"]])
        XCTAssertEqual(doc["fruits"], [
            ["name": "apple", "physical": ["color": "red"], "varieties": [["name": "red delicious"], ["name": "granny smith"]]],
            ["name": "banana", "varieties": [["name": "plantain"]]],
        ])
        // Each element knows its own header's line.
        XCTAssertEqual(doc["products"]?.array?.compactMap { $0.table?.line }, [1, 5, 7])
        XCTAssertEqual(doc.line(of: "products"), 1)
    }

    func testArrayOfTablesAfterImplicitAndBeforeExplicitParent() {
        let doc = parseTOML("""
            [[a.b]]
            x = 1
            [a]
            y = 2
            """)
        XCTAssertEqual(doc, ["a": ["b": [["x": 1]], "y": 2]])
    }

    // MARK: Source lines

    func testEveryKeyAndTableKnowsItsLine() {
        let doc = parseTOML("""
            top = 1

            [output]
            device = "hw:0"
              period_frames = 256
            [a.b]
            c = 1
            [a]
            d = 2
            e.f = 3
            inline = { g = 1 }
            """)
        XCTAssertEqual(doc.line, 1)
        XCTAssertEqual(doc.line(of: "top"), 1)
        XCTAssertEqual(doc.line(of: "output"), 3)
        XCTAssertEqual(doc["output"]?.table?.line, 3)
        XCTAssertEqual(doc["output"]?.table?.line(of: "device"), 4)
        XCTAssertEqual(doc["output"]?.table?.line(of: "period_frames"), 5)
        XCTAssertNil(doc["output"]?.table?.line(of: "missing"))
        // `[a]` is made by `[a.b]` on line 6 and defined on line 8; the definition counts.
        XCTAssertEqual(doc.line(of: "a"), 8)
        XCTAssertEqual(doc["a"]?.table?.line(of: "b"), 6)
        XCTAssertEqual(doc["a"]?.table?.line(of: "e"), 10)
        XCTAssertEqual(doc["a"]?["e"]?.table?.line, 10)
        XCTAssertEqual(doc["a"]?["inline"]?.table?.line, 11)
        XCTAssertEqual(doc["a"]?["inline"]?.table?.line(of: "g"), 11)
    }

    func testTablesCompareWithoutOrderOrLines() {
        let a = parseTOML("x = 1\ny = 2\n")
        let b = parseTOML("\n\ny = 2\nx = 1\n")
        XCTAssertEqual(a, b)
        XCTAssertNotEqual(a, parseTOML("x = 1\n"))
        XCTAssertNotEqual(a, parseTOML("x = 1\ny = 2.0\n"))
    }
}
