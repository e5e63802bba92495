import CLibUV
import Dispatch
import Synchronization

/// One thing that keeps an ``EventLoop`` running: ``EventLoop/run()`` does not return while it lasts.
///
/// ``EventLoop/activeResources()`` lists them, for a program whose `run()` does not return when it
/// should. Handles that a library names with ``EventLoop/nameHandle(_:kind:summary:file:line:)`` (the
/// listeners, connections, sockets, watchers and child processes of FlowNet and FlowSystem) appear with
/// their summary; other libuv handles appear with libuv's name for their type.
public struct LoopResource: Sendable, Hashable, CustomStringConvertible {
    /// What kind of thing keeps the loop running.
    public struct Kind: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The kind's name, as printed.
        public let rawValue: String

        /// A kind named `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A listening socket.
        public static let listener = Kind(rawValue: "listener")
        /// A connected stream: TCP, a Unix socket, a pipe, a terminal.
        public static let connection = Kind(rawValue: "connection")
        /// A UDP socket.
        public static let datagramSocket = Kind(rawValue: "datagram socket")
        /// Work scheduled for later on the loop's timer (``EventLoop/execute(after:_:)``, delays,
        /// timeouts, periodic work).
        public static let timer = Kind(rawValue: "timer")
        /// A watcher of OS signals or of paths.
        public static let watcher = Kind(rawValue: "watcher")
        /// A child process not yet reaped.
        public static let childProcess = Kind(rawValue: "child process")
        /// A ``EventLoop/keepAlive(file:line:)`` token not yet disposed.
        public static let keepAliveToken = Kind(rawValue: "keep-alive token")
        /// Work queued on the loop, or submitted from other threads, not yet run.
        public static let queuedWork = Kind(rawValue: "queued work")
        /// Work handed from the loop to another scheduler (a transform's hop, a timer set there, a
        /// main-actor task awaiting the loop's I/O) that may still deliver back to the loop.
        public static let pendingDelivery = Kind(rawValue: "pending delivery")
        /// libuv requests in flight: file-system operations, name lookups, thread-pool work.
        public static let request = Kind(rawValue: "request")
        /// A libuv handle nobody named: ``LoopResource/summary`` is libuv's name for its type.
        public static let handle = Kind(rawValue: "handle")

        /// The kind's name.
        public var description: String { rawValue }
    }

    /// What kind of thing it is.
    public let kind: Kind
    /// What it is, in a few words: `TCP listener on 127.0.0.1:8080`, `3 pending, the next due in 120 ms`.
    public let summary: String
    /// Where it was made (`Module/File.swift:42`), in debug builds of the code that made it; `nil`
    /// where that is not known.
    public let creationSite: String?

    /// A resource of `kind`, described by `summary`, made at `creationSite`.
    public init(kind: Kind, summary: String, creationSite: String? = nil) {
        self.kind = kind
        self.summary = summary
        self.creationSite = creationSite
    }

    /// One line: `kind: summary (made at site)`.
    public var description: String {
        if let creationSite { return "\(kind): \(summary) (made at \(creationSite))" }
        return "\(kind): \(summary)"
    }

    /// The creation site to record for `file` and `line`: only in debug builds of this library.
    static func site(file: StaticString, line: UInt) -> String? {
        #if DEBUG
            return "\(file):\(line)"
        #else
            return nil
        #endif
    }
}

/// The handles and tokens a loop knows more about than libuv does, guarded by the loop's registry lock.
struct LoopResourceRegistry {
    var namedHandles: [UInt: LoopResource] = [:]
    var keepAliveTokens: [Int: LoopResource] = [:]
    var nextTokenID = 0
}

extension EventLoop {
    /// What keeps the loop running now, as Node's `process.getActiveResourcesInfo()` tells: every
    /// resource that keeps ``run()`` from returning for lack of work.
    ///
    /// ```swift
    /// loop.execute(after: 5) { print(loop.describeActiveResources()) }
    /// // EventLoop(flow.main) is kept running by 2 resources:
    /// //   listener: TCP listener on 127.0.0.1:7000 (made at EchoServer/main.swift:31)
    /// //   keep-alive token: not yet disposed (made at App/Worker.swift:12)
    /// ```
    ///
    /// Callable from any thread. Off the loop, the list is made on the loop while something runs it
    /// (the caller waits for it), or by the caller while nothing does (``run()`` and ``close()``
    /// wait meanwhile); for ``main``, always in the main context. A closed loop (after ``close()`` or
    /// ``shutdown()``) has nothing keeping it running: the list is empty. Every open connection is
    /// listed, whatever it is doing (just accepted, between two reads); everything else listed keeps
    /// ``run()`` from returning, and an empty list means it returns once the work now running ends.
    public func activeResources() -> [LoopResource] {
        if isInLoopContext {
            return isClosed ? [] : collectActiveResources()
        }
        if !isMainLoop, let resources = whileIdle({ collectActiveResources() }) {
            return resources
        }
        // Running (or, for `main`, served by whichever driver the main thread uses): only the
        // loop's context may read libuv's state, so the list is made there.
        let request = ResourceListRequest()
        do {
            try submit { [self] in
                if request.claim() { request.finish(isClosed ? [] : collectActiveResources()) }
            }
        } catch {
            return []
        }
        while true {
            if let resources = request.wait(seconds: 0.01) { return resources }
            // The job has not run yet. A loop other than `main` may have stopped with it queued (a
            // `stop()`, a loop its owner runs now and then): read it while it is idle, not counting
            // that job. `main` must wait for its context: the main thread may touch it any time.
            if isMainLoop { continue }
            if isClosed, request.claim() { return [] }
            if let resources = whileIdle({ request.claim() ? collectActiveResources(ownJobsQueued: 1) : nil }),
               let resources {
                return resources
            }
        }
    }
    /// ``activeResources()`` as text for a log: one line naming the loop and the count, then one
    /// indented line per resource.
    public func describeActiveResources() -> String {
        let resources = activeResources()
        guard !resources.isEmpty else { return "\(self) has nothing keeping it running" }
        let header = "\(self) is kept running by \(resources.count) resource\(resources.count == 1 ? "" : "s"):"
        return ([header] + resources.map { "  \($0)" }).joined(separator: "\n")
    }

    /// Names a libuv handle that the caller opened on this loop, so that ``activeResources()`` lists it
    /// with `summary` (and, in debug builds, where it was made) rather than as a bare libuv handle.
    /// Call ``forgetHandle(_:)`` when the handle is closed. Callable from any thread.
    ///
    /// - Parameters:
    ///   - handle: the handle (any `uv_handle_t`-based structure), as a raw pointer.
    ///   - kind: what it is.
    ///   - summary: a few words on it, such as `TCP listener on 127.0.0.1:8080`.
    ///   - file: where the handle was made, listed in debug builds; the caller's file by default.
    ///   - line: the line of `file`.
    public func nameHandle(
        _ handle: UnsafeMutableRawPointer, kind: LoopResource.Kind, summary: String,
        file: StaticString = #fileID, line: UInt = #line
    ) {
        let resource = LoopResource(kind: kind, summary: summary, creationSite: LoopResource.site(file: file, line: line))
        resourceRegistry.withLock { $0.namedHandles[UInt(bitPattern: handle)] = resource }
    }

    /// ``nameHandle(_:kind:summary:file:line:)`` for a handle whose creation site the library does not
    /// know (its own line would only mislead): listed without one.
    package func nameHandle(_ handle: UnsafeMutableRawPointer, kind: LoopResource.Kind, summary: String, creationSite: String?) {
        let resource = LoopResource(kind: kind, summary: summary, creationSite: creationSite)
        resourceRegistry.withLock { $0.namedHandles[UInt(bitPattern: handle)] = resource }
    }

    /// Forgets the name given to `handle` with ``nameHandle(_:kind:summary:file:line:)``.
    public func forgetHandle(_ handle: UnsafeMutableRawPointer) {
        _ = resourceRegistry.withLock { $0.namedHandles.removeValue(forKey: UInt(bitPattern: handle)) }
    }

    /// Records a keep-alive token; returns its number for ``forgetKeepAlive(_:)``.
    func rememberKeepAlive(_ resource: LoopResource) -> Int {
        resourceRegistry.withLock { registry in
            registry.nextTokenID += 1
            registry.keepAliveTokens[registry.nextTokenID] = resource
            return registry.nextTokenID
        }
    }

    func forgetKeepAlive(_ id: Int) {
        _ = resourceRegistry.withLock { $0.keepAliveTokens.removeValue(forKey: id) }
    }

    /// The list, made in the loop's context (or while nothing runs the loop), leaving out
    /// `ownJobsQueued` jobs that ``activeResources()`` queued itself.
    private func collectActiveResources(ownJobsQueued: Int = 0) -> [LoopResource] {
        var resources: [LoopResource] = []
        let (named, tokens) = resourceRegistry.withLock { ($0.namedHandles, $0.keepAliveTokens) }
        resources += tokens.sorted { $0.key < $1.key }.map(\.value)

        let queued = queuedWorkCount - ownJobsQueued
        if queued > 0 {
            resources.append(LoopResource(kind: .queuedWork, summary: "\(queued) job\(queued == 1 ? "" : "s") not yet run"))
        }
        let deliveries = pendingDeliveries
        if deliveries > 0 {
            resources.append(LoopResource(
                kind: .pendingDelivery, summary: "\(deliveries) hop\(deliveries == 1 ? "" : "s") to other schedulers not yet back"))
        }
        if let timers = pendingDeadlineSummary {
            resources.append(LoopResource(kind: .timer, summary: timers))
        }
        let requests = Int(uvLoop.pointee.active_reqs.count)
        if requests > 0 {
            resources.append(LoopResource(
                kind: .request,
                summary: "\(requests) libuv request\(requests == 1 ? "" : "s") in flight (files, name lookups, thread-pool work)"))
        }

        // Every handle that is active and referenced keeps `uv_run` going; the loop's own are
        // accounted for above (the wake-up handle, the deadline timer, the drain handle, the
        // main-queue watch).
        // Open connections too, whatever they are doing: one just accepted, or between two reads of
        // a request, is not active in libuv's terms, yet it is what the program is there for.
        let connections = Set(named.filter { $0.value.kind == .connection }.map(\.key))
        var walk = HandleWalk(ownHandles: loopOwnHandles, connections: connections)
        withUnsafeMutablePointer(to: &walk) { walkPointer in
            uv_walk(uvLoop, { handle, context in
                guard let handle, let context else { return }
                let walk = context.assumingMemoryBound(to: HandleWalk.self)
                let address = UInt(bitPattern: UnsafeMutableRawPointer(handle))
                guard !walk.pointee.ownHandles.contains(address), uv_is_closing(handle) == 0 else { return }
                guard walk.pointee.connections.contains(address)
                    || (uv_is_active(handle) != 0 && uv_has_ref(handle) != 0) else { return }
                walk.pointee.found.append((address, String(cString: uv_handle_type_name(handle.pointee.type))))
            }, walkPointer)
        }
        for (address, typeName) in walk.found {
            resources.append(named[address] ?? LoopResource(kind: .handle, summary: "libuv \(typeName) handle"))
        }
        return resources
    }
}

/// What `uv_walk`'s callback collects.
private struct HandleWalk {
    let ownHandles: Set<UInt>
    /// The named connections, listed even while libuv counts them inactive.
    let connections: Set<UInt>
    var found: [(address: UInt, typeName: String)] = []
}

/// A list of resources that ``EventLoop/activeResources()`` asked the loop for: made by the loop's job,
/// or by the caller once the loop is idle, whichever claims it first.
private final class ResourceListRequest: Sendable {
    private let isClaimed = Atomic<Bool>(false)
    private let resources = Locked<[LoopResource]?>(nil)
    private let done = DispatchSemaphore(value: 0)

    /// Whether the caller is the one to make the list (only the first caller is).
    func claim() -> Bool {
        !isClaimed.exchange(true, ordering: .acquiringAndReleasing)
    }

    func finish(_ list: [LoopResource]) {
        resources.withLock { $0 = list }
        done.signal()
    }

    /// The list, if it was made within `seconds`.
    func wait(seconds: Double) -> [LoopResource]? {
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return resources.withLock { $0 }
    }
}
