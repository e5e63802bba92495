// The library's glue to the C library, the kernel and libdispatch: what Swift cannot reach or express
// directly. Nothing here knows anything of Swift's runtime. Each interface that is not a public,
// documented one says why it is used.

#define _GNU_SOURCE
#include "CFlowSupport.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

__thread void *flow_thread_context = NULL;

static pthread_key_t context_key;
static pthread_once_t context_key_once = PTHREAD_ONCE_INIT;
static void (*context_destructor)(void *) = NULL;

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FLOW_ADDRESS_SANITIZER 1
#endif
#endif

#ifdef FLOW_ADDRESS_SANITIZER
#include <sanitizer/asan_interface.h>

// A thread that ends with pthread_exit (as the main thread does in dispatchMain()) leaves its frames
// by unwinding, not by returning, so AddressSanitizer never clears the poison it put around their
// locals. glibc then runs the key destructors on the same stack, from the frame that caught the
// unwinding, right where those frames were: the Swift destructor's own locals fall on the stale
// poison and draw a false report. So the shadow of the stack below this frame, all of it dead, is
// cleared first, through AddressSanitizer's public interface; pthread_getattr_np (a GNU extension)
// is glibc's only way to find the thread's stack.
static void forget_unwound_frames(void) {
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return;
    void *lowest = NULL;
    size_t size = 0;
    if (pthread_attr_getstack(&attributes, &lowest, &size) == 0) {
        char *here = __builtin_frame_address(0);
        char *low = lowest;
        if (here > low && here <= low + size) __asan_unpoison_memory_region(low, (size_t)(here - low));
    }
    pthread_attr_destroy(&attributes);
}
#endif

static void run_context_destructor(void *context) {
    if (context_destructor != NULL && context != NULL) {
        flow_thread_context = NULL;
#ifdef FLOW_ADDRESS_SANITIZER
        forget_unwound_frames();
#endif
        context_destructor(context);
    }
}

static void make_context_key(void) { pthread_key_create(&context_key, run_context_destructor); }

void flow_register_thread_context_destructor(void (*destructor)(void *)) {
    context_destructor = destructor;
    pthread_once(&context_key_once, make_context_key);
}

void flow_retain_thread_context_until_exit(void *context) {
    pthread_once(&context_key_once, make_context_key);
    pthread_setspecific(context_key, context);
}

// pthread_setname_np is a GNU extension (hence _GNU_SOURCE): Linux has no portable way to name a
// thread, and the kernel keeps at most 15 bytes of it.
void flow_set_thread_name(const char *name) {
    char shortened[16];
    size_t length = 0;
    while (length < 15 && name[length] != 0) { shortened[length] = name[length]; length++; }
    shortened[length] = 0;
    pthread_setname_np(pthread_self(), shortened);
}

// The raw gettid system call (glibc 2.36 declares gettid(), older ones do not): the first thread's id
// is the process's.
int flow_is_main_thread(void) { return syscall(SYS_gettid) == getpid(); }

// libdispatch's C entry points, declared here rather than through <dispatch/dispatch.h>, which this
// target does not see. `_dispatch_main_q` is private in name only: it is the exported object that the
// public dispatch_get_main_queue() macro expands to, so it is as stable as that macro. `dispatch_async_f`
// is public: it takes a plain function and context, so no block is allocated.
struct dispatch_queue_s;
extern struct dispatch_queue_s _dispatch_main_q;
extern void dispatch_async_f(struct dispatch_queue_s *queue, void *context, void (*work)(void *));

void flow_main_queue_async(void *context, void (*work)(void *)) { dispatch_async_f(&_dispatch_main_q, context, work); }
