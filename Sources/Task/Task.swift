// The module `Task`: Deferred shipped its task API as a module of this name inside its `Deferred`
// product, so Deferred code reads `import Deferred` and `import Task`. Here the task API lives in the
// `Deferred` module itself; this module brings it in under the old name, so both lines compile.
//
// In a file with either import, `Task` names Deferred's type (`Task<Int>`, `Task<Int>.Promise`);
// Swift's own is `_Concurrency.Task`.
@_exported import Deferred
