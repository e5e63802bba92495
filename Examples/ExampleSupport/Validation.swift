import ArgumentParser

/// Checks a `--port` value: a usage error (exit status 64) naming the option unless it is from 0
/// (any free port) to 65535.
///
/// ```swift
/// func validate() throws { try validatePort(port) }
/// ```
public func validatePort(_ port: Int) throws {
    guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535, not \(port).") }
}
