import Dispatch
import Flow
import Testing

/// Reports a warning on a Dispatch thread, outside any capturing task, and waits for it.
private func reportElsewhere(_ message: String, loop name: String) {
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        FlowDiagnostics.report(.warning, message, metadata: ["loop": name])
        done.signal()
    }
    done.wait()
}

@Suite("FlowDiagnostics: capturing the reports a test provokes")
struct DiagnosticsCaptureTests {
    @Test("a report made in the capturing task, or on its thread, is captured")
    func sameTaskIsCaptured() async {
        let (value, reports) = FlowDiagnostics.capturingReports {
            FlowDiagnostics.report(.warning, "made on the test's thread")
            return Scheduler(label: "test.capture.sync").sync {
                FlowDiagnostics.report(.warning, "made in Scheduler.sync")
                return 5
            }
        }
        #expect(value == 5)
        #expect(reports.map(\.message) == ["made on the test's thread", "made in Scheduler.sync"])
        #expect(reports.allSatisfy { $0.level == .warning })

        let (_, asyncReports) = await FlowDiagnostics.capturingReports {
            await Task.yield()
            FlowDiagnostics.report(.warning, "made after a suspension")
        }
        #expect(asyncReports.map(\.message) == ["made after a suspension"])
    }

    @Test("a report made on another thread goes to the capture whose filter claims it, and only there")
    func otherThreadsByFilter() {
        let (_, outer) = FlowDiagnostics.capturingReports(where: { $0.metadata["loop"] == "test.capture.outer" }) {
            let (_, inner) = FlowDiagnostics.capturingReports(where: { $0.metadata["loop"] == "test.capture.inner" }) {
                reportElsewhere("for the inner capture", loop: "test.capture.inner")
                reportElsewhere("for the outer capture", loop: "test.capture.outer")
            }
            #expect(inner.map(\.message) == ["for the inner capture"])
        }
        #expect(outer.map(\.message) == ["for the outer capture"])
    }

    @Test("reports below the minimum level are not made, so not captured")
    func belowMinimumLevel() {
        let (_, reports) = FlowDiagnostics.capturingReports {
            FlowDiagnostics.report(.debug, "detail")
        }
        #expect(reports.isEmpty || FlowDiagnostics.minimumLevel <= .debug)
    }
}
