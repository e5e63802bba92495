import CLibUV
import Dispatch
import Flow
import Testing

/// `EventLoop.activeResources()`: what keeps a loop's `run()` from returning, for a program that does
/// not end when it should.
@Suite("What keeps a loop running")
struct ActiveResourcesTests {
    @Test("a loop on its own thread lists only its thread's token; a timer, a keep-alive token and a handle appear and go")
    func resourcesAppearAndGo() throws {
        try withLoopOnOwnThread(name: "test.activeResources") { loop in
            #expect(loop.activeResources() == [
                LoopResource(kind: .keepAliveToken, summary: "the loop's own thread runs it until shutdown()")
            ])

            let timer = loop.execute(after: 60) {}
            let token = loop.keepAlive()
            let handle = UnsafeMutablePointer<uv_idle_t>.allocate(capacity: 1)
            loop.scheduler.sync {
                uv_idle_init(loop.unsafeLoopPointer, handle)
                uv_idle_start(handle) { _ in }
            }
            var resources = loop.activeResources()
            #expect(resources.contains { $0.kind == .timer && $0.summary.hasPrefix("1 pending, the next due in ") })
            let tokenEntry = try #require(resources.first { $0.kind == .keepAliveToken && $0.summary == "not yet disposed" })
            #expect(tokenEntry.creationSite?.hasPrefix("FlowTests/ActiveResourcesTests.swift:") == true)
            #expect(resources.contains(LoopResource(kind: .handle, summary: "libuv idle handle")))

            loop.nameHandle(handle, kind: .watcher, summary: "an idle watcher of the test's")
            resources = loop.activeResources()
            #expect(resources.contains { $0.kind == .watcher && $0.summary == "an idle watcher of the test's" })
            #expect(!resources.contains { $0.kind == .handle })
            let text = loop.describeActiveResources()
            #expect(text.hasPrefix("EventLoop(test.activeResources) is kept running by 4 resources:\n"))
            #expect(text.contains("\n  watcher: an idle watcher of the test's"))

            timer.dispose()
            token.dispose()
            loop.forgetHandle(handle)
            loop.scheduler.sync {
                uv_close(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) { closed in
                    closed?.deallocate()
                }
            }
            #expect(loop.activeResources() == [
                LoopResource(kind: .keepAliveToken, summary: "the loop's own thread runs it until shutdown()")
            ])
        }
    }

    @Test("a loop that is not running lists what would keep it running, and nothing once that is gone")
    func idleLoop() {
        let loop = EventLoop(name: "test.idleResources")
        defer { try? loop.close() }
        #expect(loop.activeResources().isEmpty)
        #expect(loop.describeActiveResources() == "EventLoop(test.idleResources) has nothing keeping it running")
        loop.execute {}
        #expect(loop.activeResources() == [LoopResource(kind: .queuedWork, summary: "1 job not yet run")])
    }
}
