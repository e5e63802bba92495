/// What each of `attempts` did, in order: `succeeded` if it returned, else its error's description.
/// For tests that check a list of calls is each refused with the same error.
public func outcomes(of attempts: [() throws -> Void], succeeded: String = "done") -> [String] {
    attempts.map { attempt in
        do {
            try attempt()
            return succeeded
        } catch {
            return "\(error)"
        }
    }
}
