import CLibPQ
import CLibUV
import Flow
import FlowJobs
import FlowNet
import Foundation

/// One libpq connection driven by a loop: non-blocking connect (`PQconnectStart`/`PQconnectPoll`),
/// statements sent with `PQsendQueryParams` (or, for the ones sent as prepared, `PQsendPrepare` on
/// first use and `PQsendQueryPrepared` after) one at a time in the order given, the socket watched by a
/// `uv_poll_t` (readable for results and notifications, writable while libpq has output to flush).
/// No thread of its own and no blocking call: libpq only reads and writes what the socket has room for.
///
/// A connection that breaks (the server closed it, the network failed) fails the statement it was
/// running and every queued one with ``PostgresError/connectionLost(message:)``, tells ``onLost``, and
/// closes; it is not reused. ``close()`` closes the poll handle and calls `PQfinish`.
package final class PostgresConnection: @unchecked Sendable {
    // @unchecked Sendable: every mutable property below is read and written only in `loop`'s context
    // (its thread or its callbacks); the methods callable from other threads hop there first.

    /// A statement waiting to be sent, or running.
    private struct Statement {
        let sql: String
        let arguments: [SQLValue]
        /// Whether it runs as a statement prepared on this connection (prepared on its first use).
        let isPrepared: Bool
        let completion: @Sendable (Swift.Result<PostgresResult, PostgresError>) -> Void
    }

    private enum Phase {
        case connecting(@Sendable (Swift.Result<PostgresConnection, PostgresError>) -> Void)
        case ready
        case closed
    }

    /// The loop whose context owns the connection.
    package let loop: EventLoop
    private var connection: OpaquePointer?
    private var poll: UnsafeMutablePointer<uv_poll_t>?
    private var polledSocket: Int32 = -1
    /// The events `poll` watches now (`UV_READABLE`, `UV_WRITABLE`), `nil` while it watches none.
    private var polledEvents: Int32?
    private var phase: Phase
    private var waiting: [Statement] = []
    private var running: Statement?
    /// What the running statement's results gave so far: the last rows, or the first error.
    private var runningOutcome: Swift.Result<PostgresResult, PostgresError>?
    /// The name the running statement is being prepared under (its execution follows), if it is.
    private var runningPreparation: String?
    /// The names of the statements prepared on this connection, by their SQL.
    private var preparedNames: [String: String] = [:]
    /// Why the connection ended when it broke rather than being closed: what later statements get.
    private var lostError: PostgresError?
    /// Called in the loop's context with each `NOTIFY` heard: its channel and payload.
    package var onNotification: ((String, String) -> Void)?
    /// Called once in the loop's context when the connection breaks (not when it is closed).
    package var onLost: ((PostgresError) -> Void)?
    /// Counts this connection while its libpq connection is open, for the pool's handle count.
    private let openCount: OpenConnectionCount

    private init(
        loop: EventLoop, openCount: OpenConnectionCount,
        completion: @escaping @Sendable (Swift.Result<PostgresConnection, PostgresError>) -> Void
    ) {
        self.loop = loop
        self.openCount = openCount
        phase = .connecting(completion)
    }

    /// Opens a connection with libpq's connection string or `postgresql://` URL; the future completes
    /// in the loop's context once the connection is ready, or fails with
    /// ``PostgresError/cannotConnect(message:)``.
    package static func connect(
        _ connectionString: String, on loop: EventLoop, openCount: OpenConnectionCount = OpenConnectionCount()
    ) -> Future<PostgresConnection> {
        Future(on: .none) { completion in
            loop.inContext("PostgresConnection.connect") {
                let connection = PostgresConnection(loop: loop, openCount: openCount) { result in
                    completion(result.mapError { $0 as Error })
                }
                connection.start(connectionString)
            }
            return NilDisposer()
        }
    }

    /// Whether the connection can take statements (it has connected and not broken or closed).
    package var isReady: Bool {
        if case .ready = phase { return true }
        return false
    }

    // MARK: Statements

    /// Sends `sql` with `arguments` bound to `$1`, `$2`, … once the statements before it are done;
    /// `sql` without arguments may hold several statements.
    /// `completion` runs in the loop's context. Callable from any thread.
    ///
    /// With `prepared`, `sql` (one statement, with arguments, none of them a blob: the server infers
    /// every parameter's type once) is prepared on the connection the first time and run by name
    /// after, which spares the server parsing and planning it each time.
    package func send(
        _ sql: String, _ arguments: [SQLValue] = [], prepared: Bool = false,
        completion: @escaping @Sendable (Swift.Result<PostgresResult, PostgresError>) -> Void
    ) {
        loop.inContext("PostgresConnection.send") { [self] in
            guard case .ready = phase else {
                // A statement after the loss (the next of a transaction, say) learns of the loss.
                completion(.failure(lostError ?? .closed))
                return
            }
            waiting.append(
                Statement(
                    sql: sql, arguments: arguments, isPrepared: prepared && !arguments.isEmpty,
                    completion: completion))
            sendNext()
        }
    }

    /// ``send(_:_:prepared:completion:)`` as a future.
    package func query(_ sql: String, _ arguments: [SQLValue] = [], prepared: Bool = false) -> Future<PostgresResult> {
        Future(on: .none) { [self] completion in
            send(sql, arguments, prepared: prepared) { result in completion(result.mapError { $0 as Error }) }
            return NilDisposer()
        }
    }

    /// Closes the connection: statements not yet answered fail with ``PostgresError/closed``, the poll
    /// handle closes and libpq's connection is finished. Callable from any thread, more than once.
    package func close() {
        loop.inContext("PostgresConnection.close") { [self] in tearDown(failingWith: .closed) }
    }

    // MARK: Connecting

    private func start(_ connectionString: String) {
        guard let connection = PQconnectStart(connectionString) else {
            finishConnecting(.failure(.cannotConnect(message: "libpq could not allocate a connection")))
            return
        }
        self.connection = connection
        openCount.add(1)
        // The server's notices (`CREATE … IF NOT EXISTS` skipping) are not errors: libpq would print
        // them on standard error.
        PQsetNoticeReceiver(connection, { _, _ in }, nil)
        guard PQstatus(connection) != CONNECTION_BAD else {
            let message = connectionErrorMessage(connection)
            tearDown(failingWith: .cannotConnect(message: message))
            return
        }
        // libpq's rule: before the first PQconnectPoll, wait as if it had answered "writing".
        connectStep(PGRES_POLLING_WRITING)
    }

    private func connectStep(_ status: PostgresPollingStatusType) {
        switch status {
        case PGRES_POLLING_READING:
            watch(readable: true, writable: false)
        case PGRES_POLLING_WRITING:
            watch(readable: false, writable: true)
        case PGRES_POLLING_OK:
            PQsetnonblocking(connection, 1)
            watch(readable: true, writable: false)
            finishConnecting(.success(self))
        default:
            tearDown(failingWith: .cannotConnect(message: connectionErrorMessage(connection)))
        }
    }

    private func finishConnecting(_ result: Swift.Result<PostgresConnection, PostgresError>) {
        guard case .connecting(let completion) = phase else { return }
        if case .success = result { phase = .ready } else { phase = .closed }
        completion(result)
    }

    // MARK: The socket

    /// Watches libpq's socket for `readable` and `writable`, opening a new poll handle when libpq's
    /// socket changed (it does between the addresses it tries while connecting).
    private func watch(readable: Bool, writable: Bool) {
        guard let connection else { return }
        let socket = PQsocket(connection)
        guard socket >= 0 else {
            tearDown(failingWith: .connectionLost(message: connectionErrorMessage(connection)))
            return
        }
        if socket != polledSocket { closePoll() }
        if poll == nil {
            let handle = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
            let status = uv_poll_init_socket(loop.unsafeLoopPointer, handle, socket)
            guard status == 0 else {
                handle.deallocate()
                tearDown(failingWith: .connectionLost(message: EventLoop.describe(status)))
                return
            }
            handle.pointee.data = Owner.retain(self)
            poll = handle
            polledSocket = socket
        }
        var events: Int32 = 0
        if readable { events |= Int32(UV_READABLE.rawValue) }
        if writable { events |= Int32(UV_WRITABLE.rawValue) }
        // uv_poll_start takes the socket out of the kernel's poll set and puts it back even when the
        // events are the same: after each statement sent, they usually are.
        guard events != polledEvents else { return }
        polledEvents = events
        uv_poll_start(poll, events) { handle, status, events in
            Owner.borrow(handle?.pointee.data, as: PostgresConnection.self).socketReady(status: status, events: events)
        }
        loop.libuvStateDidChange()
    }

    private func closePoll() {
        guard let handle = poll else { return }
        poll = nil
        polledSocket = -1
        polledEvents = nil
        uv_poll_stop(handle)
        handle.withMemoryRebound(to: uv_handle_t.self, capacity: 1) { handle in
            uv_close(handle) { handle in
                let poll = UnsafeMutableRawPointer(handle!).assumingMemoryBound(to: uv_poll_t.self)
                _ = Owner.release(poll.pointee.data, as: PostgresConnection.self)
                poll.deallocate()
            }
        }
        loop.libuvStateDidChange()
    }

    private func socketReady(status: Int32, events: Int32) {
        // libuv stops a poll handle that reports an error: the next watch must start it again.
        if status < 0 { polledEvents = nil }
        guard let connection else { return }
        if case .connecting = phase {
            connectStep(PQconnectPoll(connection))
            return
        }
        guard status >= 0 else {
            tearDown(failingWith: .connectionLost(message: EventLoop.describe(status)))
            return
        }
        if events & Int32(UV_WRITABLE.rawValue) != 0 { flush() }
        if events & Int32(UV_READABLE.rawValue) != 0 { readInput() }
    }

    /// Sends what libpq has buffered; watches for writability while some is left.
    private func flush() {
        guard let connection else { return }
        switch PQflush(connection) {
        case 0: watch(readable: true, writable: false)
        case 1: watch(readable: true, writable: true)
        default: tearDown(failingWith: .connectionLost(message: connectionErrorMessage(connection)))
        }
    }

    private func readInput() {
        guard let connection else { return }
        guard PQconsumeInput(connection) != 0 else {
            tearDown(failingWith: .connectionLost(message: connectionErrorMessage(connection)))
            return
        }
        deliverNotifications()
        while self.connection != nil, running != nil, PQisBusy(connection) == 0 {
            guard let result = PQgetResult(connection) else {
                finishRunning()
                continue
            }
            collect(result)
            PQclear(result)
        }
        if self.connection != nil, PQstatus(connection) == CONNECTION_BAD {
            tearDown(failingWith: .connectionLost(message: connectionErrorMessage(connection)))
        }
    }

    private func deliverNotifications() {
        while let connection, let notification = PQnotifies(connection) {
            let channel = String(cString: notification.pointee.relname)
            let payload = String(cString: notification.pointee.extra)
            PQfreemem(notification)
            onNotification?(channel, payload)
        }
    }

    // MARK: Running statements

    private func sendNext() {
        guard let connection, case .ready = phase, running == nil, !waiting.isEmpty else { return }
        let statement = waiting.removeFirst()
        var preparation: String?
        let sent: Int32
        if statement.isPrepared, let name = preparedNames[statement.sql] {
            sent = Self.withParameters(statement.arguments) { count, _, values, lengths, formats in
                PQsendQueryPrepared(connection, name, count, values, lengths, formats, 0)
            }
        } else if statement.isPrepared {
            // Prepared first; its execution is sent when the preparation's answer comes.
            let name = "flow_jobs_\(preparedNames.count + 1)"
            preparation = name
            sent = Self.withParameters(statement.arguments) { count, types, _, _, _ in
                PQsendPrepare(connection, name, statement.sql, count, types)
            }
        } else if statement.arguments.isEmpty {
            // Without arguments, the simple protocol: it takes several statements at once (a migration).
            sent = PQsendQuery(connection, statement.sql)
        } else {
            sent = Self.withParameters(statement.arguments) { count, types, values, lengths, formats in
                PQsendQueryParams(connection, statement.sql, count, types, values, lengths, formats, 0)
            }
        }
        guard sent != 0 else {
            let message = connectionErrorMessage(connection)
            if PQstatus(connection) == CONNECTION_BAD {
                waiting.insert(statement, at: 0)
                tearDown(failingWith: .connectionLost(message: message))
            } else {
                statement.completion(.failure(.server(sqlState: "", message: message)))
                sendNext()
            }
            return
        }
        running = statement
        runningOutcome = nil
        runningPreparation = preparation
        flush()
    }

    private func collect(_ result: OpaquePointer) {
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            if case .failure = runningOutcome { return }
            runningOutcome = .success(PostgresResult(reading: result))
        case PGRES_NONFATAL_ERROR:
            return
        default:
            if case .failure = runningOutcome { return }
            runningOutcome = .failure(PostgresError(failedResult: result))
        }
    }

    private func finishRunning() {
        guard let statement = running else { return }
        let outcome = runningOutcome ?? .success(PostgresResult())
        let preparation = runningPreparation
        running = nil
        runningOutcome = nil
        runningPreparation = nil
        if let connection, PQstatus(connection) == CONNECTION_BAD {
            // The server ended the session (pg_terminate_backend, a shutdown) while it ran: whatever
            // the result said, the statement's effect is unknown.
            let message: String
            if case .failure(.server(_, let text)) = outcome {
                message = text
            } else {
                message = connectionErrorMessage(connection)
            }
            running = statement
            tearDown(failingWith: .connectionLost(message: message))
            return
        }
        if let preparation, case .success = outcome {
            // Prepared: now its execution, before any other statement.
            preparedNames[statement.sql] = preparation
            waiting.insert(statement, at: 0)
            sendNext()
            return
        }
        statement.completion(outcome)
        sendNext()
    }

    /// Fails every statement with `error`, closes the poll handle and finishes libpq's connection.
    private func tearDown(failingWith error: PostgresError) {
        let wasReady = isReady
        let connecting: (@Sendable (Swift.Result<PostgresConnection, PostgresError>) -> Void)?
        if case .connecting(let completion) = phase { connecting = completion } else { connecting = nil }
        phase = .closed
        if error != .closed, lostError == nil { lostError = error }
        closePoll()
        if let connection {
            self.connection = nil
            PQfinish(connection)
            openCount.add(-1)
        }
        let failed = (running.map { [$0] } ?? []) + waiting
        running = nil
        waiting = []
        let statementError: PostgresError = error == .closed ? .closed : error
        for statement in failed { statement.completion(.failure(statementError)) }
        connecting?(.failure(error))
        if wasReady, error != .closed {
            let onLost = onLost
            self.onLost = nil
            onLost?(error)
        }
        onNotification = nil
    }

    /// Calls `body` with libpq's parameter arrays for `arguments`: text for all but blobs, which go
    /// as binary `bytea`; `NULL` as a null pointer. The server infers every other type from the SQL.
    private static func withParameters<Result>(
        _ arguments: [SQLValue],
        _ body: (
            Int32, UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
            UnsafePointer<Int32>?
        ) -> Result
    ) -> Result {
        guard !arguments.isEmpty else { return body(0, nil, nil, nil, nil) }
        var types: [Oid] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        var buffers: [UnsafeMutablePointer<CChar>?] = []
        defer { for buffer in buffers { buffer?.deallocate() } }
        func copy(_ bytes: some Collection<UInt8>) -> UnsafeMutablePointer<CChar> {
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            var index = 0
            for byte in bytes {
                buffer[index] = CChar(bitPattern: byte)
                index += 1
            }
            buffer[index] = 0
            return buffer
        }
        for argument in arguments {
            switch argument {
            case .null:
                types.append(0)
                lengths.append(0)
                formats.append(0)
                buffers.append(nil)
            case .integer(let value):
                types.append(0)
                lengths.append(0)
                formats.append(0)
                buffers.append(copy(Array(String(value).utf8)))
            case .real(let value):
                types.append(0)
                lengths.append(0)
                formats.append(0)
                buffers.append(copy(Array("\(value)".utf8)))
            case .text(let value):
                types.append(0)
                lengths.append(0)
                formats.append(0)
                buffers.append(copy(Array(value.utf8)))
            case .blob(let value):
                types.append(17)  // bytea, binary: the bytes as they are
                lengths.append(Int32(value.count))
                formats.append(1)
                buffers.append(copy(value))
            }
        }
        let values = buffers.map { UnsafePointer($0) }
        return values.withUnsafeBufferPointer { values in
            body(Int32(arguments.count), types, values.baseAddress, lengths, formats)
        }
    }
}

/// How many libpq connections a pool (and its store's listener) holds open: each `PQconnectStart`
/// adds one, each `PQfinish` takes it away.
package final class OpenConnectionCount: Sendable {
    private let count = Locked(0)

    package init() {}

    /// The connections open now.
    package var value: Int { count.withLock { $0 } }

    func add(_ delta: Int) { count.withLock { $0 += delta } }
}
