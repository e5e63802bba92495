// A walk through Flow: run with `swift run Tour`. The futures guide, the signals guide, then the Deferred README.
import Deferred
import Flow

_ = TourOptions.parseOrExit()   // `--help` says what the tour shows instead of running it

section("The main event loop")
print("Scheduler.current on the main thread is .main: \(Scheduler.current == .main)")

// Swift 6 and the main actor. The top-level `var`s of a Swift 6 main.swift are main-actor state. The
// main loop's work is main-actor work, and callbacks given `on: .mainActor` say so in their type, so
// they (and main-actor tasks) update such state with no box and no warning.
var total = 0
var statusChanges: [String] = []
let mainActorBag = DisposeBag()

@MainActor
func mainActorTour() -> Flow.Future<Void> {
    section("Swift 6 and the main actor")
    let status = ReadWriteSignal("idle")
    mainActorBag += status.atOnce().onValue(on: .mainActor) { statusChanges.append($0) }
    let answer = Flow.Future(21).delay(by: 0.01)
    answer.onValue(on: .mainActor) { value in
        total += value
        status.value = "got \(value)"
    }
    let fromTask = Flow.Future { @MainActor () async throws -> Int in
        total += try await answer.get()   // async code on the main actor
        return total
    }
    return fromTask.map(on: .mainActor) { _ in
        print("a callback and a task added to top-level state: total = \(total)")
        print("status changes seen on the main actor: \(statusChanges)")
    }
}

let deferredDone = Deferred<Void>()
let tour = flowTour().flatMap { _ in signalsTour() }.flatMap(on: .mainActor) { _ in mainActorTour() }.flatMap { _ -> Flow.Future<Void> in
    deferredTour(on: Scheduler.main, done: deferredDone)
    return Flow.Future(deferred: deferredDone)
}

do {
    try EventLoop.main.run(until: tour)
    print("\nThe tour is over: every step ran on the main loop, in order.")
} catch {
    print("\nThe tour failed: \(error)")
}
