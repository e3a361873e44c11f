/*
 * cpu-backend.c - the CPU backend (stream) and ggml_graph_plan/compute.
 *
 * A backend owns a thread pool of its thread count (made on first use,
 * remade when the count changes) unless the user lent it one, and a work
 * buffer that grows to the largest graph it computed.  ggml_graph_compute
 * without a pool uses one cached pool; a second caller that finds it busy
 * gets a pool of its own for that call.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu-backend.h"
#include "graph.h"
#include "threadpool.h"

#define WORK_ALIGN 64

static atomic_int default_threads = 1;

void cpu_set_default_threads(int n_threads) { atomic_store(&default_threads, n_threads < 1 ? 1 : n_threads); }
int cpu_default_threads(void) { return atomic_load(&default_threads); }

/* ------------------------------------------------ the shared default pool */

static pthread_mutex_t shared_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ggml_threadpool *shared_pool;

/* A pool of at least n threads: the shared one (returned locked) or a private one. */
static struct ggml_threadpool *acquire_pool(int n, bool *shared) {
    if (pthread_mutex_trylock(&shared_pool_lock) == 0) {
        if (!shared_pool || cpu_pool_n_threads(shared_pool) != n) {
            cpu_pool_free(shared_pool);
            shared_pool = cpu_pool_new(n, false);
        }
        if (shared_pool) {
            *shared = true;
            return shared_pool;
        }
        pthread_mutex_unlock(&shared_pool_lock);
        return NULL;
    }
    *shared = false;
    return cpu_pool_new(n, false);
}

static void release_pool(struct ggml_threadpool *pool, bool shared) {
    if (shared)
        pthread_mutex_unlock(&shared_pool_lock);
    else
        cpu_pool_free(pool);
}

void cpu_backend_shutdown(void) {
    pthread_mutex_lock(&shared_pool_lock);
    cpu_pool_free(shared_pool);
    shared_pool = NULL;
    pthread_mutex_unlock(&shared_pool_lock);
}

/* ---------------------------------------------- ggml_graph_plan / compute */

struct ggml_cplan cpu_proc_graph_plan(const struct ggml_cgraph *cgraph, int n_threads, struct ggml_threadpool *threadpool) {
    if (n_threads <= 0) n_threads = threadpool ? cpu_pool_n_threads(threadpool) : cpu_default_threads();
    if (n_threads > GGML_MAX_N_THREADS) n_threads = GGML_MAX_N_THREADS;
    struct ggml_cplan plan;
    memset(&plan, 0, sizeof plan);
    plan.n_threads = n_threads;
    plan.threadpool = threadpool;
    plan.work_size = cgraph ? cpu_graph_work_size((struct ggml_cgraph *)cgraph, n_threads) : 0;
    return plan;
}

enum ggml_status cpu_proc_graph_compute(struct ggml_cgraph *cgraph, struct ggml_cplan *cplan) {
    if (!cgraph || !cplan) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_graph_compute: NULL graph or plan");
        return GGML_STATUS_FAILED;
    }
    if (cplan->work_size > 0 && !cplan->work_data) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_graph_compute: the plan needs %zu bytes of work_data", cplan->work_size);
        return GGML_STATUS_FAILED;
    }
    int n = cplan->n_threads > 0 ? cplan->n_threads : cpu_default_threads();
    bool shared = false;
    struct ggml_threadpool *pool = cplan->threadpool;
    if (!pool && !(pool = acquire_pool(n, &shared))) return GGML_STATUS_ALLOC_FAILED;
    if (n > cpu_pool_n_threads(pool)) n = cpu_pool_n_threads(pool);
    const struct cpu_compute_params params = {pool, n, cplan->work_data, cplan->work_size,
                                              cplan->abort_callback, cplan->abort_callback_data, NULL};
    const enum ggml_status st = cpu_graph_compute(cgraph, &params);
    if (!cplan->threadpool) release_pool(pool, shared);
    return st;
}

/* ------------------------------------------------------------ thread pools */

struct ggml_threadpool *cpu_proc_threadpool_new(struct ggml_threadpool_params *params) {
    if (!params) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_threadpool_new: NULL params");
        return NULL;
    }
    struct ggml_threadpool *pool = cpu_pool_new(params->n_threads > 0 ? params->n_threads : cpu_default_threads(), params->paused);
    if (pool) cpu_pool_set_affinity(pool, params->cpumask, params->strict_cpu);
    return pool;
}

void cpu_proc_threadpool_free(struct ggml_threadpool *threadpool) { cpu_pool_free(threadpool); }
int cpu_proc_threadpool_size(struct ggml_threadpool *threadpool) { return threadpool ? cpu_pool_n_threads(threadpool) : 0; }
void cpu_proc_threadpool_pause(struct ggml_threadpool *threadpool) { if (threadpool) cpu_pool_pause(threadpool); }
void cpu_proc_threadpool_resume(struct ggml_threadpool *threadpool) { if (threadpool) cpu_pool_resume(threadpool); }

/* ---------------------------------------------------------------- backend */

struct cpu_backend {
    int n_threads;
    struct ggml_threadpool *pool; /* owned unless lent */
    bool pool_owned;
    ggml_abort_callback abort_callback;
    void *abort_callback_data;
    void *work;
    size_t work_size;
};

static const char *backend_name(ggml_backend_t backend) { return "CPU"; }

static void backend_free(ggml_backend_t backend) {
    struct cpu_backend *ctx = ggmlc_backend_context(backend);
    if (ctx->pool_owned) cpu_pool_free(ctx->pool);
    free(ctx->work);
    free(ctx);
}

static bool ensure_work(struct cpu_backend *ctx, size_t size) {
    if (size <= ctx->work_size) return true;
    void *mem = aligned_alloc(WORK_ALIGN, GGML_PAD(size, WORK_ALIGN));
    if (!mem) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "CPU backend: cannot allocate a work buffer of %zu bytes", size);
        return false;
    }
    free(ctx->work);
    ctx->work = mem;
    ctx->work_size = GGML_PAD(size, WORK_ALIGN);
    return true;
}

static enum ggml_status backend_graph_compute(ggml_backend_t backend, struct ggml_cgraph *cgraph) {
    struct cpu_backend *ctx = ggmlc_backend_context(backend);
    if (!ctx->pool) {
        ctx->pool = cpu_pool_new(ctx->n_threads, false);
        if (!ctx->pool) return GGML_STATUS_ALLOC_FAILED;
        ctx->pool_owned = true;
    }
    int n = ctx->n_threads < cpu_pool_n_threads(ctx->pool) ? ctx->n_threads : cpu_pool_n_threads(ctx->pool);
    if (!ensure_work(ctx, cpu_graph_work_size(cgraph, n))) return GGML_STATUS_ALLOC_FAILED;
    const struct cpu_compute_params params = {ctx->pool, n, ctx->work, ctx->work_size,
                                              ctx->abort_callback, ctx->abort_callback_data, ctx};
    return cpu_graph_compute(cgraph, &params);
}

void cpu_proc_set_n_threads(ggml_backend_t backend, int n_threads) {
    struct cpu_backend *ctx = ggmlc_backend_context(backend);
    if (n_threads <= 0) n_threads = cpu_default_threads();
    if (n_threads > GGML_MAX_N_THREADS) n_threads = GGML_MAX_N_THREADS;
    if (ctx->pool_owned && cpu_pool_n_threads(ctx->pool) != n_threads) {
        cpu_pool_free(ctx->pool);
        ctx->pool = NULL;
        ctx->pool_owned = false;
    }
    ctx->n_threads = n_threads;
}

void cpu_proc_set_threadpool(ggml_backend_t backend, ggml_threadpool_t threadpool) {
    struct cpu_backend *ctx = ggmlc_backend_context(backend);
    /* NULL keeps the backend's own pool: llama.cpp sets its (usually NULL) pool before every
     * graph, and freeing ours there started and stopped every worker thread per token. */
    if (threadpool == ctx->pool || (!threadpool && ctx->pool_owned)) return;
    if (ctx->pool_owned) cpu_pool_free(ctx->pool);
    ctx->pool = threadpool; /* NULL: back to an own pool, made on the next compute */
    ctx->pool_owned = false;
}

void cpu_proc_set_abort_callback(ggml_backend_t backend, ggml_abort_callback cb, void *data) {
    struct cpu_backend *ctx = ggmlc_backend_context(backend);
    ctx->abort_callback = cb;
    ctx->abort_callback_data = data;
}

static const struct ggmlc_backend_iface backend_iface = {
    .struct_size = sizeof(struct ggmlc_backend_iface),
    .get_name = backend_name,
    .free = backend_free,
    .graph_compute = backend_graph_compute,
    .set_n_threads = cpu_proc_set_n_threads,
    .set_abort_callback = cpu_proc_set_abort_callback,
};

ggml_backend_t cpu_backend_new(ggml_backend_dev_t dev, const char *params) {
    struct cpu_backend *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "CPU backend: out of memory");
        return NULL;
    }
    ctx->n_threads = cpu_default_threads();
    /* params: an optional thread count, "threads=N" or "N" */
    if (params && *params) {
        const char *v = strncmp(params, "threads=", 8) == 0 ? params + 8 : params;
        char *end;
        const long n = strtol(v, &end, 10);
        if (end != v && *end == '\0' && n > 0 && n <= GGML_MAX_N_THREADS) ctx->n_threads = (int)n;
    }
    ggml_backend_t backend = ggmlc_backend_new(dev, &backend_iface, ctx);
    if (!backend) free(ctx);
    return backend;
}
