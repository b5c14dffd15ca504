import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// What SQLite refused: the database, the statement when there was one, SQLite's extended
/// result code and its message.
public struct SQLiteError: Error, CustomStringConvertible, Sendable, Equatable {
    public var database: String
    public var statement: String?
    public var code: Int32
    public var message: String

    public init(database: String, statement: String?, code: Int32, message: String) {
        self.database = database
        self.statement = statement
        self.code = code
        self.message = message
    }

    public var description: String {
        "\(database): \(statement.map { "\"\($0)\": " } ?? "")\(message)"
    }

    /// The file is not a database, or a damaged one: set it aside and start again.
    public var isCorrupt: Bool {
        let primary = code & 0xFF
        return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB
    }

    /// The statement used up its time (`Database.withBudget`).
    public var isOverBudget: Bool { code & 0xFF == SQLITE_INTERRUPT }

    /// A UNIQUE, NOT NULL or other constraint refused the change.
    public var isConstraint: Bool { code & 0xFF == SQLITE_CONSTRAINT }
}

/// A value bound to a statement's parameter.
public enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// One connection to one SQLite database, used by one thread at a time: the caller serialises
/// (SQLite's own mutexes are off, they cost a lock per call).
public final class Database: @unchecked Sendable {
    /// The file, as given: named in every error.
    public let path: String
    let handle: OpaquePointer

    /// Opens (creating, unless `readOnly`) the database at `path`. `busyMilliseconds`: how long
    /// a statement waits for another connection's write lock before it fails with "busy".
    public init(path: String, readOnly: Bool = false, busyMilliseconds: Int32 = 5000) throws(SQLiteError) {
        self.path = path
        _ = Database.configured
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &db, flags, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(database: path, statement: nil, code: status, message: message)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyMilliseconds)
        installRegularExpressions()
    }

    /// `value REGEXP pattern` (SQLite's operator calls `regexp(pattern, value)`) and
    /// `regexp_i(pattern, value)`, ignoring case: `RegularExpression`s, found anywhere in the
    /// value, compiled once per statement, not once per row. Matching counts against the
    /// budget of `withBudget`.
    private func installRegularExpressions() {
        for function in regularExpressionFunctions {
            sqlite3_create_function_v2(handle, function.name, 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                       Unmanaged.passUnretained(function).toOpaque(), regularExpressionMatch, nil, nil, nil)
        }
    }

    /// Why `pattern` is refused (too long, a back-reference, repetitions too large, or what
    /// `regcomp` says), or nil: for a caller that checks a pattern before it reaches a query.
    public static func regularExpressionProblem(_ pattern: String, ignoringCase: Bool = false) -> String? {
        switch RegularExpression.compile(pattern, ignoringCase: ignoringCase) {
        case .success: nil
        case .failure(let refusal): refusal.reason
        }
    }

    /// Runs `body` with at most `seconds` of this thread's CPU time for its statements; past
    /// them the statement running is interrupted and fails with `isOverBudget`.
    public func withBudget<T>(seconds: Double = QueryBudget.seconds, _ body: () throws(SQLiteError) -> sending T)
        throws(SQLiteError) -> sending T {
        budget.start(seconds)
        sqlite3_progress_handler(handle, Self.instructionsPerCheck, progressCall, Unmanaged.passUnretained(budget).toOpaque())
        defer {
            sqlite3_progress_handler(handle, 0, nil, nil)
            budget.stop()
        }
        return try body()
    }

    /// SQLite's VM instructions between two looks at the clock: some tens of microseconds.
    private static let instructionsPerCheck: Int32 = 10_000

    final class RegularExpressionFunction {
        let name: String
        let ignoringCase: Bool
        let budget: QueryBudget
        init(name: String, ignoringCase: Bool, budget: QueryBudget) {
            self.name = name
            self.ignoringCase = ignoringCase
            self.budget = budget
        }
    }

    private let budget = QueryBudget()
    private lazy var regularExpressionFunctions = [
        RegularExpressionFunction(name: "regexp", ignoringCase: false, budget: budget),
        RegularExpressionFunction(name: "regexp_i", ignoringCase: true, budget: budget),
    ]

    deinit { sqlite3_close_v2(handle) }

    /// SQLite's process-wide settings, made before the first connection opens.
    private static let configured: Int32 = csqlite_configure()

    /// Runs one or more statements that return no rows (schema, pragmas, BEGIN/COMMIT).
    public func execute(_ sql: String) throws(SQLiteError) {
        var error: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &error)
        defer { sqlite3_free(error) }
        guard status == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(status))
            throw SQLiteError(database: path, statement: sql, code: sqlite3_extended_errcode(handle), message: message)
        }
    }

    public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard status == SQLITE_OK, let statement else { throw failure(sql) }
        return Statement(database: self, handle: statement, sql: sql)
    }

    /// Runs `body` in one transaction (BEGIN IMMEDIATE … COMMIT), rolled back if it throws.
    public func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    public var lastInsertRowID: Int { Int(sqlite3_last_insert_rowid(handle)) }

    /// The integer the query's first row starts with (a count, a pragma), nil without a row.
    public func integer(_ sql: String, _ values: SQLValue...) throws(SQLiteError) -> Int? {
        try integer(sql, values)
    }

    public func integer(_ sql: String, _ values: [SQLValue]) throws(SQLiteError) -> Int? {
        let statement = try prepare(sql)
        try statement.bind(values)
        return try statement.step() ? statement.integer(0) : nil
    }

    func failure(_ sql: String?) -> SQLiteError {
        SQLiteError(database: path, statement: sql, code: sqlite3_extended_errcode(handle),
                    message: String(cString: sqlite3_errmsg(handle)))
    }
}

/// A prepared statement: bind, step through its rows, reset, again.
public final class Statement {
    public let sql: String
    private let database: Database
    private let handle: OpaquePointer

    init(database: Database, handle: OpaquePointer, sql: String) {
        self.database = database
        self.handle = handle
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// Resets the statement and binds `values` to its parameters 1, 2, ….
    public func bind(_ values: [SQLValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32 = switch value {
            case .null: sqlite3_bind_null(handle, index)
            case .integer(let n): sqlite3_bind_int64(handle, index, Int64(n))
            case .real(let x): sqlite3_bind_double(handle, index, x)
            case .text(let s): sqlite3_bind_text(handle, index, s, -1, csqlite_transient())
            case .blob(let bytes):
                bytes.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), csqlite_transient()) }
            }
            guard status == SQLITE_OK else { throw database.failure(sql) }
        }
    }

    /// The next row: true when there is one (read it with the column accessors), false at the end.
    public func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = database.failure(sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Binds `values` and runs the statement to its end (an insert, update or delete).
    public func run(_ values: SQLValue...) throws(SQLiteError) {
        try bind(values)
        while try step() {}
    }

    /// Binds `values` and calls `row` for each row until it returns false.
    public func rows(_ values: [SQLValue], _ row: (Statement) throws(SQLiteError) -> Bool) throws(SQLiteError) {
        try bind(values)
        defer { sqlite3_reset(handle) }
        while try step() {
            guard try row(self) else { return }
        }
    }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    public func integer(_ column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }

    public func real(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }

    public func optionalReal(_ column: Int32) -> Double? { isNull(column) ? nil : real(column) }

    /// Text as stored; bytes that are not UTF-8 come out as U+FFFD.
    public func text(_ column: Int32) -> String? {
        isNull(column) ? nil : withText(column) { String(decoding: $0, as: UTF8.self) }
    }

    /// `body` over the column's text as SQLite holds it (UTF-8, valid until the next step):
    /// for a value taken apart before anything of it is kept. NULL is empty.
    public func withText<T>(_ column: Int32, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        let bytes = sqlite3_column_text(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        return body(UnsafeBufferPointer(start: bytes, count: bytes == nil ? 0 : count))
    }

    /// The blob in `column`, read in place (valid only inside `body`).
    public func withBlob<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        let bytes = sqlite3_column_blob(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        return body(UnsafeRawBufferPointer(start: bytes, count: bytes == nil ? 0 : count))
    }
}

/// The progress handler of `Database.withBudget`: non-zero interrupts the statement.
private let progressCall: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { budget in
    guard let budget else { return 0 }
    return Unmanaged<QueryBudget>.fromOpaque(budget).takeUnretainedValue().isSpent ? 1 : 0
}

/// The `regexp` functions' body (see `Database.installRegularExpressions`).
private let regularExpressionMatch: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = { context, _, arguments in
    guard let context, let arguments, let data = sqlite3_user_data(context) else { return }
    let function = Unmanaged<Database.RegularExpressionFunction>.fromOpaque(data).takeUnretainedValue()
    guard let value = sqlite3_value_text(arguments[1]) else {
        sqlite3_result_int(context, 0)
        return
    }
    let expression: RegularExpression
    if let kept = sqlite3_get_auxdata(context, 0) {
        expression = Unmanaged<RegularExpression>.fromOpaque(kept).takeUnretainedValue()
    } else {
        guard let pattern = sqlite3_value_text(arguments[0]) else {
            sqlite3_result_int(context, 0)
            return
        }
        switch RegularExpression.compile(String(cString: pattern), ignoringCase: function.ignoringCase) {
        case .success(let compiled): expression = compiled
        case .failure(let refusal):
            sqlite3_result_error(context, "regular expression refused: \(refusal.reason)", -1)
            return
        }
        // Kept for the statement's next rows; SQLite releases it (possibly at once) with the statement.
        sqlite3_set_auxdata(context, 0, Unmanaged.passRetained(expression).toOpaque(), { pointer in
            guard let pointer else { return }
            Unmanaged<RegularExpression>.fromOpaque(pointer).release()
        })
    }
    let count = Int(sqlite3_value_bytes(arguments[1]))
    guard function.budget.take(expression.work(forBytes: count)) else {
        sqlite3_interrupt(sqlite3_context_db_handle(context))
        sqlite3_result_int(context, 0)
        return
    }
    let matched = expression.matches(UnsafeRawPointer(value).assumingMemoryBound(to: CChar.self), count: count)
    sqlite3_result_int(context, matched ? 1 : 0)
}
