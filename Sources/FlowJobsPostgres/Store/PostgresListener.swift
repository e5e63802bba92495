import Flow
import FlowJobs
import FlowNet
import Foundation

extension SQLValue {
    var integerValue: Int64? { if case .integer(let value) = self { value } else { nil } }
    var textValue: String? { if case .text(let value) = self { value } else { nil } }
    var blobValue: Data? { if case .blob(let value) = self { value } else { nil } }
}

/// The store's `LISTEN` connection, from the first observer until the store closes: a connection of
/// its own (a pooled one would be handed to others), reopened with a backoff (50 ms doubling to 5 s)
/// when lost. Each time it listens again after a loss it says so, so that the store can report
/// what was enqueued while nobody listened.
final class PostgresListener: @unchecked Sendable {
    // @unchecked Sendable: `connection`, `isStarted`, `isStopped`, `failures`, `hasListened` and the
    // callbacks are used only in `loop`'s context; `start` and `stop` hop there.

    private let connectionString: String
    private let channel: String
    private let setup: [String]
    private let loop: EventLoop
    private let openCount: OpenConnectionCount
    private var connection: PostgresConnection?
    private var isStarted = false
    private var isStopped = false
    private var failures = 0
    private var hasListened = false
    private var onNotification: (@Sendable (String) -> Void)?
    private var onListening: (@Sendable (Bool) -> Void)?

    init(connectionString: String, channel: String, setup: [String], loop: EventLoop, openCount: OpenConnectionCount) {
        self.connectionString = connectionString
        self.channel = channel
        self.setup = setup
        self.loop = loop
        self.openCount = openCount
    }

    /// Starts listening unless already started: `onNotification` gets each payload on the channel,
    /// `onListening` is told each time `LISTEN` took effect (`true` after a lost connection).
    func start(onNotification: @escaping @Sendable (String) -> Void, onListening: @escaping @Sendable (Bool) -> Void) {
        loop.inContext("PostgresJobStore.observe") { [self] in
            guard !isStarted, !isStopped else { return }
            isStarted = true
            self.onNotification = onNotification
            self.onListening = onListening
            connect()
        }
    }

    /// Stops listening and closes the connection. Callable from any thread, more than once.
    func stop() {
        guard !loop.isClosed else { return }
        loop.inContext("PostgresJobStore.close") { [self] in
            isStopped = true
            onNotification = nil
            onListening = nil
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
                case .success(let connection): listen(on: connection)
                case .failure: retryLater()
                }
            }
        }
    }

    private func listen(on connection: PostgresConnection) {
        guard !isStopped else {
            connection.close()
            return
        }
        self.connection = connection
        connection.onNotification = { [self] _, payload in onNotification?(payload) }
        connection.onLost = { [self] _ in
            self.connection = nil
            retryLater()
        }
        for statement in setup { connection.send(statement) { _ in } }
        connection.send("LISTEN \(PostgresSchema.quoted(channel))") { [self] result in
            guard case .success = result, !isStopped else { return }
            failures = 0
            let isReconnect = hasListened
            hasListened = true
            onListening?(isReconnect)
        }
    }

    private func retryLater() {
        guard !isStopped else { return }
        failures += 1
        hasListened = hasListened || failures > 0
        let delay = min(0.05 * pow(2, Double(failures - 1)), 5)
        _ = loop.execute(after: delay) { [self] in loop.inContext { [self] in connect() } }
    }
}
