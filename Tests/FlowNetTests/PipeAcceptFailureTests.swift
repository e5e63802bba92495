import CLibUV
import Flow
@testable import FlowNet
import Foundation
import Testing

@Suite("PipeListener: failed accepts")
struct PipeAcceptFailureTests {
    /// A failing accept(2) on a Unix socket cannot be provoked the way the TCP test does it (a Unix
    /// socket stays listening after a shutdown), so this hands the listener what libuv hands it when
    /// accept(2) fails: the failure's status.
    ///
    /// In a child process (an exit test): `FlowDiagnostics.handler` is process-wide.
    @Test("a failed accept is counted and reported through FlowDiagnostics with the listener's path, as TCP's are")
    func aFailedAcceptIsCountedAndReported() async {
        await #expect(processExitsWith: .success) {
            let folder = try makeTemporaryFolder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let path = folder + "/accept.sock"
            let reports = Shared<[FlowDiagnostics.Report]>([])
            let counted = Shared(0)
            let seenInHandler = Shared<[Int]>([])
            try runLoopCheckingHandles("pipe.accept.failure") { loop in
                let listener = try! PipeListener.listen(path: path, on: loop) { $0.close() }
                FlowDiagnostics.handler = { report in
                    reports.mutate { $0.append(report) }
                    // On the loop's thread, inside the listener's accept callback.
                    seenInHandler.mutate { $0.append(listener.failedAcceptCount) }
                }
                for _ in 0..<3 { listener.accept(status: UV_EMFILE.rawValue) }
                counted.value = listener.failedAcceptCount
                listener.close()
            }
            let accepted = reports.value.filter { $0.message.hasPrefix("accepting a connection failed: ") }
            // Reported at the 1st, 2nd, 4th, ... failure, as TCPListener does.
            guard counted.value == 3, accepted.count == 2, seenInHandler.value == [1, 2],
                  accepted.map(\.level) == [.warning, .warning],
                  accepted[0].message == "accepting a connection failed: EMFILE: too many open files",
                  accepted.map({ $0.metadata["failedAcceptCount"] }) == ["1", "2"],
                  accepted.allSatisfy({ $0.metadata["path"] == path && $0.metadata["loop"] == "pipe.accept.failure" })
            else {
                FileHandle.standardError.write(
                    Data("unexpected: \(counted.value), \(seenInHandler.value), \(reports.value)\n".utf8))
                exit(1)
            }
        }
    }
}
