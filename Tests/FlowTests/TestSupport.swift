import Dispatch
import Flow
import Foundation
// Every file of this target sees what the test targets share.
@_exported import FlowTestSupport
import Testing

/// Runs a probe executable (`MainLoopProbe` by default), built next to the test bundle, with `scenario`.
func runProbe(_ scenario: String, executable: String = "MainLoopProbe") throws -> ProbeRun {
    try runProbe(at: builtExecutable(executable).path, arguments: [scenario])
}
