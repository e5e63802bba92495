// Supervisor: runs a command, and runs it again when it fails, waiting longer each time (exponential
// backoff), until it succeeds or the attempts run out. SIGTERM and Ctrl-C are passed on to the
// command, and the supervisor stops once it has ended.
//
//     swift run Supervisor --max-attempts 5 --initial-delay 0.1 -- /bin/sh -c 'exit 1'
//
// Exit status: 0 when the command succeeded or was stopped by a signal passed on, 1 when the attempts
// ran out, 2 for a command that cannot be started, 64 for a command line it does not understand
// (`--help` lists the options).

import Flow
import FlowSystem
import FlowTimers

#if canImport(Glibc)
import Glibc
#endif

let started = EventLoop.uptimeNanoseconds

/// Prints a line stamped with the time since the supervisor started.
func log(_ message: String) {
    let milliseconds = String((EventLoop.uptimeNanoseconds - started) / 1_000_000)
    print("[+\(String(repeating: " ", count: max(0, 5 - milliseconds.count)))\(milliseconds) ms] \(message)")
    fflush(nil)
}

let options = SupervisorOptions.parseOrExit()
let command = options.command
let executable = command[0]
let maxAttempts = options.maxAttempts
let backoff = Backoff.exponential(initial: options.initialDelay, maximum: options.maximumDelay)

/// What the supervisor is doing, on the main loop.
enum Phase {
    case running(ChildProcess)
    case waiting(Disposable)
    case stopping
}

let attempt = LoopBoundBox(0, loop: .main)
let phase = LoopBoundBox<Phase?>(nil, loop: .main)

/// Starts the next attempt and watches how it ends.
@Sendable func startAttempt() {
    attempt.value += 1
    let number = attempt.value
    log("attempt \(number) of \(maxAttempts): starting \(command.joined(separator: " "))")
    let child: ChildProcess
    do {
        child = try ChildProcess.spawn(executable, arguments: Array(command.dropFirst()), on: .main)
    } catch {
        log("attempt \(number): cannot start \(executable): \(error)")
        exit(2)
    }
    phase.value = .running(child)
    child.exit.onValue(on: .main) { termination in
        if case .stopping = phase.value {
            log("stopped: the command ended (\(termination))")
            exit(0)
        }
        log("attempt \(number): \(termination)")
        if termination.isSuccess {
            log("done: the command succeeded on attempt \(number)")
            exit(0)
        }
        guard number < maxAttempts else {
            log("giving up after \(number) attempts")
            exit(1)
        }
        let delay = backoff.delay(forAttempt: number)
        log("waiting \(Int((delay * 1000).rounded())) ms before attempt \(number + 1)")
        phase.value = .waiting(EventLoop.main.execute(after: delay) { startAttempt() })
    }
}

// SIGTERM and SIGINT go to the command; between attempts they stop the supervisor at once.
let signals = try SignalWatcher.watch([.terminate, .interrupt], keepsLoopAlive: false, on: .main) { signal in
    switch phase.value {
    case .running(let child):
        log("received \(signal): passing it on to the command (pid \(child.processIdentifier))")
        phase.value = .stopping
        child.kill(signal)
    case .waiting(let timer):
        timer.dispose()
        log("received \(signal) between attempts: stopped")
        exit(0)
    case .stopping, nil:
        break
    }
}

log("supervising \(command.joined(separator: " ")): up to \(maxAttempts) attempts, backoff from \(options.initialDelay) s")
startAttempt()
try EventLoop.main.run()
