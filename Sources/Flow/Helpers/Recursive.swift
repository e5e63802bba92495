/// Makes a local recursive function that does not keep what it captures alive for good: once the
/// returned function is released, the recursive calls get nil instead of recursing, and the captures
/// are released.
///
/// ```swift
/// let factorial: (Int) -> Int = recursive { n, factorial in
///     n > 1 ? n * (factorial(n - 1) ?? 0) : 1
/// }
/// factorial(5)   // 120
/// ```
///
/// - Parameter body: the function, given its argument and a way to call itself (nil once the
///   returned function is gone).
/// - Returns: the function, to call and to hold for as long as it may recurse.
public func recursive<Argument, Output>(
    _ body: @escaping (Argument, @escaping (Argument) -> Output?) -> Output
) -> (Argument) -> Output {
    let holder = RecursiveFunction(body)
    return { argument in holder.call(argument) }
}

/// `recursive(_:)` for a function without an argument.
///
/// ```swift
/// let poll: () -> Void = recursive { poll in
///     fetchStatus().onValue { status in if !status.isDone { _ = poll() } }
/// }
/// ```
public func recursive<Output>(_ body: @escaping (@escaping () -> Output?) -> Output) -> () -> Output {
    let holder = RecursiveFunction<Void, Output> { _, recurse in body { recurse(()) } }
    return { holder.call(()) }
}

/// The recursive function's storage: the closure refers to it weakly, the returned function strongly.
private final class RecursiveFunction<Argument, Output> {
    private let body: (Argument, @escaping (Argument) -> Output?) -> Output

    init(_ body: @escaping (Argument, @escaping (Argument) -> Output?) -> Output) {
        self.body = body
    }

    func call(_ argument: Argument) -> Output {
        body(argument) { [weak self] argument in self?.call(argument) }
    }
}
