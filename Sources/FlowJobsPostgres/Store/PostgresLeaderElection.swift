import Flow
import FlowJobs
import FlowNet
import Foundation

/// One leader among every process of a store for a role: the holder of a session advisory lock on
/// a connection of the election's own. The others wait for that lock inside the server
/// (`pg_advisory_lock`), so that the hand-over takes no polling: when the leader's session ends (its
/// process died, its connection broke, it stopped), the server gives the lock to a waiting session
/// at once.
///
/// ```swift
/// let election = store.electLeader(for: "reports") { isLeader in
///     print(isLeader ? "leading" : "following")
/// }
/// // …
/// election.stop()
/// ```
///
/// A leader learns that it lost the lead when its connection breaks, and is told `false`; it then
/// reconnects (50 ms doubling to 5 s) and waits for the lock again. A leader whose process is
/// paused, or whose network is cut without the socket failing, does not learn it until the socket
/// fails: add TCP keepalives (`keepalives_idle` and friends in the URL) to bound that time, and make
/// the leader's work safe to overlap (as the store's rescue is: it locks the rows it changes).
public final class PostgresLeaderElection: @unchecked Sendable {
    // @unchecked Sendable: `connection`, `isStopped`, `failures` and `onChange` are used only in
    // `loop`'s context (`stop` hops there); `leading` is locked.

    private let connectionString: String
    private let setup: [String]
    private let lockName: String
    private let loop: EventLoop
    private let openCount: OpenConnectionCount
    private var connection: PostgresConnection?
    private var isStopped = false
    private var failures = 0
    private var onChange: (@Sendable (Bool) -> Void)?
    private let leading = Locked(false)

    init(
        connectionString: String, setup: [String], lockName: String, loop: EventLoop, openCount: OpenConnectionCount,
        onChange: @escaping @Sendable (Bool) -> Void
    ) {
        self.connectionString = connectionString
        self.setup = setup
        self.lockName = lockName
        self.loop = loop
        self.openCount = openCount
        self.onChange = onChange
        loop.inContext("PostgresJobStore.electLeader") { [self] in connect() }
    }

    /// Whether this process leads now.
    public var isLeader: Bool { leading.withLock { $0 } }

    /// Stops taking part: a leader gives the lead up (its session ends, and another process's takes
    /// the lock), and `onChange` is not called again. Callable from any thread, more than once.
    public func stop() {
        guard !loop.isClosed else { return }
        loop.inContext("PostgresLeaderElection.stop") { [self] in
            isStopped = true
            onChange = nil
            leading.withLock { $0 = false }
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
                case .success(let connection): waitForLock(on: connection)
                case .failure: retryLater()
                }
            }
        }
    }

    private func waitForLock(on connection: PostgresConnection) {
        guard !isStopped else {
            connection.close()
            return
        }
        self.connection = connection
        connection.onLost = { [self] _ in
            self.connection = nil
            setLeading(false)
            retryLater()
        }
        for statement in setup { connection.send(statement) { _ in } }
        // The wait may last as long as another process leads: no statement timeout for it.
        connection.send("SET statement_timeout TO 0") { _ in }
        connection.send("SELECT pg_advisory_lock(hashtext($1))", [.text(lockName)]) { [self] result in
            guard case .success = result, !isStopped else { return }
            failures = 0
            setLeading(true)
        }
    }

    private func setLeading(_ isLeading: Bool) {
        let changed = leading.withLock { leading in
            defer { leading = isLeading }
            return leading != isLeading
        }
        if changed { onChange?(isLeading) }
    }

    private func retryLater() {
        guard !isStopped else { return }
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

extension PostgresJobStore {
    /// Takes part in electing one leader among every process of this store (its schema) for `role`;
    /// `onChange` is called in the store's loop with `true` when this process becomes the leader and
    /// `false` when it loses the lead. See ``PostgresLeaderElection``.
    ///
    /// - Parameters:
    ///   - role: what the leader is for; elections for different roles are independent.
    ///   - onChange: told each change of this process's leadership.
    /// - Returns: the election; ``PostgresLeaderElection/stop()`` it to give the lead up.
    public func electLeader(
        for role: String = "leader", onChange: @escaping @Sendable (Bool) -> Void
    ) -> PostgresLeaderElection {
        PostgresLeaderElection(
            connectionString: connectionString, setup: sessionSetup, lockName: "flow_jobs.\(schema).\(role)",
            loop: loop, openCount: pool.openCount, onChange: onChange)
    }

    /// Rescues the jobs whose leases expired (as a claim does first), whichever queue they wait in:
    /// each is retried, discarded when out of attempts, cancelled when asked to, or quarantined
    /// after `maxLeaseExpiries` expiries with no error recorded. The leader runs it (see
    /// ``rescuesExpiredLeasesWhileLeading(every:maxLeaseExpiries:)``), so that a queue nobody claims
    /// from keeps no job running under a dead worker's lease.
    ///
    /// - Returns: the rescued jobs, as the rescue left them.
    public func rescueExpiredLeases(maxLeaseExpiries: Int) -> Future<[JobRecord]> {
        let statements = statements
        return inTransaction { session, now in
            let rescued = try statements.rescueExpiredLeases(maxLeaseExpiries: maxLeaseExpiries, now: now, on: session)
            let queues = Set(rescued.filter { !$0.state.isTerminal }.map(\.queue))
            if !queues.isEmpty { session.pendingNotifications.append(.enqueued(queues: queues)) }
            try statements.notifyOtherProcesses(session)
            return rescued
        }
    }

    /// Elects a leader among the store's processes that, while it leads, rescues expired leases
    /// every `interval` (``rescueExpiredLeases(maxLeaseExpiries:)``).
    ///
    /// ```swift
    /// let rescuer = store.rescuesExpiredLeasesWhileLeading(every: .seconds(5), maxLeaseExpiries: 3)
    /// ```
    ///
    /// - Returns: the election; stop it to stop rescuing.
    public func rescuesExpiredLeasesWhileLeading(every interval: Duration, maxLeaseExpiries: Int)
        -> PostgresLeaderElection
    {
        let rescues = Locked<Disposable?>(nil)
        let loop = loop
        return electLeader(for: "rescue") { [weak self] isLeader in
            rescues.withLock { $0 }?.dispose()
            rescues.withLock { $0 = nil }
            guard isLeader, let self else { return }
            let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
            rescues.withLock {
                $0 = Self.repeatRescue(self, every: seconds, maxLeaseExpiries: maxLeaseExpiries, on: loop)
            }
        }
    }

    /// Rescues now, then every `seconds` until the result is disposed.
    private static func repeatRescue(
        _ store: PostgresJobStore, every seconds: Double, maxLeaseExpiries: Int, on loop: EventLoop
    ) -> Disposable {
        let isDisposed = Locked(false)
        let next = Locked<Disposable?>(nil)
        // The next round, kept here until disposed; it holds the store weakly.
        let nextRound = Locked<(@Sendable () -> Void)?>(nil)
        let round: @Sendable () -> Void = { [weak store] in
            guard let store, !isDisposed.withLock({ $0 }) else { return }
            store.rescueExpiredLeases(maxLeaseExpiries: maxLeaseExpiries).onResult(on: .none) { _ in
                guard !isDisposed.withLock({ $0 }) else { return }
                next.withLock { $0 = loop.execute(after: seconds) { nextRound.withLock { $0 }?() } }
            }
        }
        nextRound.withLock { $0 = round }
        round()
        return Disposer {
            isDisposed.withLock { $0 = true }
            nextRound.withLock { $0 = nil }
            next.withLock { $0 }?.dispose()
        }
    }
}
