/*
 * threadpool.c - persistent workers and a spin-then-sleep barrier (see threadpool.h).
 *
 * Wake-ups are lost-free without taking a lock on the fast path: a waiter
 * announces itself in `sleepers` (under the mutex) before re-checking the
 * condition, and a releaser publishes the new state before reading
 * `sleepers`; with sequentially consistent atomics at least one of the two
 * sees the other, and a releaser that sees a sleeper broadcasts under the mutex.
 */
#include <sched.h> /* sched_getaffinity */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "threadpool.h"

/* A waiter spins for a while, then sleeps on a condition variable (no sched_yield rounds:
 * on a machine shared with other busy processes, yielding handed the core to their spinning
 * threads and made a 2-thread decode graph 3-10x slower than sleeping at once).
 *
 * Spinning is bounded by time, not by a count of pause instructions: what one pause costs
 * varies a hundredfold (a few nanoseconds on bare metal; 100-140 ns measured in a KVM guest,
 * where pause loops exit to the hypervisor, so 4096 of them took 0.4-0.6 ms).
 *
 * How long is adaptive, per thread and per kind of wait: a spin that sees the change
 * doubles the thread's next budget (up to the maximum), one that times out halves it (down
 * to MIN_SPIN_NS).  On an idle machine the waits end within the spin and it stays at the
 * maximum; on a busy one the thread waited for is often not running, spinning only takes
 * the core it needs, and the budget falls within a few waits.  The maxima: BARRIER_SPIN_NS
 * bridges the gap between two nodes; JOB_SPIN_NS bridges the host's work between two
 * graphs of a decode loop (building, allocating, sampling), so that the next graph does not
 * start with wake-ups.
 *
 * Oversubscribed (more threads than CPUs this process may use) a waiter does not spin at
 * all: it would hold the core that the thread it waits for needs.  With llama.cpp's default
 * of 4 threads on 2 CPUs, spinning (then yielding) cost 80 ms per token of a tiny model. */
#define MIN_SPIN_NS 1000
#define BARRIER_SPIN_NS 100000
#define JOB_SPIN_NS 1000000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether n threads are more than the CPUs this process may use (counted once). */
static bool is_oversubscribed(int n) {
    static atomic_int online; /* 0 until counted */
    int cpus = atomic_load_explicit(&online, memory_order_relaxed);
    if (cpus == 0) {
        cpus = cpu_count_online();
        atomic_store_explicit(&online, cpus, memory_order_relaxed);
    }
    return n > cpus;
}

/* This thread's spin budgets (ns), adapted as described above. */
static _Thread_local uint64_t barrier_spin_ns = BARRIER_SPIN_NS, job_spin_ns = JOB_SPIN_NS;

/* Spin until *word differs from seen, for at most *budget_ns: true when it did, false when
 * the caller should sleep (*start_ns: when the wait began, for learn_from_sleep).  n: the
 * threads that share the wait; max_ns: the budget's cap. */
static bool await_change(atomic_uint *word, unsigned seen, int n, uint64_t *budget_ns, uint64_t max_ns,
                         uint64_t *start_ns) {
    *start_ns = 0;
    if (is_oversubscribed(n)) return atomic_load_explicit(word, memory_order_acquire) != seen;
    *start_ns = now_ns();
    const uint64_t end = *start_ns + *budget_ns;
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(word, memory_order_acquire) != seen) {
            *budget_ns = *budget_ns * 2 < max_ns ? *budget_ns * 2 : max_ns;
            return true;
        }
        cpu_relax();
        if (i % 16 == 0 && now_ns() > end) break;
    }
    *budget_ns = *budget_ns / 2 > MIN_SPIN_NS ? *budget_ns / 2 : MIN_SPIN_NS;
    return false;
}

/* After a sleep: a wait that ended within max_ns would have been caught by a long enough
 * spin, so the budget grows to twice that wait.  Without this a budget once halved down to
 * MIN_SPIN_NS stayed there (every later spin timed out), and on the H200 host's 16 threads
 * each node's barrier became a round of futex wake-ups: 12 ms per token where ggml takes 2. */
static void learn_from_sleep(uint64_t start_ns, uint64_t *budget_ns, uint64_t max_ns) {
    if (start_ns == 0) return; /* oversubscribed: never spins */
    const uint64_t waited = now_ns() - start_ns;
    if (waited < max_ns && 2 * waited > *budget_ns) *budget_ns = 2 * waited < max_ns ? 2 * waited : max_ns;
}

/* ----------------------------------------------------------- sleepers */

static void sleepers_init(struct cpu_sleepers *s) {
    atomic_init(&s->count, 0);
    pthread_mutex_init(&s->mutex, NULL);
    pthread_cond_init(&s->cond, NULL);
}

static void sleepers_destroy(struct cpu_sleepers *s) {
    pthread_mutex_destroy(&s->mutex);
    pthread_cond_destroy(&s->cond);
}

/* Called after the word is published (always: force). */
static void sleepers_wake(struct cpu_sleepers *s, bool force) {
    if (force || atomic_load(&s->count) > 0) {
        pthread_mutex_lock(&s->mutex);
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->mutex);
    }
}

/* Whether word's value v ends a wait for x: v != x (differs), else v >= x. */
static inline bool wait_over(unsigned v, unsigned x, bool differs) { return differs ? v != x : v >= x; }

/* Sleep until wait_over(*word, x, differs); returns the word's value then. */
static unsigned sleep_until(struct cpu_sleepers *s, atomic_uint *word, unsigned x, bool differs) {
    unsigned v;
    pthread_mutex_lock(&s->mutex);
    atomic_fetch_add(&s->count, 1);
    while (!wait_over(v = atomic_load(word), x, differs)) pthread_cond_wait(&s->cond, &s->mutex);
    atomic_fetch_sub(&s->count, 1);
    pthread_mutex_unlock(&s->mutex);
    return v;
}

/* ------------------------------------------------------------ barrier */

void cpu_barrier_init(struct cpu_barrier *b) {
    atomic_init(&b->arrived, 0);
    atomic_init(&b->phase, 0);
    sleepers_init(&b->sleepers);
}

void cpu_barrier_destroy(struct cpu_barrier *b) { sleepers_destroy(&b->sleepers); }

void cpu_barrier_wait(struct cpu_barrier *b, int n) {
    if (n <= 1) return;
    const unsigned phase = atomic_load_explicit(&b->phase, memory_order_relaxed);
    if (atomic_fetch_add(&b->arrived, 1) == n - 1) { /* the last one releases the others */
        atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
        atomic_store(&b->phase, phase + 1);
        sleepers_wake(&b->sleepers, false);
        return;
    }
    uint64_t start;
    if (await_change(&b->phase, phase, n, &barrier_spin_ns, BARRIER_SPIN_NS, &start)) return;
    sleep_until(&b->sleepers, &b->phase, phase, true);
    learn_from_sleep(start, &barrier_spin_ns, BARRIER_SPIN_NS);
}

/* ------------------------------------------------------------ counter */

void cpu_counter_init(struct cpu_counter *c) {
    atomic_init(&c->value, 0);
    sleepers_init(&c->sleepers);
}

void cpu_counter_destroy(struct cpu_counter *c) { sleepers_destroy(&c->sleepers); }

/* The count is published before the sleepers are read, and a waiter announces itself before
 * re-reading the count (both sequentially consistent): as the barrier's, lost-free. */
void cpu_counter_raise(struct cpu_counter *c, unsigned v) {
    unsigned seen = atomic_load(&c->value);
    while (seen < v && !atomic_compare_exchange_weak(&c->value, &seen, v)) {}
    sleepers_wake(&c->sleepers, false);
}

void cpu_counter_wait(struct cpu_counter *c, unsigned v, int n) {
    unsigned seen;
    uint64_t start;
    while (!wait_over(seen = atomic_load_explicit(&c->value, memory_order_acquire), v, false))
        if (!await_change(&c->value, seen, n, &barrier_spin_ns, BARRIER_SPIN_NS, &start)) break;
    if (wait_over(seen, v, false)) return;
    sleep_until(&c->sleepers, &c->value, v, false);
    learn_from_sleep(start, &barrier_spin_ns, BARRIER_SPIN_NS);
}

/* --------------------------------------------------------------- pool */

struct cpu_worker {
    struct ggml_threadpool *pool;
    int ith;
    pthread_t thread;
};

struct ggml_threadpool {
    int n_threads;
    struct cpu_worker *workers; /* n_threads - 1 of them */
    pthread_mutex_t run_mutex;  /* one job at a time */

    /* the current job, stable from the generation bump until `done` */
    cpu_job_fn job_fn;
    void *job_arg;
    int job_nth;
    atomic_uint generation;
    atomic_bool stop;
    atomic_bool paused;

    struct cpu_sleepers sleepers; /* workers asleep waiting for a job */
    struct cpu_barrier done;      /* every thread of the pool, at the end of each job */
};

/* Wait until the generation differs from seen (or the pool stops); returns it. */
static unsigned wait_for_job(struct ggml_threadpool *pool, unsigned seen) {
    uint64_t start = 0;
    if (!atomic_load_explicit(&pool->paused, memory_order_relaxed) &&
        await_change(&pool->generation, seen, pool->n_threads, &job_spin_ns, JOB_SPIN_NS, &start))
        return atomic_load_explicit(&pool->generation, memory_order_acquire);
    const unsigned g = sleep_until(&pool->sleepers, &pool->generation, seen, true);
    learn_from_sleep(start, &job_spin_ns, JOB_SPIN_NS);
    return g;
}

static void *worker_main(void *arg) {
    struct cpu_worker *w = arg;
    struct ggml_threadpool *pool = w->pool;
    unsigned seen = 0;
    for (;;) {
        seen = wait_for_job(pool, seen);
        if (atomic_load(&pool->stop)) break;
        if (w->ith < pool->job_nth) pool->job_fn(pool->job_arg, w->ith, pool->job_nth);
        cpu_barrier_wait(&pool->done, pool->n_threads);
    }
    return NULL;
}

struct ggml_threadpool *cpu_pool_new(int n_threads, bool paused) {
    if (n_threads < 1 || n_threads > GGML_MAX_N_THREADS) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "CPU thread pool: %d threads (must be 1..%d)", n_threads, GGML_MAX_N_THREADS);
        return NULL;
    }
    struct ggml_threadpool *pool = calloc(1, sizeof *pool);
    struct cpu_worker *workers = calloc((size_t)n_threads, sizeof *workers);
    if (!pool || !workers) {
        free(pool);
        free(workers);
        ggmlc_set_error(GGMLC_ERR_NOMEM, "CPU thread pool: out of memory");
        return NULL;
    }
    pool->n_threads = n_threads;
    pool->workers = workers;
    atomic_init(&pool->generation, 0);
    atomic_init(&pool->stop, false);
    atomic_init(&pool->paused, paused);
    sleepers_init(&pool->sleepers);
    pthread_mutex_init(&pool->run_mutex, NULL);
    cpu_barrier_init(&pool->done);
    for (int i = 1; i < n_threads; i++) {
        workers[i - 1] = (struct cpu_worker){pool, i, 0};
        if (pthread_create(&workers[i - 1].thread, NULL, worker_main, &workers[i - 1]) != 0) {
            pool->n_threads = i; /* free() joins the ones that started */
            cpu_pool_free(pool);
            ggmlc_set_error(GGMLC_ERR_NOMEM, "CPU thread pool: cannot start thread %d of %d", i, n_threads);
            return NULL;
        }
    }
    return pool;
}

void cpu_pool_free(struct ggml_threadpool *pool) {
    if (!pool) return;
    atomic_store(&pool->stop, true);
    atomic_fetch_add(&pool->generation, 1);
    sleepers_wake(&pool->sleepers, true);
    for (int i = 1; i < pool->n_threads; i++) pthread_join(pool->workers[i - 1].thread, NULL);
    cpu_barrier_destroy(&pool->done);
    sleepers_destroy(&pool->sleepers);
    pthread_mutex_destroy(&pool->run_mutex);
    free(pool->workers);
    free(pool);
}

void cpu_pool_set_affinity(struct ggml_threadpool *pool, const bool *cpumask, bool strict) {
    cpu_set_t all;
    CPU_ZERO(&all);
    int cpus[GGML_MAX_N_THREADS], n = 0;
    for (int c = 0; c < GGML_MAX_N_THREADS && c < CPU_SETSIZE; c++)
        if (cpumask[c]) {
            CPU_SET(c, &all);
            cpus[n++] = c;
        }
    if (n == 0) return;
    for (int i = 1; i < pool->n_threads; i++) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[i % n], &one);
        pthread_setaffinity_np(pool->workers[i - 1].thread, sizeof(cpu_set_t), strict ? &one : &all);
    }
}

int cpu_pool_n_threads(const struct ggml_threadpool *pool) { return pool->n_threads; }

void cpu_pool_pause(struct ggml_threadpool *pool) { atomic_store(&pool->paused, true); }

void cpu_pool_resume(struct ggml_threadpool *pool) { atomic_store(&pool->paused, false); }

void cpu_pool_run(struct ggml_threadpool *pool, int nth, cpu_job_fn fn, void *arg) {
    if (nth > pool->n_threads) nth = pool->n_threads;
    if (nth < 1) nth = 1;
    pthread_mutex_lock(&pool->run_mutex);
    atomic_store(&pool->paused, false);
    if (nth == 1) { /* nothing to share: the workers need not even wake up */
        fn(arg, 0, 1);
    } else {
        pool->job_fn = fn;
        pool->job_arg = arg;
        pool->job_nth = nth;
        atomic_fetch_add(&pool->generation, 1);
        sleepers_wake(&pool->sleepers, false);
        fn(arg, 0, nth);
        cpu_barrier_wait(&pool->done, pool->n_threads);
    }
    pthread_mutex_unlock(&pool->run_mutex);
}

int cpu_count_online(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
