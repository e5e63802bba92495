import Deferred
import FlowTestSupport
import Testing

/// Reflection of a class storing a lock stops the process unless it (or the lock) has a mirror of its own.
@Suite("Printing Deferred's types")
struct DeferredReflectionTests {
    @Test("Deferred, Future, Task, Protected and NativeLock print every way")
    func deferredTypes() {
        expectPrintedEveryWay([
            (Deferred<Int>(), "illed"),
            (Deferred(filledWith: 4), "4"),
            (Future(value: 8), "8"),
            (DeferredTask<Int>(success: 5), "5"),
            (Protected(initialValue: 6, lock: NativeLock()), "6"),
            (NativeLock(), "NativeLock"),
        ])
    }
}
