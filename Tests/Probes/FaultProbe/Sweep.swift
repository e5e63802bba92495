import CFaultInjection
import CLibUV
import Dispatch
import Flow
import Glibc
import Synchronization

/// How a run ended, as its scenario saw it.
enum Outcome {
    /// Every byte arrived, and was checked.
    case completed
    /// A caller was told of an error (the first one here).
    case failed(String)
    /// A promise broke: a wrong byte, a failure nobody was told of.
    case violated(String)
}

/// What a scenario run shares with the sweep: its end, the errors its callers were told of, the bytes
/// checked, and the handles still to close.
final class RunState: @unchecked Sendable {
    // @unchecked Sendable: the `var`s are behind `lock`; `closing` is a DispatchGroup (thread-safe).
    private let lock = Mutex<Void>(())
    private nonisolated(unsafe) var outcome: Outcome?
    private nonisolated(unsafe) var errors: [String] = []
    private nonisolated(unsafe) var checked = 0
    private nonisolated(unsafe) var acceptedConnections = 0
    private let ended = DispatchSemaphore(value: 0)
    /// Entered for each handle the run opens, left when it has closed.
    let closing = DispatchGroup()
    let seed: UInt64

    init(seed: UInt64) { self.seed = seed }

    /// Ends the run with `outcome`, the first time only; returns whether this call ended it.
    @discardableResult
    func finish(_ outcome: Outcome) -> Bool {
        let isFirst = lock.withLock { _ -> Bool in
            guard self.outcome == nil else { return false }
            self.outcome = outcome
            return true
        }
        if isFirst { ended.signal() }
        return isFirst
    }

    /// Notes an error a caller was told of (on either side of a connection).
    func heard(_ error: Any) {
        lock.withLock { _ in errors.append("\(error)") }
    }

    func countChecked(_ count: Int) { lock.withLock { _ in checked += count } }

    /// Counts a connection the server accepted.
    func accepted() { lock.withLock { _ in acceptedConnections += 1 } }

    var heardErrors: [String] { lock.withLock { _ in errors } }
    var bytesChecked: Int { lock.withLock { _ in checked } }
    var isFinished: Bool { lock.withLock { _ in outcome != nil } }

    func waitForEnd(seconds: Int) -> Outcome? {
        guard ended.wait(timeout: .now() + .seconds(seconds)) == .success else { return nil }
        return lock.withLock { _ in outcome }
    }

    /// Ends the run as failed if an error was heard, else as a violation: the stream ended early and
    /// nobody was told why.
    ///
    /// Except for a connection the server never accepted: libuv answers `EMFILE` on `accept4` by closing
    /// the connections waiting (with its spare descriptor), without telling the listener; the client
    /// reads the end of the stream, which the client's protocol then reports.
    func failOrViolate(_ what: String) {
        if let first = heardErrors.first {
            finish(.failed("\(what) (\(first))"))
        } else if lock.withLock({ _ in acceptedConnections }) == 0 {
            finish(.failed("\(what): the server never accepted the connection (libuv closed it)"))
        } else {
            finish(.violated("\(what), and no caller was told of an error"))
        }
    }
}

/// Runs a scenario under a kind of fault for a range of seeds.
struct Sweep {
    let scenario: Scenario
    let fault: FaultKind
    /// A run that takes longer has hung.
    let runSeconds = 15

    func run(seeds: Range<UInt64>) -> Int32 {
        let loop = EventLoop.startOnNewThread(name: "faults.\(scenario.rawValue)")
        // libuv aborts when it cannot grow its table of watched descriptors (uv__io_start), by design:
        // grown here, before any fault, so that the allocations the sweep fails are those whose failure
        // libuv reports.
        loop.scheduler.sync { growWatcherTable(loop, toCover: 512) }
        // A clean run first: it counts the calls a run makes (the window of the nth-call faults).
        var clean = fault.plan(seed: 0, window: 0)
        clean.per_mille = 0
        clean.nth = 0
        let (cleanLine, cleanViolated) = runOnce(seed: 0, plan: clean, loop: loop, label: "clean")
        print(cleanLine)
        fflush(nil)
        let window = flow_fault_eligible()
        var status: Int32 = cleanViolated ? 1 : 0
        for seed in seeds {
            let (line, violated) = runOnce(seed: seed, plan: fault.plan(seed: seed, window: window), loop: loop, label: "run")
            print(line)
            fflush(nil)
            if violated { status = 1 }
        }
        loop.shutdown()
        return status
    }

    private func runOnce(seed: UInt64, plan: flow_fault_plan, loop: EventLoop, label: String) -> (String, Bool) {
        // A last bound, should the sweep's own waits on the loop hang: SIGALRM ends the program.
        alarm(UInt32(runSeconds * 4))
        defer { alarm(0) }
        let descriptorsBefore = openDescriptors()
        let handlesBefore = loop.scheduler.sync { handleCount(loop) }
        let state = RunState(seed: seed)
        let futures = LiveFutureCount()
        flow_fault_arm(plan)
        loop.execute { [scenario] in futures.track { scenario.start(on: loop, state: state) } }
        guard let outcome = state.waitForEnd(seconds: runSeconds) else {
            hang("the run did not end", seed: seed)
        }
        guard state.closing.wait(timeout: .now() + .seconds(runSeconds)) == .success else {
            hang("its handles did not close", seed: seed)
        }
        flow_fault_disarm()
        let injected = flow_fault_injected()
        let eligible = flow_fault_eligible()
        var violations: [String] = []
        switch outcome {
        case .violated(let what): violations.append(what)
        case .failed(let what) where injected == 0: violations.append("failed with no fault injected: \(what)")
        default: break
        }
        // Closed handles are freed on the loop's next turn, futures let go of where they completed.
        let handlesAfter = loop.scheduler.sync { handleCount(loop) }
        if handlesAfter != handlesBefore { violations.append("libuv handles \(handlesBefore) -> \(handlesAfter)") }
        let descriptorsAfter = openDescriptors()
        // The clean run opens what libuv and the runtime keep once opened (libuv's spare descriptor
        // for EMFILE): only the runs after it are held to their baseline.
        if descriptorsAfter != descriptorsBefore && label != "clean" {
            violations.append("descriptors \(descriptorChanges(from: descriptorsBefore, to: descriptorsAfter))")
        }
        if !waitUntilNoneAlive(futures) { violations.append("\(futures.value) futures alive") }
        let ending = switch outcome {
        case .completed: "outcome=completed"
        case .failed(let what): "outcome=failed error=\"\(String(what.map { $0 == "\"" ? "'" : $0 }))\""
        case .violated: "outcome=violated"
        }
        let broken = violations.isEmpty ? "none" : violations.joined(separator: "; ")
        let line = "\(label.uppercased()) scenario=\(scenario.rawValue) fault=\(fault.rawValue) seed=\(seed) "
            + "injected=\(injected) eligible=\(eligible) bytes=\(state.bytesChecked) \(ending) violations=\(broken)"
        return (line, !violations.isEmpty)
    }

    private func hang(_ what: String, seed: UInt64) -> Never {
        flow_fault_disarm()
        print("HANG scenario=\(scenario.rawValue) fault=\(fault.rawValue) seed=\(seed) injected=\(flow_fault_injected()): \(what)")
        fflush(nil)
        exit(3)
    }
}

/// Watches a descriptor numbered `count` for a moment, which grows libuv's watcher table to cover
/// every descriptor below it. Loop context only.
func growWatcherTable(_ loop: EventLoop, toCover count: Int32) {
    var descriptors: [Int32] = [0, 0]
    guard pipe(&descriptors) == 0, dup2(descriptors[0], count) == count else { return }
    let poll = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
    if uv_poll_init(loop.unsafeLoopPointer, poll, count) == 0 {
        _ = uv_poll_start(poll, Int32(UV_READABLE.rawValue), { _, _, _ in })
        uv_poll_stop(poll)
        poll.withMemoryRebound(to: uv_handle_t.self, capacity: 1) { handle in
            uv_close(handle) { handle in handle?.deallocate() }
        }
    } else {
        poll.deallocate()
    }
    close(count)
    close(descriptors[0])
    close(descriptors[1])
}

/// How many libuv handles `loop` holds. Loop context only.
func handleCount(_ loop: EventLoop) -> Int {
    var count = 0
    withUnsafeMutablePointer(to: &count) { counter in
        uv_walk(loop.unsafeLoopPointer, { _, argument in
            argument!.assumingMemoryBound(to: Int.self).pointee += 1
        }, counter)
    }
    return count
}

/// The descriptors this process has open, and what each is (`socket:[N]`, a path).
func openDescriptors() -> [String: String] {
    guard let directory = opendir("/proc/self/fd") else { return [:] }
    defer { closedir(directory) }
    var descriptors: [String: String] = [:]
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard name != "." && name != ".." else { continue }
        let target = String(decoding: readLink("/proc/self/fd/\(name)"), as: UTF8.self)
        // Not the run's: this directory's own descriptor (and the runtime's reads of /proc), the C
        // library's brief reads of /sys (counting the processors online, for Dispatch or libuv's
        // pool: once caught open by the snapshot before a run and gone after it), and libdispatch's
        // timer, which it opens and closes on its own schedule (the sweep's waits use Dispatch and
        // Swift's tasks). Nor one closed while the directory was read (its link then reads as nothing).
        if target.isEmpty || target.hasPrefix("/proc/") || target.hasPrefix("/sys/") || target == "anon_inode:[timerfd]" {
            continue
        }
        // libuv's spare descriptor for EMFILE is /dev/null, reopened as / after it was used.
        descriptors[name] = target == "/" ? "/dev/null" : target
    }
    return descriptors
}

/// What changed between two ``openDescriptors()``: `+fd=target` opened, `-fd=target` closed.
func descriptorChanges(from before: [String: String], to after: [String: String]) -> [String] {
    var changes: [String] = []
    for (descriptor, target) in after where before[descriptor] != target { changes.append("+\(descriptor)=\(target)") }
    for (descriptor, target) in before where after[descriptor] != target { changes.append("-\(descriptor)=\(target)") }
    return changes.sorted()
}

/// Waits (up to 10 s) until the futures `count` tracks have all been let go of.
func waitUntilNoneAlive(_ count: LiveFutureCount) -> Bool {
    let result = Mutex(false)
    let done = DispatchSemaphore(value: 0)
    Task {
        let noneAlive = await count.waitUntilNoneAlive(timeout: .seconds(10))
        result.withLock { $0 = noneAlive }
        done.signal()
    }
    done.wait()
    return result.withLock { $0 }
}
