import Flow
import FlowNet
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A new folder under the temporary directory for one test.
func makeTemporaryFolder(_ label: String = #function) throws -> String {
    let path = FileManager.default.temporaryDirectory.path
        + "/flownet-\(label.prefix { $0.isLetter })-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}


@Suite("Unix domain sockets")
struct PipeTests {
    @Test func bytesSentOverAUnixSocketComeBackFromAnEchoServer() throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/echo.sock"
        let echoed = Shared<Result<[UInt8]>?>(nil)
        let paths = Shared<(String?, String?)>((nil, nil))
        try runLoopCheckingHandles { loop in
            let listener = try! PipeListener.listen(path: path, on: loop) { connection in
                paths.mutate { $0.0 = connection.localPath }
                connection.onRead { event in
                    switch event {
                    case .bytes(let bytes): connection.send(copying: bytes)
                    case .endOfStream: connection.shutdown().always { connection.close() }
                    case .failed: connection.close()
                    }
                }
            }
            PipeConnection.connect(toPath: path, on: loop)
                .flatMap { connection in
                    paths.mutate { $0.1 = connection.remotePath }
                    return connection.write(pattern(count: 200_000)).flatMap { connection.shutdown() }
                        .flatMap { readToEnd(connection) }
                        .always { connection.close() }
                }
                .onResult { result in
                    echoed.value = result
                    listener.close()
                }
        }
        #expect(try #require(echoed.value).get() == pattern(count: 200_000))
        #expect(paths.value.0 == path)
        #expect(paths.value.1 == path)
        #expect(!FileManager.default.fileExists(atPath: path), "closing the listener removes the socket file")
    }

    @Test func connectingToAPathWhereNothingIsFailsWithENOENT() throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let failure = Shared<String?>(nil)
        try runLoopCheckingHandles { loop in
            PipeConnection.connect(toPath: folder + "/nobody.sock", on: loop).onResult { result in
                if case .failure(let error) = result { failure.value = "\(error)" }
            }
        }
        #expect(failure.value == "ENOENT: no such file or directory")
    }

    @Test func listeningWhereAFileAlreadyIsOrInAMissingFolderFailsClearly() throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        _ = FileManager.default.createFile(atPath: folder + "/taken", contents: Data("x".utf8))
        let failures = Shared<[String]>([])
        try runLoopCheckingHandles { loop in
            for path in [folder + "/taken", folder + "/missing/echo.sock"] {
                do {
                    _ = try PipeListener.listen(path: path, on: loop) { $0.close() }
                } catch {
                    failures.mutate { $0.append("\(error)") }
                }
            }
        }
        // libuv reports a bind in a missing folder as EACCES, as on Windows.
        #expect(failures.value == ["EADDRINUSE: address already in use", "EACCES: permission denied"])
        #expect(FileManager.default.fileExists(atPath: folder + "/taken"), "a failed listen leaves the file alone")
    }

    @Test func aSocketPathThatIsEmptyTooLongOrHoldsANulByteIsRefusedRatherThanCutShort() throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // A socket's path has room for 107 bytes (`sun_path`'s 108 with the NUL); this one has more,
        // and cut short it would name another file in `folder`.
        let tooLong = folder + "/" + String(repeating: "s", count: 120) + ".sock"
        let paths = ["", tooLong, folder + "/a\u{0}b.sock"]
        let failures = Shared<[String]>([])
        try runLoopCheckingHandles { loop in
            for path in paths {
                do {
                    let listener = try PipeListener.listen(path: path, on: loop) { $0.close() }
                    listener.close()
                    failures.mutate { $0.append("listened") }
                } catch {
                    failures.mutate { $0.append("\(error)") }
                }
            }
            join(paths.map { path in
                PipeConnection.connect(toPath: path, on: loop).map { connection -> String in
                    connection.close()
                    return "connected"
                }.mapResult { result in result.error.map { "\($0)" } ?? "connected" }
            }).onValue { results in failures.mutate { $0 += results } }
        }
        let expected = ["EINVAL: invalid argument", "ENAMETOOLONG: name too long", "EINVAL: invalid argument"]
        #expect(failures.value == expected + expected)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == [], "no socket file at a cut path")
    }

    @Test func echoServerListensOnAUnixSocketPath() throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/echo.sock"
        let server = try ExampleProcess("EchoServer", arguments: ["--unix", path])
        defer { server.stop() }
        #expect(server.readLine() == "EchoServer listening on \(path)")
        let reply = Shared<Result<[UInt8]>?>(nil)
        try runLoopCheckingHandles { loop in
            PipeConnection.connect(toPath: path, on: loop)
                .flatMap { connection in
                    connection.write("over a unix socket\n").flatMap { connection.shutdown() }
                        .flatMap { readToEnd(connection) }
                        .always { connection.close() }
                }
                .onResult { reply.value = $0 }
        }
        #expect(try #require(reply.value).get() == Array("over a unix socket\n".utf8))
        server.send(SIGTERM)
        #expect(server.readLine()?.hasPrefix("EchoServer received SIGTERM") == true)
        #expect(server.waitForExit() == 0)
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
