import CLibUV
import Flow
import Foundation
import Testing

/// How many libuv handles `loop` holds, its own included (the wake-up handle, the deadline timer).
func libuvHandleCount(_ loop: EventLoop) -> Int {
    var count = 0
    withUnsafeMutablePointer(to: &count) { counter in
        uv_walk(loop.unsafeLoopPointer, { _, argument in
            argument!.assumingMemoryBound(to: Int.self).pointee += 1
        }, counter)
    }
    return count
}

/// Like ``runLoop(_:sourceLocation:_:)``, and checks that the test left no libuv handle behind on the
/// loop: not even one that is stopped (which would not keep `run()` going) but was never closed.
func runLoopCheckingHandles(
    _ name: String = "net.test", sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable (EventLoop) -> Void
) throws {
    let loop = EventLoop(name: name)
    let isFinished = Shared(false)
    let timedOut = Shared(false)
    DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(hangGuardSeconds)) {
        guard !isFinished.value else { return }
        timedOut.value = true
        loop.stop()
    }
    let handlesBefore = Shared(0)
    loop.execute {
        handlesBefore.value = libuvHandleCount(loop)
        body(loop)
    }
    try loop.run()
    isFinished.value = true
    #expect(!timedOut.value, "the loop still had open handles or pending work after \(hangGuardSeconds) s",
            sourceLocation: sourceLocation)
    // The loop has stopped and this thread ran it: walking its handles here is safe.
    let handlesAfter = libuvHandleCount(loop)
    #expect(handlesAfter == handlesBefore.value, "libuv handles left open", sourceLocation: sourceLocation)
    try loop.close()
}

/// The targets of this process's open descriptors (`/proc/self/fd`), such as `socket:[1234]` or a path.
func openDescriptorTargets() -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") }
}

/// The inodes of the sockets bound to local `port` (TCP and UDP, IPv4 and IPv6), from `/proc/net`.
func socketInodes(boundToPort port: Int) -> Set<String> {
    let hexPort = String(format: "%04X", port)
    var inodes: Set<String> = []
    for table in ["tcp", "tcp6", "udp", "udp6"] {
        guard let text = try? String(contentsOfFile: "/proc/net/\(table)", encoding: .utf8) else { continue }
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[1].hasSuffix(":\(hexPort)") else { continue }
            inodes.insert(String(fields[9]))
        }
    }
    return inodes
}

/// How many descriptors of this process refer to a socket bound to local `port`. Parallel tests use
/// other ports, so the count is about this test's sockets only.
func openSocketCount(boundToPort port: Int) -> Int {
    let inodes = socketInodes(boundToPort: port)
    return openDescriptorTargets().filter { target in
        target.hasPrefix("socket:[") && inodes.contains(String(target.dropFirst(8).dropLast()))
    }.count
}
