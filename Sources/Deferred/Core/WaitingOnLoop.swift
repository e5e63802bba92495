import Flow

/// Stops the program when the caller would block the thread of a running event loop.
///
/// The loop's own work includes, often, the work that fills the value being waited for; blocking its
/// thread would deadlock it. The check costs a thread-local read and is made only when the value is
/// not there yet.
@usableFromInline
func preconditionWaitingDoesNotBlockLoop(_ operation: StaticString) {
    guard let loop = Flow.Scheduler.executing?.eventLoop, loop.isInLoopContext, loop.isDriven else {
        return
    }
    misuseFailure(
        "Deferred.\(operation): waiting on the thread of the event loop '\(loop.name)' would deadlock that loop, "
            + "which may be the one to fill the value; use upon(_:execute:) instead")
}
