/// Why an ``EventLoop`` refused a request.
public enum EventLoopError: Error, Equatable, CustomStringConvertible {
    /// ``EventLoop/run()`` was called while the loop was already running (on this or another thread).
    case alreadyRunning
    /// The loop was closed: it runs nothing more.
    case closed
    /// ``EventLoop/close()`` was called from inside the loop's own work.
    case closedFromInsideTheLoop
    /// ``EventLoop/run()`` or ``EventLoop/close()`` of ``EventLoop/main`` was called off the main thread:
    /// the main loop belongs to the main thread, which treats itself as the loop's context at all times.
    case mainLoopOffMainThread
    /// A libuv call failed; `name` and `message` are libuv's (for example `EADDRINUSE`, "address already in use").
    case libuv(code: Int32, name: String, message: String)

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .alreadyRunning:
            return "EventLoop.run(): the loop is already running; a loop is run by one thread at a time"
        case .closed:
            return "EventLoop: the loop was closed and accepts no more work"
        case .closedFromInsideTheLoop:
            return "EventLoop.close(): called from the loop's own work; stop the loop and close it from outside"
        case .mainLoopOffMainThread:
            return "EventLoop.main is run and closed by the main thread only; "
                + "give other threads a loop of their own (EventLoop.startOnNewThread())"
        case .libuv(_, let name, let message):
            return "\(name): \(message)"
        }
    }
}
