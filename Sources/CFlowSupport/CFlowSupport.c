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
// cleared first.
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

void flow_set_thread_name(const char *name) {
    char shortened[16];
    size_t length = 0;
    while (length < 15 && name[length] != 0) { shortened[length] = name[length]; length++; }
    shortened[length] = 0;
    pthread_setname_np(pthread_self(), shortened);
}

int flow_is_main_thread(void) { return syscall(SYS_gettid) == getpid(); }

// libdispatch's C entry points, declared here rather than through <dispatch/dispatch.h>, which this
// target does not see: the main queue is the exported `_dispatch_main_q` (what dispatch_get_main_queue()
// names), and `dispatch_async_f` takes a plain function and context, so no block is allocated.
struct dispatch_queue_s;
extern struct dispatch_queue_s _dispatch_main_q;
extern void dispatch_async_f(struct dispatch_queue_s *queue, void *context, void (*work)(void *));

void flow_main_queue_async(void *context, void (*work)(void *)) { dispatch_async_f(&_dispatch_main_q, context, work); }

// MARK: Completion handles

// Swift's runtime, as its headers declare these (C calling convention, which for one pointer is
// also Swift's).
extern void swift_retain(void *object);
extern void swift_unownedRetain(void *object);
extern void swift_unownedRelease(void *object);
extern void _swift_instantiateInertHeapObject(void *address, const void *metadata);
// The value witnesses of a native object reference (`Builtin.NativeObject`), which the compiler
// gives the metadata of every closure context and box.
extern const char flow_native_object_witnesses[] __asm__("$sBoWV");

// A heap object's metadata as Swift's runtime reads it: a header before the address the object
// points to (the layout string, which only value types use; the destroy function, which the runtime
// calls with the object in the Swift context register when its last strong reference goes; the value
// witnesses), then the kind. The kind is that of a closure context ("heap local variable"), with the
// offset of its first capture and no capture description.
struct flow_handle_metadata {
    const void *layout_string;
    const void *destroy;
    const void *value_witnesses;
    uintptr_t kind;
    uint32_t offset_to_first_capture;
    const void *capture_description;
};

#define FLOW_HEAP_LOCAL_VARIABLE_KIND 0x400

__attribute__((swiftcall)) static void destroy_called_handle(__attribute__((swift_context)) void *handle) {
    flow_release_object_memory((char *)handle - FLOW_COMPLETION_HANDLE_OFFSET);
}

__attribute__((swiftcall)) static void destroy_pending_handle(__attribute__((swift_context)) void *handle) {
    flow_completion_handle_abandoned(handle, 0);
}

__attribute__((swiftcall)) static void destroy_pending_failing_handle(__attribute__((swift_context)) void *handle) {
    flow_completion_handle_abandoned(handle, 1);
}

static const struct flow_handle_metadata handle_metadata[3] = {
    {NULL, (const void *)destroy_called_handle, flow_native_object_witnesses, FLOW_HEAP_LOCAL_VARIABLE_KIND, 16, NULL},
    {NULL, (const void *)destroy_pending_handle, flow_native_object_witnesses, FLOW_HEAP_LOCAL_VARIABLE_KIND, 16, NULL},
    {NULL, (const void *)destroy_pending_failing_handle, flow_native_object_witnesses, FLOW_HEAP_LOCAL_VARIABLE_KIND, 16, NULL},
};

const void *const flow_completion_handle_states[3] = {
    &handle_metadata[0].kind, &handle_metadata[1].kind, &handle_metadata[2].kind,
};

// The inline reference counts of a Swift object on a 64-bit platform (the runtime's RefCount.h):
// bit 0 "pure Swift deallocation", bits 1-31 the unowned count, bit 32 "deinitialising", bits 33-62
// the strong count beyond the first, bit 63 "the counts are in a side table" (then the word points
// there). All 32 low bits set mark an immortal object.
#define FLOW_UNOWNED_ONE ((uint64_t)1 << 1)
#define FLOW_STRONG_ONE ((uint64_t)1 << 33)
#define FLOW_COUNTS_IN_SIDE_TABLE ((uint64_t)1 << 63)
#define FLOW_STRONG_EXTRA_LIMIT (((uint64_t)1 << 29))
#define FLOW_UNOWNED_LIMIT (((uint64_t)1 << 30))

void flow_completion_handle_initialize(void *handle, int fails_when_abandoned) {
    _swift_instantiateInertHeapObject(handle, flow_completion_handle_states[fails_when_abandoned ? 2 : 1]);
    void *future = (char *)handle - FLOW_COMPLETION_HANDLE_OFFSET;
    // A strong reference and one on the memory, in one atomic step where the counts are inline and
    // far from their limits, as they are for a future that is being started; anything else goes
    // through the runtime, which knows every case.
    uint64_t *counts = (uint64_t *)((char *)future + sizeof(void *));
    uint64_t bits = __atomic_load_n(counts, __ATOMIC_RELAXED);
    while ((bits & FLOW_COUNTS_IN_SIDE_TABLE) == 0 && (uint32_t)bits != UINT32_MAX
           && (bits >> 33 & 0x3FFFFFFF) < FLOW_STRONG_EXTRA_LIMIT && (bits >> 1 & 0x7FFFFFFF) < FLOW_UNOWNED_LIMIT
           && (bits & ((uint64_t)1 << 32)) == 0) {
        if (__atomic_compare_exchange_n(counts, &bits, bits + FLOW_STRONG_ONE + FLOW_UNOWNED_ONE, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            return;
        }
    }
    swift_retain(future);
    swift_unownedRetain(future);
}

void flow_release_object_memory(void *object) { swift_unownedRelease(object); }
