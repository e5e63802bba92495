import CLibUV
import Flow

extension EventLoop {
    /// Runs `work` in the loop's context: now if the caller is already there, else queued on the loop.
    /// Every libuv call of FlowNet and FlowSystem goes through here from APIs callable on any thread.
    /// Stops the program with a message naming `caller` if the loop is closed.
    package func inContext(_ caller: @autoclosure () -> String = "a handle of this loop", _ work: @escaping @Sendable () -> Void) {
        performOrQueue(caller(), work)
    }
}

extension Future {
    /// The future's value for an `async` entry point that throws only ``EventLoopError``: any other
    /// error (the task's cancellation) becomes `ECANCELED`.
    package nonisolated(nonsending) func valueOrEventLoopError() async throws(EventLoopError) -> Value {
        do {
            return try await get()
        } catch let error as EventLoopError {
            throw error
        } catch {
            throw EventLoopError.cancelledByClose
        }
    }
}
