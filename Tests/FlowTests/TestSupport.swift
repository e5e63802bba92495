import Dispatch
import Flow
import Foundation
// Every file of this target sees what the test targets share.
@_exported import FlowTestSupport
import Testing

/// The output of a run of the `MainLoopProbe` child process.
struct ProbeRun {
    var status: Int32
    var output: String
    var errorOutput: String
}

/// Runs a probe executable (`MainLoopProbe` by default), built next to the test bundle, with `scenario`.
func runProbe(_ scenario: String, executable: String = "MainLoopProbe") throws -> ProbeRun {
    let testBinary = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    let probe = testBinary.deletingLastPathComponent().appendingPathComponent(executable)
    guard FileManager.default.isExecutableFile(atPath: probe.path) else {
        Issue.record("\(executable) was not built at \(probe.path); run `swift build --build-tests` first")
        return ProbeRun(status: -1, output: "", errorOutput: "")
    }
    let process = Process()
    process.executableURL = probe
    process.arguments = [scenario]
    process.environment = childEnvironment()
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProbeRun(
        status: process.terminationStatus,
        output: String(decoding: outputData, as: UTF8.self),
        errorOutput: String(decoding: errorData, as: UTF8.self))
}
