import Dispatch
import Flow
import FlowTestSupport
import Testing

/// The completion callback of `Future { completion in ... }` captures a handle that keeps the future
/// until the callback's first call, and tells the future if the callback is released uncalled. These
/// tests hold the callback past the future's life, call it from several threads at once, and release
/// it uncalled on another thread; AddressSanitizer and LeakSanitizer (in CI) check that the memory is
/// neither used after it is freed nor kept.
@Suite("Completion handles", .checksLiveFutures)
struct CompletionHandleTests {
    /// A callback kept by the operation's closure: the future keeps the closure (for repetition),
    /// and the closure the callback.
    final class KeptCallback: @unchecked Sendable {
        // @unchecked Sendable: written inside the operation and read by the test on the same thread.
        var callback: (@Sendable (Result<Int>) -> Void)?

        /// A pending future whose operation keeps its callback here, running at once.
        func future() -> Future<Int> {
            Future<Int>(on: .none) { completion in
                self.callback = completion
                return NilDisposer()
            }
        }

        /// Takes the callback out.
        func take() -> @Sendable (Result<Int>) -> Void {
            defer { callback = nil }
            return callback!
        }
    }

    @Test("an operation that keeps its callback after calling it lets its future go, and later calls do nothing")
    func keptCallbackLetsTheFutureGo() {
        let count = LiveFutureCount()
        let kept = KeptCallback()
        let values = Shared<[Int]>([])
        count.track {
            let future = Future<Int>(on: .none) { completion in
                kept.callback = completion
                completion(.success(1))
                return NilDisposer()
            }
            future.onValue(on: .none) { value in values.mutate { $0.append(value) } }
            #expect(future.result?.value == 1)
        }
        // The future is gone though its operation's closure kept the callback, which the future's
        // recipe held: the handle let go of the future at the first call.
        #expect(count.value == 0)
        kept.callback?(.success(2))
        kept.callback?(.failure(TestError()))
        #expect(values.value == [1])
        kept.callback = nil
    }

    @Test("a callback called later, with a chain on its future, completes the chain once and frees it")
    func keptCallbackCalledLater() {
        let count = LiveFutureCount()
        let kept = KeptCallback()
        let values = Shared<[Int]>([])
        count.track {
            _ = kept.future()
                .map(on: .none) { $0 * 10 }
                .onValue(on: .none) { value in values.mutate { $0.append(value) } }
        }
        // Nobody holds the chain but the callback. (Live futures are counted in debug builds only.)
        #if DEBUG
        #expect(count.value == 3)
        #endif
        kept.callback?(.success(4))
        #expect(values.value == [40])
        #expect(count.value == 0)
        kept.callback?(.success(5))
        #expect(values.value == [40])
        kept.callback = nil
    }

    @Test("calls racing from several threads complete the future once, with one of their results")
    func racingCalls() {
        for _ in 0..<200 {
            let kept = KeptCallback()
            let told = Shared<[Int]>([])
            let future = kept.future()
            future.onValue(on: .none) { value in told.mutate { $0.append(value) } }
            let callback = kept.take()
            DispatchQueue.concurrentPerform(iterations: 8) { index in callback(.success(index)) }
            #expect(told.value.count == 1)
            #expect(future.result?.value == told.value.first)
        }
    }

    @Test("a callback called from a detached task completes the future that async code awaits")
    func calledFromADetachedTask() async throws {
        let kept = KeptCallback()
        let future = kept.future()
        let callback = kept.take()
        Task.detached { callback(.success(5)) }
        #expect(try await future.get() == 5)
        // Later calls, from another task, change nothing.
        await Task.detached { callback(.success(6)) }.value
        #expect(future.result?.value == 5)
    }

    @Test("a callback released uncalled on another thread, after its chain was dropped, frees the chain")
    func releasedUncalledElsewhere() {
        let count = LiveFutureCount()
        let kept = KeptCallback()
        let told = Shared(0)
        // The report is made on the releasing thread, where the future was created in this file.
        expectDebugDiagnostic(
            containing: "released its completion callback without calling it",
            where: { $0.metadata["creationSite"]?.contains("CompletionHandleTests.swift") == true }
        ) {
            count.track {
                _ = kept.future()
                    .map(on: .none) { $0 + 1 }
                    .onValue(on: .none) { _ in told.mutate { $0 += 1 } }
            }
            #if DEBUG
            #expect(count.value == 3)  // live futures are counted in debug builds only
            #endif
            let released = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                kept.callback = nil
                released.signal()
            }
            released.wait()
        }
        #expect(count.value == 0)
        #expect(told.value == 0)
    }
}
