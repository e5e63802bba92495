import FlowJobs
import Testing

@Suite("JobLifecycle: the job's life as a value")
struct JobLifecycleTests {
    @Test func aNewJobIsAvailableWhenDueAndScheduledOtherwise() {
        #expect(JobLifecycle(isDue: true, maxAttempts: 1).state == .available)
        #expect(JobLifecycle(isDue: false, maxAttempts: 1).state == .scheduled)
    }

    @Test func eachClaimCountsAnAttemptAndRaisesTheFence() throws {
        var life = JobLifecycle(isDue: false, maxAttempts: 3)
        try life.apply(.becameDue)
        try life.apply(.claimed)
        #expect(life.state == .running && life.attempt == 1 && life.fence == 1)
        try life.apply(.failed(error: "boom"))
        #expect(life.state == .retryable && life.hasRecordedError)
        try life.apply(.claimed)
        #expect(life.state == .running && life.attempt == 2 && life.fence == 2)
        try life.apply(.succeeded)
        #expect(life.state == .completed)
    }

    @Test func aFailureOnTheLastAttemptDiscards() throws {
        var life = JobLifecycle(isDue: true, maxAttempts: 2)
        try life.apply(.claimed)
        try life.apply(.failed(error: "one"))
        try life.apply(.claimed)
        try life.apply(.failed(error: "two"))
        #expect(life.state == .discarded)
        #expect(life.attempt == 2)
    }

    @Test func aPermanentFailureDiscardsEvenWithAttemptsLeft() throws {
        var life = JobLifecycle(isDue: true, maxAttempts: 10)
        try life.apply(.claimed)
        try life.apply(.discarded(error: "payload does not decode"))
        #expect(life.state == .discarded)
    }

    @Test func expiredLeasesWithNoErrorQuarantineAtTheThreshold() throws {
        var life = JobLifecycle(isDue: true, maxAttempts: 25)
        for expiry in 1...3 {
            try life.apply(.claimed)
            try life.apply(.leaseExpired(maxLeaseExpiries: 3))
            #expect(life.leaseExpiries == expiry)
            #expect(life.state == (expiry < 3 ? .retryable : .quarantined))
        }
        #expect(life.attempt == 3)
    }

    @Test func expiredLeasesAfterARecordedErrorRetryInsteadOfQuarantining() throws {
        var life = JobLifecycle(isDue: true, maxAttempts: 25)
        try life.apply(.claimed)
        try life.apply(.failed(error: "boom"))
        for _ in 1...3 {
            try life.apply(.claimed)
            try life.apply(.leaseExpired(maxLeaseExpiries: 3))
        }
        #expect(life.state == .retryable)
    }

    @Test func anExpiredLeaseOnTheLastAttemptDiscards() throws {
        var life = JobLifecycle(isDue: true, maxAttempts: 1)
        try life.apply(.claimed)
        try life.apply(.leaseExpired(maxLeaseExpiries: 3))
        #expect(life.state == .discarded)
    }

    @Test func cancellingAQueuedJobCancelsItAtOnce() throws {
        for start in [true, false] {
            var life = JobLifecycle(isDue: start, maxAttempts: 3)
            try life.apply(.cancellationRequested)
            #expect(life.state == .cancelled)
        }
    }

    @Test func cancellingARunningJobOnlyRecordsTheRequestUntilItStops() throws {
        var life = JobLifecycle(isDue: true, maxAttempts: 3)
        try life.apply(.claimed)
        try life.apply(.cancellationRequested)
        #expect(life.state == .running && life.isCancellationRequested)
        try life.apply(.stoppedByCancellation)
        #expect(life.state == .cancelled)
    }

    @Test func aRunningJobWhoseCancellationWasRequestedIsCancelledWhenItFailsOrItsLeaseEnds() throws {
        var failing = JobLifecycle(isDue: true, maxAttempts: 3)
        try failing.apply(.claimed)
        try failing.apply(.cancellationRequested)
        try failing.apply(.failed(error: "stopped"))
        #expect(failing.state == .cancelled)

        var expiring = JobLifecycle(isDue: true, maxAttempts: 3)
        try expiring.apply(.claimed)
        try expiring.apply(.cancellationRequested)
        try expiring.apply(.leaseExpired(maxLeaseExpiries: 3))
        #expect(expiring.state == .cancelled)
    }

    @Test func aReleaseGivesTheJobBackWithoutCountingTheAttemptButKeepsTheFence() throws {
        var life = JobLifecycle(isDue: true, maxAttempts: 3)
        try life.apply(.claimed)
        try life.apply(.released)
        #expect(life.state == .available && life.attempt == 0 && life.fence == 1)
        try life.apply(.claimed)
        #expect(life.attempt == 1 && life.fence == 2)
    }

    @Test(arguments: [JobState.completed, .discarded, .cancelled, .quarantined])
    func nothingLeavesATerminalState(_ terminal: JobState) {
        let events: [JobLifecycle.Event] = [
            .becameDue, .claimed, .succeeded, .failed(error: "x"), .discarded(error: "x"),
            .leaseExpired(maxLeaseExpiries: 3), .cancellationRequested, .stoppedByCancellation, .released,
        ]
        for event in events {
            var life = JobLifecycle(
                state: terminal, attempt: 1, maxAttempts: 3, fence: 1, leaseExpiries: 0, hasRecordedError: false,
                isCancellationRequested: false)
            #expect(throws: JobTransitionError(state: terminal, event: event)) { try life.apply(event) }
            #expect(life.state == terminal)
        }
        #expect(terminal.isTerminal)
    }

    @Test func eventsThatCannotHappenAreRefusedAndChangeNothing() {
        var scheduled = JobLifecycle(isDue: false, maxAttempts: 3)
        let before = scheduled
        #expect(throws: JobTransitionError.self) { try scheduled.apply(.succeeded) }
        #expect(throws: JobTransitionError.self) { try scheduled.apply(.released) }
        #expect(throws: JobTransitionError.self) { try scheduled.apply(.leaseExpired(maxLeaseExpiries: 3)) }
        #expect(scheduled == before)
        var available = JobLifecycle(isDue: true, maxAttempts: 3)
        #expect(throws: JobTransitionError.self) { try available.apply(.becameDue) }
    }
}
