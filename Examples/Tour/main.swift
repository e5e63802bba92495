// A walk through Flow: run with `swift run Tour`.
import Dispatch
import Flow

func step(_ title: String) { print("\n== \(title)") }

step("The main event loop")
print("Scheduler.current on the main thread is .main: \(Scheduler.current == .main)")
Scheduler.main.async { print("work given to Scheduler.main runs at once when already on it") }

step("Work from other threads")
let background = Scheduler(label: "tour.background")
background.async {
    print("on a Dispatch queue scheduler: \(background.isExecuting)")
    Scheduler.main.async { print("back on the main loop, sent from the queue: \(Scheduler.main.isExecuting)") }
}

step("Delays run on the loop's own timer")
for milliseconds in [30, 10, 20] {
    Scheduler.main.async(after: Double(milliseconds) / 1000) { print("fired after \(milliseconds) ms") }
}
let cancelled = Scheduler.main.async(after: 0.005) { print("never printed: this delay was cancelled") }
cancelled.dispose()

step("The loop also runs DispatchQueue.main work")
DispatchQueue.main.async { print("a DispatchQueue.main block ran inside EventLoop.main.run()") }

try EventLoop.main.run()
print("\nrun() returned: nothing left to do")
