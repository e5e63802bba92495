#ifndef FLOW_BENCHMARKS_MALLOC_COUNTER_H
#define FLOW_BENCHMARKS_MALLOC_COUNTER_H

#include <stdint.h>

/// Starts counting calls to malloc, calloc, realloc and the aligned allocators, from every thread.
void mc_start_counting(void);

/// Stops counting and returns the number of allocations since mc_start_counting().
uint64_t mc_stop_counting(void);

/// Bytes the C heap has handed out and not yet taken back, over all arenas (glibc's mallinfo2
/// `uordblks`: chunk sizes, headers included).
uint64_t mc_heap_bytes_in_use(void);

/// The size of the malloc chunk holding `pointer` (a block malloc returned), its header included.
uint64_t mc_chunk_size(const void *pointer);

#endif
