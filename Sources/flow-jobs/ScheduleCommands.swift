import ArgumentParser
import Flow
import FlowJobs
import Foundation

/// A schedule as the tool prints it, with times in ISO 8601.
struct ScheduleSummary: Codable {
    var name: String
    var schedule: String
    var nextFireAt: String?
    var lastFiredAt: String?
    var paused: Bool
    var lastJobID: Int64?
    var waitingTick: String?

    init(_ state: ScheduleState) {
        name = state.name
        schedule = state.description
        nextFireAt = state.nextFireAt.map(timestamp)
        lastFiredAt = state.lastFiredAt.map(timestamp)
        paused = state.isPaused
        lastJobID = state.lastJobID?.rawValue
        waitingTick = state.deferredTick.map(timestamp)
    }
}

/// `flow-jobs schedules`: the schedules workers have fired in this database.
struct SchedulesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedules",
        abstract: "Lists the schedules with their next and last ticks, and whether they are paused.",
        discussion: """
            Schedules are declared in the workers' code; a schedule is listed once a worker has started it. The \
            next tick is the one the last worker to fire the schedule computed.
            """)

    @OptionGroup var options: DatabaseOptions

    func run() throws {
        let store = try options.openStore()
        let schedules = try EventLoop.main.run(until: store.schedules()).map(ScheduleSummary.init)
        if options.json { return try printJSON(schedules) }
        printTable(
            ["NAME", "NEXT TICK", "LAST TICK", "PAUSED", "SCHEDULE"],
            schedules.map { schedule in
                [
                    schedule.name, schedule.nextFireAt ?? "-", schedule.lastFiredAt ?? "-",
                    schedule.paused ? "yes" : "no", schedule.schedule,
                ]
            })
    }
}

/// `flow-jobs pause` and `flow-jobs resume`: what they share.
protocol SchedulePausing: ParsableCommand {
    var options: DatabaseOptions { get }
    var name: String { get }
    static var pauses: Bool { get }
}

extension SchedulePausing {
    func run() throws {
        let store = try options.openStore()
        guard let state = try EventLoop.main.run(until: store.setSchedulePaused(Self.pauses, name: name)) else {
            throw ToolError(description: "no schedule named \(name) in this database (a worker lists it once started)")
        }
        if options.json { return try printJSON(ScheduleSummary(state)) }
        print(Self.pauses ? "schedule \(name) paused" : "schedule \(name) resumed")
    }
}

/// `flow-jobs pause`: stops a schedule's ticks in every process.
struct PauseCommand: SchedulePausing {
    static let configuration = CommandConfiguration(
        commandName: "pause", abstract: "Pauses a schedule: its ticks enqueue nothing until it is resumed.")
    static let pauses = true

    @OptionGroup var options: DatabaseOptions

    @Argument(help: "The schedule's name.")
    var name: String
}

/// `flow-jobs resume`: lets a paused schedule fire again.
struct ResumeCommand: SchedulePausing {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resumes a paused schedule.",
        discussion: """
            At its next tick the schedule fires again, and its catch-up policy decides which of the ticks missed \
            while it was paused still fire.
            """)
    static let pauses = false

    @OptionGroup var options: DatabaseOptions

    @Argument(help: "The schedule's name.")
    var name: String
}
