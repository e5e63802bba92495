import Flow
import FlowMetrics
import FlowTestSupport
import MetricsTestKit
import Testing

@Suite("FlowMetrics")
struct FlowMetricsTests {
    @Test("a started loop reports its lag, queued work, open handles and live futures through the metrics backend")
    func reportsThroughTheBackend() throws {
        // A backend of this test's own, passed as the factory: no process-wide bootstrap.
        let metrics = TestMetrics()
        let liveFutures = LiveFutureCount()
        let completion = Shared<(@Sendable (Result<Int>) -> Void)?>(nil)
        let pending = liveFutures.track {
            // Run at once (off a loop, `.current` would be a background queue): the completion is
            // stored before the test calls it, or the future, its operation and this box would leak.
            Future<Int>(on: .none) { complete in
                completion.value = complete
                return NilDisposer()
            }
        }
        let loopName = "metrics.loop"
        try runLoopCheckingHandles(loopName) { loop in
            let sampling = FlowMetrics.start(
                for: loop, every: 0.001, dimensions: [("service", "test")], liveFutures: liveFutures,
                factory: metrics
            )
            // Timers fire in deadline order: the sampler's first (1 ms) fires before this one.
            loop.execute(after: 0.05) { sampling.dispose() }
        }
        let dimensions = [("loop", loopName), ("service", "test")]
        let lag = try metrics.expectTimer("flow_loop_lag", dimensions)
        #expect(!lag.values.isEmpty)
        #expect(lag.values.allSatisfy { $0 >= 0 })
        let samples = lag.values.count
        #expect(try metrics.expectGauge("flow_loop_queued_work", dimensions).values.count == samples)
        let handles = try metrics.expectGauge("flow_loop_open_handles", dimensions)
        #expect(handles.values.count == samples)
        #expect((handles.lastValue ?? 0) >= 2)   // the loop's own handles, at least
        let futures = try metrics.expectGauge("flow_loop_live_futures", dimensions)
        #expect(futures.values.count == samples)
        #if DEBUG
        #expect(futures.lastValue == 1)   // `pending`: futures are counted in debug builds
        #endif
        completion.value?(.success(1))
        _ = pending
    }

    @Test("off by default: nothing is made or sampled before start, nor sampled after the disposable is disposed")
    func nothingBeforeStartNorAfterDispose() throws {
        let metrics = TestMetrics()
        let samplesAtDispose = Shared(-1)
        try runLoopCheckingHandles("metrics.off") { loop in
            // A loop that runs work without FlowMetrics started makes no metric.
            loop.execute(after: 0.01) {
                #expect(metrics.timers.isEmpty && metrics.recorders.isEmpty)
                let sampling = FlowMetrics.start(for: loop, every: 0.001, factory: metrics)
                loop.execute(after: 0.02) {
                    sampling.dispose()
                    samplesAtDispose.value = (try? metrics.expectTimer("flow_loop_lag", [("loop", "metrics.off")]))?.values.count ?? 0
                    // Time for several more samples, had the sampling not stopped.
                    loop.execute(after: 0.02) {}
                }
            }
        }
        let lag = try metrics.expectTimer("flow_loop_lag", [("loop", "metrics.off")])
        #expect(samplesAtDispose.value > 0)
        #expect(lag.values.count == samplesAtDispose.value)
    }
}
