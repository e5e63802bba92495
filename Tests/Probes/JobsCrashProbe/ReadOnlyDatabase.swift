import CSQLite

/// A read-only sqlite3 connection for the controller's checks, beside the workers' writes.
final class ReadOnlyDatabase {
    private var handle: OpaquePointer?

    init?(path: String) {
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else {
            sqlite3_close(handle)
            return nil
        }
        sqlite3_busy_timeout(handle, 10_000)
    }

    deinit { sqlite3_close(handle) }

    /// The rows of `sql`, each column as text (`nil` for NULL); an error message instead when it fails.
    func query(_ sql: String) -> Result<[[String?]], QueryError> {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else {
            return .failure(QueryError(message: String(cString: sqlite3_errmsg(handle))))
        }
        defer { sqlite3_finalize(statement) }
        var rows: [[String?]] = []
        while true {
            let step = sqlite3_step(statement)
            if step == SQLITE_DONE { return .success(rows) }
            guard step == SQLITE_ROW else { return .failure(QueryError(message: String(cString: sqlite3_errmsg(handle)))) }
            rows.append((0..<sqlite3_column_count(statement)).map { column in
                sqlite3_column_text(statement, column).map { String(cString: $0) }
            })
        }
    }
}

/// Why a query failed.
struct QueryError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
