import Flow
import FlowJobs
import Foundation
import InMemoryTracing
import Synchronization
import Testing
import Tracing

/// A span's identity, as links and contexts carry it.
private struct SpanID: Hashable, CustomStringConvertible {
    let trace: String
    let span: String

    init?(_ context: ServiceContext?) {
        guard let spanContext = context?.inMemorySpanContext else { return nil }
        trace = spanContext.traceID
        span = spanContext.spanID
    }

    init(_ span: FinishedInMemorySpan) {
        trace = span.traceID
        self.span = span.spanID
    }

    var description: String { "\(trace)/\(span)" }
}

private let flaky = JobKind<Message>(name: "flaky", maxAttempts: 3, backoff: .constant(10))

@Suite("FlowJobs tracing: from the enqueue to each attempt")
struct JobTracingTests {
    @Test func eachAttemptIsASpanLinkedToTheEnqueueAndARetryLinksToTheFirstAttempt() throws {
        let jobs = VirtualJobs()
        let store = try jobs.openStore()
        let tracer = InMemoryTracer()
        let client = JobClient(store: store, tracer: tracer)
        let worker = JobWorker(
            store: store, scheduler: jobs.scheduler, configuration: .init(identity: "traced", tracer: tracer))
        let handlerContexts = Synchronization.Mutex<[(given: SpanID?, current: SpanID?)]>([])
        worker.register(flaky) { _, context in
            handlerContexts.withLock { $0.append((SpanID(context.serviceContext), SpanID(ServiceContext.current))) }
            return context.attempt == 1 ? Future(error: TestFailure()) : Future()
        }
        worker.start()
        let handle = try completed(client.enqueue(flaky, Message(text: "twice")))
        jobs.clock.advance(by: .zero)
        let afterFirst = try #require(try completed(client.job(handle.id)))
        #expect(afterFirst.state == .retryable && !afterFirst.traceContext.isEmpty)
        #expect(!afterFirst.firstAttemptTraceContext.isEmpty, "kept for the retry")
        jobs.clock.advance(by: .seconds(10))
        #expect(try completed(client.job(handle.id))?.state == .completed)

        let spans = tracer.finishedSpans
        let enqueue = try #require(spans.first { $0.operationName == "enqueue flaky" })
        let attempts = spans.filter { $0.operationName == "flaky" }
        try #require(attempts.count == 2)
        #expect(enqueue.kind == .producer && attempts.allSatisfy { $0.kind == .consumer })
        #expect(attempts[0].links.map { SpanID($0.context) } == [SpanID(enqueue)])
        #expect(attempts[1].links.map { SpanID($0.context) } == [SpanID(enqueue), SpanID(attempts[0])])
        #expect(Set(attempts.map(\.traceID)).count == 2 && !attempts.contains { $0.traceID == enqueue.traceID },
                "each attempt starts a trace of its own, linked rather than nested")
        #expect(attempts[0].status?.code == .error && attempts[0].errors.count == 1)
        #expect(attempts[1].status == nil && attempts[1].errors.isEmpty)
        #expect(attempts.map { $0.attributes["job.attempt"]?.toSpanAttribute() } == [1, 2])
        let seen = handlerContexts.withLock { $0 }
        #expect(seen.map(\.given) == attempts.map(SpanID.init), "the handler's context is its attempt's span")
        #expect(seen.map(\.current) == attempts.map(SpanID.init), "and is ServiceContext.current in the handler")
    }

    @Test func anEnqueueIsAChildOfTheCallersSpanAndAnUntracedClientKeepsNoContext() throws {
        let jobs = VirtualJobs()
        let store = try jobs.openStore()
        let tracer = InMemoryTracer()
        let traced = JobClient(store: store, tracer: tracer)
        let request = tracer.startSpan("request")
        let handle = try ServiceContext.withValue(request.context) {
            try completed(traced.enqueue(flaky, Message(text: "from a request")))
        }
        request.end()
        let enqueue = try #require(tracer.finishedSpans.first { $0.operationName == "enqueue flaky" })
        #expect(enqueue.traceID == request.traceID && enqueue.parentSpanID == request.spanID)
        #expect(try completed(traced.job(handle.id))?.traceContext.isEmpty == false)

        let untraced = JobClient(store: store)
        let plain = try completed(untraced.enqueue(flaky, Message(text: "untraced")))
        let record = try #require(try completed(untraced.job(plain.id)))
        #expect(record.traceContext.isEmpty && record.firstAttemptTraceContext.isEmpty)
    }
}
