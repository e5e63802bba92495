// The signals part of the tour: Flow's Signals guide, step by step.
import Flow

/// Shows signals, as one future that completes when every step has printed.
func signalsTour() -> Future<Void> {
    section("Signals: values over time")
    let connections = ReadWriteSignal(0)
    let bag = DisposeBag()
    bag += connections.atOnce().onValue { print("connections: \($0)") }
    bag += connections.map { $0 > 1 }.distinct().filter { $0 }.onValue { _ in print("busy") }
    connections.value = 1
    connections.value = 2
    connections.value = 1
    let doubled = connections.map { $0 * 2 }   // a map keeps the current value
    print("current value: \(connections.value), doubled: \(doubled.value)")
    bag.dispose()

    section("Signals on the loop's timer")
    let ticks = Signal(every: 0.01).enumerate().map { $0.0 }.take(first: 3)
    return ticks.collect().future.map { values in
        print("ticks: \(values), on the main loop: \(Scheduler.main.isExecuting)")
    }
}
