extension Sequence where Element: Sendable {
    /// Runs `transform` on each element, one after another (the next only once the previous future
    /// completed), and collects the values in order. Fails with the first error, and then stops: later
    /// elements are not transformed.
    ///
    /// ```swift
    /// let uploads: Future<[Receipt]> = photos.mapToFuture { photo in upload(photo) }
    /// ```
    ///
    /// - Parameters:
    ///   - scheduler: where `transform` is called; by default the scheduler current here.
    ///   - file: where the returned future was created, for descriptions and abandonment errors (debug
    ///     builds); the caller's by default.
    ///   - line: the line of `file`.
    ///   - transform: starts the operation for one element. An error it throws counts as that
    ///     element's failure.
    /// - Returns: a future of the values in the sequence's order. Cancelling it cancels the future of
    ///   the element in progress (unless others observe it) and transforms nothing more.
    @preconcurrency
    @discardableResult
    public func mapToFuture<Output>(
        on scheduler: Scheduler = .current, file: StaticString = #fileID, line: UInt = #line,
        transform: @escaping @Sendable (Element) throws -> Future<Output>
    ) -> Future<[Output]> {
        SequentialFutureMapper.start(
            Array(self), on: scheduler, stopsAtFirstError: true, file: file, line: line, transform: transform
        )
        .map(on: .none, file: file, line: line) { results in try results.map { try $0.get() } }
    }

    /// Runs `transform` on each element, one after another, and collects every element's result in
    /// order. Never fails: an element's error is its result, and the next element still runs.
    ///
    /// ```swift
    /// servers.mapToFutureResults { server in ping(server) }.onValue { results in
    ///     let reachable = results.filter { $0.value != nil }.count
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - scheduler: where `transform` is called; by default the scheduler current here.
    ///   - file: where the returned future was created, for descriptions and abandonment errors (debug
    ///     builds); the caller's by default.
    ///   - line: the line of `file`.
    ///   - transform: starts the operation for one element. An error it throws is that element's result.
    /// - Returns: a future of one result per element, in the sequence's order.
    @preconcurrency
    @discardableResult
    public func mapToFutureResults<Output>(
        on scheduler: Scheduler = .current, file: StaticString = #fileID, line: UInt = #line,
        transform: @escaping @Sendable (Element) throws -> Future<Output>
    ) -> Future<[Result<Output>]> {
        SequentialFutureMapper.start(
            Array(self), on: scheduler, stopsAtFirstError: false, file: file, line: line, transform: transform)
    }
}

/// Drives ``Swift/Sequence/mapToFutureResults(on:file:line:transform:)``: transforms one element,
/// waits for its future, records the result, moves to the next.
///
/// Held by whatever will call it back (the scheduled first step, then the continuation on the
/// element's future); the future it completes refers to it weakly, through its cancellation.
final class SequentialFutureMapper<Element: Sendable, Output: Sendable>: Sendable {
    private struct State {
        var results: [Result<Output>] = []
        var isCancelled = false
        /// The continuation on the current element's future. Weak: that future owns it.
        weak var current: Future<Output>?
    }

    /// What to do after recording an element's result.
    private enum Next {
        case transformNext
        case complete([Result<Output>])
        case stop
    }

    private let elements: [Element]
    private let scheduler: Scheduler
    private let stopsAtFirstError: Bool
    private let transform: @Sendable (Element) throws -> Future<Output>
    private let promise: Future<[Result<Output>]>
    private let state = Locked(State())

    private init(
        elements: [Element], scheduler: Scheduler, stopsAtFirstError: Bool,
        transform: @escaping @Sendable (Element) throws -> Future<Output>, promise: Future<[Result<Output>]>
    ) {
        self.elements = elements
        self.scheduler = scheduler
        self.stopsAtFirstError = stopsAtFirstError
        self.transform = transform
        self.promise = promise
    }

    private func withState<R>(_ body: (inout State) -> R) -> R {
        state.withLock(body)
    }

    static func start(
        _ elements: [Element], on scheduler: Scheduler, stopsAtFirstError: Bool, file: StaticString, line: UInt,
        transform: @escaping @Sendable (Element) throws -> Future<Output>
    ) -> Future<[Result<Output>]> {
        let promise = Future<[Result<Output>]>(initialResult: nil, file: file, line: line)
        let mapper = SequentialFutureMapper(
            elements: elements, scheduler: scheduler, stopsAtFirstError: stopsAtFirstError, transform: transform,
            promise: promise)
        promise.setDisposable(Disposer { [weak mapper] in mapper?.cancel() })
        scheduler.async { mapper.transformNext() }
        return promise
    }

    /// Transforms the next element and waits for its future. Loops rather than recursing when
    /// `transform` throws, so a long run of synchronous failures uses no stack.
    private func transformNext() {
        while true {
            let index = withState { $0.isCancelled ? nil : $0.results.count }
            guard let index else { return }
            guard index < elements.count else {
                perform(.complete(withState { $0.results }))
                return
            }
            let future: Future<Output>
            do {
                future = try transform(elements[index])
            } catch {
                let next = record(.failure(error))
                if case .transformNext = next { continue }
                perform(next)
                return
            }
            // A synchronously completed future calls back at once; the library's immediate-execution
            // budget turns a long run of those into a loop instead of a deep stack.
            let continuation = future.onResult(on: scheduler) { [self] result in perform(record(result)) }
            let wasCancelled = withState { state -> Bool in
                if state.isCancelled { return true }
                if state.results.count == index { state.current = continuation }
                return false
            }
            if wasCancelled { continuation.cancelQuietly() }
            return
        }
    }

    private func record(_ result: Result<Output>) -> Next {
        withState { state -> Next in
            guard !state.isCancelled else { return .stop }
            state.current = nil
            state.results.append(result)
            if stopsAtFirstError, case .failure = result { return .complete(state.results) }
            return state.results.count == elements.count ? .complete(state.results) : .transformNext
        }
    }

    private func perform(_ next: Next) {
        switch next {
        case .transformNext: transformNext()
        case .complete(let results): promise.complete(with: .success(results))
        case .stop: break
        }
    }

    private func cancel() {
        let current = withState { state -> Future<Output>? in
            state.isCancelled = true
            let current = state.current
            state.current = nil
            return current
        }
        current?.cancelQuietly()
    }
}
