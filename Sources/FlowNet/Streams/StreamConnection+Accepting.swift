import CLibUV
import Flow

extension StreamConnection {
    /// Accepts the connection pending on the listening stream `server` into a new connection that
    /// `make` creates, as ``TCPListener`` and ``PipeListener`` both do. Loop context only.
    ///
    /// On failure returns `nil` after handing `failed` the reason (libuv's error, or the creation's); a
    /// connection created but not accepted is closed.
    static func accept<Connection: StreamConnection>(
        from server: UnsafeMutablePointer<uv_stream_t>,
        making make: () throws(EventLoopError) -> Connection,
        failed: (_ reason: String) -> Void
    ) -> Connection? {
        let connection: Connection
        do {
            connection = try make()
        } catch {
            failed("\(error)")
            return nil
        }
        let status = uv_accept(server, connection.handle)
        guard status == 0 else {
            failed(EventLoop.describe(status))
            connection.beginClosing()
            return nil
        }
        return connection
    }
}

/// The failed accepts of a listener (``TCPListener``, ``PipeListener``): counted, and reported through
/// ``FlowDiagnostics`` at the 1st, 2nd, 4th, 8th, ... failure, since a process out of file descriptors
/// fails every accept and its log must not drown. Loop context only, like the listener.
struct FailedAccepts {
    /// How many accepts failed.
    private(set) var count = 0

    /// Counts a failure; whether to report it.
    mutating func countOne() -> Bool {
        count += 1
        return count & (count - 1) == 0
    }

    /// Reports the failure just counted, of the listener at `place` (its address or path, under
    /// `placeKey`) on `loop`. Not mutating: the report's handler may read the listener's count.
    func report(_ reason: String, loop: EventLoop, placeKey: String, place: String) {
        FlowDiagnostics.report(
            .warning, "accepting a connection failed: \(reason)",
            metadata: ["loop": loop.name, placeKey: place, "failedAcceptCount": "\(count)"])
    }
}
