import BenchmarkSupport
import CLibUVReference
import Flow
import FlowSystem
import Foundation

/// P16: starting `/bin/true` and collecting its exit, one child after the other.
enum ProcessWorkloads {
    static let program = "/bin/true"
    static let operations = 1_000

    static func report(_ reporter: Reporter, _ measurement: IOMeasurement) {
        reporter.record("µs/spawn", measurement.nanosecondsPerOperation / 1e3)
        reporter.record("allocs/spawn", measurement.allocationsPerOperation)
    }

    static func flowSpawn(_ reporter: Reporter) {
        let measurement = reporter.measureIO(operations: operations, countingOperations: 100) { count, stopwatch in
            onNewLoop { loop in
                let remaining = LoopBox(count)
                @Sendable func spawnNext() {
                    let child = try! ChildProcess.spawn(program, on: loop)
                    child.exit.onValue { termination in
                        guard termination.isSuccess else { fatalError("\(program): \(termination)") }
                        remaining.value -= 1
                        if remaining.value == 0 { stopwatch.stop() } else { spawnNext() }
                    }
                }
                stopwatch.start()
                spawnNext()
            }
        }
        report(reporter, measurement)
    }

    static func foundationSpawn(_ reporter: Reporter) {
        let measurement = reporter.measureIO(operations: operations, countingOperations: 100) { count, stopwatch in
            let url = URL(fileURLWithPath: program)
            stopwatch.start()
            for _ in 0..<count {
                let process = Process()
                process.executableURL = url
                try! process.run()
                process.waitUntilExit()
                guard process.terminationStatus == 0 else { fatalError("\(program): \(process.terminationStatus)") }
            }
            stopwatch.stop()
        }
        report(reporter, measurement)
    }

    static func posixSpawn(_ reporter: Reporter) {
        let measurement = reporter.measureIO(operations: operations, countingOperations: 100) { count, stopwatch in
            stopwatch.start()
            let elapsed = procref_spawn_and_wait(program, Int32(count))
            stopwatch.stop()
            guard elapsed > 0 else { fatalError("posix_spawn \(program) failed") }
            stopwatch.override(elapsedNanoseconds: elapsed)
        }
        report(reporter, measurement)
    }
}
