#if canImport(Glibc)
import Glibc
#endif

/// The calling thread's signal mask.
///
/// A thread started by Dispatch blocks most signals, and a process started from such a thread
/// (Foundation's `Process` does it) inherits the mask for its main thread. libuv learns about signals
/// through a handler, so a signal the loop's thread blocks never reaches it: not a watched `SIGTERM`,
/// and not the `SIGCHLD` that reports a child's exit.
enum SignalMask {
    /// Unblocks `signal` on the calling thread (the loop's, since the callers run in its context).
    static func unblock(_ signal: Int32) {
        var mask = sigset_t()
        sigemptyset(&mask)
        sigaddset(&mask, signal)
        pthread_sigmask(SIG_UNBLOCK, &mask, nil)
    }
}
