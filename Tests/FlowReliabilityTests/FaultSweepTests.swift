import Foundation
import Testing

/// Issue #30: each scenario of Tests/Probes/FaultProbe (TCP and Unix-socket echo of 1 MiB, file
/// writes and reads, file chunks, UDP echo, a child's piped output, pipelined HTTP requests through
/// HTTPHello's parser, a name lookup) run under each kind of fault that reaches its calls (EINTR,
/// EAGAIN, short transfers, ENOMEM, ENOBUFS, EMFILE, ECONNRESET, EIO, a failed libuv allocation), a
/// few seeds each: no run crashes or hangs, every byte
/// of a run that completes is checked, every failure reaches a caller as an error, and descriptors,
/// libuv handles and futures are back to their count before the run. `Scripts/fault-sweep` runs more
/// seeds. The probe is a child process: its fault injector replaces system calls process-wide.
@Suite("Faults on purpose: libuv and system calls fail, nothing is lost", .serialized)
struct FaultSweepTests {
    /// Seeds per scenario and fault: `FLOW_FAULT_SEEDS`, 5 by default (a bounded CI sweep).
    static let seeds = Int(ProcessInfo.processInfo.environment["FLOW_FAULT_SEEDS"] ?? "") ?? 5

    static var probePath: String { (try? builtExecutable("FaultProbe").path) ?? "FaultProbe" }

    /// The probe's matrix: each scenario and its kinds of fault.
    static func matrix() throws -> [String: [String]] {
        let run = try runProbe(at: probePath, arguments: ["matrix"])
        var matrix: [String: [String]] = [:]
        for line in run.output.split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            if let scenario = words.first { matrix[scenario] = Array(words.dropFirst()) }
        }
        return matrix
    }

    /// Whether this build can fault the calls: not under a sanitizer, whose runtime defines the same
    /// C library calls as the injector (the probe then runs without its wrappers). A probe not built
    /// leaves the test enabled, to fail saying so.
    static var isAvailable: Bool {
        guard FileManager.default.isExecutableFile(atPath: probePath) else { return true }
        return (try? runProbe(at: probePath, arguments: ["available"]).output) != "available 0\n"
    }

    @Test(
        "every injected fault is survived: no crash, no hang, no lost byte, no silent failure, no leak",
        .enabled(if: FaultSweepTests.isAvailable, "the injector is compiled out under the sanitizers"),
        arguments: ["tcp", "unix", "file", "chunks", "udp", "process", "http", "lookup"])
    func sweep(scenario: String) throws {
        let faults = try #require(try Self.matrix()[scenario], "the probe does not know \(scenario)")
        var injected = 0
        for fault in faults {
            let run = try runProbe(at: Self.probePath, arguments: [scenario, fault, "1", String(Self.seeds)])
            let lines = run.output.split(separator: "\n").map(String.init)
            let runs = lines.filter { $0.hasPrefix("RUN ") }
            #expect(run.status == 0, "\(scenario) under \(fault): status \(run.status)\n\(run.output)\(run.errorOutput)")
            #expect(lines.first?.hasPrefix("CLEAN ") == true && lines.first?.contains("outcome=completed") == true,
                    "\(scenario): the run without faults did not complete: \(lines.first ?? run.errorOutput)")
            #expect(runs.count == Self.seeds, "\(scenario) under \(fault): \(runs.count) runs of \(Self.seeds)\n\(run.output)")
            for line in lines where !line.hasSuffix("violations=none") {
                Issue.record("\(line)")
            }
            injected += runs.compactMap { field("injected", of: $0).flatMap { Int($0) } }.reduce(0, +)
        }
        // A sweep that injected nothing would prove nothing.
        #expect(injected > 0, "no fault was injected into \(scenario)")
    }

    private func field(_ name: String, of line: String) -> String? {
        line.split(separator: " ").first { $0.hasPrefix("\(name)=") }.map { String($0.dropFirst(name.count + 1)) }
    }
}
