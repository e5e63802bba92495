import Flow
import FlowJobs
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The driver process: `driver <directory> <seed> <jobs>` enqueues the jobs over about 25 s, some one
/// per transaction and some in batches, and logs each enqueue once its future says it is durable.
///
/// An enqueue that fails (on PostgreSQL, while the controller has crashed the server) is logged as
/// `unknown <numbers…>`, since its commit may have happened before the connection broke, and is tried
/// again until it is acknowledged: its jobs may then have a second, unacknowledged row.
enum Driver {
    static func main(_ arguments: [String]) -> Int32 {
        guard arguments.count == 3, let seed = UInt64(arguments[1]), let count = Int(arguments[2]) else {
            printError("usage: JobsCrashProbe driver <directory> <seed> <jobs>\n")
            return 64
        }
        let files = RunFiles(directory: arguments[0])
        let acknowledgements = AppendLog(files.acknowledgements)
        var random = SeededGenerator(seed: seed ^ 0xD1B5_4A32_D192_ED03)
        do {
            let store = try files.openStore()
            var enqueued = 0
            var round = 0
            while enqueued < count {
                round += 1
                // A batch of 1 to 12 jobs every 70 ms or so: 2,000 jobs take about 25 s.
                let size = min(count - enqueued, Int.random(in: 1...12, using: &random))
                var jobs: [NewJob] = []
                for index in 0..<size {
                    let number = enqueued + index
                    var payload = CrashJob(
                        failTimes: 0, workMilliseconds: Int.random(in: 5...60, using: &random), number: number)
                    var options = EnqueueOptions()
                    let shape = Int.random(in: 0..<100, using: &random)
                    if shape < 15 { payload.failTimes = Int.random(in: 1...3, using: &random) }
                    if shape >= 15 && shape < 22 { payload.workMilliseconds = Int.random(in: 800...1600, using: &random) }
                    if shape >= 22 && shape < 45 { options.after = .milliseconds(Int64.random(in: 200...20_000, using: &random)) }
                    if shape >= 45 && shape < 55 {
                        options.uniqueKey = "key-\(number)"
                        // Delayed, so that the duplicate below meets an unfinished job.
                        options.after = .milliseconds(Int64.random(in: 1000...10_000, using: &random))
                    }
                    jobs.append(try crashJob.newJob(payload, options: options, clock: store.clock))
                }
                let numbers = (enqueued..<(enqueued + size)).map(String.init).joined(separator: " ")
                let answers = try untilAcknowledged(store.enqueue(jobs), unknown: numbers, log: acknowledgements)
                for (job, answer) in zip(jobs, answers) {
                    acknowledgements.append("ack \(answer.id.rawValue) \(job.uniqueKey ?? "-") \(answer.isDuplicate ? 1 : 0)")
                }
                // The same unique keys again, one per transaction: each answers the existing job.
                for (index, job) in jobs.enumerated() where job.uniqueKey != nil {
                    let answer = try untilAcknowledged(
                        store.enqueue([job]), unknown: String(enqueued + index), log: acknowledgements)[0]
                    acknowledgements.append("ack \(answer.id.rawValue) \(job.uniqueKey ?? "-") \(answer.isDuplicate ? 1 : 0)")
                }
                enqueued += size
                usleep(70_000)
            }
            try EventLoop.main.run(until: closing(store))
        } catch {
            printError("JobsCrashProbe driver: \(error)\n")
            return 1
        }
        return 0
    }

    /// The answer of `enqueue()`; on PostgreSQL, called again after each failure (its outcome
    /// unknown, logged with the jobs' numbers) for at most a minute. An SQLite store's failure is the
    /// driver's.
    static func untilAcknowledged(
        _ enqueue: @autoclosure () -> Future<[EnqueuedJob]>, unknown numbers: String, log: AppendLog
    ) throws -> [EnqueuedJob] {
        let deadline = nowMilliseconds() + (RunFiles.isPostgres ? 60_000 : 0)
        while true {
            do {
                return try EventLoop.main.run(until: enqueue())
            } catch where nowMilliseconds() < deadline {
                log.append("unknown \(numbers)")
                usleep(100_000)
            }
        }
    }
}
