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
