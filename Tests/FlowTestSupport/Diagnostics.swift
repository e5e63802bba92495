import Flow
import Testing

// Tests that provoke a diagnostic on purpose (a dropped completion callback, a blocked loop, a failed
// accept) capture it with `FlowDiagnostics.capturingReports(where:_:)`, or with `expectDiagnostics`
// below, which also checks it: a clean test run then prints no `flow warning:` line, and a new stray
// one stands out.
//
// Reports made in the test's own task (or on its thread, `Scheduler.sync` included) are captured
// without more ado. Reports made on a loop's thread or a Dispatch queue are captured only when the
// `where` filter claims them: pick the test's own (its loop's name in `metadata["loop"]`, its
// listener's address, ...), never all of them, since other tests run at the same time.

/// Runs `body`, captures the ``FlowDiagnostics`` reports it provokes (see
/// `FlowDiagnostics.capturingReports(where:_:)`), and expects `count` of them, each containing `text`.
///
/// ```swift
/// expectDiagnostics(containing: "released its completion callback") {
///     operation.abandon()
/// }
/// ```
///
/// - Parameters:
///   - count: how many reports `body` provokes.
///   - text: what each report's line (`flow warning: ...`) contains.
///   - isCaptured: which reports made outside the test's task are its own.
/// - Returns: `body`'s result.
@discardableResult
public func expectDiagnostics<Result>(
    _ count: Int = 1, containing text: String,
    where isCaptured: @escaping @Sendable (FlowDiagnostics.Report) -> Bool = { _ in false },
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Result
) rethrows -> Result {
    let (result, reports) = try FlowDiagnostics.capturingReports(where: isCaptured, body)
    let lines = reports.map(\.description)
    #expect(lines.count == count, "reports: \(lines)", sourceLocation: sourceLocation)
    #expect(lines.allSatisfy { $0.contains(text) }, "reports: \(lines)", sourceLocation: sourceLocation)
    return result
}

/// The asynchronous `expectDiagnostics(_:containing:where:_:)`.
@discardableResult
public func expectDiagnostics<Result>(
    _ count: Int = 1, containing text: String,
    where isCaptured: @escaping @Sendable (FlowDiagnostics.Report) -> Bool = { _ in false },
    sourceLocation: SourceLocation = #_sourceLocation,
    isolation: isolated (any Actor)? = #isolation,
    _ body: () async throws -> Result
) async rethrows -> Result {
    let (result, reports) = try await FlowDiagnostics.capturingReports(where: isCaptured, isolation: isolation, body)
    let lines = reports.map(\.description)
    #expect(lines.count == count, "reports: \(lines)", sourceLocation: sourceLocation)
    #expect(lines.allSatisfy { $0.contains(text) }, "reports: \(lines)", sourceLocation: sourceLocation)
    return result
}

/// `expectDiagnostics` for a report that only debug builds make (a future's operation that released
/// its completion callback uncalled): in release builds, expects none.
@discardableResult
public func expectDebugDiagnostic<Result>(
    _ count: Int = 1, containing text: String,
    where isCaptured: @escaping @Sendable (FlowDiagnostics.Report) -> Bool = { _ in false },
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Result
) rethrows -> Result {
    #if DEBUG
    try expectDiagnostics(count, containing: text, where: isCaptured, sourceLocation: sourceLocation, body)
    #else
    try expectDiagnostics(0, containing: text, where: isCaptured, sourceLocation: sourceLocation, body)
    #endif
}
