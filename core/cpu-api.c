/*
 * cpu-api.c - ggml-cpu.h's backend, graph and thread-pool functions.
 *
 * The CPU plugin does the work; these functions find its registry ("cpu")
 * in the configured registry and call the entry points it offers through
 * get_proc_address (the CPU role of ggmlc-plugin.h).  Looked up on every call: cheap, and
 * right even after ggmlc_shutdown reloaded the plugins.
 */
#include <stdio.h>
#include <stdlib.h>

#include "backend-impl.h"
#include "ggml-cpu.h"
#include "ggmlc-plugin.h" /* the CPU-role contract */

#define CPU_REG_NAME GGMLC_CPU_ROLE_REG_NAME

ggml_backend_reg_t ggml_backend_cpu_reg(void) { return ggml_backend_reg_by_name(CPU_REG_NAME); }

void ggml_cpu_init(void) { ggmlc_init(); }

/* True when reg serves the CPU-role contract version this library was built for;
 * otherwise false with an error naming func and both versions. */
static bool cpu_role_matches(const char *func, ggml_backend_reg_t reg) {
    const uint32_t *version = ggml_backend_reg_get_proc_address(reg, GGMLC_CPU_PROC_ROLE_VERSION);
    if (version && *version == GGMLC_CPU_ROLE_VERSION) return true;
    char served[16] = "none";
    if (version) snprintf(served, sizeof served, "%u", (unsigned)*version);
    ggmlc_set_error(GGMLC_ERR_PLUGIN,
                    "%s: the CPU plugin serves CPU-role contract version %s, this library needs %u",
                    func, served, (unsigned)GGMLC_CPU_ROLE_VERSION);
    return false;
}

/* The CPU plugin's entry point `name`, or NULL with an error naming func. */
static void *cpu_proc(const char *func, const char *name) {
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    if (!reg) {
        ggmlc_set_error(GGMLC_ERR_NOT_FOUND,
                        "%s: no CPU backend is configured or it failed to load", func);
        return NULL;
    }
    if (!cpu_role_matches(func, reg)) return NULL;
    void *fn = ggml_backend_reg_get_proc_address(reg, name);
    if (!fn) ggmlc_set_error(GGMLC_ERR_PLUGIN, "%s: the CPU plugin lacks this entry point", func);
    return fn;
}

/* ---------------------------------------------------------------- backend */

ggml_backend_t ggml_backend_cpu_init(void) {
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) {
        ggmlc_set_error(GGMLC_ERR_NOT_FOUND, "ggml_backend_cpu_init: no CPU backend is configured or it failed to load");
        return NULL;
    }
    return ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL);
}

bool ggml_backend_is_cpu(ggml_backend_t backend) {
    return backend && backend->device && backend->device->reg && backend->device->reg == ggml_backend_cpu_reg();
}

void ggml_backend_cpu_set_n_threads(ggml_backend_t backend_cpu, int n_threads) {
    if (!ggml_backend_is_cpu(backend_cpu)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_cpu_set_n_threads: not a CPU backend");
        return;
    }
    if (backend_cpu->iface.set_n_threads) backend_cpu->iface.set_n_threads(backend_cpu, n_threads);
}

void ggml_backend_cpu_set_threadpool(ggml_backend_t backend_cpu, ggml_threadpool_t threadpool) {
    if (!ggml_backend_is_cpu(backend_cpu)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_cpu_set_threadpool: not a CPU backend");
        return;
    }
    ggmlc_cpu_set_threadpool_t fn = (ggmlc_cpu_set_threadpool_t)cpu_proc(__func__, GGMLC_CPU_PROC_SET_THREADPOOL);
    if (fn) fn(backend_cpu, threadpool);
}

void ggml_backend_cpu_set_abort_callback(ggml_backend_t backend_cpu, ggml_abort_callback abort_callback, void *abort_callback_data) {
    if (!ggml_backend_is_cpu(backend_cpu)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_cpu_set_abort_callback: not a CPU backend");
        return;
    }
    if (backend_cpu->iface.set_abort_callback) backend_cpu->iface.set_abort_callback(backend_cpu, abort_callback, abort_callback_data);
}

void ggml_backend_cpu_set_use_ref(ggml_backend_t backend_cpu, bool use_ref) {
    if (!ggml_backend_is_cpu(backend_cpu))
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_cpu_set_use_ref: not a CPU backend");
    (void)use_ref; /* one set of kernels: see the header */
}

/* ----------------------------------------------------------------- graphs */

struct ggml_cplan ggml_graph_plan(const struct ggml_cgraph *cgraph, int n_threads, struct ggml_threadpool *threadpool) {
    ggmlc_cpu_graph_plan_t fn = (ggmlc_cpu_graph_plan_t)cpu_proc(__func__, GGMLC_CPU_PROC_GRAPH_PLAN);
    if (fn) return fn(cgraph, n_threads, threadpool);
    struct ggml_cplan none;
    memset(&none, 0, sizeof none);
    none.n_threads = n_threads > 0 ? n_threads : 1;
    none.threadpool = threadpool;
    return none;
}

enum ggml_status ggml_graph_compute(struct ggml_cgraph *cgraph, struct ggml_cplan *cplan) {
    if (cgraph && (!ggmlc__graph_complete(cgraph, "ggml_graph_compute") ||
                   !ggmlc__graph_buffers_live(cgraph, "ggml_graph_compute")))
        return GGML_STATUS_FAILED;
    ggmlc_cpu_graph_compute_t fn = (ggmlc_cpu_graph_compute_t)cpu_proc(__func__, GGMLC_CPU_PROC_GRAPH_COMPUTE);
    return fn ? fn(cgraph, cplan) : GGML_STATUS_FAILED;
}

enum ggml_status ggml_graph_compute_with_ctx(struct ggml_context *ctx, struct ggml_cgraph *cgraph, int n_threads) {
    struct ggml_cplan plan = ggml_graph_plan(cgraph, n_threads, NULL);
    void *heap = NULL;
    if (plan.work_size > 0) {
        /* the context's arena when it has room, so that repeated calls reuse nothing but
         * the arena the caller sized; otherwise the heap, for this call only */
        const size_t used = ctx ? ggml_used_mem(ctx) : 0;
        if (ctx && !ctx->no_alloc && used + plan.work_size + GGML_OBJECT_SIZE + GGML_MEM_ALIGN <= ctx->mem_size)
            plan.work_data = ggml_new_buffer(ctx, plan.work_size);
        if (!plan.work_data) {
            ggmlc_clear_error();
            plan.work_data = heap = malloc(plan.work_size);
            if (!heap) {
                ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_graph_compute_with_ctx: cannot allocate %zu work bytes", plan.work_size);
                return GGML_STATUS_ALLOC_FAILED;
            }
        }
    }
    const enum ggml_status st = ggml_graph_compute(cgraph, &plan);
    free(heap);
    return st;
}

/* ------------------------------------------------------------ thread pools */

struct ggml_threadpool_params ggml_threadpool_params_default(int n_threads) {
    struct ggml_threadpool_params p;
    ggml_threadpool_params_init(&p, n_threads);
    return p;
}

void ggml_threadpool_params_init(struct ggml_threadpool_params *p, int n_threads) {
    memset(p, 0, sizeof *p);
    p->n_threads = n_threads;
    p->prio = GGML_SCHED_PRIO_NORMAL;
    p->poll = 50;
    p->strict_cpu = false;
    p->paused = false;
}

bool ggml_threadpool_params_match(const struct ggml_threadpool_params *p0, const struct ggml_threadpool_params *p1) {
    return p0->n_threads == p1->n_threads && p0->prio == p1->prio && p0->poll == p1->poll &&
           p0->strict_cpu == p1->strict_cpu && memcmp(p0->cpumask, p1->cpumask, sizeof p0->cpumask) == 0;
}

struct ggml_threadpool *ggml_threadpool_new(struct ggml_threadpool_params *params) {
    ggmlc_cpu_threadpool_new_t fn = (ggmlc_cpu_threadpool_new_t)cpu_proc(__func__, GGMLC_CPU_PROC_THREADPOOL_NEW);
    return fn ? fn(params) : NULL;
}

void ggml_threadpool_free(struct ggml_threadpool *threadpool) {
    if (!threadpool) return;
    ggmlc_cpu_threadpool_fn_t fn = (ggmlc_cpu_threadpool_fn_t)cpu_proc(__func__, GGMLC_CPU_PROC_THREADPOOL_FREE);
    if (fn) fn(threadpool);
}

int ggml_threadpool_get_n_threads(struct ggml_threadpool *threadpool) {
    ggmlc_cpu_threadpool_size_t fn = (ggmlc_cpu_threadpool_size_t)cpu_proc(__func__, GGMLC_CPU_PROC_THREADPOOL_SIZE);
    return fn && threadpool ? fn(threadpool) : 0;
}

void ggml_threadpool_pause(struct ggml_threadpool *threadpool) {
    ggmlc_cpu_threadpool_fn_t fn = (ggmlc_cpu_threadpool_fn_t)cpu_proc(__func__, GGMLC_CPU_PROC_THREADPOOL_PAUSE);
    if (fn && threadpool) fn(threadpool);
}

void ggml_threadpool_resume(struct ggml_threadpool *threadpool) {
    ggmlc_cpu_threadpool_fn_t fn = (ggmlc_cpu_threadpool_fn_t)cpu_proc(__func__, GGMLC_CPU_PROC_THREADPOOL_RESUME);
    if (fn && threadpool) fn(threadpool);
}

/* ggml_backend_dev_get_extra_bufts of a CPU plugin that does not answer it itself: none.
 * (ggmlc's CPU plugin answers it first, with its CPU_REPACK buffer type: plugins/cpu/repack.h.) */
static ggml_backend_buffer_type_t *cpu_extra_bufts(ggml_backend_dev_t device) {
    static ggml_backend_buffer_type_t none[] = {NULL};
    (void)device;
    return none;
}

void *ggmlc__cpu_reg_proc(const char *name) {
    static const struct {
        const char *name;
        void *fn;
    } procs[] = {
        {"ggml_threadpool_new", (void *)ggml_threadpool_new},
        {"ggml_threadpool_free", (void *)ggml_threadpool_free},
        {"ggml_backend_cpu_numa_init", (void *)ggml_numa_init},
        {"ggml_backend_cpu_is_numa", (void *)ggml_is_numa},
        {"ggml_backend_cpu_set_use_ref", (void *)ggml_backend_cpu_set_use_ref},
        {"ggml_backend_dev_get_extra_bufts", (void *)cpu_extra_bufts},
    };
    for (size_t i = 0; name && i < sizeof procs / sizeof procs[0]; i++)
        if (strcmp(procs[i].name, name) == 0) return procs[i].fn;
    return NULL;
}

/* ------------------------------------------------------------ type traits */

const struct ggml_type_traits_cpu *ggml_get_type_traits_cpu(enum ggml_type type) {
    static const struct ggml_type_traits_cpu none = {NULL, NULL, GGML_TYPE_COUNT, 1};
    ggmlc_cpu_type_traits_t fn = (ggmlc_cpu_type_traits_t)cpu_proc(__func__, GGMLC_CPU_PROC_TYPE_TRAITS);
    return fn ? fn(type) : &none;
}
