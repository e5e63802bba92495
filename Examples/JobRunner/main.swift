// JobRunner: durable jobs from the command line. `enqueue` adds greeting jobs to an SQLite database;
// `work` runs them until SIGINT or SIGTERM, then drains: it stops claiming, lets running jobs finish
// for a grace period, and gives the rest back to the database, to run again at once elsewhere. Jobs
// survive a crash or restart of either: run `work` again and it carries on.
//
//     swift run JobRunner enqueue --database jobs.sqlite --message hello --fail-first 2
//     swift run JobRunner work --database jobs.sqlite
//     swift run JobRunner work --database postgresql://app:secret@db.internal/app
//
// Exit status: 0 on success (and after a graceful stop), 1 when the database cannot be used, 64 for
// a command line it does not understand (`--help` lists the options).

JobRunnerCommand.main()
