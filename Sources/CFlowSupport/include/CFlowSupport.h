#ifndef FLOW_SUPPORT_H
#define FLOW_SUPPORT_H

// Small C helpers the Swift core needs and Swift cannot express directly: glue to the C library,
// the kernel and libdispatch (OSGlue.c), none of it to Swift's runtime.

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

/// libdispatch's hooks for running the main queue inside another run loop: an eventfd that becomes
/// readable when the main queue has work, and the call that drains the main queue. Both must be used
/// from the main thread. Private to libdispatch (the `_4CF` suffix: made for CoreFoundation's run
/// loop, which uses them on every platform swift-corelibs-foundation supports), and the only way to
/// serve the main queue from a loop other than dispatch_main(), which never returns; the event
/// loop's main-queue tests fail if they change.
extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *_Nullable message);

/// Queues `work(context)` on the Dispatch main queue (`dispatch_async_f`), without allocating a block.
void flow_main_queue_async(void *_Nullable context, void (*_Nonnull work)(void *_Nullable));

/// Whether the calling thread is the process's first thread.
int flow_is_main_thread(void);

/// Names the calling thread (the first 15 bytes of `name`), for debuggers and `top -H`.
void flow_set_thread_name(const char *_Nonnull name);

#endif
