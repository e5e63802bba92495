// The multi-process crash test of FlowJobs (issue #37), run by Scripts/jobs-crash-test and CI:
//
//     JobsCrashProbe run [--seed N] [--jobs 2000] [--lease 2]
//
// A driver process enqueues the jobs (immediate, delayed, with unique keys, some failing a few
// times) while three worker processes run them and this controller SIGKILLs a random worker every
// 100 to 500 ms, restarting it; workers also kill themselves at chosen points (CrashPoint), and once
// a worker is stopped with SIGSTOP past its lease and continued. When every job has finished, the
// controller checks the database and the workers' logs (Verification). The seed, printed first,
// replays the same schedule of kills and crash points and the same jobs.
//
// `driver` and `worker` are the roles the controller starts this same program in.
//
//     JobsCrashProbe schedules [--seed N] [--seconds 24]
//
// The schedules mode (issue #41): two, then three `scheduler` processes fire one schedule on one SQLite
// file while SIGKILLs land on them, mostly as a tick is enqueued; then every tick must have exactly one
// job (ScheduleScheduler.swift).

#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "run":
    exit(Controller.main(Array(arguments.dropFirst())))
case "driver":
    exit(Driver.main(Array(arguments.dropFirst())))
case "worker":
    exit(CrashWorker.main(Array(arguments.dropFirst())))
case "schedules":
    exit(ScheduleController.main(Array(arguments.dropFirst())))
case "scheduler":
    exit(ScheduleScheduler.main(Array(arguments.dropFirst())))
default:
    printError(
        "usage: JobsCrashProbe run [--seed N] [--jobs N] [--lease SECONDS] [--time-limit SECONDS]\n"
            + "       JobsCrashProbe schedules [--seed N] [--seconds S]\n")
    exit(64)
}
