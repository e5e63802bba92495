import CLibUV
import Flow

#if canImport(Glibc)
import Glibc
#endif

/// Views of a libuv handle as the "base classes" libuv's C API expects. libuv lays its handle structs
/// out so that a `uv_tcp_t*` is a valid `uv_stream_t*` and `uv_handle_t*`; these casts only change
/// the pointer's static type.
extension UnsafeMutablePointer where Pointee == uv_tcp_t {
    var asStream: UnsafeMutablePointer<uv_stream_t> {
        UnsafeMutableRawPointer(self).assumingMemoryBound(to: uv_stream_t.self)
    }

    var asHandle: UnsafeMutablePointer<uv_handle_t> {
        UnsafeMutableRawPointer(self).assumingMemoryBound(to: uv_handle_t.self)
    }
}

extension EventLoopError {
    /// The error pending work gets when its connection or listener is closed first.
    package static var cancelledByClose: EventLoopError { EventLoop.error(UV_ECANCELED.rawValue) }
}

/// The Swift object owning a libuv handle or request, stored in the C struct's `data` field.
///
/// The `data` field holds a +1 reference, taken when the handle is opened (or the request is
/// submitted) and given back in its close (or completion) callback: that is what keeps the owner
/// alive exactly until libuv is done with the memory.
package enum Owner {
    package static func retain(_ object: AnyObject) -> UnsafeMutableRawPointer {
        Unmanaged.passRetained(object).toOpaque()
    }

    package static func borrow<Object: AnyObject>(_ data: UnsafeMutableRawPointer?, as type: Object.Type) -> Object {
        Unmanaged<Object>.fromOpaque(data!).takeUnretainedValue()
    }

    package static func release<Object: AnyObject>(_ data: UnsafeMutableRawPointer?, as type: Object.Type) -> Object {
        Unmanaged<Object>.fromOpaque(data!).takeRetainedValue()
    }
}

/// libuv writes with `write(2)`, which raises `SIGPIPE` when the peer has gone away, and that signal
/// kills the process by default. A server must get `EPIPE` from the write instead, so the first socket
/// this module makes sets `SIGPIPE` to be ignored, process-wide (as Node.js does).
package enum BrokenPipeSignal {
    package static let ignored: Void = {
        _ = signal(SIGPIPE, SIG_IGN)
    }()
}
