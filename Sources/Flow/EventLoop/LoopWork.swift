extension EventLoop {
    /// Work for the loop: a closure, or a Swift Concurrency job (an actor's or a task's), kept in one
    /// queue so that the order of submission holds across both.
    ///
    /// Two words, as many as the closure alone: a million queued jobs fill 16 MB, not the 24 MB an enum
    /// of the two cases takes (a closure leaves no spare bit for the enum's tag, so the tag would pad
    /// each job to three words). The words are the closure's own, moved in and out with its ownership
    /// (no retain, no release, no allocation), or a zero word and the job: a closure's function word
    /// is never zero (that is how an optional closure fits in two words).
    ///
    /// Not copyable, and ``run(on:)`` consumes it: each piece of work runs at most once. Work dropped
    /// without running releases its closure; a dropped job is left alone, as `UnownedJob` was.
    struct LoopWork: ~Copyable, @unchecked Sendable {
        // @unchecked Sendable: a job is handed to the loop once and run there once; the closure it
        // may hold is `@Sendable`.

        typealias Body = @Sendable () -> Void

        /// The closure as a struct's field, which keeps its own calling convention: an
        /// `UnsafeMutablePointer<Body>` would hold it in the generic form, wrapped in an allocated
        /// thunk.
        private struct StoredBody {
            var body: Body
        }

        /// The closure's (function, context) words, or zero and the job's pointer.
        private var words: (function: UInt, payload: UInt)

        private init(words: (function: UInt, payload: UInt)) {
            self.words = words
        }

        /// Work that calls `body`.
        @inline(__always)
        static func closure(_ body: consuming @escaping Body) -> LoopWork {
            var words: (function: UInt, payload: UInt) = (0, 0)
            // Moved in through an optional: a closure cannot consume what it captures, and a copy would
            // cost a retain and a release.
            var stored = Optional(StoredBody(body: body))
            withUnsafeMutablePointer(to: &words) { storage in
                storage.withMemoryRebound(to: StoredBody.self, capacity: 1) { $0.initialize(to: stored.take().unsafelyUnwrapped) }
            }
            return LoopWork(words: words)
        }

        /// Work that runs a Concurrency job, on the loop as both its serial and its task executor.
        @inline(__always)
        static func job(_ job: UnownedJob) -> LoopWork {
            LoopWork(words: (0, unsafeBitCast(job, to: UInt.self)))
        }

        /// Runs the work; it is gone afterwards.
        @inline(__always)
        consuming func run(on loop: EventLoop) {
            var words = self.words
            discard self
            if words.function == 0 {
                let job = unsafeBitCast(words.payload, to: UnownedJob.self)
                // The loop is both an actor's serial executor and a task executor; one `enqueue`
                // receives both kinds of job, so each runs with both.
                job.runSynchronously(isolatedTo: loop.asUnownedSerialExecutor(), taskExecutor: loop.asUnownedTaskExecutor())
            } else {
                let body = LoopWork.takeClosure(from: &words)
                body()
            }
        }

        /// Moves the closure out of its words, which are left meaningless.
        @inline(__always)
        private static func takeClosure(from words: inout (function: UInt, payload: UInt)) -> Body {
            withUnsafeMutablePointer(to: &words) { storage in
                storage.withMemoryRebound(to: StoredBody.self, capacity: 1) { $0.move().body }
            }
        }

        deinit {
            // Dropped without running (submitted to a closed loop, or left in a freed queue): the
            // closure is released like any other; a job was never owned.
            var words = self.words
            if words.function != 0 {
                _ = LoopWork.takeClosure(from: &words)
            }
        }
    }
}
