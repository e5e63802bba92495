import Deferred
import Dispatch
import Flow
import Testing

@Suite("Bridges between Deferred and Flow")
struct FlowBridgeTests {
    @Test("a Flow future made from a Deferred succeeds with its value once filled")
    func flowFromDeferred() async throws {
        let deferred = Deferred<Int>()
        let future = Flow.Future(deferred: deferred)
        #expect(!future.isCompleted)
        deferred.fill(with: 3)
        #expect(future.result?.value == 3)
        #expect(try await future.get() == 3)
        #expect(deferred.asFlowFuture().result?.value == 3)
    }

    @Test("a Flow future made from a Task fails with its error and cancels the task when cancelled")
    func flowFromTask() {
        struct Failure: Error {}
        let failing = DeferredTask<Int>(failure: Failure())
        #expect(Flow.Future(task: failing).result?.error is Failure)

        let cancelled = Shared(0)
        let pending = Deferred<Swift.Result<Int, Error>>()
        let task = DeferredTask<Int>(pending, uponCancel: { cancelled.mutate { $0 += 1 } })
        let future = Flow.Future(task: task)
        future.cancel()
        #expect(cancelled.value == 1)
    }

    @Test("a Task made from a Flow future completes like it, and cancelling the task cancels the future")
    func taskFromFlow() async {
        let succeeded = DeferredTask<String>(Flow.Future("flow"))
        #expect(await succeeded.value.value == "flow")

        let flow = Flow.Future<Int>(.forever)
        let task = DeferredTask(flow)
        task.cancel()
        #expect(flow.result?.error as? FutureError == .aborted)
    }

    @Test("await deferred.value waits without blocking and returns the value")
    func asyncValue() async {
        let deferred = Deferred<String>()
        DispatchQueue.global().async { deferred.fill(with: "filled") }
        #expect(await deferred.value == "filled")
    }
}
