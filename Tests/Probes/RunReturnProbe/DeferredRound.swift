import Deferred
import Dispatch

/// Deferred's hop: work on a Dispatch queue fills a value that an `upon` on the main queue (which the
/// main loop runs) reads.
func sendDeferredRound(_ round: Int, _ deliveries: Deliveries) {
    Future<Int>.async(upon: .any()) { slowStep(round) }
        .upon(DispatchQueue.main) { deliveries.record($0) }
}

/// A main-actor task awaiting a Deferred's `value`, filled later from a Dispatch queue of the caller's
/// own (no hop of the library's).
func sendDeferredValueRound(_ round: Int, _ deliveries: Deliveries) {
    let deferred = Deferred<Int>()
    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(1)) { deferred.fill(with: round) }
    _Concurrency.Task { @MainActor in
        deliveries.record(await deferred.value)
    }
}
