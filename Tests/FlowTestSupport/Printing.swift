import Testing

/// Values as a failed `#expect` shows them: Swift Testing reflects each operand of a failed comparison,
/// and its children in turn, down to each value here and what it holds.
private struct Operands: Equatable, @unchecked Sendable {
    // @unchecked Sendable: compared and reflected only on the calling thread.
    let values: [Any]
    /// Never equal, so that the expectation fails and its operands are printed.
    static func == (lhs: Operands, rhs: Operands) -> Bool { false }
}

/// Prints each value each way a test run or a developer prints one, and expects each printing to
/// contain the text given with it: `dump` (which reflects the value and its children),
/// `String(reflecting:)`, and a failing `#expect` with all the values as its operand (recorded as one
/// known issue, so the calling test still passes).
///
/// Reflection stops the process in `__swift_cannot_copy_noncopyable_type` when it reaches a stored
/// property of a non-copyable generic type (a lock's state, say) in a class without a mirror of its
/// own: a test calling this crashes if a value, or something it holds, lacks one.
///
/// ```swift
/// expectPrintedEveryWay([(loop, "EventLoop(api"), (loop.scheduler, "Scheduler(api)")])
/// ```
public func expectPrintedEveryWay(_ cases: [(value: Any, shows: String)], sourceLocation: SourceLocation = #_sourceLocation) {
    for (value, shown) in cases {
        var dumped = ""
        dump(value, to: &dumped)
        #expect(dumped.contains(shown), "dump: \(dumped)", sourceLocation: sourceLocation)
        let reflecting = String(reflecting: value)
        #expect(reflecting.contains(shown), "String(reflecting:): \(reflecting)", sourceLocation: sourceLocation)
    }
    let operands = Operands(values: cases.map(\.value))
    let recorded = Shared("")
    withKnownIssue("a deliberately failed expectation, to print the values", sourceLocation: sourceLocation) {
        #expect(operands == Operands(values: []), sourceLocation: sourceLocation)
    } matching: { issue in
        recorded.set(String(describing: issue))
        return true
    }
    for (_, shown) in cases {
        #expect(recorded.value.contains(shown), "a failed #expect showed: \(recorded.value)", sourceLocation: sourceLocation)
    }
}
