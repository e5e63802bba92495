import CLibUV
import Flow

#if canImport(Glibc)
import Glibc
#endif

/// The checks the path of a Unix domain socket passes before libuv gets it. libuv would cut a path too
/// long for `sun_path` short without a word (binding or connecting to another file), bind an empty path
/// to an automatic abstract address, and stop reading a path at a NUL byte.
enum SocketPath {
    /// The longest path, in UTF-8 bytes: `sun_path` less the NUL that ends it (107 on Linux).
    static let maximumLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Throws `EINVAL` for an empty path or one holding a NUL byte, `ENAMETOOLONG` for one longer than
    /// ``maximumLength``.
    static func validate(_ path: String) throws(EventLoopError) {
        guard !path.isEmpty, path.isWholeCString else { throw EventLoop.error(UV_EINVAL.rawValue) }
        guard path.utf8.count <= maximumLength else { throw EventLoop.error(UV_ENAMETOOLONG.rawValue) }
    }
}
