import CLibUV

/// What `stat` says about a file: its kind, size, permissions and times.
///
/// ```swift
/// FileSystem.status(ofItemAt: "/etc/hosts").onValue { status in print(status.size, status.isRegularFile) }
/// ```
public struct FileStatus: Sendable, Hashable {
    /// The size in bytes.
    public let size: Int64
    /// The permission bits, such as `0o644`.
    public let permissions: Int32
    /// Whether it is a regular file.
    public let isRegularFile: Bool
    /// Whether it is a directory.
    public let isDirectory: Bool
    /// Whether it is a symbolic link (only from a status that does not follow links).
    public let isSymbolicLink: Bool
    /// The last modification, in seconds since 1970.
    public let modificationTime: Double

    init(_ stat: uv_stat_t) {
        size = Int64(stat.st_size)
        let mode = Int32(truncatingIfNeeded: stat.st_mode)
        permissions = mode & 0o7777
        let kind = mode & 0o170000
        isRegularFile = kind == 0o100000
        isDirectory = kind == 0o040000
        isSymbolicLink = kind == 0o120000
        modificationTime = Double(stat.st_mtim.tv_sec) + Double(stat.st_mtim.tv_nsec) / 1e9
    }
}
