// Allocation counting for FlowAllocationTests. Defining malloc and friends in the test executable
// makes the dynamic linker bind every library's calls (Swift's runtime, libuv, libdispatch) to these,
// which count on the threads that asked and forward to glibc's own entry points. The counts are
// per thread, so that tests running in parallel on other threads do not add to them.
#define _GNU_SOURCE
#include "CAllocationCounting.h"

#include <errno.h>
#include <malloc.h>
#include <stddef.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
// The sanitizers' runtimes define the allocator themselves: nothing is counted.
#define FLOW_ALLOCATION_COUNTING_DISABLED 1
#endif
#endif

// Initial-exec: the executable's own thread-locals are reached without a call that could allocate.
static __thread int counting __attribute__((tls_model("initial-exec")));
static __thread uint64_t allocations __attribute__((tls_model("initial-exec")));
static __thread uint64_t bytes __attribute__((tls_model("initial-exec")));

#ifndef FLOW_ALLOCATION_COUNTING_DISABLED
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static inline void *counted(void *pointer) {
    if (counting && pointer != NULL) {
        allocations += 1;
        // glibc: a chunk is its usable size plus the 8-byte size field before it.
        bytes += malloc_usable_size(pointer) + 8;
    }
    return pointer;
}

void *malloc(size_t size) { return counted(__libc_malloc(size)); }
void *calloc(size_t count, size_t size) { return counted(__libc_calloc(count, size)); }
void *realloc(void *pointer, size_t size) { return counted(__libc_realloc(pointer, size)); }
void free(void *pointer) { __libc_free(pointer); }
void *memalign(size_t alignment, size_t size) { return counted(__libc_memalign(alignment, size)); }
void *aligned_alloc(size_t alignment, size_t size) { return counted(__libc_memalign(alignment, size)); }

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *pointer = counted(__libc_memalign(alignment, size));
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}

int ac_available(void) { return 1; }
#else
int ac_available(void) { return 0; }
#endif

void ac_start_counting(void) {
    allocations = 0;
    bytes = 0;
    counting = 1;
}

uint64_t ac_stop_counting(void) {
    counting = 0;
    return allocations;
}

uint64_t ac_counted_bytes(void) { return bytes; }
