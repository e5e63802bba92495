import Deferred
import Dispatch

/// Deferred's hop: work on a Dispatch queue fills a value that an `upon` on the main queue (which the
/// main loop runs) reads.
func sendDeferredRound(_ round: Int, _ deliveries: Deliveries) {
    Future<Int>.async(upon: .any()) { slowStep(round) }
        .upon(DispatchQueue.main) { deliveries.record($0) }
}
