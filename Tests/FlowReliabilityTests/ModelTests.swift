import Flow
import FlowTesting
import PropertyBased
import Testing

/// Random programs of combinators, run on a virtual clock and checked against a reference model that
/// says, for each future, what it must end with and at which virtual second.
///
/// A program is a list of numbers; each becomes one instruction adding a future to a pool: a delayed
/// source, a repeating source, `map`, `flatMap`, `join`, `select`, `delay`, or a `cancel` of an
/// earlier future. The whole program is built at virtual time 0, then an observer is put on every
/// future and the clock runs until idle. Shrinking removes instructions, so a failure is reported as a
/// short program.
@Suite("Model: random combinator programs against a reference model")
struct ModelTests {
    @Test("every future of a random program ends as the model says, once, at the model's virtual time")
    func randomProgramsMatchTheModel() async {
        await propertyCheck(count: 300, input: Gen.uint32(in: 0...UInt32.max).array(of: 1...24)) { program in
            let mismatches = ModelTests.run(program)
            #expect(mismatches.isEmpty, "program \(program): \(mismatches.joined(separator: "; "))")
        }
    }

    /// Runs `program` and returns how it differed from the model.
    static func run(_ program: [UInt32]) -> [String] {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        var model = Model()
        var futures: [Future<Int>] = []
        scheduler.sync {
            for instruction in program {
                futures.append(model.apply(Instruction(instruction, poolSize: futures.count), to: futures, on: scheduler))
            }
        }
        let recorded = Guarded<[Int: [(outcome: Outcome, second: Int)]]>([:])
        scheduler.sync {
            for (index, future) in futures.enumerated() {
                future.onResult(on: scheduler) { result in
                    let second = Int(clock.now.components.seconds)
                    recorded.withLock { $0[index, default: []].append((Outcome(result), second)) }
                }
            }
        }
        clock.runUntilIdle()
        var mismatches: [String] = []
        let observed = recorded.current
        for (index, expected) in model.entries.enumerated() {
            let runs = observed[index] ?? []
            guard runs.count == 1, let run = runs.first else {
                mismatches.append("#\(index) (\(expected.describe)) was observed \(runs.count) times")
                continue
            }
            if !expected.allowed.contains(Timed(run.outcome, run.second)) {
                mismatches.append("#\(index) \(expected.describe): expected one of \(expected.allowed), got \(run.outcome) at \(run.second) s")
            }
        }
        return mismatches
    }
}

/// What a future ends with, as far as the model cares.
enum Outcome: Hashable, CustomStringConvertible {
    case value(Int)
    case error(Int)
    case aborted

    init(_ result: Result<Int>) {
        switch result {
        case .success(let value): self = .value(value)
        case .failure(let error as StressError): self = .error(error.code)
        case .failure(let error as FutureError) where error == .aborted: self = .aborted
        case .failure: self = .error(-1)
        }
    }

    var description: String {
        switch self {
        case .value(let value): return "value \(value)"
        case .error(let code): return "error \(code)"
        case .aborted: return "aborted"
        }
    }
}

/// An outcome and the virtual second it comes at.
struct Timed: Hashable, CustomStringConvertible {
    let outcome: Outcome
    let second: Int

    init(_ outcome: Outcome, _ second: Int) {
        self.outcome = outcome
        self.second = second
    }

    var isFailure: Bool {
        if case .value = outcome { return false } else { return true }
    }

    var description: String { "\(outcome) at \(second) s" }
}

/// One instruction, decoded from a random number.
enum Instruction {
    case source(value: Int, fails: Bool, delay: Int)
    case repeating(value: Int, failures: Int, maxRepetitions: Int, attemptDelay: Int, pause: Int)
    case map(Int, add: Int)
    case flatMap(Int, delay: Int)
    case join(Int, Int)
    case select(Int, Int)
    case delay(Int, by: Int)
    case cancel(Int)

    init(_ code: UInt32, poolSize: Int) {
        let argument = Int(code >> 4)
        let first = poolSize == 0 ? 0 : argument % poolSize
        let second = poolSize < 2 ? 0 : (first + 1 + (argument >> 8) % (poolSize - 1)) % poolSize
        switch poolSize == 0 ? code % 2 : code % 9 {
        case 0, 8:
            self = .source(value: argument % 50, fails: argument & 64 != 0, delay: (argument >> 7) % 4)
        case 1:
            self = .repeating(
                value: argument % 50, failures: (argument >> 6) % 4, maxRepetitions: (argument >> 8) % 4,
                attemptDelay: (argument >> 10) % 2, pause: (argument >> 11) % 2)
        case 2: self = .map(first, add: 1 + (argument >> 12) % 9)
        case 3: self = .flatMap(first, delay: (argument >> 12) % 3)
        case 4: self = poolSize < 2 ? .map(first, add: 1) : .join(first, second)
        case 5: self = poolSize < 2 ? .map(first, add: 2) : .select(first, second)
        case 6: self = .delay(first, by: 1 + (argument >> 12) % 3)
        default: self = .cancel(first)
        }
    }
}

/// The reference model: for each future, the outcomes it may end with, when, and what the
/// cancellation rules need (its continuations, the futures it listens to).
struct Model {
    struct Entry {
        /// What the future may end with and when: more than one only where the order of two
        /// completions at the same virtual second decides (a `select`, a `join` of two failures).
        var allowed: Set<Timed>
        /// Completed while the program was built (cancelled, or derived from a cancelled future).
        var isSettledAtBuild = false
        /// Continuations added by later instructions.
        var listenerCount = 0
        /// The pool futures this one listens to while pending.
        var upstreams: [Int] = []
        var describe: String
    }

    var entries: [Entry] = []

    mutating func apply(_ instruction: Instruction, to pool: [Future<Int>], on scheduler: Scheduler) -> Future<Int> {
        switch instruction {
        case .source(let value, let fails, let delay):
            let result: Result<Int> = fails ? .failure(StressError(code: value)) : .success(value)
            entries.append(Entry(
                allowed: [Timed(fails ? .error(value) : .value(value), delay)],
                describe: "source \(fails ? "failing" : "value") \(value) after \(delay)"))
            return Model.delayedSource(result, after: delay, on: scheduler)

        case .repeating(let value, let failures, let maxRepetitions, let attemptDelay, let pause):
            let attempts = AtomicCounter()
            let operation = Future<Int>(on: scheduler) { completion in
                let attempt = attempts.increment()
                let result: Result<Int> = attempt <= failures ? .failure(StressError(code: 100 + attempt)) : .success(value)
                scheduler.async(after: Double(attemptDelay)) { completion(result) }
                return NilDisposer()
            }
            let repeated = operation.onErrorRepeat(
                delayBetweenRepetitions: pause == 0 ? nil : Double(pause), maxRepetitions: maxRepetitions)
            let reruns = min(failures, maxRepetitions)
            let outcome: Outcome = failures <= maxRepetitions ? .value(value) : .error(100 + maxRepetitions + 1)
            entries.append(Entry(
                allowed: [Timed(outcome, (reruns + 1) * attemptDelay + reruns * pause)],
                describe: "repeat(fails \(failures), max \(maxRepetitions), each \(attemptDelay), pause \(pause))"))
            return repeated

        case .map(let index, let add):
            let upstream = entries[index]
            listen(to: index)
            entries.append(derived(from: upstream, upstreams: [index], describe: "map #\(index) + \(add)") { timed in
                if case .value(let value) = timed.outcome { return Timed(.value(value + add), timed.second) }
                return timed
            })
            return pool[index].map(on: scheduler) { $0 + add }

        case .flatMap(let index, let delay):
            let upstream = entries[index]
            listen(to: index)
            // Only a value starts the inner future, whose delay comes on top.
            entries.append(derived(from: upstream, upstreams: [index], describe: "flatMap #\(index) doubled after \(delay)") { timed in
                if case .value(let value) = timed.outcome { return Timed(.value(value * 2), timed.second + delay) }
                return timed
            })
            return pool[index].flatMap(on: scheduler) { value in
                Model.delayedSource(.success(value * 2), after: delay, on: scheduler)
            }

        case .join(let left, let right):
            guard !entries[left].isSettledAtBuild, !entries[right].isSettledAtBuild else {
                return apply(.map(left, add: 3), to: pool, on: scheduler)
            }
            listen(to: left)
            listen(to: right)
            entries.append(Model.joined(entries[left], entries[right], left, right))
            return join(pool[left], pool[right]).map(on: .none) { $0 + $1 }

        case .select(let left, let right):
            guard !entries[left].isSettledAtBuild, !entries[right].isSettledAtBuild else {
                return apply(.map(left, add: 4), to: pool, on: scheduler)
            }
            listen(to: left)
            listen(to: right)
            // The first to complete wins; at the same second, either may.
            var allowed: Set<Timed> = []
            for a in entries[left].allowed {
                for b in entries[right].allowed {
                    if a.second <= b.second { allowed.insert(a) }
                    if b.second <= a.second { allowed.insert(b) }
                }
            }
            entries.append(Entry(allowed: allowed, upstreams: [left, right], describe: "select #\(left) #\(right)"))
            return select(between: [pool[left], pool[right]])

        case .delay(let index, let seconds):
            let upstream = entries[index]
            if upstream.isSettledAtBuild {
                // Its result is known already: only the delay's own timer is pending.
                entries.append(Entry(
                    allowed: Set(upstream.allowed.map { Timed($0.outcome, seconds) }),
                    describe: "delay settled #\(index) by \(seconds)"))
            } else {
                listen(to: index)
                entries.append(Entry(
                    allowed: Set(upstream.allowed.map { Timed($0.outcome, $0.second + seconds) }), upstreams: [index],
                    describe: "delay #\(index) by \(seconds)"))
            }
            return pool[index].delay(by: Double(seconds))

        case .cancel(let index):
            cancel(index)
            // A cancel of a future with continuations is ignored (and reported in debug builds: the
            // report is captured, the model expects the cancel to do nothing then).
            _ = FlowDiagnostics.capturingReports { pool[index].cancel() }
            // The pool gets the cancelled future again (a map of it) so that the program keeps its shape.
            return apply(.map(index, add: 0), to: pool, on: scheduler)
        }
    }

    private mutating func listen(to index: Int) {
        if !entries[index].isSettledAtBuild { entries[index].listenerCount += 1 }
    }

    /// `cancel()`: ignored once a future completed or has continuations; otherwise it is aborted now, and
    /// each future it listened to that is left without continuations is cancelled in turn.
    private mutating func cancel(_ index: Int) {
        guard !entries[index].isSettledAtBuild, entries[index].listenerCount == 0 else { return }
        entries[index].allowed = [Timed(.aborted, 0)]
        entries[index].isSettledAtBuild = true
        for upstream in entries[index].upstreams where !entries[upstream].isSettledAtBuild {
            entries[upstream].listenerCount -= 1
            if entries[upstream].listenerCount == 0 { cancel(upstream) }
        }
    }

    private func derived(
        from upstream: Entry, upstreams: [Int], describe: String, _ transform: (Timed) -> Timed
    ) -> Entry {
        Entry(
            allowed: Set(upstream.allowed.map(transform)),
            isSettledAtBuild: upstream.isSettledAtBuild, upstreams: upstream.isSettledAtBuild ? [] : upstreams,
            describe: describe)
    }

    /// `join(a, b).map(+)`: the sum once both have values, or a failure as soon as the first comes.
    private static func joined(_ a: Entry, _ b: Entry, _ left: Int, _ right: Int) -> Entry {
        var allowed: Set<Timed> = []
        for x in a.allowed {
            for y in b.allowed {
                switch (x.isFailure, y.isFailure) {
                case (false, false):
                    if case .value(let first) = x.outcome, case .value(let second) = y.outcome {
                        allowed.insert(Timed(.value(first + second), max(x.second, y.second)))
                    }
                case (true, false): allowed.insert(x)
                case (false, true): allowed.insert(y)
                case (true, true):
                    if x.second <= y.second { allowed.insert(x) }
                    if y.second <= x.second { allowed.insert(y) }
                }
            }
        }
        return Entry(allowed: allowed, upstreams: [left, right], describe: "join #\(left) #\(right)")
    }

    /// A future that completes with `result` `delay` virtual seconds after it starts.
    static func delayedSource(_ result: Result<Int>, after delay: Int, on scheduler: Scheduler) -> Future<Int> {
        Future(on: scheduler) { completion in
            scheduler.async(after: Double(delay)) { completion(result) }
        }
    }
}
