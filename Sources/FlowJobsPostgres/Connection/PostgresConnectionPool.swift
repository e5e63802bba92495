import Flow
import FlowJobs
import FlowNet
import Foundation

/// At most ``maxConnections`` connections to one server, opened when needed and kept for reuse, all
/// driven by one loop. A connection that broke is dropped and a new one opened for the next caller;
/// while connecting keeps failing, each new attempt waits a little longer (10 ms doubling to 1 s) so
/// that a server that is down is not hammered, and every waiting caller gets the connect error.
package final class PostgresConnectionPool: @unchecked Sendable {
    // @unchecked Sendable: `idle`, `openedCount`, `waiters`, `connectFailures` and `isClosed` are used
    // only in `loop`'s context; the methods callable from elsewhere hop there first.

    package let loop: EventLoop
    package let maxConnections: Int
    private let connectionString: String
    /// Statements every new connection runs before its first use (`SET search_path …`).
    private let setup: [String]
    package let openCount = OpenConnectionCount()
    private var idle: [PostgresConnection] = []
    private var openedCount = 0
    private var waiters: [@Sendable (Swift.Result<PostgresConnection, PostgresError>) -> Void] = []
    private var connectFailures = 0
    private var isClosed = false

    package init(connectionString: String, maxConnections: Int, setup: [String], loop: EventLoop) {
        misusePrecondition(
            maxConnections >= 1, "PostgresConnectionPool: maxConnections must be at least 1, not \(maxConnections)")
        self.connectionString = connectionString
        self.maxConnections = maxConnections
        self.setup = setup
        self.loop = loop
    }

    /// A connection of the pool's own, for the caller alone until it gives it back with
    /// ``release(_:)``; callable from any thread.
    package func acquire() -> Future<PostgresConnection> {
        Future(on: .none) { [self] completion in
            loop.inContext("PostgresConnectionPool.acquire") { [self] in
                acquireInContext { result in completion(result.mapError { $0 as Error }) }
            }
            return NilDisposer()
        }
    }

    /// An idle connection that still works, taken for the caller; `nil` when none is idle or the
    /// pool is closed. In the loop's context.
    private func idleConnection() -> PostgresConnection? {
        guard !isClosed else { return nil }
        while let connection = idle.popLast() {
            if connection.isReady { return connection }
            openedCount -= 1
        }
        return nil
    }

    private func acquireInContext(
        _ completion: @escaping @Sendable (Swift.Result<PostgresConnection, PostgresError>) -> Void
    ) {
        guard !isClosed else {
            completion(.failure(.closed))
            return
        }
        if let connection = idleConnection() {
            completion(.success(connection))
            return
        }
        waiters.append(completion)
        openIfNeeded()
    }

    /// Opens a connection when callers wait and the pool has room.
    private func openIfNeeded() {
        guard !isClosed, !waiters.isEmpty, openedCount < maxConnections else { return }
        openedCount += 1
        let delay = connectFailures == 0 ? 0 : min(0.01 * pow(2, Double(connectFailures - 1)), 1)
        if delay > 0 {
            _ = loop.execute(after: delay) { [self] in openConnection() }
        } else {
            openConnection()
        }
    }

    private func openConnection() {
        PostgresConnection.connect(connectionString, on: loop, openCount: openCount).onResult(on: .none) {
            [self] result in
            loop.inContext { [self] in
                switch result {
                case .success(let connection):
                    runSetup(on: connection, remaining: setup[...])
                case .failure(let error):
                    connectFailed(error as? PostgresError ?? .cannotConnect(message: "\(error)"))
                }
            }
        }
    }

    private func runSetup(on connection: PostgresConnection, remaining: ArraySlice<String>) {
        guard let statement = remaining.first else {
            connectFailures = 0
            hand(connection)
            return
        }
        connection.send(statement) { [self] result in
            switch result {
            case .success: runSetup(on: connection, remaining: remaining.dropFirst())
            case .failure(let error):
                connection.close()
                connectFailed(error)
            }
        }
    }

    private func connectFailed(_ error: PostgresError) {
        openedCount -= 1
        connectFailures += 1
        // The callers waiting now learn why; later ones try again after the backoff.
        let failed = waiters
        waiters = []
        for waiter in failed { waiter(.failure(error)) }
    }

    /// Gives `connection` to the oldest waiting caller, or keeps it idle.
    private func hand(_ connection: PostgresConnection) {
        guard !isClosed else {
            openedCount -= 1
            connection.close()
            return
        }
        if waiters.isEmpty {
            idle.append(connection)
        } else {
            waiters.removeFirst()(.success(connection))
        }
    }

    /// Gives back a connection from ``acquire()``: kept for the next caller if it still works, else
    /// dropped (and its place freed for a new one).
    package func release(_ connection: PostgresConnection) {
        loop.inContext("PostgresConnectionPool.release") { [self] in
            if connection.isReady {
                hand(connection)
            } else {
                openedCount -= 1
                openIfNeeded()
            }
        }
    }

    /// Runs `body` with a connection of the pool, and gives it back when `body`'s future completes.
    /// A statement that failed with ``PostgresError/connectionLost(message:)`` is run again once on a
    /// new connection when `retriesLostConnection` is set: only for statements that may safely run
    /// twice (reads, or writes whose effect is checked).
    package func withConnection<Value: Sendable>(
        retriesLostConnection: Bool = false, _ body: @escaping @Sendable (PostgresConnection) -> Future<Value>
    ) -> Future<Value> {
        let attempt: @Sendable () -> Future<Value> = { [self] in
            // In the loop's context with a connection idle: no future to wait for it.
            if loop.isInLoopContext, let connection = idleConnection() {
                return body(connection).onResult(on: .none) { [self] _ in release(connection) }
            }
            return acquire().flatMap(on: .none) { [self] connection in
                body(connection).onResult(on: .none) { [self] _ in release(connection) }
            }
        }
        guard retriesLostConnection else { return attempt() }
        return attempt().flatMapError(on: .none) { error in
            guard case .connectionLost? = error as? PostgresError else { throw error }
            return attempt()
        }
    }

    /// Closes every idle connection and refuses new callers (``PostgresError/closed``); connections
    /// in use close when they come back. Completes in the loop's context.
    package func close() -> Future<Void> {
        Future(on: .none) { [self] completion in
            loop.inContext("PostgresConnectionPool.close") { [self] in
                isClosed = true
                let failed = waiters
                waiters = []
                for waiter in failed { waiter(.failure(.closed)) }
                for connection in idle { connection.close() }
                openedCount -= idle.count
                idle = []
                completion(.success(()))
            }
            return NilDisposer()
        }
    }
}
