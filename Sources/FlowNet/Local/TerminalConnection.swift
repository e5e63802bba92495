import CLibUV
import Flow

/// A terminal as a stream (libuv's `uv_tty_t`): what FlowSystem's standard streams are when the
/// program runs in a terminal.
package final class TerminalConnection: StreamConnection, @unchecked Sendable {
    // @unchecked Sendable: as its superclass's, the terminal handle is used only in the loop's context.

    /// Opens the terminal on `descriptor` (0 to read from, 1 or 2 to write to). Loop context only.
    package init(descriptor: Int32, on loop: EventLoop) throws(EventLoopError) {
        try super.init(loop: loop, readBuffer: ReadBuffer(), allocating: uv_tty_t.self) { loop, terminal in
            uv_tty_init(loop, terminal, descriptor, 0)
        }
    }
}

extension TerminalConnection: CustomStringConvertible {
    /// `TerminalConnection(<loop>)`.
    package var description: String { "TerminalConnection(\(loop.name))" }
}
