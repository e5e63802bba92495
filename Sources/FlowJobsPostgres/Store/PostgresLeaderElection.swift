import Flow
import FlowJobs
import FlowNet
import Foundation

/// One leader among every process of a store for a role: the holder of a session advisory lock on
/// a connection of the election's own. The others wait for that lock inside the server
/// (`pg_advisory_lock`), so that the hand-over takes no polling: when the leader's session ends (its
/// process died, its connection broke, an administrator ended it), the server gives the lock to a
/// waiting session at once.
///
/// ```swift
/// let election = store.electLeader(for: "reports") { isLeader in
///     print(isLeader ? "leading" : "following")
/// }
/// // …
/// election.stop()
/// ```
///
/// Two leaders never act at once when the leader's work runs in ``transaction(_:)``: its statements
/// run on the session that holds the lock, so they take effect only while this process leads. A
/// leader paused past the end of its session (a stopped process, a cut network that an administrator
/// or TCP keepalives ended), which still believes it leads when it wakes, has its transaction fail
/// with ``PostgresNotLeaderError`` or ``PostgresError/connectionLost(message:)`` instead of acting
/// beside the new leader.
///
/// A leader learns that it lost the lead when its connection breaks, and is told `false`; it then
/// reconnects (50 ms doubling to 5 s) and waits for the lock again. Work done outside
/// ``transaction(_:)`` (a message sent, a file written) is not fenced: a paused leader may still do
/// it after another took over, so make it safe to overlap.
public final class PostgresLeaderElection: @unchecked Sendable {
    // @unchecked Sendable: `lockHolder`, `isStopped`, `onChange` and `lastTransaction` are used only
    // in `loop`'s context (`stop` and `transaction` hop there); `leading` is locked.

    private let lockName: String
    private let loop: EventLoop
    private let session: PostgresReconnectingConnection
    private let clock: JobClock
    private let statements: PostgresJobStore.Statements
    private let threads: TransactionThreads
    /// Tells the store's observers in this process what a committed transaction changed.
    private let publish: @Sendable ([JobStoreNotification]) -> Void
    /// The connection that holds the lock, while this process leads.
    private var lockHolder: PostgresConnection?
    private var isStopped = false
    private var onChange: (@Sendable (Bool) -> Void)?
    private let leading = Locked(false)
    /// The leader's last transaction: the next one starts after it ends, since both use the one session.
    private var lastTransaction: Future<Void> = Future(())

    init(
        connectionString: String, setup: [String], lockName: String, loop: EventLoop, openCount: OpenConnectionCount,
        clock: JobClock, statements: PostgresJobStore.Statements, threads: TransactionThreads,
        publish: @escaping @Sendable ([JobStoreNotification]) -> Void, onChange: @escaping @Sendable (Bool) -> Void
    ) {
        self.publish = publish
        self.lockName = lockName
        self.loop = loop
        self.clock = clock
        self.statements = statements
        self.threads = threads
        self.onChange = onChange
        session = PostgresReconnectingConnection(
            connectionString: connectionString, setup: setup, loop: loop, openCount: openCount)
        session.start(
            onConnected: { [self] connection in waitForLock(on: connection) },
            onDisconnected: { [self] in
                lockHolder = nil
                setLeading(false)
            })
    }

    /// Whether this process leads now, as far as it knows (see ``transaction(_:)`` for work that
    /// must not overlap another leader's).
    public var isLeader: Bool { leading.withLock { $0 } }

    /// Stops taking part: a leader gives the lead up (its session ends, and another process's takes
    /// the lock), and `onChange` is not called again. Callable from any thread, more than once.
    public func stop() {
        guard !loop.isClosed else { return }
        session.stop()
        loop.inContext("PostgresLeaderElection.stop") { [self] in
            isStopped = true
            onChange = nil
            lockHolder = nil
            leading.withLock { $0 = false }
        }
    }

    /// Runs `body` in one transaction on the session that holds the leader's lock: the leader's work
    /// that must not overlap another leader's. It commits only if this session still holds the lock
    /// when it commits, so a process that lost the lead (its session ended while it was paused, say)
    /// cannot act beside the new leader.
    ///
    /// `body` runs on a thread of the store's own, as in `JobStore/transaction(_:)`; the election's
    /// transactions run one at a time.
    ///
    /// ```swift
    /// election.transaction { transaction in
    ///     try transaction.execute("DELETE FROM sessions WHERE expires_at < now()", [])
    /// }
    /// ```
    ///
    /// - Returns: `body`'s value once committed; fails with ``PostgresNotLeaderError`` when this
    ///   process does not lead as it starts, with ``PostgresError/connectionLost(message:)`` when the
    ///   lock's session ended meanwhile (nothing of it committed then: the lock and the transaction
    ///   end together), or with `body`'s error (rolled back).
    @discardableResult
    public func transaction<Value: Sendable>(
        _ body: @escaping @Sendable (any JobTransaction) throws -> Value
    ) -> Future<Value> {
        let statements = statements
        return leaderTransaction { session, now in
            let value = try body(PostgresTransaction(session: session, now: now, store: statements))
            try statements.notifyOtherProcesses(session)
            return value
        }
    }

    /// Runs `body` in a transaction on the lock's session while this process leads; see ``transaction(_:)``.
    func leaderTransaction<Value: Sendable>(
        _ body: @escaping @Sendable (PostgresSession, Int64) throws -> Value
    ) -> Future<Value> {
        let clock = clock
        let threads = threads
        let publish = publish
        let role = lockName
        return Future(on: .none) { [self] completion in
            loop.inContext("PostgresLeaderElection.transaction") { [self] in
                let previous = lastTransaction
                // The next transaction waits for this one's end through a future of its own, not
                // through this one's chain: a chain's steps stay with it, and would hold the election
                // (which holds the chain) and every transaction before.
                let settled = PendingResult<Void>()
                lastTransaction = settled.future()
                previous.onResult(on: .none) { [weak self] _ in
                    guard let self else {
                        completion(.failure(PostgresNotLeaderError(role: role)))
                        settled.succeed(())
                        return
                    }
                    loop.inContext { [self] in
                        // Checked on the loop, where the lock's loss is learnt: a session that
                        // ended before now fails here, one that ends later fails its statements.
                        guard !isStopped, isLeader, let connection = lockHolder, connection.isReady else {
                            completion(.failure(PostgresNotLeaderError(role: role)))
                            settled.succeed(())
                            return
                        }
                        threads.run {
                            let session = PostgresSession(connection: connection)
                            let result = Result {
                                try session.run("BEGIN")
                                do {
                                    let value = try body(session, clock.now().milliseconds)
                                    try session.run("COMMIT")
                                    return value
                                } catch {
                                    _ = try? session.run("ROLLBACK")
                                    throw error
                                }
                            }
                            if case .success = result { publish(session.pendingNotifications) }
                            completion(result)
                            settled.succeed(())
                        }
                    }
                }
            }
            return NilDisposer()
        }
    }

    private func waitForLock(on connection: PostgresConnection) {
        guard !isStopped else { return }
        // The wait may last as long as another process leads: no statement timeout for it.
        connection.send("SET statement_timeout TO 0") { _ in }
        connection.send("SELECT pg_advisory_lock(hashtext($1))", [.text(lockName)]) { [self] result in
            guard !isStopped, session.current === connection else { return }
            guard case .success = result else {
                // Refused (not lost: a loss tells onDisconnected): wait again on a new connection.
                session.reconnect()
                return
            }
            session.connectionIsHealthy()
            lockHolder = connection
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
}

/// A leader's transaction was refused because this process does not lead (it never did, lost the
/// lead, or stopped its election).
public struct PostgresNotLeaderError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The election's lock name, which says its store's schema and role.
    public let role: String

    /// A sentence saying what went wrong.
    public var description: String { "this process does not lead \(role): the leader's transaction did not run" }
}

extension PostgresJobStore {
    /// Takes part in electing one leader among every process of this store (its schema) for `role`;
    /// `onChange` is called in the store's loop with `true` when this process becomes the leader and
    /// `false` when it loses the lead. See ``PostgresLeaderElection``.
    ///
    /// - Parameters:
    ///   - role: what the leader is for; elections for different roles are independent.
    ///   - onChange: told each change of this process's leadership.
    /// - Returns: the election; ``PostgresLeaderElection/stop()`` it to give the lead up (closing the
    ///   store stops it too).
    public func electLeader(
        for role: String = "leader", onChange: @escaping @Sendable (Bool) -> Void
    ) -> PostgresLeaderElection {
        let election = PostgresLeaderElection(
            connectionString: connectionString, setup: sessionSetup, lockName: "flow_jobs.\(schema).\(role)",
            loop: loop, openCount: pool.openCount, clock: clock, statements: statements, threads: transactionThreads,
            publish: { [weak self] notifications in self?.publish(notifications) }, onChange: onChange)
        elections.withLock { elections in
            elections.removeAll { $0.election == nil }
            elections.append(WeakElection(election: election))
        }
        return election
    }

    /// Rescues the jobs whose leases expired (as a claim does first), whichever queue they wait in:
    /// each is retried, discarded when out of attempts, cancelled when asked to, or quarantined
    /// after `maxLeaseExpiries` expiries with no error recorded. The leader runs it (see
    /// ``rescuesExpiredLeasesWhileLeading(every:maxLeaseExpiries:)``), so that a queue nobody claims
    /// from keeps no job running under a dead worker's lease.
    ///
    /// - Returns: the rescued jobs, as the rescue left them.
    public func rescueExpiredLeases(maxLeaseExpiries: Int) -> Future<[JobRecord]> {
        inTransaction(rescuing(maxLeaseExpiries: maxLeaseExpiries))
    }

    /// The rescue's transaction, on the pool's connection or the leader's.
    fileprivate func rescuing(maxLeaseExpiries: Int) -> @Sendable (PostgresSession, Int64) throws -> [JobRecord] {
        let statements = statements
        return { session, now in
            let rescued = try statements.rescueExpiredLeases(maxLeaseExpiries: maxLeaseExpiries, now: now, on: session)
            let queues = Set(rescued.filter { !$0.state.isTerminal }.map(\.queue))
            if !queues.isEmpty { session.pendingNotifications.append(.enqueued(queues: queues)) }
            try statements.notifyOtherProcesses(session)
            return rescued
        }
    }

    /// The leader's round: the rescue's transaction, answering the end (in milliseconds) of the
    /// earliest lease still running after it, when the next round is due at the latest.
    fileprivate func rescuingRound(maxLeaseExpiries: Int) -> @Sendable (PostgresSession, Int64) throws -> Int64? {
        let rescue = rescuing(maxLeaseExpiries: maxLeaseExpiries)
        return { session, now in
            _ = try rescue(session, now)
            // Leases that ended and are still running are locked by another rescue (SKIP LOCKED):
            // that one's to report, so the next round waits for a later end, not for those.
            return try session.rows(
                "SELECT min(lease_expires_at) FROM flow_jobs WHERE state = 'running' AND lease_expires_at > $1",
                [.integer(now)]
            ).first?.first?.integerValue
        }
    }

    /// Elects a leader among the store's processes that, while it leads, rescues expired leases
    /// every `interval` and as the earliest lease it last saw running ends, whichever comes first
    /// (``rescueExpiredLeases(maxLeaseExpiries:)``), each rescue in the leader's
    /// ``PostgresLeaderElection/transaction(_:)``: a leader that lost its lock rescues nothing. A job
    /// whose worker died is rescued when its lease ends, not up to an interval later, even while no
    /// worker has a free slot to claim (and rescue) it.
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
        let elected = Locked(WeakElection())
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        // Ends the last lead's rounds, and starts a new lead's.
        let lead: @Sendable (Bool) -> Void = { [weak self] isLeader in
            rescues.withLock { $0 }?.dispose()
            rescues.withLock { $0 = nil }
            guard isLeader, let self else { return }
            rescues.withLock {
                $0 = Self.repeatRescue(
                    self, every: seconds, maxLeaseExpiries: maxLeaseExpiries, on: loop,
                    leading: { elected.withLock { $0.election } })
            }
        }
        let election = electLeader(for: "rescue") { isLeader in
            // The election calling is alive: no election known yet means it is being recorded below,
            // which then starts the lead (rounds that found no election would end at once).
            let isKnown = elected.withLock { elected in
                if elected.election == nil { elected.ledBeforeKnown = isLeader }
                return elected.election != nil
            }
            if isKnown { lead(isLeader) }
        }
        // Held weakly by its rounds: the caller's reference keeps the election.
        let ledBeforeKnown = elected.withLock { elected in
            elected.election = election
            return elected.ledBeforeKnown
        }
        if ledBeforeKnown {
            // On the loop, after (or before) any change the election reports there.
            loop.inContext { [weak election] in
                if election?.isLeader == true { lead(true) }
            }
        }
        return election
    }

    /// Rescues now, then every `seconds` until the result is disposed, in `leading()`'s transactions.
    private static func repeatRescue(
        _ store: PostgresJobStore, every seconds: Double, maxLeaseExpiries: Int, on loop: EventLoop,
        leading: @escaping @Sendable () -> PostgresLeaderElection?
    ) -> Disposable {
        let rounds = RescueRounds(
            store: store, every: seconds, maxLeaseExpiries: maxLeaseExpiries, on: loop, leading: leading)
        rounds.round()
        return Disposer { rounds.dispose() }
    }
}

/// The leader's repeated rescue: a round now, then one every `seconds` or at the end of the earliest
/// lease the last round saw running if sooner, each in `leading()`'s transaction, until disposed,
/// the store is gone or the election no longer leads (stopped, say).
/// Only the pending timer holds it between rounds, and it holds the store and the election weakly,
/// so nothing keeps it alive once its loop closes or it stops.
private final class RescueRounds: Sendable {
    private weak let store: PostgresJobStore?
    private let seconds: Double
    private let maxLeaseExpiries: Int
    private let loop: EventLoop
    private let leading: @Sendable () -> PostgresLeaderElection?
    private let isDisposed = Locked(false)
    private let next = Locked<Disposable?>(nil)

    init(
        store: PostgresJobStore, every seconds: Double, maxLeaseExpiries: Int, on loop: EventLoop,
        leading: @escaping @Sendable () -> PostgresLeaderElection?
    ) {
        self.store = store
        self.seconds = seconds
        self.maxLeaseExpiries = maxLeaseExpiries
        self.loop = loop
        self.leading = leading
    }

    func round() {
        // An election stopped (which tells no one) or gone ends its rounds here; a new lead starts new ones.
        guard let store, !isDisposed.withLock({ $0 }), let election = leading(), election.isLeader else { return }
        let rescued = election.leaderTransaction(store.rescuingRound(maxLeaseExpiries: maxLeaseExpiries))
        let clock = store.clock
        rescued.onResult(on: .none) { [self] result in
            guard !isDisposed.withLock({ $0 }) else { return }
            var delay = seconds
            if case .success(let leaseEnd?) = result {
                // A millisecond past the end: a rescue takes the leases that ended at or before its time.
                let untilEnd = Double(leaseEnd + 1 - clock.now().milliseconds) / 1000
                delay = min(seconds, max(0.001, untilEnd))
            }
            next.withLock { $0 = loop.execute(after: delay) { [self] in round() } }
        }
    }

    func dispose() {
        isDisposed.withLock { $0 = true }
        next.withLock { $0 }?.dispose()
    }
}

/// A reference to an election that does not keep it: its own rounds and its store must not.
struct WeakElection: Sendable {
    weak var election: PostgresLeaderElection?
    /// Whether the election said it leads before it was recorded here.
    var ledBeforeKnown = false
}
