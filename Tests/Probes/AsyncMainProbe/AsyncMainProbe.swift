// A child process for the tests: an async @main program, whose main queue Dispatch drives, that
// awaits futures scheduled on Scheduler.main and mixes in @MainActor code.
import Dispatch
import Flow

@MainActor
func labelOnMainActor(_ value: Int) -> String {
    "main actor saw \(value), on the main loop: \(Scheduler.main.isExecuting)"
}

@main
struct AsyncMainProbe {
    static func main() async throws {
        let delayed = Future<Int>(on: .main) { completion in
            Scheduler.main.async(after: 0.01) { completion(.success(21)) }
            return NilDisposer()
        }
        let doubled = delayed.map(on: .main) { value -> Int in
            precondition(Scheduler.main.isExecuting, "map ran off the main loop")
            return value * 2
        }
        let value = try await doubled.get()
        print("awaited \(value)")
        print(labelOnMainActor(value))
        let fromTask = try await Future(on: .main) { await labelOnMainActor(1) }.get()
        print(fromTask)
        print("done")
    }
}
