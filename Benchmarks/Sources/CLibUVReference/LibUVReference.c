// The raw-libuv side of the comparison: what a C program on libuv would write for each workload,
// kept as lean as a careful C programmer would make it.
#define _GNU_SOURCE
#include "LibUVReference.h"

#include <MallocCounter.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

typedef struct {
    void (*function)(void *argument);
    void *argument;
} task;

typedef struct {
    task *items;
    size_t count;
    size_t capacity;
} task_array;

static inline void task_array_append(task_array *array, task value) {
    if (array->count == array->capacity) {
        array->capacity = array->capacity ? array->capacity * 2 : 64;
        array->items = realloc(array->items, array->capacity * sizeof(task));
    }
    array->items[array->count++] = value;
}

// MARK: P5: posting from another thread

typedef struct {
    uv_loop_t loop;
    uv_async_t wake;
    pthread_mutex_t lock;
    task_array submitted;
    task_array running;
    sem_t finished;
    uint64_t counter;
} cross_thread_queue;

static void drain_submitted(uv_async_t *handle) {
    cross_thread_queue *queue = handle->data;
    pthread_mutex_lock(&queue->lock);
    task_array taken = queue->submitted;
    queue->submitted = queue->running;
    pthread_mutex_unlock(&queue->lock);
    for (size_t index = 0; index < taken.count; index++) {
        taken.items[index].function(taken.items[index].argument);
    }
    taken.count = 0;
    queue->running = taken;
}

static void post_from_outside(cross_thread_queue *queue, task value) {
    pthread_mutex_lock(&queue->lock);
    task_array_append(&queue->submitted, value);
    int is_first = queue->submitted.count == 1;
    pthread_mutex_unlock(&queue->lock);
    if (is_first) {
        uv_async_send(&queue->wake);
    }
}

static void count_task(void *argument) {
    ((cross_thread_queue *)argument)->counter++;
}

static void finish_cross_thread(void *argument) {
    cross_thread_queue *queue = argument;
    uv_close((uv_handle_t *)&queue->wake, NULL);
    sem_post(&queue->finished);
}

static void *run_loop_thread(void *argument) {
    uv_run(argument, UV_RUN_DEFAULT);
    return NULL;
}

uint64_t uvref_post_from_thread(int count) {
    cross_thread_queue queue;
    memset(&queue, 0, sizeof queue);
    uv_loop_init(&queue.loop);
    uv_async_init(&queue.loop, &queue.wake, drain_submitted);
    queue.wake.data = &queue;
    pthread_mutex_init(&queue.lock, NULL);
    sem_init(&queue.finished, 0, 0);
    pthread_t thread;
    pthread_create(&thread, NULL, run_loop_thread, &queue.loop);

    uint64_t start = uv_hrtime();
    for (int index = 0; index < count; index++) {
        post_from_outside(&queue, (task){count_task, &queue});
    }
    post_from_outside(&queue, (task){finish_cross_thread, &queue});
    sem_wait(&queue.finished);
    uint64_t elapsed = uv_hrtime() - start;

    pthread_join(thread, NULL);
    if (queue.counter != (uint64_t)count) abort();
    uv_loop_close(&queue.loop);
    pthread_mutex_destroy(&queue.lock);
    sem_destroy(&queue.finished);
    free(queue.submitted.items);
    free(queue.running.items);
    return elapsed;
}

// MARK: P6: posting on the loop

typedef struct {
    uv_loop_t loop;
    uv_async_t wake;
    uv_async_t start;
    task_array queued;
    task_array running;
    int count;
    uint64_t counter;
    uint64_t started;
    uint64_t finished;
} loop_queue;

static void drain_queued(uv_async_t *handle) {
    loop_queue *queue = handle->data;
    task_array taken = queue->queued;
    queue->queued = queue->running;
    for (size_t index = 0; index < taken.count; index++) {
        taken.items[index].function(taken.items[index].argument);
    }
    taken.count = 0;
    queue->running = taken;
}

static void post_on_loop(loop_queue *queue, task value) {
    task_array_append(&queue->queued, value);
    if (queue->queued.count == 1) {
        uv_async_send(&queue->wake);
    }
}

static void count_loop_task(void *argument) {
    ((loop_queue *)argument)->counter++;
}

static void finish_loop_queue(void *argument) {
    loop_queue *queue = argument;
    queue->finished = uv_hrtime();
    uv_close((uv_handle_t *)&queue->wake, NULL);
}

static void start_posting(uv_async_t *handle) {
    loop_queue *queue = handle->data;
    uv_close((uv_handle_t *)&queue->start, NULL);
    queue->started = uv_hrtime();
    for (int index = 0; index < queue->count; index++) {
        post_on_loop(queue, (task){count_loop_task, queue});
    }
    post_on_loop(queue, (task){finish_loop_queue, queue});
}

uint64_t uvref_post_on_loop(int count) {
    loop_queue queue;
    memset(&queue, 0, sizeof queue);
    queue.count = count;
    uv_loop_init(&queue.loop);
    uv_async_init(&queue.loop, &queue.wake, drain_queued);
    uv_async_init(&queue.loop, &queue.start, start_posting);
    queue.wake.data = &queue;
    queue.start.data = &queue;
    uv_async_send(&queue.start);
    uv_run(&queue.loop, UV_RUN_DEFAULT);
    if (queue.counter != (uint64_t)count) abort();
    uv_loop_close(&queue.loop);
    free(queue.queued.items);
    free(queue.running.items);
    return queue.finished - queue.started;
}

// MARK: P7, P8: timers

typedef struct {
    uv_loop_t loop;
    uv_async_t start;
    int count;
    int fired;
    const uint64_t *delays;
    uv_timer_t **timers;
    uint64_t started;
    uint64_t scheduled;
    uint64_t lastFired;
    int cancel;
    uint64_t cancelled;
    uint64_t *allocations;
} timer_run;

static void free_handle(uv_handle_t *handle) {
    free(handle);
}

static void timer_fired(uv_timer_t *timer) {
    timer_run *run = timer->data;
    run->fired++;
    if (run->fired == run->count) {
        run->lastFired = uv_hrtime();
    }
    uv_close((uv_handle_t *)timer, free_handle);
}

static void start_timers(timer_run *run) {
    run->started = uv_hrtime();
    for (int index = 0; index < run->count; index++) {
        uv_timer_t *timer = malloc(sizeof(uv_timer_t));
        uv_timer_init(&run->loop, timer);
        timer->data = run;
        uv_timer_start(timer, timer_fired, run->delays[index], 0);
        if (run->timers) run->timers[index] = timer;
    }
    run->scheduled = uv_hrtime();
}

static void start_timer_run(uv_async_t *handle) {
    timer_run *run = handle->data;
    uv_close((uv_handle_t *)&run->start, NULL);
    if (run->allocations) mc_start_counting();
    start_timers(run);
    if (run->allocations) run->allocations[0] = mc_stop_counting();
    if (run->cancel) {
        if (run->allocations) mc_start_counting();
        uint64_t begin = uv_hrtime();
        for (int index = 0; index < run->count; index++) {
            uv_timer_stop(run->timers[index]);
            uv_close((uv_handle_t *)run->timers[index], free_handle);
        }
        // The close callbacks, which free the timers, run on the loop's next turn: include them.
        uv_run(&run->loop, UV_RUN_NOWAIT);
        run->cancelled = uv_hrtime() - begin;
        if (run->allocations) run->allocations[1] = mc_stop_counting();
    }
}

static void timer_run_init(timer_run *run, int count, const uint64_t *delays, int cancel) {
    memset(run, 0, sizeof *run);
    run->count = count;
    run->delays = delays;
    run->cancel = cancel;
    if (cancel) run->timers = malloc(sizeof(uv_timer_t *) * (size_t)count);
    uv_loop_init(&run->loop);
    uv_async_init(&run->loop, &run->start, start_timer_run);
    run->start.data = run;
    uv_async_send(&run->start);
}

uvref_timer_run uvref_timers_fire_all(int count, const uint64_t *delays) {
    timer_run run;
    timer_run_init(&run, count, delays, 0);
    uv_run(&run.loop, UV_RUN_DEFAULT);
    if (run.fired != count) abort();
    uv_loop_close(&run.loop);
    return (uvref_timer_run){run.scheduled - run.started, run.lastFired - run.started};
}

uint64_t uvref_timers_cancel_all(int count, const uint64_t *delays, uint64_t *allocations) {
    timer_run run;
    timer_run_init(&run, count, delays, 1);
    run.allocations = allocations;
    uv_run(&run.loop, UV_RUN_DEFAULT);
    if (run.fired != 0) abort();
    uv_loop_close(&run.loop);
    free(run.timers);
    return run.cancelled;
}

double uvref_bytes_per_pending_timer(int count) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    uv_timer_t **timers = malloc(sizeof(uv_timer_t *) * (size_t)count);
    uint64_t before = mc_heap_bytes_in_use();
    for (int index = 0; index < count; index++) {
        uv_timer_t *timer = malloc(sizeof(uv_timer_t));
        uv_timer_init(&loop, timer);
        uv_timer_start(timer, timer_fired, 10000 + (uint64_t)index % 1000, 0);
        timers[index] = timer;
    }
    uint64_t after = mc_heap_bytes_in_use();
    for (int index = 0; index < count; index++) {
        uv_timer_stop(timers[index]);
        uv_close((uv_handle_t *)timers[index], free_handle);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    free(timers);
    return (double)(after - before) / count;
}
