import ArgumentParser

/// The Tour's command line: none but `--help`, which says what it shows instead of running it.
struct TourOptions: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "Tour",
        abstract: "A walk through Flow: the futures guide first, then the Deferred README, on the main loop.")
}
