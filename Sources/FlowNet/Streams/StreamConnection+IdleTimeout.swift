import Flow

/// Why the library closed a connection: no byte was read or written on it for its
/// ``StreamConnection/idleTimeout``. Reads waiting on the connection, and its sequences (`lines()`,
/// `frames(…)`, `chunks`), fail with it, as do reads made after the close.
///
/// ```swift
/// connection.idleTimeout = 60
/// do {
///     for try await line in connection.lines() { print(line) }
/// } catch let idle as ConnectionIdleTimeoutError {
///     print("closed: \(idle)")   // closed after 60.0 s with no byte read or written
/// }
/// ```
public struct ConnectionIdleTimeoutError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The idle timeout that ran out, in seconds.
    public let seconds: Double

    /// Creates the error for an idle timeout of `seconds`.
    public init(seconds: Double) {
        self.seconds = seconds
    }

    /// "closed after 30.0 s with no byte read or written".
    public var description: String { "closed after \(seconds) s with no byte read or written" }
}

/// A connection's idle timeout: when a byte was last read or written, and the loop timer that checks.
struct IdleTimeoutState {
    let seconds: Double
    var lastActivity: UInt64
    var timer: Disposable?
}

extension StreamConnection {
    /// Seconds the connection may go without reading or writing a byte before it is closed, on its
    /// loop's timer; `nil` (the default) never closes it for idling. Callable from any thread.
    ///
    /// Closing for idling fails the waiting reads and the connection's sequences with
    /// ``ConnectionIdleTimeoutError``. `EventLoop.activeResources()` lists an open connection with its
    /// idle timeout (`TCP connection from 127.0.0.1:50312 (accepted on 127.0.0.1:8080), idle timeout
    /// 30.0 s`). A read counts as activity when bytes arrive, a write
    /// when the kernel has taken its bytes; setting the timeout counts too, so the interval starts then.
    ///
    /// ```swift
    /// connection.idleTimeout = 30   // as NIO's IdleStateHandler or Hummingbird's idle timeout
    /// ```
    ///
    /// A timeout that is negative or not finite stops the program with a message.
    public var idleTimeout: Double? {
        get {
            loop.performAndWait("\(type(of: self)).idleTimeout") { idleTimeoutState?.seconds }
        }
        set {
            if let newValue { Self.validateTimeout(newValue, "idleTimeout") }
            loop.performAndWait("\(type(of: self)).idleTimeout") {
                guard closing.isOpen else { return }
                stopIdleTimer()
                if let newValue {
                    idleTimeoutState = IdleTimeoutState(seconds: newValue, lastActivity: timeoutClockReading)
                    armIdleTimer()
                }
                listResource()
            }
        }
    }

    /// The scheduler whose clock and timers time the connection's ``idleTimeout``, read deadline
    /// (``setReadDeadline(in:)``) and timed reads (``read(timeout:)``, the sequences' `idleTimeout`):
    /// `nil` (the default) for the connection's loop, or another scheduler,
    /// such as a FlowTesting `VirtualTimeScheduler`'s, so that a test moves the time by hand and the
    /// timeouts take no real time. Its timers may fire on any thread: the connection then acts on its
    /// loop. Setting it starts the intervals of the timeouts already set again, on the new clock.
    /// Callable from any thread.
    ///
    /// ```swift
    /// let clock = VirtualTimeScheduler()
    /// connection.timeoutScheduler = clock.scheduler
    /// connection.idleTimeout = 30
    /// clock.advance(by: 30)   // the connection closes, on its loop
    /// ```
    public var timeoutScheduler: Scheduler? {
        get {
            loop.performAndWait("\(type(of: self)).timeoutScheduler") { loopTimeoutScheduler }
        }
        set {
            loop.performAndWait("\(type(of: self)).timeoutScheduler") {
                loopTimeoutScheduler = newValue
                timedReadScheduler.withLock { $0 = newValue }
                guard closing.isOpen else { return }
                if idleTimeoutState != nil {
                    disposeIdleTimer()
                    idleTimeoutState?.lastActivity = timeoutClockReading
                    armIdleTimer()
                }
                restartReadDeadline()
            }
        }
    }

    /// The time on the clock the timeouts are timed on, in nanoseconds. Loop context only.
    var timeoutClockReading: UInt64 {
        loopTimeoutScheduler?.uptimeNanoseconds ?? EventLoop.uptimeNanoseconds
    }

    /// Runs `fired` on the loop once the timeouts' clock reaches `deadline`, unless the returned
    /// disposable is disposed first. Loop context only.
    func scheduleTimeout(at deadline: UInt64, _ fired: @escaping @Sendable () -> Void) -> Disposable {
        guard let scheduler = loopTimeoutScheduler else {
            return loop.execute(atUptimeNanoseconds: deadline, fired)
        }
        let now = scheduler.uptimeNanoseconds
        let seconds = deadline > now ? Double(deadline - now) / 1e9 : 0
        return scheduler.async(after: seconds) { [self] in onLoop(fired) }
    }

    /// A byte was read or written: the idle interval starts again. The timer is not moved; when it
    /// fires early it is armed for what is left. Loop context only.
    func noteActivity() {
        idleTimeoutState?.lastActivity = timeoutClockReading
    }

    /// Stops the idle timer and forgets the timeout. Loop context only.
    func stopIdleTimer() {
        disposeIdleTimer()
        idleTimeoutState = nil
    }

    /// Stops the idle timer, keeping the timeout to tell: the connection has closed. Loop context only.
    func disposeIdleTimer() {
        idleTimeoutState?.timer?.dispose()
        idleTimeoutState?.timer = nil
    }

    private func armIdleTimer() {
        guard let state = idleTimeoutState else { return }
        let deadline = state.lastActivity + UInt64(state.seconds * 1e9)
        // The connection stays alive until it closes, and closing disposes the timer.
        idleTimeoutState?.timer = scheduleTimeout(at: deadline) { [self] in idleTimerFired() }
    }

    private func idleTimerFired() {
        guard let state = idleTimeoutState, closing.isOpen else { return }
        idleTimeoutState?.timer = nil
        let idleFor = timeoutClockReading &- state.lastActivity
        guard idleFor >= UInt64(state.seconds * 1e9) else {
            armIdleTimer()
            return
        }
        closeReason = ConnectionIdleTimeoutError(seconds: state.seconds)
        close()
    }
}

/// A listener's ``TCPListener/connectionIdleTimeout`` and ``TCPListener/connectionTimeoutScheduler``
/// (or the ``PipeListener`` ones), read as each connection is accepted. Callable from any thread.
final class ConnectionDefaults: Sendable {
    private let idleTimeout = Locked<Double?>(nil)
    private let timeoutScheduler = Locked<Scheduler?>(nil)

    var connectionTimeoutScheduler: Scheduler? {
        get { timeoutScheduler.withLock { $0 } }
        set { timeoutScheduler.withLock { $0 = newValue } }
    }

    var connectionIdleTimeout: Double? {
        get { idleTimeout.withLock { $0 } }
        set {
            if let newValue { StreamConnection.validateTimeout(newValue, "connectionIdleTimeout") }
            idleTimeout.withLock { $0 = newValue }
        }
    }

    /// Gives an accepted connection the listener's timeout scheduler and idle timeout. Loop context.
    func prepare(_ connection: StreamConnection) {
        if let scheduler = connectionTimeoutScheduler { connection.timeoutScheduler = scheduler }
        if let seconds = connectionIdleTimeout { connection.idleTimeout = seconds }
    }
}
