import Flow
import Synchronization
import Testing

@Suite("Signals as AsyncSequences")
struct SignalAsyncTests {
    @Test("for await over a finite signal's values ends when the signal ends")
    func finiteSignalEndsTheLoop() async {
        let collected = await Task {
            var collected: [Int] = []
            for await value in [1, 2, 3].signal().values { collected.append(value) }
            return collected
        }.value
        #expect(collected == [1, 2, 3])
    }

    @Test("values sent from another thread arrive in order; leaving the loop stops listening")
    func breakingOutStopsListening() async {
        let callbacker = Callbacker<Int>()
        let values = Signal(callbacker: callbacker).values
        #expect(callbacker.isEmpty, "listening starts with the loop")
        Task.detached {
            while callbacker.isEmpty { await Task.yield() }
            for value in 1...10 { callbacker.callAll(with: value) }
        }
        var collected: [Int] = []
        for await value in values {
            collected.append(value)
            if value == 10 { break }
        }
        #expect(collected == Array(1...10))
        #expect(callbacker.isEmpty, "the listener is gone once the loop left")
    }

    @Test("cancelling the task that iterates stops listening")
    func cancellingStopsListening() async {
        let callbacker = Callbacker<Int>()
        let started = Callbacker<Void>()
        let firstValue = Signal(callbacker: started).future
        let task = Task {
            var count = 0
            for await _ in Signal(callbacker: callbacker).values {
                count += 1
                started.callAll()
            }
            return count
        }
        while callbacker.isEmpty { await Task.yield() }
        callbacker.callAll(with: 1)
        _ = try? await firstValue.get()
        task.cancel()
        let count = await task.value
        #expect(count == 1)
        #expect(callbacker.isEmpty)
    }
}
