#ifndef FLOW_SUPPORT_H
#define FLOW_SUPPORT_H

// Small C helpers the Swift core needs and Swift cannot express directly.

/// The calling thread's execution context (an unretained pointer owned by Swift), or NULL.
/// A C thread-local is a few instructions to read: Swift's alternatives (pthread keys, Thread
/// dictionaries, task locals) cost far more on the hot path of every scheduling decision.
extern __thread void *_Nullable flow_thread_context;

static inline void *_Nullable flow_get_thread_context(void) { return flow_thread_context; }
static inline void flow_set_thread_context(void *_Nullable context) { flow_thread_context = context; }

/// Registers `destructor` to run with the context pointer when a thread that set one exits.
void flow_register_thread_context_destructor(void (*_Nonnull destructor)(void *_Nonnull));

/// Marks the calling thread's context so that `destructor` above runs for it at thread exit.
void flow_retain_thread_context_until_exit(void *_Nonnull context);

/// libdispatch's hooks for running the main queue inside another run loop (the ones
/// CoreFoundation's run loop uses): an eventfd that becomes readable when the main queue has
/// work, and the call that drains the main queue. Both must be used from the main thread.
extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *_Nullable message);

/// Queues `work(context)` on the Dispatch main queue (`dispatch_async_f`), without allocating a block.
void flow_main_queue_async(void *_Nullable context, void (*_Nonnull work)(void *_Nullable));

/// Whether the calling thread is the process's first thread.
int flow_is_main_thread(void);

/// Names the calling thread (the first 15 bytes of `name`), for debuggers and `top -H`.
void flow_set_thread_name(const char *_Nonnull name);

/// A future's completion handle: the object its operation's completion callback captures, which
/// keeps the future until the first call and tells it when the callback is released uncalled. Its
/// object header (two words) lives in the future's own memory, this many bytes from the future's
/// start (`Future.handleWords`), so that a future made from an operation costs one allocation.
/// The header's metadata pointer says the handle's state; its metadata's destroy function, which
/// Swift's runtime calls when the last reference to the handle goes, acts on that state.
#define FLOW_COMPLETION_HANDLE_OFFSET 72

/// The metadata pointers of a handle's three states: [0] called, [1] pending (released uncalled,
/// the future stays pending), [2] pending (released uncalled, the future fails).
extern const void *_Nonnull const flow_completion_handle_states[3];

/// Writes the header of a pending handle at `handle` (one reference, held by the caller), and takes
/// the references it keeps on its future, whose object starts FLOW_COMPLETION_HANDLE_OFFSET bytes
/// before: a strong one until the handle is called, and one on the future's memory (Swift's unowned
/// count) until the handle itself is released.
void flow_completion_handle_initialize(void *_Nonnull handle, int fails_when_abandoned);

/// Marks the handle called and returns the state it was in: 0 if it had been called already, else 1
/// or 2 (see `flow_completion_handle_states`). The caller that gets 1 or 2 owns the handle's strong
/// reference to its future.
static inline int flow_completion_handle_claim(void *_Nonnull handle) {
    const void *previous = __atomic_exchange_n((const void **)handle, flow_completion_handle_states[0], __ATOMIC_ACQ_REL);
    if (previous == flow_completion_handle_states[0]) return 0;
    return previous == flow_completion_handle_states[2] ? 2 : 1;
}

/// Defined by Flow: the handle at `handle` was released without being called. Takes over the
/// handle's strong reference to its future and its reference to the future's memory.
extern void flow_completion_handle_abandoned(void *_Nonnull handle, int fails_when_abandoned);

/// Gives up a reference to an object's memory taken by `flow_completion_handle_initialize` (Swift's
/// `swift_unownedRelease`): frees it if the object was destroyed and this was the last.
void flow_release_object_memory(void *_Nonnull object);

#endif
