// RetryJob: fetches a report from a flaky service, retrying with exponential backoff and jitter, and a
// timeout on each attempt. The service runs in this same process, on the same loop, and misbehaves on
// purpose for its first attempts: it is not listening yet, then it hangs up, then it never answers,
// then it answers.
//
//     swift run RetryJob                      # succeeds on the 4th attempt
//     swift run RetryJob --fail-first 9       # gives up after 5 retries, exits with status 1
//
// Its retries live in memory; JobRunner (Examples/JobRunner) keeps them in a database, across restarts.

import Flow
import FlowLogging
import FlowNet
import FlowTimers
import Logging

#if canImport(Glibc)
import Glibc
#endif

let options = RetryJobOptions.parseOrExit()
let failFirst = options.failFirst
let maxRetries = options.maxRetries

LoggingSystem.bootstrap(StreamLogHandler.standardError)
var logger = Logger(label: "RetryJob")
logger.logLevel = options.logLevel
FlowDiagnostics.log(to: logger)   // Flow's own reports: on standard error

let attemptTimeout = 0.5
let backoff = Backoff.exponential(initial: 0.1, maximum: 2, jitter: .full)

let started = EventLoop.uptimeNanoseconds

/// Prints a progress line stamped with the time since the job started.
func log(_ message: String) {
    let elapsed = Double(EventLoop.uptimeNanoseconds - started) / 1e9
    let stamp = String(Int(elapsed * 1000)).leftPadded(to: 5)
    print("[+\(stamp) ms] \(message)")
    fflush(nil)
}

extension String {
    func leftPadded(to width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}

/// Why an attempt failed, beyond what the network says.
enum ServiceError: Error, CustomStringConvertible {
    case closedWithoutAnswer
    case unexpectedAnswer(String)

    var description: String {
        switch self {
        case .closedWithoutAnswer: return "the service closed the connection without answering"
        case .unexpectedAnswer(let text): return "unexpected answer: \(text)"
        }
    }
}

// MARK: The flaky service

/// How the service treats the n-th connection it receives (1-based), after `failFirst` failures.
final class FlakyService: Sendable {
    private let connections = LoopBoundBox(0, loop: .main)
    private let listener = LoopBoundBox<TCPListener?>(nil, loop: .main)

    /// Starts listening on `port` (0: any free port) and returns the port.
    func start(port: Int) throws -> Int {
        let listener = try TCPListener.listen(host: "localhost", port: port, on: .main) { [self] connection in serve(connection) }
        self.listener.value = listener
        return listener.port
    }

    func stop() {
        _ = listener.value?.close()
        listener.value = nil
    }

    private func serve(_ connection: TCPConnection) {
        connections.value += 1
        let number = connections.value
        // The first attempt found nothing listening; the next ones alternately get hung up on and
        // get no answer at all, until `failFirst` attempts have failed.
        if number < failFirst {
            if number % 2 == 1 {
                connection.close()
            } else {
                _ = connection.read()   // reads the request and never answers
            }
            return
        }
        connection.read().onValue { request in
            guard request != nil else { connection.close(); return }
            connection.write("report #42: 17 jobs done, 0 failed\n").always { connection.close() }
        }
    }
}

// MARK: The job

/// One attempt: connect, ask, read the answer. A future made from an operation, so that a repetition
/// runs all of it again.
func fetchReport(port: Int, attempts: LoopBoundBox<Int>) -> Future<String> {
    Future(on: .main) { completion in
        attempts.value += 1
        log("attempt \(attempts.value): connecting to localhost:\(port)")
        let exchange = TCPConnection.connect(host: "localhost", port: port, on: .main)
            .flatMap { connection in
                connection.write("GET /report\n")
                    // The answer is the first line, however the bytes arrive; a signal that ends
                    // without one fails its future with FutureError.aborted.
                    .flatMap { connection.lineSignal(maximumLength: 1024).future }
                    .mapError { error -> String in
                        throw error as? FutureError == .aborted ? ServiceError.closedWithoutAnswer : error
                    }
                    .always { connection.close() }
            }
            .map { answer -> String in
                guard answer.hasPrefix("report") else { throw ServiceError.unexpectedAnswer(answer) }
                return answer
            }
        return exchange.onResult { completion($0) }.disposable
    }
}

let service = FlakyService()
let attempts = LoopBoundBox(0, loop: .main)

// Find a free port, then let it go: the first attempt is refused because nothing listens there yet.
let port: Int
do {
    port = try service.start(port: 0)
    service.stop()
} catch {
    print("RetryJob: could not reserve a port: \(error)")
    exit(1)
}

log("job started: up to \(maxRetries) retries, \(attemptTimeout) s per attempt, exponential backoff with full jitter")

let job = fetchReport(port: port, attempts: attempts)
    .timeout(after: attemptTimeout)
    .onErrorRepeat(backoff: backoff, maxRepetitions: maxRetries, onRetry: { retry in
        // The backoff chose the delay; the hook only tells of it.
        log("  attempt failed: \(retry.error)")
        // From the first failure on, the service is up (and misbehaving).
        if (try? service.start(port: port)) != nil {
            log("  (the flaky service starts listening)")
        }
        log("  waiting \(Int(retry.delay * 1000)) ms before retry \(retry.number)")
    })

let outcome: Result<String>
do {
    outcome = .success(try EventLoop.main.run(until: job))
} catch {
    outcome = .failure(error)
}
service.stop()

let seconds = String(format1: Double(EventLoop.uptimeNanoseconds - started) / 1e9)
switch outcome {
case .success(let report):
    log("done: \"\(report)\" after \(attempts.value) attempts in \(seconds) s")
    exit(0)
case .failure(let error):
    log("gave up after \(attempts.value) attempts in \(seconds) s: \(error)")
    exit(1)
}

extension String {
    /// A number with one decimal.
    init(format1 value: Double) {
        let tenths = Int((value * 10).rounded())
        self = "\(tenths / 10).\(tenths % 10)"
    }
}
