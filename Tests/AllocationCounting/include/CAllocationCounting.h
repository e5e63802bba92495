#ifndef FLOW_ALLOCATION_COUNTING_H
#define FLOW_ALLOCATION_COUNTING_H

#include <stdint.h>

/// Whether allocations can be counted in this build: not under a sanitizer, whose runtime defines
/// malloc and friends itself.
int ac_available(void);

/// Starts counting the calling thread's calls to malloc, calloc, realloc and the aligned allocators
/// (other threads' calls are not counted).
void ac_start_counting(void);

/// Stops counting on the calling thread and returns its allocations since ac_start_counting().
uint64_t ac_stop_counting(void);

/// The bytes of the malloc chunks (headers included) the calling thread allocated while it counted,
/// as of its last ac_stop_counting().
uint64_t ac_counted_bytes(void);

#endif
