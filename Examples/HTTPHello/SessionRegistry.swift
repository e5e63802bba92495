import Flow
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The open sessions of one loop, so that a loop at its connection limit can make room: the session
/// that has made no progress for the longest (a client stalled on half a head, or idle the longest)
/// is closed to admit the new one.
///
/// Without this, clients that hold connections open without sending run the process out of
/// descriptors, and then libuv closes every new connection before the server sees it: the timeouts
/// end such a siege only once they expire. Each loop has its own registry, used only on that loop.
final class SessionRegistry {
    private var sessions: [HTTPSession] = []
    private let capacity: Int

    private init(capacity: Int) {
        self.capacity = capacity
    }

    /// Adds `session`, first closing the least recently active session if the loop is full.
    func admit(_ session: HTTPSession) {
        if sessions.count >= capacity, let victim = sessions.min(by: { $0.lastProgress < $1.lastProgress }) {
            victim.evict()
        }
        session.registryIndex = sessions.count
        sessions.append(session)
    }

    /// Removes a closed session.
    func remove(_ session: HTTPSession) {
        let index = session.registryIndex
        guard index >= 0, index < sessions.count, sessions[index] === session else { return }
        let last = sessions.removeLast()
        if last !== session {
            sessions[index] = last
            last.registryIndex = index
        }
        session.registryIndex = -1
    }

    // MARK: One per loop

    private static let byLoop = Synchronization.Mutex<[ObjectIdentifier: LoopBound<SessionRegistry>]>([:])

    /// The registry of `loop`, made on first use. Loop context only.
    static func of(_ loop: EventLoop, settings: HTTPSessionSettings) -> SessionRegistry {
        byLoop.withLock { registries in
            if let registry = registries[ObjectIdentifier(loop)] { return registry.value }
            let registry = SessionRegistry(capacity: settings.maximumConnectionsPerLoop)
            registries[ObjectIdentifier(loop)] = LoopBound(registry, loop: loop)
            return registry
        }
    }
}
