import CLibUV
import Flow
import FlowNet

#if canImport(Glibc)
import Glibc
#endif

/// Files and folders through libuv's thread pool (`uv_fs_*`): the loop never waits for the disk.
///
/// ```swift
/// FileSystem.readFile(at: "/etc/hostname", on: loop).onValue { bytes in
///     print(String(decoding: bytes, as: UTF8.self))
/// }
/// ```
///
/// Every method may be called from any thread; the futures complete on the loop, and fail with libuv's
/// error: `ENOENT: no such file or directory`, `EACCES: permission denied`, `EISDIR: illegal operation
/// on a directory`, ..., and `EINVAL: invalid argument` for a path holding a NUL byte (which C would cut
/// short there, naming another file).
public enum FileSystem {
    /// Opens the file at `path`; see ``OpenFile``.
    ///
    /// Opening a FIFO waits for its other end, and a device may wait too: such opens (found with a
    /// `stat` first) hold at most ``ThreadPool/blockingWorkLimit`` pool threads, so that they cannot
    /// stall every other file operation and name lookup; see ``ThreadPool/size``.
    ///
    /// ```swift
    /// FileSystem.open("/tmp/log.txt", .append).flatMap { file in file.write(Array("line\n".utf8)).flatMap { file.close() } }
    /// ```
    ///
    /// - Parameters:
    ///   - path: the file's path, absolute or relative to the current directory.
    ///   - mode: how the file is opened: reading (the default), writing, appending, ...
    ///   - permissions: the permission bits of a file this creates, before the process's umask.
    ///   - loop: the loop whose thread pool does the work and on which the future completes.
    public static func open(
        _ path: String, _ mode: OpenFile.Mode = .read, permissions: Int32 = 0o644, on loop: EventLoop = .main
    ) -> Future<OpenFile> {
        // Not `uv_fs_open`: a FIFO or a device may block its pool thread for good (see PathOpening).
        PathOpening.open(path, flags: mode.flags, permissions: permissions, on: loop)
    }

    /// The status of the item at `path`, following symbolic links (`stat`).
    ///
    /// ```swift
    /// FileSystem.status(ofItemAt: path).onValue { print("\($0.size) bytes") }
    /// ```
    public static func status(ofItemAt path: String, on loop: EventLoop = .main) -> Future<FileStatus> {
        FileSystemRequest.perform(on: loop, paths: [path], submit: { loop, request, callback in
            uv_fs_stat(loop, request, path, callback)
        }, finish: { request in .success(FileStatus(request.pointee.statbuf)) })
    }

    /// Renames (moves) `source` to `destination` on the same file system, replacing what was there,
    /// atomically.
    ///
    /// ```swift
    /// FileSystem.rename("report.tmp", to: "report.txt")
    /// ```
    @discardableResult
    public static func rename(_ source: String, to destination: String, on loop: EventLoop = .main) -> Future<Void> {
        FileSystemRequest.perform(on: loop, paths: [source, destination], submit: { loop, request, callback in
            uv_fs_rename(loop, request, source, destination, callback)
        }, finish: { _ in .success(()) })
    }

    /// Removes the file at `path` (`unlink`). A file still open stays readable through its
    /// ``OpenFile`` until closed.
    ///
    /// ```swift
    /// FileSystem.removeFile(at: "/tmp/old.log")
    /// ```
    @discardableResult
    public static func removeFile(at path: String, on loop: EventLoop = .main) -> Future<Void> {
        FileSystemRequest.perform(on: loop, paths: [path], submit: { loop, request, callback in
            uv_fs_unlink(loop, request, path, callback)
        }, finish: { _ in .success(()) })
    }

    /// Creates a directory at `path` (not its parents). Fails with `EEXIST: file already exists` if
    /// something is there.
    ///
    /// ```swift
    /// FileSystem.createDirectory(at: "/tmp/cache")
    /// ```
    @discardableResult
    public static func createDirectory(
        at path: String, permissions: Int32 = 0o755, on loop: EventLoop = .main
    ) -> Future<Void> {
        FileSystemRequest.perform(on: loop, paths: [path], submit: { loop, request, callback in
            uv_fs_mkdir(loop, request, path, permissions, callback)
        }, finish: { _ in .success(()) })
    }

    /// Removes the empty directory at `path`.
    ///
    /// ```swift
    /// FileSystem.removeDirectory(at: "/tmp/cache")
    /// ```
    @discardableResult
    public static func removeDirectory(at path: String, on loop: EventLoop = .main) -> Future<Void> {
        FileSystemRequest.perform(on: loop, paths: [path], submit: { loop, request, callback in
            uv_fs_rmdir(loop, request, path, callback)
        }, finish: { _ in .success(()) })
    }

    /// An entry of a directory: its name and kind.
    public struct DirectoryEntry: Sendable, Hashable {
        /// The entry's name, without the directory's path.
        public let name: String
        /// Whether it is a directory.
        public let isDirectory: Bool
        /// Whether it is a regular file.
        public let isRegularFile: Bool
    }

    /// The entries of the directory at `path`, without `.` and `..`, sorted by name.
    ///
    /// ```swift
    /// FileSystem.contentsOfDirectory(at: "/etc").onValue { entries in print(entries.map(\.name)) }
    /// ```
    public static func contentsOfDirectory(at path: String, on loop: EventLoop = .main) -> Future<[DirectoryEntry]> {
        FileSystemRequest.perform(on: loop, paths: [path], submit: { loop, request, callback in
            uv_fs_scandir(loop, request, path, 0, callback)
        }, finish: { request in
            var entries: [DirectoryEntry] = []
            var entry = uv_dirent_t()
            while uv_fs_scandir_next(request, &entry) == 0 {
                entries.append(DirectoryEntry(
                    name: String(cString: entry.name), isDirectory: entry.type == UV_DIRENT_DIR,
                    isRegularFile: entry.type == UV_DIRENT_FILE))
            }
            return .success(entries.sorted { $0.name < $1.name })
        })
    }

    /// Reads the whole file at `path`.
    ///
    /// ```swift
    /// FileSystem.readFile(at: "config.json").onValue { bytes in print("\(bytes.count) bytes") }
    /// ```
    ///
    /// - Parameters:
    ///   - path: the file's path.
    ///   - limit: the largest file read; a bigger one fails with `EFBIG: file too large` instead of
    ///     filling memory. `Int.max`: no limit; a negative limit stops the program with a message.
    ///   - loop: the loop whose thread pool does the work and on which the future completes.
    public static func readFile(
        at path: String, limit: Int = 1 << 30, on loop: EventLoop = .main
    ) -> Future<[UInt8]> {
        misusePrecondition(limit >= 0, "FileSystem.readFile: the limit must not be negative, not \(limit)")
        return open(path, .read, on: loop).flatMap(on: .none) { file in
            // Completes once the file is closed, so that the caller finds its descriptor back.
            file.readToEnd(limit: limit).flatMapResult(on: .none) { read in
                file.close().flatMapResult(on: .none) { _ in Future(result: read) }
            }
        }
    }

    /// Replaces the file at `path` with `contents`, all or nothing: the bytes go to a temporary file
    /// next to it, which is flushed to the disk (`fsync`) and then renamed over `path`. A crash leaves
    /// the old content or the new, never half of it.
    ///
    /// Cancelling the future stops the work at its next step (it completes with
    /// `FutureError.aborted` at once): the temporary file is removed, and `path` keeps its old
    /// content unless the rename had already begun.
    ///
    /// ```swift
    /// FileSystem.writeFile(at: "state.json", contents: Array(json.utf8)).onValue { print("saved") }
    /// ```
    @discardableResult
    public static func writeFile(
        at path: String, contents: [UInt8], permissions: Int32 = 0o644, on loop: EventLoop = .main
    ) -> Future<Void> {
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        // The steps are not cancelled from outside, which would drop them wherever they are (an open
        // already running creates the file all the same): they look at this flag between steps.
        let isCancelled = Locked(false)
        @Sendable func checkNotCancelled() throws {
            if isCancelled.withLock({ $0 }) { throw FutureError.aborted }
        }
        let steps = open(temporary, .createNew, permissions: permissions, on: loop)
            .flatMap(on: .none) { file -> Future<Void> in
                Future(()).flatMap(on: .none) { () throws -> Future<Void> in
                    try checkNotCancelled()
                    return file.write(contents)
                }
                .flatMap(on: .none) { () throws -> Future<Void> in
                    try checkNotCancelled()
                    return file.synchronize()
                }
                .flatMapResult(on: .none) { written in
                    file.close().flatMap(on: .none) { () throws -> Future<Void> in
                        try written.get()
                        try checkNotCancelled()
                        return rename(temporary, to: path, on: loop)
                    }
                }
                // Removed only once this call made it: a failed open may have met another's file.
                .flatMapResult(on: .none) { result -> Future<Void> in
                    guard case .failure(let error) = result else { return Future(()) }
                    return removeFile(at: temporary, on: loop).flatMapResult(on: .none) { _ in Future(error: error) }
                }
            }
        return Future<Void>(on: .none) { completion in
            steps.onResult(on: .none, completion)
            return Disposer { isCancelled.withLock { $0 = true } }
        }
    }
}
