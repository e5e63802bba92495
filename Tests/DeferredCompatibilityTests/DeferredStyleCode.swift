// Code written the way Big Nerd Ranch's Deferred users write it, compiled in Swift 5 language mode,
// so that CI proves `import Deferred` code keeps compiling.
import Deferred
import XCTest

final class DeferredStyleCodeTests: XCTestCase {
    func testUponReceivesTheFilledValue() {
        let deferred = Deferred<Int>()
        let done = expectation(description: "upon ran")
        deferred.upon { value in
            XCTAssertEqual(value, 7)
            done.fulfill()
        }
        deferred.fill(with: 7)
        wait(for: [done], timeout: 10)
    }
}
