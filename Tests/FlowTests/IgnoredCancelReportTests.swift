import Flow
import FlowTestSupport
import Testing

@Suite("An ignored cancel is reported")
struct IgnoredCancelReportTests {
    @Test("cancel() on a future with continuations is ignored and, in debug builds, reported with the caller's line")
    func ignoredCancelIsReported() {
        let operation = Operation<Int>(on: .none)
        let continuation = operation.future.map(on: .none) { $0 + 1 }
        expectDebugDiagnostic(containing: "was ignored: the future has continuations") {
            operation.future.cancel()
        }
        #expect(operation.future.result == nil)
        #expect(continuation.result == nil)
        continuation.cancel()
        #expect(operation.future.result?.error as? FutureError == .aborted)
    }

    @Test("the report names the caller's file and line and what to cancel instead")
    func reportNamesCallSiteAndRemedy() throws {
        let operation = Operation<Int>(on: .none)
        let continuation = operation.future.onValue(on: .none) { _ in }
        let (_, reports) = FlowDiagnostics.capturingReports(where: { _ in false }) {
            operation.future.cancel()
        }
        let expectedLine = #line - 2
        #if DEBUG
            let report = try #require(reports.first)
            #expect(reports.count == 1)
            #expect(report.description.contains("IgnoredCancelReportTests.swift:\(expectedLine)"))
            #expect(report.description.contains("cancel the future at the end of the chain"))
            #expect(report.metadata["callSite"]?.hasSuffix(":\(expectedLine)") == true)
        #else
            #expect(reports.isEmpty)
        #endif
        continuation.cancel()
    }

    @Test("a cancel that takes effect, or comes after completion, reports nothing")
    func effectiveAndLateCancelsAreSilent() {
        expectDiagnostics(0, containing: "") {
            let operation = Operation<Int>(on: .none)
            let continuation = operation.future.map(on: .none) { $0 }
            continuation.cancel()
            #expect(operation.future.result?.error as? FutureError == .aborted)
            let done = Future(5)
            done.cancel()
        }
    }

    @Test("the library's own cancels of observed futures report nothing: a select's loser, a timeout, a bag")
    func internalCancelsAreSilent() {
        expectDiagnostics(0, containing: "") {
            let shared = Operation<Int>(on: .none)
            let other = shared.future.map(on: .none) { $0 }
            let winner = Operation<Int>(on: .none)
            let selected = select(shared.future, or: winner.future)
            winner.complete(.success(1))
            #expect(selected.result != nil)
            let bag = DisposeBag()
            bag += shared.future.disposable
            bag.dispose()
            #expect(shared.future.result == nil)
            other.cancel()
        }
    }

    @Test("cancel through a function reference still cancels, and is reported without a site when ignored")
    func functionReference() {
        let operation = Operation<Int>(on: .none)
        let continuation = operation.future.map(on: .none) { $0 }
        let cancel: () -> Void = operation.future.cancel
        expectDebugDiagnostic(containing: "called through a function reference") { cancel() }
        let cancelContinuation: () -> Void = continuation.cancel
        cancelContinuation()
        #expect(operation.future.result?.error as? FutureError == .aborted)
    }
}
