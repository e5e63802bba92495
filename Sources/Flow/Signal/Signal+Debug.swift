#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SignalProvider {
    /// The same signal, printing each event, and the listener's disposal, as it passes: a line per
    /// event, `HH:mm:ss.SSS: <File.swift:line> (function): message -> event`, in local time.
    ///
    /// ```swift
    /// bag += counter.debug("counter").onValue { _ in }
    /// // 09:41:07.123: <Model.swift:12> (start()): counter -> initial(0)
    /// // 09:41:07.130: <Model.swift:12> (start()): counter -> event(value(1))
    /// ```
    ///
    /// - Parameters:
    ///   - scheduler: where the events are printed and passed on.
    ///   - message: printed before each event, if given.
    ///   - print: receives each line; standard output by default.
    ///   - file: the file named in each line; the caller's by default.
    ///   - line: the line named in each line; the caller's by default.
    ///   - function: the function named in each line; the caller's by default.
    /// - Returns: the same events, printed as they pass.
    @preconcurrency
    public func debug(
        on scheduler: Scheduler = .current,
        _ message: String? = nil,
        printer print: @escaping @Sendable (String) -> Void = { Swift.print($0) },
        file: String = #file,
        line: UInt = #line,
        function: String = #function
    ) -> CoreSignal<Kind, Value> {
        let signal = providedSignal
        let prefix = message.map { $0 + " -> " } ?? ""
        let site = "<\(file.split(separator: "/").last.map(String.init) ?? file):\(line)> (\(function))"
        let printEvent = { @Sendable (description: String) in
            print("\(debugTimestamp()): \(site): \(prefix)\(description)")
        }
        return CoreSignal(setValue: signal.setter, register: { callback in
            let listener = signal.observe(on: scheduler) { eventType in
                switch eventType {
                case .initial(nil): printEvent("initial")
                case .initial(let value?): printEvent("initial(\(String(describing: value)))")
                case .event(.value(let value)): printEvent("event(value(\(String(describing: value))))")
                case .event(.end(let error)): printEvent("event(end(\(String(describing: error))))")
                }
                callback(eventType)
            }
            return Disposer {
                listener.dispose()
                printEvent("disposed")
            }
        })
    }
}

/// The local time of day as `HH:mm:ss.SSS`.
func debugTimestamp() -> String {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    var seconds = now.tv_sec
    var parts = tm()
    localtime_r(&seconds, &parts)
    func padded(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
    return "\(padded(Int(parts.tm_hour), 2)):\(padded(Int(parts.tm_min), 2)):\(padded(Int(parts.tm_sec), 2))."
        + padded(Int(now.tv_nsec) / 1_000_000, 3)
}
