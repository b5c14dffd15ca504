import TonearmSQLite
import XCTest

/// The bounds every regular expression is held to (the index's `regexp` and the MPD queue's
/// search share them), and the step budget of a query.
final class RegularExpressionTests: XCTestCase {
    private func refusal(_ pattern: String, ignoringCase: Bool = false) -> String? {
        switch RegularExpression.compile(pattern, ignoringCase: ignoringCase) {
        case .success: nil
        case .failure(let refusal): refusal.reason
        }
    }

    private func weight(_ pattern: String) -> Int? {
        switch RegularExpression.compile(pattern) {
        case .success(let expression): expression.weight
        case .failure: nil
        }
    }

    func testPatternsWithinTheBoundsCompileWithTheirWeight() {
        let accepted: [(String, Int)] = [
            ("abc", 3), ("^A[b]+ey R.ad$", 11), ("(a|b)*c", 3), ("a{1,100}", 100), ("a{100}", 100), ("a{,5}", 5),
            ("a{100,}", 101), ("(a{1,10}){1,25}", 250), ("(a{1,16}){1,16}", 256), ("[]{}]{3}", 3), ("[[:alpha:]]{7}", 7), ("[^]a]", 1),
            ("[a{1000}]", 1), ("a\\{1000\\}", 7), ("\\w+\\.", 2), ("a**", 1), ("", 1),
            (String(repeating: "a", count: 256), 256), ("(a{2}){3}{4}", 24), ("((a))", 1), ("()", 1),
        ]
        for (pattern, expected) in accepted {
            XCTAssertNil(refusal(pattern), pattern)
            XCTAssertEqual(weight(pattern), expected, pattern)
        }
    }

    func testPatternsOverABoundAreRefusedSayingWhich() {
        let refused: [(String, String)] = [
            (String(repeating: "a", count: 257), "the pattern is 257 bytes long, more than 256"),
            ("a{101}", "the repetition count 101 is more than 100"),
            ("a{1,101}", "the repetition count 101 is more than 100"),
            ("a{101,}", "the repetition count 101 is more than 100"),
            ("a{,999999999}", "the repetition count 999999999 is more than 100"),
            ("((a{1,100}){1,100}){1,100}", "its repetitions expand it to 1000000 elements, more than 256"),
            ("(ab{1,10}){1,25}", "its repetitions expand it to 275 elements, more than 256"),
            ("(a{2}){3}{200}", "the repetition count 200 is more than 100"),
            ("x{40}y{40}(z{10}){18}", "its repetitions expand it to 260 elements, more than 256"),
            ("(a{1,10}){1,100}", "its repetitions expand it to 1000 elements, more than 256"),
            ("(a)\\1", "back-references (\\1) are not supported"),
            ("(a)(b)x\\9", "back-references (\\9) are not supported"),
            ("(", "Unmatched ( or \\("),
            ("a{2,1}", "Invalid content of \\{\\}"),
            ("x{", "Unmatched \\{"),
        ]
        for (pattern, reason) in refused {
            XCTAssertEqual(refusal(pattern), reason, pattern)
        }
        // The database's check is the same one.
        XCTAssertEqual(Database.regularExpressionProblem("a{101}"), "the repetition count 101 is more than 100")
    }

    func testTheMatcherFindsThePatternAnywhereWithOrWithoutCase() throws {
        let pattern = try RegularExpression.compile("b[a-z]+ R").get()
        XCTAssertTrue(pattern.matches("Abbey Road"))
        XCTAssertFalse(pattern.matches("ABBEY ROAD"))
        XCTAssertTrue(try RegularExpression.compile("b[a-z]+ R", ignoringCase: true).get().matches("ABBEY ROAD"))
        // Backtracking engines take exponential time here; POSIX's does not.
        XCTAssertFalse(try RegularExpression.compile("(a*)*b").get().matches(String(repeating: "a", count: 5000)))
    }

    private func database(rows: Int, value: String) throws -> Database {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t (value TEXT)")
        let insert = try db.prepare("INSERT INTO t VALUES (?)")
        try db.transaction { () throws(SQLiteError) in
            for _ in 0..<rows { try insert.run(.text(value)) }
        }
        return db
    }

    func testAQueryOverItsTimeIsInterruptedAndTheNextOneRuns() throws {
        // 2,000 values of 5 KB that a pattern of 251 elements does not match: seconds of work.
        let db = try database(rows: 2000, value: String(repeating: "an evening of quiet jazz, ", count: 200))
        let sql = "SELECT count(*) FROM t WHERE value REGEXP ?"
        let heavy = "(.{1,10}){1,25}#"
        XCTAssertThrowsError(try db.withBudget(seconds: 0.05) { () throws(SQLiteError) in try db.integer(sql, .text(heavy)) }) { error in
            XCTAssertTrue((error as? SQLiteError)?.isOverBudget == true, "\(error)")
        }
        // The budget counts statements without patterns too.
        let counting = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000000) SELECT count(*) FROM n"
        XCTAssertThrowsError(try db.withBudget(seconds: 0.05) { () throws(SQLiteError) in try db.integer(counting) }) { error in
            XCTAssertTrue((error as? SQLiteError)?.isOverBudget == true, "\(error)")
        }
        // Within its time, and outside a budget, a query answers.
        XCTAssertEqual(try db.withBudget(seconds: 60) { () throws(SQLiteError) in try db.integer(sql, .text("jazz, an")) }, 2000)
        XCTAssertEqual(try db.integer("SELECT count(*) FROM t WHERE value REGEXP 'quiet'"), 2000)
    }

    func testOnlyAValuesFirstBytesAreMatched() throws {
        let near = String(repeating: "a", count: RegularExpression.matchedBytes - 1) + "x"
        let far = String(repeating: "a", count: RegularExpression.matchedBytes) + "x"
        let pattern = try RegularExpression.compile("x$").get()
        XCTAssertTrue(pattern.matches(near))
        XCTAssertFalse(pattern.matches(far))
        XCTAssertEqual(pattern.work(forBytes: 10), 11 * 2)
        XCTAssertEqual(pattern.work(forBytes: 1 << 20), (RegularExpression.matchedBytes + 1) * 2)
    }

    func testAPatternOverABoundFailsInTheQueryItself() throws {
        let db = try database(rows: 1, value: "aaa")
        XCTAssertThrowsError(try db.integer("SELECT count(*) FROM t WHERE value REGEXP ?", .text("((a{1,100}){1,100}){1,100}"))) { error in
            XCTAssertEqual((error as? SQLiteError)?.message,
                           "regular expression refused: its repetitions expand it to 1000000 elements, more than 256")
        }
    }
}
