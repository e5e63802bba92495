// A walk through Flow: run with `swift run Tour`. The futures guide, the signals guide, then the Deferred README.
import Deferred
import Flow

_ = TourOptions.parseOrExit()   // `--help` says what the tour shows instead of running it

section("The main event loop")
print("Scheduler.current on the main thread is .main: \(Scheduler.current == .main)")

let deferredDone = Deferred<Void>()
let tour = flowTour().flatMap { _ in signalsTour() }.flatMap { _ -> Flow.Future<Void> in
    deferredTour(on: Scheduler.main, done: deferredDone)
    return Flow.Future(deferred: deferredDone)
}

do {
    try EventLoop.main.run(until: tour)
    print("\nThe tour is over: every step ran on the main loop, in order.")
} catch {
    print("\nThe tour failed: \(error)")
}
