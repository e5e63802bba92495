import Flow
import Foundation
import Testing

/// The debug-build report of a completion callback released uncalled names the line where the user
/// created the future, or is not made: the library's own futures, which can lose their callback only
/// because a future they observe never completes, never make one.
///
/// In a child process (an exit test): `FlowDiagnostics.handler` is process-wide. The child writes the
/// creation sites reported to standard error, one a line, for the parent to check.
@Suite("Abandonment reports name the user's line")
struct AbandonmentReportTests {
    @Test("ignoreCanceling() and performWhile on a never-completing future, then a cancel, report only the user's future")
    func onlyTheUsersFutureIsReported() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            #if DEBUG
            let sites = Shared<[String]>([])
            FlowDiagnostics.handler = { report in
                sites.mutate { $0.append(report.metadata["creationSite"] ?? report.message) }
            }
            let lost = Future<Int>(on: .none) { _ in NilDisposer() }  // released uncalled: reported here
            let shielded = lost.ignoreCanceling()
            shielded.cancel()
            let performing = lost.performWhile { NilDisposer() }
            performing.cancel()
            // Made to never complete on purpose: nothing to report, here or in the library's futures.
            Future<Int>(.forever).ignoreCanceling().cancel()
            Future<Int>(.forever).performWhile { NilDisposer() }.cancel()
            for site in sites.value {
                FileHandle.standardError.write(Data("reported: \(site)\n".utf8))
            }
            #endif
        }
        #if DEBUG
        let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        let reported = output.split(separator: "\n").filter { $0.hasPrefix("reported: ") }
        // One report, for `lost`, naming this file (inside the exit test, `#line` gives the macro's line).
        #expect(reported.count == 1, "\(output)")
        #expect(reported.allSatisfy { $0.hasPrefix("reported: FlowReliabilityTests/AbandonmentReportTests.swift:") },
                "\(output)")
        #else
        _ = result
        #endif
    }
}
