import Flow
import FlowNet
import Foundation

/// A connection of its own to the server, kept open on a loop for as long as it is started: it
/// connects, queues the setup statements, and hands the connection to `onConnected`; when the
/// connection breaks, or a connect fails, it tells `onDisconnected` and connects again after a
/// backoff (50 ms doubling to 5 s, back to 50 ms once the owner calls ``connectionIsHealthy()``).
///
/// The store's listener and each leader election keep their session with one, rather than with a
/// connection of the pool: a `LISTEN` and a session advisory lock belong to one session, which the
/// pool would hand to others.
final class PostgresReconnectingConnection: @unchecked Sendable {
    // @unchecked Sendable: `connection`, `isStarted`, `isStopped`, `failures` and the callbacks are
    // used only in `loop`'s context; `start` and `stop` hop there.

    private let connectionString: String
    private let setup: [String]
    private let loop: EventLoop
    private let openCount: OpenConnectionCount
    private var connection: PostgresConnection?
    private var isStarted = false
    private var isStopped = false
    /// Connects and losses since the connection last proved healthy: the backoff's exponent.
    private var failures = 0
    private var onConnected: (@Sendable (PostgresConnection) -> Void)?
    private var onDisconnected: (@Sendable () -> Void)?

    init(connectionString: String, setup: [String], loop: EventLoop, openCount: OpenConnectionCount) {
        self.connectionString = connectionString
        self.setup = setup
        self.loop = loop
        self.openCount = openCount
    }

    /// The connection now, while connected (in the loop's context).
    var current: PostgresConnection? { connection }

    /// Starts connecting, unless started or stopped before. `onConnected` gets each new connection,
    /// its setup statements queued; `onDisconnected` is told each lost connection and failed connect,
    /// before the next attempt. Both run in the loop's context.
    func start(
        onConnected: @escaping @Sendable (PostgresConnection) -> Void, onDisconnected: @escaping @Sendable () -> Void
    ) {
        loop.inContext("PostgresReconnectingConnection.start") { [self] in
            guard !isStarted, !isStopped else { return }
            isStarted = true
            self.onConnected = onConnected
            self.onDisconnected = onDisconnected
            connect()
        }
    }

    /// Resets the backoff: the owner's first statements on the connection succeeded. In the loop's context.
    func connectionIsHealthy() {
        failures = 0
    }

    /// Drops the connection (it does not answer, or its owner's statement failed) and connects again
    /// after the backoff, as if it had broken. In the loop's context.
    func reconnect() {
        guard let connection, !isStopped else { return }
        connection.onLost = nil
        connection.close()
        self.connection = nil
        disconnected()
    }

    /// Closes the connection and stops reconnecting; the callbacks are not called again. Callable
    /// from any thread, more than once.
    func stop() {
        guard !loop.isClosed else { return }
        loop.inContext("PostgresReconnectingConnection.stop") { [self] in
            isStopped = true
            onConnected = nil
            onDisconnected = nil
            connection?.close()
            connection = nil
        }
    }

    private func connect() {
        guard !isStopped else { return }
        PostgresConnection.connect(connectionString, on: loop, openCount: openCount).onResult(on: .none) {
            [self] result in
            loop.inContext { [self] in
                switch result {
                case .success(let connection): connected(connection)
                case .failure: disconnected()
                }
            }
        }
    }

    private func connected(_ connection: PostgresConnection) {
        guard !isStopped else {
            connection.close()
            return
        }
        self.connection = connection
        connection.onLost = { [self] _ in
            self.connection = nil
            disconnected()
        }
        for statement in setup { connection.send(statement) { _ in } }
        onConnected?(connection)
    }

    private func disconnected() {
        guard !isStopped else { return }
        onDisconnected?()
        failures += 1
        let delay = min(0.05 * pow(2, Double(failures - 1)), 5)
        _ = loop.execute(after: delay) { [self] in loop.inContext { [self] in connect() } }
    }

    deinit {
        // A loop already closed has closed the connection's handle with it.
        guard !loop.isClosed else { return }
        connection?.close()
    }
}
