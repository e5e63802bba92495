import Flow
import FlowJobs
import FlowTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

private let greeting = JobKind<Message>(name: "greeting", maxAttempts: 2, backoff: .constant(0.01))

@Suite("FlowJobs from every caller, on a real loop and the store's writer thread")
struct JobCallersTests {
    @Test(arguments: EntryPointCaller.allCases)
    func aJobEnqueuedFromAnyCallerRunsOnTheLoopAndItsEndIsAwaited(_ caller: EntryPointCaller) async throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteJobStore(path: directory.path("jobs.sqlite"))
        try await withCountedLoop("jobs.callers") { loop in
            let ranOnLoop = Synchronization.Mutex<Bool?>(nil)
            let worker = JobWorker(store: store, scheduler: loop.scheduler)
            worker.register(greeting) { payload, context async throws in
                ranOnLoop.withLock { $0 = loop.isInLoopContext }
                if context.attempt == 1 { throw TestFailure() }
                #expect(payload.text == "hi from \(caller)")
            }
            worker.start()
            let client = JobClient(store: store)
            let enqueued = try await caller.call(for: loop) {
                client.enqueue(greeting, Message(text: "hi from \(caller)"))
            }
            let handle = try await enqueued.get()
            let record = try await handle.finished().get()
            #expect(record.state == .completed && record.attempt == 2)
            #expect(ranOnLoop.withLock { $0 } == true, "the async handler's task prefers the worker's loop")
            try await worker.shutdown(gracePeriod: .seconds(1)).get()
        }
        store.close()
    }

    @Test func concurrentEnqueuesFromManyTasksAreAllDurableAndDistinct() async throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteJobStore(path: directory.path("jobs.sqlite"))
        let client = JobClient(store: store)
        let ids = try await withThrowingTaskGroup(of: JobID.self) { group in
            for index in 0..<200 {
                group.addTask { try await client.enqueue(greeting, Message(text: "\(index)")).get().id }
            }
            return try await group.reduce(into: Set<JobID>()) { $0.insert($1) }
        }
        #expect(ids.count == 200)
        store.close()
        let reopened = try SQLiteJobStore(path: directory.path("jobs.sqlite"))
        #expect(try await reopened.jobs(state: .available, queue: nil, limit: 1000).get().count == 200)
    }

    @Test func anAsyncHandlerSeesTaskCancellationWhenItsJobIsCancelled() async throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteJobStore(path: directory.path("jobs.sqlite"))
        let started = AsyncStream<Void>.makeStream()
        let sawCancellation = DispatchSemaphore(value: 0)
        let worker = JobWorker(store: store, scheduler: .background)
        worker.register(greeting) { _, _ async throws in
            started.continuation.yield()
            do {
                try await Task.sleep(for: .seconds(hangGuardSeconds))
            } catch is CancellationError {
                sawCancellation.signal()
                throw CancellationError()
            }
        }
        worker.start()
        let client = JobClient(store: store)
        let handle = try await client.enqueue(greeting, Message(text: "cancel me")).get()
        for await _ in started.stream { break }
        #expect(try await handle.cancel().get() == .requested)
        let record = try await handle.finished().get()
        #expect(record.state == .cancelled)
        // The task sees its cancellation on its own thread, after the store recorded it.
        let waited = await Task.detached { sawCancellation.wait(timeout: .now() + hangGuard) }.value
        #expect(waited == .success, "the handler's task saw its cancellation")
        try await worker.shutdown(gracePeriod: .seconds(1)).get()
        store.close()
    }
}
