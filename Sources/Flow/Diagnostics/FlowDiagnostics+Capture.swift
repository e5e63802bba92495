import Synchronization

extension FlowDiagnostics {
    /// Runs `body` and returns, with its result, the reports made meanwhile that belong to it, which
    /// then reach neither ``handler`` nor standard error: for a test that provokes a diagnostic on
    /// purpose, so that it can check the report and a clean test run prints none.
    ///
    /// A report belongs to `body` when it is made in `body`'s task or thread (or a child task), or,
    /// made anywhere else (a loop's thread, a Dispatch queue) while `body` runs, when `isCaptured`
    /// says so. Tests run in parallel, so `isCaptured` should pick out the test's own reports, by a
    /// loop name or an address in their ``Report/metadata`` or by the test's file in a creation site,
    /// and not take every report. Captures nest: the innermost one that claims a report gets it.
    /// Reports below ``minimumLevel`` are not made, so not captured either.
    ///
    /// ```swift
    /// let (_, reports) = FlowDiagnostics.capturingReports(where: { $0.metadata["loop"] == "test.stalls" }) {
    ///     provokeAStall(on: loop)
    /// }
    /// #expect(reports.map(\.message).contains { $0.contains("has not run its queue") })
    /// ```
    ///
    /// - Parameters:
    ///   - isCaptured: which reports made outside `body`'s task belong to it; none by default.
    ///   - body: the code whose reports are captured.
    /// - Returns: `body`'s result and the captured reports, in the order they were made.
    public static func capturingReports<Result>(
        where isCaptured: @escaping @Sendable (Report) -> Bool = { _ in false },
        _ body: () throws -> Result
    ) rethrows -> (result: Result, reports: [Report]) {
        let capture = ReportCapture(isCaptured: isCaptured)
        ReportCapture.register(capture)
        defer { ReportCapture.unregister(capture) }
        let result = try ReportCapture.$current.withValue(capture) { try body() }
        return (result, capture.reports)
    }

    /// Runs asynchronous `body` and returns, with its result, the reports made meanwhile that belong
    /// to it, as the synchronous `capturingReports(where:_:)` does.
    ///
    /// - Parameters:
    ///   - isCaptured: which reports made outside `body`'s task belong to it; none by default.
    ///   - isolation: the caller's actor, where `body` runs; the caller's by default.
    ///   - body: the code whose reports are captured.
    /// - Returns: `body`'s result and the captured reports, in the order they were made.
    public static func capturingReports<Result>(
        where isCaptured: @escaping @Sendable (Report) -> Bool = { _ in false },
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> Result
    ) async rethrows -> (result: Result, reports: [Report]) {
        let capture = ReportCapture(isCaptured: isCaptured)
        ReportCapture.register(capture)
        defer { ReportCapture.unregister(capture) }
        let result = try await ReportCapture.$current.withValue(capture) { try await body() }
        return (result, capture.reports)
    }

    /// Gives `report` to the capture it belongs to; returns whether one took it.
    static func captureIfClaimed(_ report: Report) -> Bool {
        guard ReportCapture.activeCount.load(ordering: .acquiring) > 0 else { return false }
        if let capture = ReportCapture.current {
            capture.append(report)
            return true
        }
        // Made outside every capturing task: the most recent capture whose filter claims it.
        let claimant = ReportCapture.registry.withLock { captures in
            captures.last { $0.isCaptured(report) }
        }
        guard let claimant else { return false }
        claimant.append(report)
        return true
    }
}

/// The reports collected for one call of `FlowDiagnostics.capturingReports(where:_:)`.
final class ReportCapture: Sendable {
    @TaskLocal static var current: ReportCapture?

    /// Every capture in progress, oldest first, for reports made outside their tasks.
    static let registry = Locked<[ReportCapture]>([])
    /// How many captures are in progress: a report with none pays one atomic load.
    static let activeCount = Atomic<Int>(0)

    let isCaptured: @Sendable (FlowDiagnostics.Report) -> Bool
    private let collected = Locked<[FlowDiagnostics.Report]>([])

    init(isCaptured: @escaping @Sendable (FlowDiagnostics.Report) -> Bool) {
        self.isCaptured = isCaptured
    }

    var reports: [FlowDiagnostics.Report] { collected.withLock { $0 } }

    func append(_ report: FlowDiagnostics.Report) { collected.withLock { $0.append(report) } }

    static func register(_ capture: ReportCapture) {
        registry.withLock { $0.append(capture) }
        activeCount.add(1, ordering: .releasing)
    }

    static func unregister(_ capture: ReportCapture) {
        registry.withLock { $0.removeAll { $0 === capture } }
        activeCount.subtract(1, ordering: .releasing)
    }
}

extension ReportCapture: OpaqueToReflection {}
