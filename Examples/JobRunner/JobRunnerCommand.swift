import ArgumentParser
import Flow
import FlowJobs
import FlowJobsPostgres
import FlowSystem
import FlowTimers
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What a greeting job carries.
struct Greeting: Codable, Sendable {
    /// What the job prints when it succeeds.
    var message: String
    /// How many attempts fail before one succeeds, to show retries.
    var failFirst: Int
    /// How long each attempt works, in milliseconds.
    var workMilliseconds: Int
}

/// The one kind of job JobRunner knows: retried after 0.2 s, doubling up to 5 s, at most 10 attempts.
let greet = JobKind<Greeting>(
    name: "greet", maxAttempts: 10, backoff: .exponential(initial: 0.2, maximum: 5, jitter: .none))

/// Prints a line at once, even when the output is a pipe.
func say(_ line: String) {
    print(line)
    fflush(nil)
}

/// JobRunner's command line: `swift run JobRunner --help` lists it.
struct JobRunnerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "JobRunner",
        abstract: "Enqueues greeting jobs in SQLite or PostgreSQL, and runs them in a worker that survives restarts.",
        subcommands: [EnqueueCommand.self, WorkCommand.self])
}

/// The database option both commands take.
struct DatabaseOption: ParsableArguments {
    @Option(help: "The job database: an SQLite file (created when missing) or a postgresql:// URL.")
    var database = "jobs.sqlite"

    @Option(help: "The PostgreSQL schema of the job tables (with a postgresql:// database).")
    var schema = "flow_jobs"

    /// Opens the database; its error (a directory that is missing, a file that is not a database, a
    /// server that cannot be reached) ends the program with status 1.
    func openStore() throws -> any JobStore {
        try EventLoop.main.run(until: JobStoreLocation.open(database, on: .main, schema: schema))
    }

    /// The database as the worker's first line names it: a URL without its password.
    var displayName: String {
        guard JobStoreLocation.isPostgresURL(database), var url = URLComponents(string: database) else {
            return database
        }
        url.password = nil
        return "\(url.string ?? "PostgreSQL"), schema \(schema)"
    }
}

/// `JobRunner enqueue`: adds greeting jobs; once it prints a job's id, the job is durable.
struct EnqueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue", abstract: "Adds greeting jobs; each is durable once its id is printed.")

    @OptionGroup var database: DatabaseOption

    @Option(help: "What each job prints when it succeeds.")
    var message = "hello"

    @Option(help: "How many jobs to add.")
    var count = 1

    @Option(help: "How many attempts of each job fail before one succeeds.")
    var failFirst = 0

    @Option(help: "How long each attempt works, in milliseconds.")
    var workMilliseconds = 10

    @Option(help: "Seconds to wait before the jobs may run.")
    var after: Double = 0

    @Option(help: "A key that keeps the job unique among unfinished jobs (with --count 1).")
    var uniqueKey: String?

    func validate() throws {
        guard count >= 1 else { throw ValidationError("--count must be at least 1, not \(count).") }
        guard failFirst >= 0, failFirst < greet.maxAttempts else {
            throw ValidationError("--fail-first must be from 0 to \(greet.maxAttempts - 1), not \(failFirst).")
        }
        guard workMilliseconds >= 0 else { throw ValidationError("--work-milliseconds must be 0 or more.") }
        guard after >= 0, after.isFinite else { throw ValidationError("--after must be 0 or more seconds.") }
        guard uniqueKey == nil || count == 1 else { throw ValidationError("--unique-key needs --count 1.") }
    }

    func run() throws {
        let store = try database.openStore()
        let payload = Greeting(message: message, failFirst: failFirst, workMilliseconds: workMilliseconds)
        let options = EnqueueOptions(after: after > 0 ? .milliseconds(Int64(after * 1000)) : nil, uniqueKey: uniqueKey)
        let jobs = try (0..<count).map { _ in try greet.newJob(payload, options: options, clock: store.clock) }
        // One transaction for all of them: one disk write.
        let enqueued = try EventLoop.main.run(until: store.enqueue(jobs))
        for job in enqueued {
            say(job.isDuplicate ? "job #\(job.id.rawValue) is already queued with this key" : "enqueued job #\(job.id.rawValue)")
        }
    }
}

/// `JobRunner work`: runs greeting jobs until SIGINT or SIGTERM, then drains.
struct WorkCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "work",
        abstract: "Runs greeting jobs until SIGINT or SIGTERM, then finishes or gives back the running ones.")

    @OptionGroup var database: DatabaseOption

    @Option(help: "The most jobs run at once.")
    var concurrency = 4

    @Option(help: "Seconds a claim lasts without a heartbeat: a crashed worker's jobs run again after it.")
    var lease: Double = 15

    @Option(help: "Seconds running jobs may take to finish once a stop is asked for.")
    var gracePeriod: Double = 10

    func validate() throws {
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1, not \(concurrency).") }
        for (name, value) in [("--lease", lease), ("--grace-period", gracePeriod)] {
            guard value > 0, value.isFinite else { throw ValidationError("\(name) must be a positive number of seconds.") }
        }
    }

    func run() throws {
        let store = try database.openStore()
        let worker = JobWorker(
            store: store, scheduler: EventLoop.main.scheduler,
            configuration: .init(
                concurrencyByQueue: [greet.queue: concurrency], leaseDuration: .milliseconds(Int64(lease * 1000)),
                onEvent: report))
        worker.register(greet) { greeting, context in
            say("job #\(context.id.rawValue) attempt \(context.attempt): started")
            return Future<Void>(on: EventLoop.main.scheduler) { completion in
                EventLoop.main.execute(after: Double(greeting.workMilliseconds) / 1000) {
                    if context.attempt <= greeting.failFirst {
                        completion(.failure(GreetingError(attempt: context.attempt)))
                    } else {
                        say("job #\(context.id.rawValue): \(greeting.message)")
                        completion(.success(()))
                    }
                }
            }
        }
        let gracePeriod = gracePeriod
        let signals = try SignalWatcher.watch([.terminate, .interrupt], on: .main) { signal in
            say("received \(signal): draining for up to \(gracePeriod) s")
            worker.shutdown(gracePeriod: .milliseconds(Int64(gracePeriod * 1000))).onResult(on: .main) { _ in
                say("stopped")
                Glibc.exit(0)
            }
        }
        say("worker ready: \(database.displayName), \(concurrency) at a time")
        worker.start()
        // Jobs enqueued by other processes (`JobRunner enqueue`) wake it too: an SQLite store watches
        // the database's files, a PostgreSQL store listens for the enqueues' notifications.
        withExtendedLifetime(signals) { _ = try? EventLoop.main.run() }
    }
}

/// How an attempt ended, as a line.
@Sendable func report(_ event: JobWorkerEvent) {
    switch event {
    case .attemptStarted: break
    case .attemptFinished(let record):
        let id = record.id.rawValue
        switch record.state {
        case .completed: say("job #\(id) completed after \(record.attempt) attempt\(record.attempt == 1 ? "" : "s")")
        case .retryable: say("job #\(id) attempt \(record.attempt) failed (\(record.lastError ?? "")): retrying")
        default: say("job #\(id) \(record.state.rawValue) after \(record.attempt) attempts: \(record.lastError ?? "")")
        }
    case .released(let lease): say("job #\(lease.id.rawValue) given back, to run again at once")
    case .leaseLost(let lease): say("job #\(lease.id.rawValue): lease lost, another worker runs it")
    case .storeFailed(let message): say("the job database failed: \(message)")
    }
}

/// The failure a greeting's first attempts make on purpose.
struct GreetingError: Error, CustomStringConvertible {
    let attempt: Int
    var description: String { "attempt \(attempt) fails on purpose" }
}
