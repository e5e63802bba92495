/// Why a PostgreSQL connection or statement failed.
///
/// A statement the server refused carries its SQLSTATE (`23505` for a unique violation, `57014` for a
/// statement timeout, `40001` for a serialization failure) and message. A connection that could not
/// be made or was lost says so apart from those, because the two mean different things for what was
/// written: a refused statement changed nothing, while a statement whose connection was lost may or
/// may not have committed.
public enum PostgresError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The server refused or failed the statement: nothing of it took effect.
    case server(sqlState: String, message: String)
    /// No connection could be made: the server is down or unreachable, refused the password, or the
    /// connection string is wrong. Nothing was sent.
    case cannotConnect(message: String)
    /// The connection was lost while the statement was sent or ran (the server stopped, or an
    /// administrator ended the session): the statement may or may not have taken effect.
    case connectionLost(message: String)
    /// The connection or its store was closed before the statement ran.
    case closed

    /// The SQLSTATE of a statement timeout (`query_canceled`).
    public static let statementTimeoutState = "57014"

    /// Whether the server cancelled the statement because it ran past `statement_timeout`.
    public var isStatementTimeout: Bool {
        if case .server(let state, _) = self { return state == Self.statementTimeoutState }
        return false
    }

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .server(let state, let message): "PostgreSQL refused the statement (SQLSTATE \(state)): \(message)"
        case .cannotConnect(let message): "cannot connect to PostgreSQL: \(message)"
        case .connectionLost(let message):
            "the connection to PostgreSQL was lost; the statement may or may not have taken effect: \(message)"
        case .closed: "the PostgreSQL connection is closed"
        }
    }
}
