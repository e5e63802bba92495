import Flow
import FlowJobs

/// The application's own statements on the store's connections, outside a job's transaction.
///
/// Inside a transaction, with enqueues that commit or roll back with them, the same SQL goes through
/// ``PostgresJobStore/transaction(_:)``'s `JobTransaction` (`execute` and `query`).
extension PostgresJobStore {
    /// Runs one query of the application's on a connection of the store's pool, in a transaction of
    /// its own (committed when it succeeds), and answers its rows.
    ///
    /// The arguments are sent apart from the SQL text (`PQsendQueryParams`) and bound to its
    /// placeholders, `?` (numbered in order, as for SQLite) or `$1`, `$2`, …: a value is never read as
    /// SQL. Each row holds its columns' values by the column's type: `bigint`, `integer`, `smallint`
    /// and `boolean` (1 or 0) as `SQLValue.integer`, `double precision`, `real` and `numeric` as
    /// `SQLValue.real`, `bytea` as `SQLValue.blob`, `NULL` as `SQLValue.null`, and every other type in
    /// its text form as `SQLValue.text`. The statement runs on the store's schema as its search path,
    /// so the application's tables there need no schema name.
    ///
    /// ```swift
    /// let rows = try await store.query("SELECT id, total FROM orders WHERE customer = ?", [.text("c-17")]).get()
    /// for row in rows {
    ///     if case .integer(let id) = row[0] { print(id) }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - sql: one SQL statement, PostgreSQL's dialect.
    ///   - arguments: the values of its placeholders, in order.
    /// - Returns: the rows, once the statement committed; fails with
    ///   ``PostgresError/server(sqlState:message:)`` (the server's SQLSTATE, see ``PostgresError/sqlState``)
    ///   when the server refused it, and with ``PostgresError/connectionLost(message:)`` when its
    ///   connection broke (it is not run again: it may have been a write).
    public func query(_ sql: String, _ arguments: [SQLValue] = []) -> Future<[[SQLValue]]> {
        run(sql, arguments).map(on: .none) { $0.rows }
    }

    /// Runs one statement of the application's (an `INSERT`, `UPDATE`, `DELETE` or a DDL statement)
    /// on a connection of the store's pool, in a transaction of its own, and answers how many rows it
    /// changed. Arguments are bound as for ``query(_:_:)``.
    ///
    /// ```swift
    /// let changed = try await store.execute("UPDATE orders SET shipped = true WHERE id = ?", [.integer(7)]).get()
    /// ```
    ///
    /// - Parameters:
    ///   - sql: one SQL statement, PostgreSQL's dialect.
    ///   - arguments: the values of its placeholders, in order.
    /// - Returns: the number of rows it inserted, updated, deleted or selected (0 for a DDL statement),
    ///   once it committed; fails as ``query(_:_:)`` does.
    @discardableResult
    public func execute(_ sql: String, _ arguments: [SQLValue] = []) -> Future<Int> {
        run(sql, arguments).map(on: .none) { $0.affectedRows }
    }

    /// One statement on a pooled connection; a lost connection is not retried (it may have written).
    private func run(_ sql: String, _ arguments: [SQLValue]) -> Future<PostgresResult> {
        let numbered = PostgresTransaction.numberingPlaceholders(sql)
        return pool.withConnection { connection in connection.query(numbered, arguments) }
    }
}

extension PostgresError {
    /// The SQLSTATE of a statement the server refused (`23505` for a unique violation, `42P01` for a
    /// missing table, `57014` for a statement timeout); `nil` for the errors that did not come from a
    /// statement's refusal.
    ///
    /// ```swift
    /// do {
    ///     _ = try await store.execute("INSERT INTO orders (id) VALUES (?)", [.integer(7)]).get()
    /// } catch let error as PostgresError where error.sqlState == "23505" {
    ///     print("order 7 exists already")
    /// }
    /// ```
    public var sqlState: String? {
        if case .server(let state, _) = self { return state }
        return nil
    }
}
