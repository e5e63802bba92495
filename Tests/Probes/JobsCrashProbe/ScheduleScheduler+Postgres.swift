import Flow
import FlowJobs
import FlowJobsPostgres
import Foundation

extension ScheduleScheduler {
    /// Opens the PostgreSQL store of a scheduler process on the main loop, waiting for it.
    static func openPostgresStore(url: String, schema: String) throws -> PostgresJobStore {
        try EventLoop.main.run(
            until: PostgresJobStore.open(url: url, on: .main, configuration: .init(schema: schema, maxConnections: 4)))
    }
}

extension ScheduleController {
    /// Opens the store the schedulers shared; see ``ScheduleScheduler/openPostgresStore(url:schema:)``.
    static func openPostgresStore(url: String, schema: String) throws -> PostgresJobStore {
        try ScheduleScheduler.openPostgresStore(url: url, schema: schema)
    }

    /// The checks of ``verify(jobRows:tickRows:unfinished:start:end:)`` on the run's PostgreSQL schema
    /// (finished jobs are in the history table), which is dropped when they pass.
    static func checkPostgres(url: String, schema: String, start: Int64, end: Int64) -> Bool {
        let tickJobName = tickJob.name
        let scheduleName = probeScheduleName
        do {
            let store = try openPostgresStore(url: url, schema: schema)
            let rows = try EventLoop.main.run(
                until: store.transaction { transaction in
                    let jobs = try transaction.query(
                        """
                        SELECT unique_key, count(*), min(id) FROM (
                            SELECT unique_key, id FROM flow_jobs WHERE name = ?
                            UNION ALL SELECT unique_key, id FROM flow_jobs_history WHERE name = ?) AS jobs
                        GROUP BY unique_key
                        """,
                        [.text(tickJobName), .text(tickJobName)])
                    let ticks = try transaction.query(
                        "SELECT fire_at, outcome, job_id FROM flow_schedule_ticks WHERE schedule = ?",
                        [.text(scheduleName)])
                    let unfinished = try transaction.query(
                        "SELECT count(*) FROM flow_jobs WHERE name = ?", [.text(tickJobName)])
                    return (jobs.map(texts), ticks.map(texts), unfinished.first.map(texts)?.first ?? nil)
                })
            let passed = verify(
                jobRows: rows.0, tickRows: rows.1, unfinished: Int(rows.2 ?? "") ?? 0, start: start, end: end)
            if passed {
                try EventLoop.main.run(
                    until: store.transaction { transaction in
                        try transaction.execute("DROP SCHEMA \(schema) CASCADE", [])
                    })
            }
            try EventLoop.main.run(until: store.close())
            return passed
        } catch {
            report("cannot read the run's PostgreSQL schema \(schema): \(error)")
            return false
        }
    }

    /// A row's values as the SQLite checks read them: text, or `nil` for NULL.
    private static func texts(_ row: [SQLValue]) -> [String?] {
        row.map { value in
            switch value {
            case .null: nil
            case .integer(let integer): String(integer)
            case .real(let real): String(real)
            case .text(let text): text
            case .blob(let data): String(decoding: data, as: UTF8.self)
            }
        }
    }
}
