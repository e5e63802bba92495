#ifndef FLOW_BENCHMARKS_LIBUV_REFERENCE_H
#define FLOW_BENCHMARKS_LIBUV_REFERENCE_H

#include <stdint.h>

/// P5: another thread posts `count` tasks (a function pointer and an argument each, no allocation) to
/// a loop running on its own thread: a mutex-guarded array, and `uv_async_send` when the array goes
/// from empty to non-empty. Returns nanoseconds from the first post until the last task ran.
uint64_t uvref_post_from_thread(int count);

/// P6: a task on the loop posts `count` tasks to the same loop: an unlocked array drained by a
/// `uv_async_t` callback. Returns nanoseconds from the first post until the last task ran.
uint64_t uvref_post_on_loop(int count);

/// P7 timings, in nanoseconds.
typedef struct {
    uint64_t scheduleNanoseconds;
    uint64_t untilLastFiredNanoseconds;
} uvref_timer_run;

/// P7: starts `count` timers, one `malloc`ed `uv_timer_t` each, due `delays[i]` milliseconds from
/// now; each closes (and frees) itself when it fires. Returns the time it took to start them all,
/// and the time from the first start until the last one fired.
uvref_timer_run uvref_timers_fire_all(int count, const uint64_t *delays);

/// P7: starts `count` timers like uvref_timers_fire_all, then cancels them all (`uv_timer_stop`,
/// `uv_close`, and the close callbacks that free them). Returns the nanoseconds cancelling took.
/// When `allocations` is not NULL, counts the allocations of starting the timers into
/// `allocations[0]` and of cancelling them into `allocations[1]`.
uint64_t uvref_timers_cancel_all(int count, const uint64_t *delays, uint64_t *allocations);

/// P8: the heap bytes one pending timer holds: starts `count` timers, measures the heap, and
/// cleans up. Counted with mc_heap_bytes_in_use().
double uvref_bytes_per_pending_timer(int count);

#endif
