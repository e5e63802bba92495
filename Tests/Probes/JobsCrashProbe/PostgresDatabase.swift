import CLibPQ
import Foundation

/// The database the controller reads its checks from, beside the workers' writes.
protocol WatchedDatabase {
    /// The rows of `sql`, each column as text (`nil` for NULL); an error message instead when it fails.
    func query(_ sql: String) -> Result<[[String?]], QueryError>
    /// Every job of the run, finished or not, as `id, state, attempt, unique_key, last_error, number`
    /// (`number` the driver's, or NULL where the store cannot tell it).
    var allJobsQuery: String { get }
}

extension WatchedDatabase {
    /// One integer, or -1 when the query fails.
    func integer(_ sql: String) -> Int {
        guard case .success(let rows) = query(sql), let text = rows.first?.first ?? nil, let value = Int(text) else {
            return -1
        }
        return value
    }
}

extension ReadOnlyDatabase: WatchedDatabase {
    var allJobsQuery: String { "SELECT id, state, attempt, unique_key, last_error, NULL FROM flow_jobs" }
}

/// A blocking libpq connection to the run's PostgreSQL schema for the controller's checks. It
/// connects again before a query when the last one broke (the controller crashes the server), and a
/// query while the server is down fails.
final class PostgresDatabase: WatchedDatabase {
    private let url: String
    private let schema: String
    private var connection: OpaquePointer?

    init(url: String, schema: String) {
        self.url = url
        self.schema = schema
    }

    deinit { PQfinish(connection) }

    var allJobsQuery: String {
        // Finished jobs are in the history table; the number is in the job's JSON payload.
        let columns = "id, state, attempt, unique_key, last_error, convert_from(payload, 'UTF8')::json->>'number'"
        return "SELECT \(columns) FROM flow_jobs UNION ALL SELECT \(columns) FROM flow_jobs_history"
    }

    func query(_ sql: String) -> Result<[[String?]], QueryError> {
        if connection == nil || PQstatus(connection) != CONNECTION_OK {
            PQfinish(connection)
            connection = PQconnectdb(url + (url.contains("?") ? "&" : "?") + "connect_timeout=2")
            guard PQstatus(connection) == CONNECTION_OK else {
                let message = String(cString: PQerrorMessage(connection))
                PQfinish(connection)
                connection = nil
                return .failure(QueryError(message: message))
            }
            // The server's notices (a schema dropped in cascade, its shutdown) are not the run's output.
            PQsetNoticeProcessor(connection, { _, _ in }, nil)
            PQclear(PQexec(connection, "SET search_path TO \(schema)"))
        }
        guard let result = PQexec(connection, sql) else {
            return .failure(QueryError(message: String(cString: PQerrorMessage(connection))))
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK:
            return .success(
                (0..<PQntuples(result)).map { row in
                    (0..<PQnfields(result)).map { column in
                        PQgetisnull(result, row, column) != 0 ? nil : String(cString: PQgetvalue(result, row, column))
                    }
                })
        default:
            return .failure(QueryError(message: String(cString: PQresultErrorMessage(result))))
        }
    }
}
