// Code written the way iZettle's Flow users write it, compiled in Swift 5 language mode, so that CI
// proves `import Flow` code keeps compiling.
import Flow
import XCTest

final class FlowStyleCodeTests: XCTestCase {
    func testAFutureMappedAndObservedDeliversItsValue() {
        let done = expectation(description: "completed")
        Future(1).map { $0 + 1 }.onValue { XCTAssertEqual($0, 2) }.always { done.fulfill() }
        wait(for: [done], timeout: 10)
    }
}
