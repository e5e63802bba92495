import Flow
import FlowJobs
import FlowNet
import Foundation

extension SQLValue {
    var integerValue: Int64? { if case .integer(let value) = self { value } else { nil } }
    var textValue: String? { if case .text(let value) = self { value } else { nil } }
    var blobValue: Data? { if case .blob(let value) = self { value } else { nil } }
}

/// The store's `LISTEN` connection, from the store's opening until it closes: a connection of
/// its own (a pooled one would be handed to others), reopened with a backoff (50 ms doubling to 5 s)
/// when lost. Each time it listens again after a loss it says so, so that the store can report
/// what was enqueued while nobody listened.
///
/// The safety poll, every `safetyInterval` while listening: a `SELECT 1` on the connection, and one
/// still unanswered at the next tick counts as a lost connection (a socket cut without an error);
/// then `onSafetyPoll`, where the store reports queues with due jobs (a notification lost in a way
/// nothing noticed).
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
    private var onSafetyPoll: (@Sendable () -> Void)?
    /// Told when an attempt to connect and listen failed (before retrying).
    private var onFailure: (@Sendable () -> Void)?
    private let safetyInterval: Duration?
    /// The safety poll's timer while listening.
    private var safetyTimer: Disposable?
    /// Whether the safety poll's last `SELECT 1` is still unanswered.
    private var isPingOutstanding = false

    init(
        connectionString: String, channel: String, setup: [String], loop: EventLoop, openCount: OpenConnectionCount,
        safetyInterval: Duration?
    ) {
        self.safetyInterval = safetyInterval
        self.connectionString = connectionString
        self.channel = channel
        self.setup = setup
        self.loop = loop
        self.openCount = openCount
    }

    /// Starts listening unless already started: `onNotification` gets each payload on the channel,
    /// `onListening` is told each time `LISTEN` took effect (`true` after a lost connection).
    func start(
        onNotification: @escaping @Sendable (String) -> Void, onListening: @escaping @Sendable (Bool) -> Void,
        onFailure: @escaping @Sendable () -> Void, onSafetyPoll: @escaping @Sendable () -> Void
    ) {
        loop.inContext("PostgresJobStore.observe") { [self] in
            guard !isStarted, !isStopped else { return }
            isStarted = true
            self.onNotification = onNotification
            self.onListening = onListening
            self.onSafetyPoll = onSafetyPoll
            self.onFailure = onFailure
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
            onSafetyPoll = nil
            onFailure = nil
            safetyTimer?.dispose()
            safetyTimer = nil
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
        connection.onLost = { [self] _ in connectionWasLost() }
        for statement in setup { connection.send(statement) { _ in } }
        connection.send("LISTEN \(PostgresSchema.quoted(channel))") { [self] result in
            guard !isStopped else { return }
            guard case .success = result else {
                onFailure?()
                return
            }
            failures = 0
            let isReconnect = hasListened
            hasListened = true
            onListening?(isReconnect)
            scheduleSafetyPoll()
        }
    }

    private func connectionWasLost() {
        safetyTimer?.dispose()
        safetyTimer = nil
        isPingOutstanding = false
        connection = nil
        retryLater()
    }

    private func scheduleSafetyPoll() {
        guard let safetyInterval, !isStopped else { return }
        let seconds = Double(safetyInterval.components.seconds) + Double(safetyInterval.components.attoseconds) / 1e18
        safetyTimer = loop.execute(after: seconds) { [self] in loop.inContext { [self] in safetyPoll() } }
    }

    private func safetyPoll() {
        guard let connection, !isStopped else { return }
        if isPingOutstanding {
            // No answer in a whole interval: the socket is as good as lost.
            connection.onLost = nil
            connection.close()
            connectionWasLost()
            return
        }
        isPingOutstanding = true
        connection.send("SELECT 1") { [self] _ in isPingOutstanding = false }
        onSafetyPoll?()
        scheduleSafetyPoll()
    }

    private func retryLater() {
        guard !isStopped else { return }
        onFailure?()
        failures += 1
        hasListened = hasListened || failures > 0
        let delay = min(0.05 * pow(2, Double(failures - 1)), 5)
        _ = loop.execute(after: delay) { [self] in loop.inContext { [self] in connect() } }
    }
}
