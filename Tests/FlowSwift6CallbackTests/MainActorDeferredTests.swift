import Deferred
import Dispatch
import Testing

/// Deferred's handlers, from `@MainActor` code in Swift 6 mode (a file of its own: `Deferred` and `Flow`
/// both name a `Future`).
@MainActor
@Suite("Swift 6 Deferred handlers keep the main actor")
struct MainActorDeferredTests {
    @Test func deferredHandlersUpdateMainActorState() async throws {
        let log = MainActorLog()
        let deferred = Deferred<Int>()
        deferred.upon(.mainActor) { log.append("upon \($0)") }
        let succeeding = Task<Int>.Promise()
        succeeding.uponSuccess(on: .mainActor) { log.append("uponSuccess \($0)") }
        let failing = Task<Int>.Promise()
        failing.uponFailure(on: .mainActor) { _ in log.append("uponFailure") }
        DispatchQueue.global().async {
            deferred.fill(with: 1)
            succeeding.succeed(with: 2)
            failing.fail(with: DeferredTestFailure.failed)
        }
        await log.waitForEntries(3)
        #expect(Set(log.entries) == ["upon 1", "uponSuccess 2", "uponFailure"])
        #expect(log.everyEntryWasOnTheMainLoop)
    }

}

enum DeferredTestFailure: Error {
    case failed
}
