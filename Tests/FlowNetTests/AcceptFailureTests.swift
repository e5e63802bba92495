import Flow
import FlowNet
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("TCPListener: failed accepts")
struct AcceptFailureTests {
    /// Provokes a failing accept(2) without exhausting descriptors: on Linux, shutting down a
    /// listening socket's reading side takes it out of the listening state and wakes its poll, and
    /// accept(2) then fails with `EINVAL`; libuv hands that to the listener as a failed connection.
    ///
    /// In a child process (an exit test): `FlowDiagnostics.handler` is process-wide, and other suites
    /// running in parallel report through it too.
    @Test("a failed accept is counted and reported through FlowDiagnostics with the listener's address")
    func aFailedAcceptIsCountedAndReported() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let reports = Shared<[FlowDiagnostics.Report]>([])
            let observed = Shared<(count: Int, address: String)?>(nil)
            try runLoopCheckingHandles("accept.failure") { loop in
                let listener: TCPListener
                do {
                    listener = try TCPListener.listen(port: 0, on: loop) { connection in connection.close() }
                } catch {
                    Issue.record("could not listen: \(error)")
                    return
                }
                FlowDiagnostics.handler = { report in
                    reports.mutate { $0.append(report) }
                    // On the loop's thread, inside libuv's accept loop, which retries a failing accept
                    // until the listener closes.
                    if observed.value == nil {
                        observed.value = (listener.failedAcceptCount, "\(listener.localAddress)")
                    }
                    listener.close()
                }
                let descriptors = socketDescriptors(boundTo: listener.localAddress)
                guard descriptors.count == 1, shutdown(descriptors[0], Int32(SHUT_RD)) == 0 else {
                    Issue.record("no single listening socket to shut down: \(descriptors), errno \(errno)")
                    listener.close()
                    return
                }
            }
            let accepted = reports.value.filter { $0.message.hasPrefix("accepting a connection failed: ") }
            let report = accepted.first
            let summary = "reports: \(reports.value), count and address seen: \(String(describing: observed.value))"
            guard accepted.count == 1, let report, report.level == .warning,
                  report.metadata["failedAcceptCount"] == "1", observed.value?.count == 1,
                  report.metadata["address"] == observed.value?.address, report.metadata["loop"] == "accept.failure"
            else {
                FileHandle.standardError.write(Data("unexpected: \(summary)\n".utf8))
                exit(1)
            }
            FileHandle.standardError.write(Data("reported: \(report)\n".utf8))
        }
        let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(output.contains("flow warning: accepting a connection failed: "), "child's output: \(output)")
    }
}

/// The descriptors of this process's TCP sockets bound to `address`'s port in its family.
private func socketDescriptors(boundTo address: SocketAddress) -> [Int32] {
    let inodes = socketInodes(boundTo: address, .tcp)
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.compactMap { entry in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(entry)"),
              target.hasPrefix("socket:["), inodes.contains(String(target.dropFirst(8).dropLast()))
        else { return nil }
        return Int32(entry)
    }
}
