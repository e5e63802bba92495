import Deferred

// Names for this module's types that stay unambiguous in files that also import Flow (where `Future`
// and `Task` have other meanings, and `Deferred.Task` would name a member of the `Deferred` type).
typealias DeferredTask<Success: Sendable> = Task<Success>
