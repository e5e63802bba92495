// Defining malloc and friends in the executable makes the dynamic linker bind every library's calls
// (the Swift runtime, libuv, libdispatch, NIO's C code) to these, which count and then forward to
// glibc's own entry points. Counting is off unless a measurement turned it on, so that timed runs pay
// only for one predictable branch.
#define _GNU_SOURCE
#include "MallocCounter.h"

#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static atomic_int counting_enabled;
static atomic_uint_fast64_t allocation_count;

static inline void count_allocation(void) {
    if (atomic_load_explicit(&counting_enabled, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&allocation_count, 1, memory_order_relaxed);
    }
}

void *malloc(size_t size) {
    count_allocation();
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    count_allocation();
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    count_allocation();
    return __libc_realloc(pointer, size);
}

void free(void *pointer) {
    __libc_free(pointer);
}

void *memalign(size_t alignment, size_t size) {
    count_allocation();
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    count_allocation();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) {
        return EINVAL;
    }
    count_allocation();
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) {
        return ENOMEM;
    }
    *result = pointer;
    return 0;
}

void mc_start_counting(void) {
    atomic_store_explicit(&allocation_count, 0, memory_order_relaxed);
    atomic_store_explicit(&counting_enabled, 1, memory_order_seq_cst);
}

uint64_t mc_stop_counting(void) {
    atomic_store_explicit(&counting_enabled, 0, memory_order_seq_cst);
    return atomic_load_explicit(&allocation_count, memory_order_relaxed);
}

uint64_t mc_chunk_size(const void *pointer) {
    // glibc: a chunk is its usable size plus the 8-byte size field before it.
    return (uint64_t)malloc_usable_size((void *)pointer) + 8;
}

uint64_t mc_heap_bytes_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (uint64_t)info.uordblks;
}
