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
        Database.installRegularExpressions(db)
    }

    /// `value REGEXP pattern` (SQLite's operator calls `regexp(pattern, value)`) and
    /// `regexp_i(pattern, value)`, ignoring case: POSIX extended regular expressions, matched
    /// anywhere in the value. A pattern is compiled once per statement, not once per row.
    private static func installRegularExpressions(_ db: OpaquePointer) {
        for (name, flags) in [("regexp", REG_EXTENDED | REG_NOSUB), ("regexp_i", REG_EXTENDED | REG_NOSUB | REG_ICASE)] {
            sqlite3_create_function_v2(db, name, 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                       UnsafeMutableRawPointer(bitPattern: Int(flags) + 1), regularExpressionMatch, nil, nil, nil)
        }
    }

    /// Whether `regcomp` takes `pattern`, and why not: for a caller that checks a pattern before
    /// it reaches a query.
    public static func regularExpressionProblem(_ pattern: String, ignoringCase: Bool = false) -> String? {
        var compiled = regex_t()
        let status = regcomp(&compiled, pattern, REG_EXTENDED | REG_NOSUB | (ignoringCase ? REG_ICASE : 0))
        defer { if status == 0 { regfree(&compiled) } }
        guard status != 0 else { return nil }
        var message = [CChar](repeating: 0, count: 256)
        regerror(status, &compiled, &message, message.count)
        return String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

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
        guard let bytes = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    public func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }
}

/// The `regexp` functions' body (see `Database.installRegularExpressions`).
private let regularExpressionMatch: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = { context, _, arguments in
    guard let context, let arguments else { return }
    guard let value = sqlite3_value_text(arguments[1]) else {
        sqlite3_result_int(context, 0)
        return
    }
    var compiled = sqlite3_get_auxdata(context, 0)?.assumingMemoryBound(to: regex_t.self)
    var owned = false
    if compiled == nil {
        guard let pattern = sqlite3_value_text(arguments[0]) else {
            sqlite3_result_int(context, 0)
            return
        }
        let flags = Int32(Int(bitPattern: sqlite3_user_data(context)) - 1)
        let fresh = UnsafeMutablePointer<regex_t>.allocate(capacity: 1)
        guard regcomp(fresh, UnsafeRawPointer(pattern).assumingMemoryBound(to: CChar.self), flags) == 0 else {
            fresh.deallocate()
            sqlite3_result_error(context, "invalid regular expression", -1)
            return
        }
        compiled = fresh
        owned = true
    }
    let matched = regexec(compiled!, UnsafeRawPointer(value).assumingMemoryBound(to: CChar.self), 0, nil, 0) == 0
    sqlite3_result_int(context, matched ? 1 : 0)
    // Kept for the statement's next rows; SQLite frees it (possibly at once) with the statement.
    if owned {
        sqlite3_set_auxdata(context, 0, compiled, { pointer in
            guard let regex = pointer?.assumingMemoryBound(to: regex_t.self) else { return }
            regfree(regex)
            regex.deallocate()
        })
    }
}
