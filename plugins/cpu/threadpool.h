/*
 * threadpool.h - the CPU plugin's persistent worker threads.
 *
 * A pool of n threads runs jobs: the calling thread is task 0 and n-1
 * workers are the others.  Between jobs the workers spin briefly (a new job
 * usually follows soon) and then sleep on a condition variable.  The
 * barrier has the same two-phase wait, so that a graph's nodes are
 * separated by a few hundred nanoseconds when the threads are busy, yet
 * idle threads cost no CPU time.
 */
#ifndef GGMLC_CPU_THREADPOOL_H
#define GGMLC_CPU_THREADPOOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "cpu-impl.h"

/* Threads asleep until a word changes (threadpool.c's spin-then-sleep waits). */
struct cpu_sleepers {
    atomic_int count;
    pthread_mutex_t mutex;
    pthread_cond_t  cond;
};

/* A reusable barrier for up to all threads of a pool. */
struct cpu_barrier {
    atomic_int  arrived;
    atomic_uint phase;
    struct cpu_sleepers sleepers;
};

CPU_HIDDEN void cpu_barrier_init(struct cpu_barrier *b);
CPU_HIDDEN void cpu_barrier_destroy(struct cpu_barrier *b);
/* Wait until n threads (the same n for every thread of one round) have arrived. */
CPU_HIDDEN void cpu_barrier_wait(struct cpu_barrier *b, int n);

/* A count that only grows, and waiting until it reaches a value (the same spin-then-sleep
 * wait as the barrier's, but a waiter needs only the count, not the other threads: a thread
 * that another process keeps off its core holds up nobody that does not need its work). */
struct cpu_counter {
    atomic_uint value;
    struct cpu_sleepers sleepers;
};
CPU_HIDDEN void cpu_counter_init(struct cpu_counter *c);
CPU_HIDDEN void cpu_counter_destroy(struct cpu_counter *c);
/* Raise the count to v (never lower it) and wake the threads waiting for it. */
CPU_HIDDEN void cpu_counter_raise(struct cpu_counter *c, unsigned v);
/* Return once the count is at least v; n: the threads that may wait on it (whether spinning
 * is worth it). */
CPU_HIDDEN void cpu_counter_wait(struct cpu_counter *c, unsigned v, int n);

/* A job: fn(arg, ith, nth) is called on nth threads at once. */
typedef void (*cpu_job_fn)(void *arg, int ith, int nth);

/* A pool of n_threads threads (including the caller of cpu_pool_run); NULL with
 * ggmlc_set_error when threads cannot be created.  paused: workers start asleep. */
CPU_HIDDEN struct ggml_threadpool *cpu_pool_new(int n_threads, bool paused);
CPU_HIDDEN void cpu_pool_free(struct ggml_threadpool *pool);
/* Pin the workers to the CPUs set in cpumask (GGML_MAX_N_THREADS entries): all of them
 * each, or (strict) worker i to the i-th of them.  No CPU set: the OS decides.  A hint:
 * CPUs that do not exist are ignored. */
CPU_HIDDEN void cpu_pool_set_affinity(struct ggml_threadpool *pool, const bool *cpumask, bool strict);
CPU_HIDDEN int  cpu_pool_n_threads(const struct ggml_threadpool *pool);
/* Paused workers never spin; a run resumes the pool. */
CPU_HIDDEN void cpu_pool_pause(struct ggml_threadpool *pool);
CPU_HIDDEN void cpu_pool_resume(struct ggml_threadpool *pool);
/* Run fn on min(nth, pool size) threads and return when all of them finished
 * (nth == 1: on the caller alone).  Calls on one pool from several threads are serialised. */
CPU_HIDDEN void cpu_pool_run(struct ggml_threadpool *pool, int nth, cpu_job_fn fn, void *arg);

/* Logical CPUs this process may run on (at least 1). */
CPU_HIDDEN int cpu_count_online(void);

#endif /* GGMLC_CPU_THREADPOOL_H */
