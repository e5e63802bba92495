import Flow

extension EventLoop {
    /// Runs `work` in the loop's context: now if the caller is already there, else queued on the loop.
    /// Every libuv call of FlowNet and FlowSystem goes through here from APIs callable on any thread.
    package func inContext(_ work: @escaping @Sendable () -> Void) {
        if isInLoopContext {
            work()
        } else {
            execute(work)
        }
    }
}
