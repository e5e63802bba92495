import Flow
import FlowJobs
import FlowNet
import Foundation

extension SQLValue {
    var integerValue: Int64? { if case .integer(let value) = self { value } else { nil } }
    var textValue: String? { if case .text(let value) = self { value } else { nil } }
    var blobValue: Data? { if case .blob(let value) = self { value } else { nil } }
}

/// The store's `LISTEN` connection, from the store's opening until it closes: a
/// ``PostgresReconnectingConnection`` (a pooled connection would be handed to others), which reopens
/// it with a backoff when lost. Each time it listens again after a loss it says so, so that the
/// store can report what was enqueued while nobody listened.
///
/// The safety poll, every `safetyInterval` while listening: a `SELECT 1` on the connection, and one
/// still unanswered at the next tick counts as a lost connection (a socket cut without an error);
/// then `onSafetyPoll`, where the store reports queues with due jobs (a notification lost in a way
/// nothing noticed).
final class PostgresListener: @unchecked Sendable {
    // @unchecked Sendable: `isStarted`, `isStopped`, `hasListened`, the safety poll's state and the
    // callbacks are used only in `loop`'s context; `start` and `stop` hop there.

    private let channel: String
    private let loop: EventLoop
    private let session: PostgresReconnectingConnection
    private var isStarted = false
    private var isStopped = false
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
        self.channel = channel
        self.loop = loop
        session = PostgresReconnectingConnection(
            connectionString: connectionString, setup: setup, loop: loop, openCount: openCount)
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
            session.start(
                onConnected: { [self] connection in listen(on: connection) },
                onDisconnected: { [self] in connectionWasLost() })
        }
    }

    /// Stops listening and closes the connection. Callable from any thread, more than once.
    func stop() {
        guard !loop.isClosed else { return }
        session.stop()
        loop.inContext("PostgresJobStore.close") { [self] in
            isStopped = true
            onNotification = nil
            onListening = nil
            onSafetyPoll = nil
            onFailure = nil
            safetyTimer?.dispose()
            safetyTimer = nil
        }
    }

    private func listen(on connection: PostgresConnection) {
        guard !isStopped else { return }
        connection.onNotification = { [self] _, payload in onNotification?(payload) }
        connection.send("LISTEN \(PostgresSchema.quoted(channel))") { [self] result in
            guard !isStopped, session.current === connection else { return }
            guard case .success = result else {
                // Refused (not lost: a loss tells connectionWasLost): try again on a new connection.
                session.reconnect()
                return
            }
            session.connectionIsHealthy()
            let isReconnect = hasListened
            hasListened = true
            onListening?(isReconnect)
            scheduleSafetyPoll()
        }
    }

    /// The connection broke, or a connect failed: the next one will report what it missed.
    private func connectionWasLost() {
        safetyTimer?.dispose()
        safetyTimer = nil
        isPingOutstanding = false
        hasListened = true
        onFailure?()
    }

    private func scheduleSafetyPoll() {
        guard let safetyInterval, !isStopped else { return }
        let seconds = Double(safetyInterval.components.seconds) + Double(safetyInterval.components.attoseconds) / 1e18
        safetyTimer = loop.execute(after: seconds) { [self] in loop.inContext { [self] in safetyPoll() } }
    }

    private func safetyPoll() {
        guard let connection = session.current, !isStopped else { return }
        if isPingOutstanding {
            // No answer in a whole interval: the socket is as good as lost.
            session.reconnect()
            return
        }
        isPingOutstanding = true
        connection.send("SELECT 1") { [self] _ in isPingOutstanding = false }
        onSafetyPoll?()
        scheduleSafetyPoll()
    }
}
