import Flow
import FlowNet
import FlowSystem
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Defects the fault sweep (Tests/Probes/FaultProbe, issue #30) found in FlowSystem, each held here
/// without fault injection.
@Suite("Faults found by the sweep: FlowSystem")
struct FaultFixTests {
    @Test("readFile completes once its file is closed: no descriptor of it is left open when the caller hears")
    func readFileClosesBeforeCompleting() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("data.bin")
        try Data(repeating: 7, count: 100_000).write(to: URL(fileURLWithPath: path))
        let openWhenHeard = Shared<[Int]>([])
        try runLoop { loop in
            // One read after another: the close that once ran after the future completed usually, not
            // always, lost the race with the caller.
            @Sendable func read(_ remaining: Int) {
                guard remaining > 0 else { return }
                FileSystem.readFile(at: path, on: loop).onResult(on: .none) { _ in
                    openWhenHeard.value.append(openDescriptorCount(inside: folder.path))
                    read(remaining - 1)
                }
            }
            read(8)
        }
        #expect(openWhenHeard.value.count == 8)
        #expect(openWhenHeard.value.allSatisfy { $0 == 0 }, "descriptors of the file open when readFile completed: \(openWhenHeard.value)")
    }
}
