import Flow
import FlowNet
import FlowSystem
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Standard streams")
struct StandardStreamTests {
    @Test func inheritedPipeDescriptorsBecomeStreamsThatCarryLines() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        let lines = Shared<[UInt8]?>(nil)
        try runLoop { loop in
            let reader = try! StandardStreams.open(descriptor: readEnd, on: loop)
            let writer = try! StandardStreams.open(descriptor: writeEnd, on: loop)
            writer.write("first line\nsecond line\n").always { writer.close() }
            let received = LoopState<[UInt8]>([])
            reader.onRead { event in
                switch event {
                case .bytes(let bytes): received.value += bytes
                case .endOfStream, .failed:
                    lines.value = received.value
                    reader.close()
                }
            }
        }
        #expect(lines.value.map { String(decoding: $0, as: UTF8.self) } == "first line\nsecond line\n")
    }

    @Test func aRegularFileIsNotAStreamAndSaysSo() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let descriptor = open(folder.file("plain"), O_CREAT | O_RDWR, 0o600)
        defer { close(descriptor) }
        let failure = Shared<String?>(nil)
        try runLoop { loop in
            do {
                _ = try StandardStreams.open(descriptor: descriptor, on: loop)
            } catch {
                failure.value = "\(error)"
            }
        }
        #expect(failure.value == "descriptor \(descriptor) is a regular file, not a stream: read it with FileSystem")
    }

    @Test func aDatagramSocketIsNotAStreamAndStaysTheCallers() throws {
        // Read as a stream, a UDP socket would lose its datagrams' boundaries, and an empty datagram
        // would read as the end.
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        let failures = Shared<[String]>([])
        try runLoop { loop in
            failures.value = outcomes(of: [
                { _ = try StandardStreams.open(descriptor: descriptor, on: loop) },
                { _ = try PipeConnection.open(fileDescriptor: descriptor, on: loop) },
            ], succeeded: "opened")
        }
        #expect(failures.value == Array(repeating: "EPROTOTYPE: protocol wrong type for socket", count: 2))
        // Still open, and still the test's to close.
        #expect(fcntl(descriptor, F_GETFD) >= 0)
    }
}
