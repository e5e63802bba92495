import Flow
import FlowJobs
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The driver process: `driver <directory> <seed> <jobs>` enqueues the jobs over about 25 s, some one
/// per transaction and some in batches, and logs each enqueue once its future says it is durable.
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
            let store = try SQLiteJobStore(path: files.database, configuration: .init(createsMissingFile: false))
            var enqueued = 0
            var round = 0
            while enqueued < count {
                round += 1
                // A batch of 1 to 12 jobs every 70 ms or so: 2,000 jobs take about 25 s.
                let size = min(count - enqueued, Int.random(in: 1...12, using: &random))
                var jobs: [NewJob] = []
                for index in 0..<size {
                    let number = enqueued + index
                    var payload = CrashJob(failTimes: 0, workMilliseconds: Int.random(in: 5...60, using: &random))
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
                let answers = try EventLoop.main.run(until: store.enqueue(jobs))
                for (job, answer) in zip(jobs, answers) {
                    acknowledgements.append("ack \(answer.id.rawValue) \(job.uniqueKey ?? "-") \(answer.isDuplicate ? 1 : 0)")
                }
                // The same unique keys again, one per transaction: each answers the existing job.
                for job in jobs where job.uniqueKey != nil {
                    let answer = try EventLoop.main.run(until: store.enqueue([job]))[0]
                    acknowledgements.append("ack \(answer.id.rawValue) \(job.uniqueKey ?? "-") \(answer.isDuplicate ? 1 : 0)")
                }
                enqueued += size
                usleep(70_000)
            }
            try EventLoop.main.run(until: store.close())
        } catch {
            printError("JobsCrashProbe driver: \(error)\n")
            return 1
        }
        return 0
    }
}
