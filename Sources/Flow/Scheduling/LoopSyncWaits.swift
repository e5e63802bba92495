/// Which event loops are blocked in ``Scheduler/sync(execute:)`` and which loop each waits for: a
/// loop whose work waits for another loop that, directly or through others, waits for it, would wait
/// for good. The cycle is found before blocking, and stops the program with a message naming the loops.
///
/// A loop is blocked when the thread in its context waits: the loop's own thread inside its work, or,
/// for the main loop, the main thread (which counts as the main loop's context even outside `run()`).
/// A thread outside any loop's context (a pool thread, a Dispatch worker) blocks no loop: nobody can
/// be waiting for it, so its waits are not recorded.
enum LoopSyncWaits {
    /// The loop a blocked loop waits for.
    private struct Wait {
        let target: ObjectIdentifier
        let targetName: String
    }

    /// Each blocked loop's wait, by the blocked loop's identity. Never holds a cycle: one is refused
    /// before it is recorded.
    private static let waits = Locked<[ObjectIdentifier: Wait]>([:])

    /// The loop whose context the calling thread is in, if any: the loop it runs, or the main loop on
    /// the main thread.
    static func loopInContext(_ context: ThreadContext) -> EventLoop? {
        if let running = context.currentLoop {
            // Alive: the thread running a loop holds it for as long as this thread-local names it.
            return Unmanaged<EventLoop>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(bitPattern: running))!)
                .takeUnretainedValue()
        }
        return MainThread.isMainContext(context) ? EventLoop.main : nil
    }

    /// Records that `waiter`'s context blocks until `target` has run work for it, or stops the program
    /// when `target` waits, directly or through other loops, for `waiter`.
    static func begin(waiter: EventLoop, target: EventLoop) {
        let waiterID = ObjectIdentifier(waiter)
        let cycle = waits.withLock { waits -> [String]? in
            var names = [target.name]
            var next = ObjectIdentifier(target)
            while let wait = waits[next] {
                names.append(wait.targetName)
                if wait.target == waiterID { return names }
                next = wait.target
            }
            waits[waiterID] = Wait(target: ObjectIdentifier(target), targetName: target.name)
            return nil
        }
        guard let cycle else { return }
        let chain = cycle.dropFirst().map { "'\($0)'" }.joined(separator: ", which waits for ")
        misuseFailure(
            "Scheduler.sync: the event loop '\(waiter.name)' would wait for the loop '\(target.name)', which is itself "
                + "waiting in Scheduler.sync for \(chain): each would wait for the other for good. "
                + "Hand the work over with async, or a future, instead of waiting for it")
    }

    /// `waiter` no longer waits.
    static func end(waiter: EventLoop) {
        _ = waits.withLock { $0.removeValue(forKey: ObjectIdentifier(waiter)) }
    }
}
