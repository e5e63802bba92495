/// Stops the program with `message`: the library was used wrongly (see Docs/MisuseMatrix.md).
///
/// `precondition` and `preconditionFailure` print their message only in debug builds; a release build
/// stops with a bare "precondition failure". Misuse is reported through here instead, so that the
/// message names what was wrong in every build configuration. Kept out of line: it is the cold path.
@usableFromInline
@inline(never)
package func misuseFailure(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError(message, file: file, line: line)
}

/// Stops the program with `message` unless `condition` holds; a `precondition` whose message survives
/// release builds (see ``misuseFailure(_:file:line:)``).
@inlinable
@inline(__always)
package func misusePrecondition(
    _ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line
) {
    if _slowPath(!condition) { misuseFailure(message(), file: file, line: line) }
}
