import CSQLite
import Foundation

/// SQLite's "copy the bound bytes now" destructor.
private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One SQLite connection, used by one thread at a time: the store's writer holds it and never shares
/// it while a statement runs.
// @unchecked Sendable: a connection is used by one thread at a time, always inside the `Locked` of the
// writer or reader that owns it (SQLiteWriter.connection, SQLiteReader.connection).
final class SQLiteConnection: @unchecked Sendable {
    let handle: OpaquePointer
    let path: String
    /// Whether this object opened the handle, and so closes it.
    private let ownsHandle: Bool
    /// Prepared statements by their SQL, kept for the connection's life: the store runs the same few
    /// statements over and over.
    private var statements: [String: OpaquePointer] = [:]
    /// Notifications produced by the request being run, published by the writer after the commit.
    var pendingNotifications: [JobStoreNotification] = []
    /// Called after each commit with the write-ahead log's size in pages, in place of SQLite's
    /// automatic checkpoint; set by ``checkpointElsewhere(_:)``.
    private var walDidGrow: (@Sendable (Int32) -> Void)?
    /// The write-ahead log's size in pages after this connection's last commit, when
    /// ``checkpointElsewhere(_:)`` watches it; 0 otherwise.
    var walPages: Int32 = 0

    /// Opens (and creates, when `create` says so) the database at `path`, or `:memory:`.
    init(path: String, create: Bool) throws(JobStoreError) {
        var opened: OpaquePointer?
        var flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        if create { flags |= SQLITE_OPEN_CREATE }
        let code = sqlite3_open_v2(path, &opened, flags, nil)
        guard code == SQLITE_OK, let opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_close_v2(opened)
            throw .cannotOpen(path: path, message: message)
        }
        handle = opened
        self.path = path
        ownsHandle = true
        // Busy waits are ours (the writer retries with a backoff), so SQLite answers SQLITE_BUSY at once.
        sqlite3_busy_timeout(handle, 0)
        sqlite3_extended_result_codes(handle, 1)
        if path != ":memory:" && sqlite3_db_readonly(handle, "main") == 1 {
            sqlite3_close_v2(handle)
            throw .readOnly(path: path)
        }
    }

    /// Uses a caller's open connection, leaving its settings alone and never closing it.
    init(borrowing handle: OpaquePointer) {
        self.handle = handle
        path = sqlite3_db_filename(handle, "main").map { String(cString: $0) } ?? ""
        ownsHandle = false
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        if ownsHandle { sqlite3_close_v2(handle) }
    }

    /// Turns SQLite's automatic checkpoint off for this connection and calls `walDidGrow` after each of
    /// its commits instead, with the log's size in pages, so that another connection can checkpoint.
    func checkpointElsewhere(_ walDidGrow: @escaping @Sendable (Int32) -> Void) {
        self.walDidGrow = walDidGrow
        // The hook replaces the automatic checkpoint (which is itself a WAL hook). `self` is unretained:
        // the handle, and with it the hook, ends in this object's deinit.
        sqlite3_wal_hook(
            handle,
            { context, _, _, pages in
                if let context {
                    let connection = Unmanaged<SQLiteConnection>.fromOpaque(context).takeUnretainedValue()
                    connection.walPages = pages
                    connection.walDidGrow?(pages)
                }
                return SQLITE_OK
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Whether a transaction is open: false once SQLite has rolled one back by itself.
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// The store error for an SQLite result code.
    func error(_ code: Int32) -> JobStoreError {
        let message = String(cString: sqlite3_errmsg(handle))
        switch code & 0xff {
        case SQLITE_BUSY, SQLITE_LOCKED: return .busy(message: message)
        case SQLITE_CORRUPT, SQLITE_NOTADB: return .corrupt(message: message)
        case SQLITE_READONLY: return .readOnly(path: path)
        case SQLITE_CANTOPEN: return .cannotOpen(path: path, message: message)
        case SQLITE_FULL: return .diskFull(path: path)
        default: return .database(code: code, message: message)
        }
    }

    /// Runs statements that take no arguments and return no rows (`;`-separated).
    func run(_ sql: String) throws(JobStoreError) {
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw error(code) }
    }

    /// Runs one statement, returning its rows. The store's own statements are prepared once and
    /// kept (`keepsStatement`); a caller's SQL, whose variety has no bound, is prepared each time.
    @discardableResult
    func query(
        _ sql: String, _ arguments: [SQLValue] = [], keepsStatement: Bool = true
    ) throws(JobStoreError) -> [[SQLValue]] {
        let statement = try keepsStatement ? prepared(sql) : preparedOnce(sql)
        defer {
            if keepsStatement {
                sqlite3_reset(statement)
                sqlite3_clear_bindings(statement)
            } else {
                sqlite3_finalize(statement)
            }
        }
        var code = SQLITE_OK
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            switch argument {
            case .null: code = sqlite3_bind_null(statement, index)
            case .integer(let value): code = sqlite3_bind_int64(statement, index, value)
            case .real(let value): code = sqlite3_bind_double(statement, index, value)
            case .text(let value): code = sqlite3_bind_text(statement, index, value, -1, transientDestructor)
            case .blob(let value):
                code = value.withUnsafeBytes { bytes in
                    sqlite3_bind_blob64(statement, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                                        sqlite3_uint64(bytes.count), transientDestructor)
                }
            }
            guard code == SQLITE_OK else { throw error(code) }
        }
        var rows: [[SQLValue]] = []
        while true {
            code = sqlite3_step(statement)
            if code == SQLITE_DONE { return rows }
            guard code == SQLITE_ROW else { throw error(code) }
            let count = sqlite3_column_count(statement)
            var row: [SQLValue] = []
            row.reserveCapacity(Int(count))
            for column in 0..<count {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_FLOAT: row.append(.real(sqlite3_column_double(statement, column)))
                case SQLITE_TEXT: row.append(.text(String(cString: sqlite3_column_text(statement, column))))
                case SQLITE_BLOB:
                    let length = Int(sqlite3_column_bytes(statement, column))
                    if length == 0 {
                        row.append(.blob(Data()))
                    } else {
                        row.append(.blob(Data(bytes: sqlite3_column_blob(statement, column), count: length)))
                    }
                default: row.append(.null)
                }
            }
            rows.append(row)
        }
    }

    private func preparedOnce(_ sql: String) throws(JobStoreError) -> OpaquePointer {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard code == SQLITE_OK, let statement else { throw error(code) }
        return statement
    }

    /// The statement for `sql`, prepared at its first use and kept until the connection goes.
    private func prepared(_ sql: String) throws(JobStoreError) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else { throw error(code) }
        statements[sql] = statement
        return statement
    }

    /// Runs one `INSERT` of one row into a rowid table, answering the new row's id. Cheaper than
    /// `RETURNING id`, whose rows SQLite gathers in a temporary table before it returns the first.
    func insertRow(_ sql: String, _ arguments: [SQLValue]) throws(JobStoreError) -> Int64 {
        try query(sql, arguments)
        // The connection's last insert, which is this statement's row: the store's tables have no
        // triggers, and a trigger's own inserts would not change it once the statement returns.
        return sqlite3_last_insert_rowid(handle)
    }

    /// Runs one statement that returns no rows, answering how many rows it changed.
    @discardableResult
    func execute(
        _ sql: String, _ arguments: [SQLValue] = [], keepsStatement: Bool = true
    ) throws(JobStoreError) -> Int {
        try query(sql, arguments, keepsStatement: keepsStatement)
        return Int(sqlite3_changes(handle))
    }
}

extension SQLValue {
    var integerValue: Int64? { if case .integer(let value) = self { value } else { nil } }
    var textValue: String? { if case .text(let value) = self { value } else { nil } }
    var blobValue: Data? {
        switch self {
        case .blob(let value): value
        case .text(let value): Data(value.utf8)
        default: nil
        }
    }
}
