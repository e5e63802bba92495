import Flow
@testable import FlowServiceLifecycle
import Testing

@Suite("Shutdown deadlines")
struct ShutdownDeadlineTests {
    /// A deadline too long to count in nanoseconds (a way of saying "wait as long as it takes") must
    /// not overflow when the service converts it for its timer.
    @Test func aDeadlineBeyondWhatNanosecondsCountIsWaitedFor() async {
        #expect(await finishes(Flow.Future(), within: .seconds(Int64.max)))
        #expect(await finishes(Flow.Future(), within: .seconds(10_000_000_000)))
    }
}
