extension Future {
    /// ``cancel(file:line:)`` called through a function reference (`Disposer(future.cancel)`), where no
    /// call site is known: the same cancellation, reported without a site when ignored.
    @_disfavoredOverload
    public final func cancel() {
        guard cancelIfUnobserved() else { return reportIgnoredCancel(file: nil, line: 0) }
        Future.cancelUpstream(of: self)
    }

    /// The library's own cancellation of a future it made or observes (the losers of a `select`, a
    /// queue's aborted entries, a repetition's superseded attempt): ignored silently when others
    /// observe the future, since that is the rule those uses rely on.
    @usableFromInline
    package final func cancelQuietly() {
        guard cancelIfUnobserved() else { return }
        Future.cancelUpstream(of: self)
    }

    /// Reports, in debug builds, a user's ``cancel(file:line:)`` that did nothing because the future
    /// has continuations: the cancel a program meant to stop work with, silently without effect.
    func reportIgnoredCancel(file: StaticString?, line: UInt) {
        #if DEBUG
            let isIgnoredForContinuations = withLock { !lockedIsCompleted && lockedHasListeners }
            guard isIgnoredForContinuations else { return }
            IgnoredCancelReport.report(site: file.map { "\($0):\(line)" })
        #endif
    }
}

#if DEBUG
    /// The debug-build report of a ``Future/cancel(file:line:)`` ignored because the future has
    /// continuations, through ``FlowDiagnostics`` (standard error unless the program set a handler).
    enum IgnoredCancelReport {
        static func report(site: String?) {
            let caller = site.map { "cancel() at \($0)" } ?? "cancel() (called through a function reference)"
            FlowDiagnostics.report(
                .warning,
                "\(caller) was ignored: the future has continuations (onValue, map, flatMap, ...) that rely on "
                    + "its result; cancel the future at the end of the chain (the one the last onValue/onResult "
                    + "returned), or dispose the bag holding it",
                metadata: site.map { ["callSite": $0] } ?? [:])
        }
    }
#endif
