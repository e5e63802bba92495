import Flow
import FlowNet
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A defect the fault sweep (Tests/Probes/FaultProbe, issue #30) found in FlowNet, held here without
/// fault injection: a write that fails at once (here with EFAULT, on memory that cannot be read) must
/// not let the next write through, or the peer reads it where the failed bytes belonged.
@Suite("Faults found by the sweep: stream writes")
struct StreamWriteFailureTests {
    @Test("after a write fails, the writes made after it fail with its error and none of their bytes go out")
    func writesAfterAFailedWriteDoNotGoOut() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &descriptors) == 0)
        let (writer, peer) = (descriptors[0], descriptors[1])
        defer { close(peer) }
        // 1 MiB, so that the allocator maps it: its pages past the first ones are made unreadable.
        let unreadable = SharedBytes([UInt8](repeating: 0x41, count: 1 << 20))
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let base = unreadable.withUnsafeBytes { Int(bitPattern: $0.baseAddress!) }
        let protectedStart = (base + 2 * page) & ~(page - 1)
        let protectedLength = 16 * page
        #expect(mprotect(UnsafeMutableRawPointer(bitPattern: protectedStart), protectedLength, PROT_NONE) == 0)
        defer { mprotect(UnsafeMutableRawPointer(bitPattern: protectedStart), protectedLength, PROT_READ | PROT_WRITE) }
        let marker = SharedBytes([UInt8](repeating: 0x5A, count: 100))
        let results = Shared<[String]>([])
        try runLoop { loop in
            let connection: PipeConnection
            do {
                connection = try PipeConnection.open(fileDescriptor: writer, on: loop)
            } catch {
                Issue.record("open: \(error)")
                return
            }
            // Both in one turn of the loop, as a server answering two requests does.
            connection.send(unreadable) { results.value.append("first: \($0.map { "\($0)" } ?? "written")") }
            connection.send(marker) { results.value.append("second: \($0.map { "\($0)" } ?? "written")") }
            connection.shutdown().onResult { _ in connection.close() }
        }
        #expect(results.value.count == 2)
        #expect(results.value.contains { $0.hasPrefix("first: EFAULT") }, "\(results.value)")
        #expect(results.value.contains { $0.hasPrefix("second: EFAULT") }, "\(results.value)")
        // What the peer read: the part of the first write before the unreadable memory, never the marker.
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = read(peer, &buffer, buffer.count)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        #expect(!received.contains(0x5A), "the peer read \(received.count) bytes, the marker's among them")
    }
}
