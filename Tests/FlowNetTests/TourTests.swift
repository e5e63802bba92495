import Foundation
import Testing

@Suite("Tour example")
struct TourTests {
    @Test("the Tour walks every section in order, ends on the main loop, and exits by itself")
    func tourRunsToTheEnd() throws {
        let tour = try ExampleProcess("Tour", arguments: [])
        var lines: [String] = []
        while let line = tour.readLine() { lines.append(line) }
        #expect(tour.waitForExit() == 0)
        let sections = lines.filter { $0.hasPrefix("== ") }
        #expect(sections.first == "== The main event loop")
        #expect(sections.contains("== select: the first of two to complete wins, the other is cancelled"))
        #expect(sections.contains("== FutureQueue: one operation at a time, in order"))
        #expect(sections.last == "== wait blocks a thread that is not the loop's")
        #expect(lines.contains("the slow one was cancelled"))
        #expect(lines.contains("first starts, first ends, second runs"))
        #expect(sections.contains("== Signals: values over time"))
        #expect(lines.contains("busy"))
        #expect(lines.contains("current value: 1, doubled: 2"))
        #expect(lines.contains("ticks: [0, 1, 2], on the main loop: true"))
        #expect(sections.contains("== Swift 6 and the main actor"))
        #expect(lines.contains("a callback and a task added to top-level state: total = 42"))
        #expect(lines.contains("status changes seen on the main actor: [\"idle\", \"got 21\"]"))
        #expect(lines.contains("fill: true, fill again: false"))
        #expect(lines.last == "The tour is over: every step ran on the main loop, in order.")
    }
}
