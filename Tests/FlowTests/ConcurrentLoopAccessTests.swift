import Dispatch
import Flow
import Foundation
import Testing

/// A loop's state read, and the loop shut down, from several threads at once (issue #39, items 1, 2
/// and 4). Run under ThreadSanitizer by `Scripts/sanitizers thread`.
@Suite("A loop inspected and shut down from other threads")
struct ConcurrentLoopAccessTests {
    @Test("activeResources() from another thread while the owner runs the loop now and then, scheduling timers, is safe")
    func activeResourcesBetweenRuns() throws {
        let loop = EventLoop(name: "test.betweenRuns")
        defer { try? loop.close() }
        let inspectionsDone = Shared(false)
        let finished = DispatchSemaphore(value: 0)
        let owner = Thread {
            var index = 0
            while !inspectionsDone.value {
                // A timer inserted by the loop's own work, and one by the owner between runs.
                loop.execute { loop.execute(after: 0) {} }
                if index % 2 == 0 { loop.execute(after: 0) {} }
                try? loop.run()
                index += 1
            }
            finished.signal()
        }
        owner.start()
        for _ in 0..<300 {
            let resources = loop.activeResources()
            #expect(resources.allSatisfy { [.timer, .queuedWork].contains($0.kind) }, "\(resources)")
        }
        inspectionsDone.value = true
        finished.wait()
        #expect(loop.activeResources().isEmpty)
    }

    @Test("EventLoop.main.activeResources() from another thread while dispatchMain() drives the main loop, which schedules timers")
    func mainLoopResourcesUnderDispatchMain() throws {
        let run = try runProbe("activeResourcesUnderDispatchMain")
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(run.output.contains("listed the main loop's resources 2000 times"))
    }

    @Test("activeResources() from several threads while the loop runs on its own thread gives each the list")
    func activeResourcesFromManyThreads() {
        let loop = EventLoop.startOnNewThread(name: "test.manyInspectors")
        defer { loop.shutdown() }
        let timer = loop.execute(after: 600) {}
        defer { timer.dispose() }
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<50 {
                let resources = loop.activeResources()
                #expect(resources.contains { $0.kind == .timer && $0.summary.hasPrefix("1 pending") })
            }
        }
    }

    @Test("a closed loop, shut down or closed, has no active resources")
    func closedLoopHasNone() throws {
        let shutDown = EventLoop.startOnNewThread(name: "test.shutDownResources")
        _ = shutDown.execute(after: 600) {}
        shutDown.shutdown()
        #expect(shutDown.activeResources().isEmpty)
        #expect(shutDown.describeActiveResources() == "EventLoop(test.shutDownResources) has nothing keeping it running")

        let closed = EventLoop(name: "test.closedResources")
        try closed.close()
        #expect(closed.activeResources().isEmpty)
    }

    @Test("shutdown() from several threads at once: each returns once the loop is closed")
    func concurrentShutdowns() {
        for _ in 0..<20 {
            let loop = EventLoop.startOnNewThread(name: "test.concurrentShutdown")
            let ran = Shared(0)
            loop.execute { ran.mutate { $0 += 1 } }
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                loop.shutdown()
                #expect(loop.isClosed)
            }
            #expect(ran.value == 1)
        }
    }
}

/// A blocking call to a loop that does not run its work is reported in debug builds after a while,
/// naming the call (issue #39, item 12).
@Suite("A blocking call to a loop that makes no progress")
struct BlockedLoopWaitReportTests {
    #if DEBUG
        @Test("performAndWait on a loop whose thread is blocked reports the waiting call, then returns once the loop runs")
        func blockedWaitIsReported() {
            let loop = EventLoop.startOnNewThread(name: "test.blockedWait")
            defer { loop.shutdown() }
            let gate = DispatchSemaphore(value: 0)
            loop.execute { gate.wait() }   // the loop's thread is blocked until the report comes
            let reports = Shared<[String]>([])
            let value = BlockedLoopWaitReport.redirect(after: .milliseconds(100), to: { message in
                guard message.contains("'test.blockedWait'") else { return }
                reports.mutate { $0.append(message) }
                gate.signal()
            }) {
                loop.performAndWait { 42 }
            }
            #expect(value == 42)
            #expect(reports.value.count == 1)
            #expect(reports.value.first?.hasPrefix(
                "EventLoop.performAndWait: this thread has waited 100 ms for the event loop 'test.blockedWait' to run its work, and it has not") == true)
        }
    #endif
}
