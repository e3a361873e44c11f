/*
 * sched.c - ggml_backend_sched_*: running one graph across several backends.
 * Planning (assignment, splits, copies) is in sched-plan.c; this file holds
 * the public API, plan reuse, allocation and computation.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched-impl.h"

/* -------------------------------------------------------- construction */

ggml_backend_sched_t ggml_backend_sched_new(ggml_backend_t *backends, ggml_backend_buffer_type_t *bufts, int n_backends,
                                            size_t graph_size, bool parallel, bool op_offload) {
    (void)graph_size; /* tables grow with the graph */
    (void)parallel;   /* splits run one after the other: plugins have no events to overlap them with */
    if (!backends || n_backends < 1 || n_backends > SCHED_MAX_BACKENDS) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_sched_new: between 1 and %d backends are needed, got %d",
                        SCHED_MAX_BACKENDS, n_backends);
        return NULL;
    }
    for (int i = 0; i < n_backends; i++) {
        if (!backends[i]) {
            ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_sched_new: backend %d is NULL", i);
            return NULL;
        }
    }
    if (ggml_backend_dev_type(ggml_backend_get_device(backends[n_backends - 1])) != GGML_BACKEND_DEVICE_TYPE_CPU) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_sched_new: the last backend must be the CPU, not %s",
                        ggml_backend_name(backends[n_backends - 1]));
        return NULL;
    }
    ggml_backend_sched_t sched = calloc(1, sizeof *sched);
    if (!sched) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_backend_sched_new: out of memory");
        return NULL;
    }
    sched->n_backends = n_backends;
    sched->op_offload = op_offload;
    sched->debug = ggmlc_debug_enabled("sched");
    sched->time_debug = ggmlc_debug_enabled("sched-time");
    for (int i = 0; i < n_backends; i++) {
        sched->backends[i] = backends[i];
        sched->bufts[i] = bufts && bufts[i] ? bufts[i] : ggml_backend_get_default_buffer_type(backends[i]);
        if (!ggml_backend_supports_buft(backends[i], sched->bufts[i])) {
            ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_sched_new: backend %s cannot use buffers of type %s",
                            ggml_backend_name(backends[i]), ggml_backend_buft_name(sched->bufts[i]));
            free(sched);
            return NULL;
        }
    }
    sched->galloc = ggml_gallocr_new_n(sched->bufts, n_backends);
    if (!sched->galloc) {
        free(sched);
        return NULL;
    }
    return sched;
}

void ggml_backend_sched_free(ggml_backend_sched_t sched) {
    if (!sched) return;
    ggml_gallocr_free(sched->galloc);
    ggml_free(sched->ctx);
    ggmlc__hash_set_free(&sched->hash);
    void *arrays[] = {sched->pinned, sched->pinned_ids, sched->assign, sched->split_of, sched->input_of, sched->input_split,
                      sched->clone_of, sched->cause, sched->splits, sched->inputs, sched->clones, sched->rewires, sched->node_ids,
                      sched->leaf_ids, sched->key, sched->props};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) free(arrays[i]);
    free(sched);
}

void ggml_backend_sched_reset(ggml_backend_sched_t sched) {
    if (!sched) return;
    /* The plan is kept, stale: the next graph is usually the same one rebuilt at the same
     * addresses, and plan_graph checks that before reusing it.  Pins are forgotten, so a
     * plan that had some cannot be reused. */
    sched->allocated = false;
    sched->stale = true;
    if (sched->n_pinned) sched->planned = false;
    sched->n_pinned = 0;
}

/* ----------------------------------------------------------- queries */

int ggml_backend_sched_get_n_backends(ggml_backend_sched_t sched) { return sched ? sched->n_backends : 0; }

ggml_backend_t ggml_backend_sched_get_backend(ggml_backend_sched_t sched, int i) {
    return sched && i >= 0 && i < sched->n_backends ? sched->backends[i] : NULL;
}

int ggml_backend_sched_get_n_splits(ggml_backend_sched_t sched) { return sched && sched->planned ? sched->n_splits : 0; }

/* A clone of a strided in-place result is copied back byte range for byte range, gaps
 * between its rows included: it starts as a copy of those bytes so that the gaps return unchanged. */
static bool clone_needs_prefill(const struct ggml_tensor *orig) {
    return !ggmlc_op_is_view(orig->op) && orig->view_src && !ggml_is_contiguous(orig);
}

/* Tensor copies one evaluation makes: inputs copied in, results copied back to the caller's
 * buffers (and strided in-place results copied aside first). */
int ggml_backend_sched_get_n_copies(ggml_backend_sched_t sched) {
    if (!sched || !sched->planned) return 0;
    int n = sched->n_inputs;
    for (int j = 0; j < sched->n_clones; j++)
        n += !ggmlc_op_is_view(sched->clones[j].orig->op) + clone_needs_prefill(sched->clones[j].orig);
    return n;
}

static int backend_index(ggml_backend_sched_t sched, ggml_backend_t backend) {
    for (int i = 0; sched && i < sched->n_backends; i++) {
        if (sched->backends[i] == backend) return i;
    }
    return -1;
}

ggml_backend_buffer_type_t ggml_backend_sched_get_buffer_type(ggml_backend_sched_t sched, ggml_backend_t backend) {
    const int i = backend_index(sched, backend);
    return i >= 0 ? sched->bufts[i] : NULL;
}

size_t ggml_backend_sched_get_buffer_size(ggml_backend_sched_t sched, ggml_backend_t backend) {
    const int i = backend_index(sched, backend);
    return i >= 0 ? ggml_gallocr_get_buffer_size(sched->galloc, i) : 0;
}

void ggml_backend_sched_set_tensor_backend(ggml_backend_sched_t sched, struct ggml_tensor *node, ggml_backend_t backend) {
    const int id = backend_index(sched, backend);
    if (id < 0 || !node) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_sched_set_tensor_backend: unknown backend or NULL node");
        return;
    }
    for (int i = 0; i < sched->n_pinned; i++) {
        if (sched->pinned[i] == node) {
            sched->pinned_ids[i] = id;
            sched->planned = false;
            return;
        }
    }
    if (sched->n_pinned == sched->cap_pinned) {
        const int cap = sched->cap_pinned ? 2 * sched->cap_pinned : 64;
        struct ggml_tensor **p = realloc(sched->pinned, (size_t)cap * sizeof *p);
        if (p) sched->pinned = p;
        int *ids = p ? realloc(sched->pinned_ids, (size_t)cap * sizeof *ids) : NULL;
        if (!ids) {
            ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_backend_sched_set_tensor_backend: out of memory");
            return;
        }
        sched->pinned_ids = ids;
        sched->cap_pinned = cap;
    }
    sched->pinned[sched->n_pinned] = node;
    sched->pinned_ids[sched->n_pinned++] = id;
    sched->planned = false;
}

ggml_backend_t ggml_backend_sched_get_tensor_backend(ggml_backend_sched_t sched, struct ggml_tensor *node) {
    if (!sched || !node) return NULL;
    for (int i = 0; i < sched->n_pinned; i++) {
        if (sched->pinned[i] == node) return sched->backends[sched->pinned_ids[i]];
    }
    if (!sched->planned || sched->stale || !ggmlc__hash_contains(&sched->hash, node)) return NULL;
    const int id = sched->assign[ggmlc__sched_slot(sched, node)];
    return id >= 0 ? sched->backends[id] : NULL;
}

void ggml_backend_sched_set_eval_callback(ggml_backend_sched_t sched, ggml_backend_sched_eval_callback callback, void *user_data) {
    sched->eval_cb = callback;
    sched->eval_cb_data = user_data;
}

/* ------------------------------------------------------ plan and memory */

/* The graph's identity: its nodes and their sources, then its leafs. */
static size_t key_length(const struct ggml_cgraph *graph) {
    return (size_t)graph->n_nodes * (GGML_MAX_SRC + 1) + (size_t)graph->n_leafs + 1;
}

static void write_key(const struct ggml_cgraph *graph, struct ggml_tensor **key) {
    size_t n = 0;
    key[n++] = (struct ggml_tensor *)(uintptr_t)graph->n_nodes;
    for (int i = 0; i < graph->n_nodes; i++) {
        key[n++] = graph->nodes[i];
        for (int s = 0; s < GGML_MAX_SRC; s++) key[n++] = graph->nodes[i]->src[s];
    }
    for (int i = 0; i < graph->n_leafs; i++) key[n++] = graph->leafs[i];
}

/* The last plan still describes graph, and its tensors still have their memory. */
static bool plan_matches(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    if (!sched->planned || sched->key_len != key_length(graph)) return false;
    size_t n = 1;
    if (sched->key[0] != (struct ggml_tensor *)(uintptr_t)graph->n_nodes) return false;
    for (int i = 0; i < graph->n_nodes; i++) {
        if (sched->key[n++] != graph->nodes[i]) return false;
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            if (sched->key[n++] != graph->nodes[i]->src[s]) return false;
        }
        if (sched->allocated && !graph->nodes[i]->data) return false; /* a new graph at the old addresses */
    }
    for (int i = 0; i < graph->n_leafs; i++) {
        if (sched->key[n++] != graph->leafs[i]) return false;
    }
    return true;
}

static void props_of(const struct ggml_tensor *t, struct sched_props *p) {
    memset(p, 0, sizeof *p); /* compared with memcmp: no stray padding bytes */
    p->op = t->op;
    p->type = t->type;
    p->flags = t->flags;
    memcpy(p->op_params, t->op_params, sizeof p->op_params);
    memcpy(p->ne, t->ne, sizeof p->ne);
    memcpy(p->nb, t->nb, sizeof p->nb);
    p->view_offs = t->view_offs;
    p->view_src = t->view_src;
    p->data = t->data;
    p->buffer = t->buffer;
}

/* Visit the tensors a plan depends on, in key order: each node and its sources, then the leafs;
 * visit returns false to stop. */
typedef bool (*tensor_visit)(void *arg, const struct ggml_tensor *t);

static bool each_planned_tensor(const struct ggml_cgraph *graph, tensor_visit visit, void *arg) {
    for (int i = 0; i < graph->n_nodes; i++) {
        if (!visit(arg, graph->nodes[i])) return false;
        for (int s = 0; s < GGML_MAX_SRC; s++)
            if (graph->nodes[i]->src[s] && !visit(arg, graph->nodes[i]->src[s])) return false;
    }
    for (int i = 0; i < graph->n_leafs; i++)
        if (!visit(arg, graph->leafs[i])) return false;
    return true;
}

struct props_walk {
    ggml_backend_sched_t sched;
    size_t n;
};

static bool record_one(void *arg, const struct ggml_tensor *t) {
    struct props_walk *w = arg;
    ggml_backend_sched_t sched = w->sched;
    if (w->n == sched->cap_props) {
        const size_t cap = sched->cap_props ? 2 * sched->cap_props : 256;
        struct sched_props *p = realloc(sched->props, cap * sizeof *p);
        if (!p) return false;
        sched->props = p;
        sched->cap_props = cap;
    }
    props_of(t, &sched->props[w->n++]);
    return true;
}

/* Whether t still has the properties p recorded (props_of), compared field by field: a decode
 * graph checks a few thousand tensors per token, and building each one's record to compare
 * whole cost twice as much. */
static bool props_equal(const struct ggml_tensor *t, const struct sched_props *p) {
    return p->op == (int32_t)t->op && p->type == (int32_t)t->type && p->flags == t->flags && p->data == t->data &&
           p->view_src == t->view_src && p->view_offs == t->view_offs && p->buffer == t->buffer &&
           memcmp(p->ne, t->ne, sizeof p->ne) == 0 && memcmp(p->nb, t->nb, sizeof p->nb) == 0 &&
           memcmp(p->op_params, t->op_params, sizeof p->op_params) == 0;
}

static bool same_props(void *arg, const struct ggml_tensor *t) {
    struct props_walk *w = arg;
    return w->n < w->sched->n_props && props_equal(t, &w->sched->props[w->n++]);
}

/* Remember what the new plan depends on; without memory the plan is simply never reused. */
static void record_props(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    struct props_walk w = {sched, 0};
    sched->n_props = each_planned_tensor(graph, record_one, &w) ? w.n : 0;
}

/* The stale plan fits graph: every tensor it depends on is as it was when it was made. */
static bool props_match(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    struct props_walk w = {sched, 0};
    return sched->n_props > 0 && each_planned_tensor(graph, same_props, &w) &&
           w.n == sched->n_props;
}

static bool plan_graph(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    if (plan_matches(sched, graph) && (!sched->stale || props_match(sched, graph))) {
        sched->stale = sched->replanned = false;
        return true;
    }
    sched->planned = sched->allocated = sched->stale = false;
    sched->replanned = true;
    const size_t len = key_length(graph);
    if (len > sched->key_len || !sched->key) {
        free(sched->key);
        sched->key = malloc(len * sizeof *sched->key);
        if (!sched->key) {
            sched->key_len = 0;
            ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_backend_sched: out of memory");
            return false;
        }
    }
    sched->key_len = len;
    if (!ggmlc__sched_plan(sched, graph)) return false;
    write_key(graph, sched->key);
    record_props(sched, graph);
    sched->planned = true;
    return true;
}

void ggml_backend_sched_split_graph(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    if (sched && graph) plan_graph(sched, graph);
}

bool ggml_backend_sched_reserve(ggml_backend_sched_t sched, struct ggml_cgraph *measure_graph) {
    if (!sched || !measure_graph || !plan_graph(sched, measure_graph)) return false;
    ggmlc__sched_rewire(sched, 0, sched->n_rewires, true);
    const bool ok = ggml_gallocr_reserve_n(sched->galloc, sched->graph, sched->node_ids, sched->leaf_ids);
    ggmlc__sched_rewire(sched, 0, sched->n_rewires, false);
    sched->planned = sched->allocated = false; /* the measure graph is not kept */
    return ok;
}

void ggml_backend_sched_reserve_size(ggml_backend_sched_t sched, struct ggml_cgraph *measure_graph, size_t *sizes) {
    if (!sched || !measure_graph || !sizes) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_sched_reserve_size: NULL argument");
        return;
    }
    for (int i = 0; i < sched->n_backends; i++) sizes[i] = 0;
    if (!plan_graph(sched, measure_graph)) return;
    ggmlc__sched_rewire(sched, 0, sched->n_rewires, true);
    ggml_gallocr_reserve_n_size(sched->galloc, sched->graph, sched->node_ids, sched->leaf_ids, sizes);
    ggmlc__sched_rewire(sched, 0, sched->n_rewires, false);
    sched->planned = sched->allocated = false; /* the measure graph is not kept */
}

bool ggmlc__sched_holds(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    return sched && graph && sched->allocated && !sched->stale && plan_matches(sched, graph);
}

bool ggml_backend_sched_alloc_graph(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    if (!sched || !graph) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_sched_alloc_graph: NULL scheduler or graph");
        return false;
    }
    if (!plan_graph(sched, graph)) return false;
    if (sched->allocated) return true;
    ggmlc__sched_rewire(sched, 0, sched->n_rewires, true);
    /* a kept plan keeps the allocator's placement too: only the addresses are set again */
    ggml_gallocr_t g = sched->galloc;
    const bool ok = (!sched->replanned && ggmlc__gallocr_alloc_again(g, sched->graph)) ||
                    ggmlc__gallocr_alloc_graph_n(g, sched->graph, sched->node_ids, sched->leaf_ids);
    ggmlc__sched_rewire(sched, 0, sched->n_rewires, false);
    sched->allocated = ok;
    return ok;
}

/* --------------------------------------------------------- computation */

/* Compute a part of a split.  Nodes the caller pinned to a backend were not asked whether it
 * computes them, nor a node no backend computes: only then does the backend's own check (with
 * its CPU fallback) run again. */
static enum ggml_status compute_part(ggml_backend_sched_t sched, ggml_backend_t backend, struct ggml_cgraph *view) {
    return sched->n_pinned || sched->unagreed ? ggml_backend_graph_compute_async(backend, view)
                           : ggmlc__graph_compute_async_assigned(backend, view);
}

/* Run the split's nodes, stopping where the eval callback wants to look. */
static enum ggml_status run_nodes(ggml_backend_sched_t sched, ggml_backend_t backend, int g0, int g1) {
    if (!sched->eval_cb) {
        struct ggml_cgraph view = ggmlc__graph_view(sched->graph, g0, g1);
        return compute_part(sched, backend, &view);
    }
    for (int j0 = g0; j0 < g1;) {
        int j1 = j0;
        bool want = sched->eval_cb(sched->graph->nodes[j1], true, sched->eval_cb_data);
        while (!want && j1 + 1 < g1) want = sched->eval_cb(sched->graph->nodes[++j1], true, sched->eval_cb_data);
        struct ggml_cgraph view = ggmlc__graph_view(sched->graph, j0, j1 + 1);
        const enum ggml_status st = compute_part(sched, backend, &view);
        if (st != GGML_STATUS_SUCCESS) return st;
        ggml_backend_synchronize(backend);
        if (want && !sched->eval_cb(sched->graph->nodes[j1], false, sched->eval_cb_data)) break;
        j0 = j1 + 1;
    }
    return GGML_STATUS_SUCCESS;
}

/* A split the CPU runs in a scheduler led by another backend: its nodes count as fallback
 * nodes (ggmlc_counters_get), views aside. */
static void count_fallback(ggml_backend_sched_t sched, const struct sched_split *sp) {
    if (sched->backends[sp->backend_id] == sched->backends[0] ||
        ggml_backend_dev_type(ggml_backend_get_device(sched->backends[sp->backend_id])) !=
            GGML_BACKEND_DEVICE_TYPE_CPU)
        return;
    uint64_t n = 0;
    for (int j = sp->g_start; j < sp->g_end; j++)
        n += !ggmlc_op_is_view(sched->graph->nodes[j]->op);
    ggmlc_counter_add(GGMLC_COUNTER_FALLBACK_NODES, n);
}

/* ------------------------------------------ phase times (GGMLC_DEBUG=sched-time) */

enum { SCHED_TIME_EVERY = 100 }; /* graphs per logged line */

/* Monotonic nanoseconds, read only when the phases are timed (0 otherwise: no clock call). */
static int64_t time_mark(const ggml_backend_sched_t sched) {
    if (!sched->time_debug) return 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Add the time since *mark to phase, and move the mark to now. */
static void time_add(ggml_backend_sched_t sched, enum sched_time_phase phase, int64_t *mark) {
    if (!sched->time_debug) return;
    const int64_t now = time_mark(sched);
    sched->time_ns[phase] += now - *mark;
    *mark = now;
}

/* One graph done: every SCHED_TIME_EVERY graphs, log the phases' means and start again. */
static void time_graph_done(ggml_backend_sched_t sched) {
    if (!sched->time_debug || ++sched->time_graphs < SCHED_TIME_EVERY) return;
    const double n = sched->time_graphs, us = 1e-3 / n;
    const int64_t *t = sched->time_ns;
    double total = 0;
    for (int p = 0; p < SCHED_TIME_COUNT; p++) total += (double)t[p] * us;
    ggmlc_log(GGML_LOG_LEVEL_INFO,
              "sched: host us per graph (mean of %d; %.1f splits, %.1f copies): alloc %.1f  checks %.1f  "
              "inputs %.1f  compute %.1f  sync %.1f  back %.1f  total %.1f\n",
              sched->time_graphs, sched->time_splits / n, sched->time_copies / n, (double)t[SCHED_TIME_ALLOC] * us,
              (double)t[SCHED_TIME_CHECKS] * us, (double)t[SCHED_TIME_INPUTS] * us, (double)t[SCHED_TIME_COMPUTE] * us,
              (double)t[SCHED_TIME_SYNC] * us, (double)t[SCHED_TIME_BACK] * us, total);
    memset(sched->time_ns, 0, sizeof sched->time_ns);
    sched->time_graphs = sched->time_splits = sched->time_copies = 0;
}

static enum ggml_status run_split(ggml_backend_sched_t sched, const struct sched_split *sp) {
    ggml_backend_t backend = sched->backends[sp->backend_id];
    int64_t mark = time_mark(sched);
    for (int j = sp->in_start; j < sp->in_end; j++) ggml_backend_tensor_copy(sched->inputs[j].src, sched->inputs[j].copy);
    for (int j = sp->cl_start; j < sp->cl_end; j++) {
        if (clone_needs_prefill(sched->clones[j].orig)) ggml_backend_tensor_copy(sched->clones[j].orig, sched->clones[j].clone);
    }
    sched->time_copies += sp->in_end - sp->in_start;
    time_add(sched, SCHED_TIME_INPUTS, &mark);
    ggmlc__sched_rewire(sched, sp->rw_start, sp->rw_end, true);
    count_fallback(sched, sp);
    const enum ggml_status st = run_nodes(sched, backend, sp->g_start, sp->g_end);
    time_add(sched, SCHED_TIME_COMPUTE, &mark);
    ggml_backend_synchronize(backend);
    time_add(sched, SCHED_TIME_SYNC, &mark);
    ggmlc__sched_rewire(sched, sp->rw_start, sp->rw_end, false);
    if (st != GGML_STATUS_SUCCESS) return st;
    for (int j = sp->cl_start; j < sp->cl_end; j++) {
        const struct sched_clone *cl = &sched->clones[j];
        if (!ggmlc_op_is_view(cl->orig->op)) ggml_backend_tensor_copy(cl->clone, cl->orig);
    }
    time_add(sched, SCHED_TIME_BACK, &mark);
    return GGML_STATUS_SUCCESS;
}

enum ggml_status ggml_backend_sched_graph_compute_async(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    if (graph && !ggmlc__graph_complete(graph, "ggml_backend_sched_graph_compute")) return GGML_STATUS_FAILED;
    int64_t mark = sched ? time_mark(sched) : 0;
    if (!ggml_backend_sched_alloc_graph(sched, graph)) return GGML_STATUS_ALLOC_FAILED;
    time_add(sched, SCHED_TIME_ALLOC, &mark);
    if (!ggmlc__graph_buffers_live(graph, "ggml_backend_sched_graph_compute"))
        return GGML_STATUS_FAILED;
    time_add(sched, SCHED_TIME_CHECKS, &mark);
    sched->time_splits += sched->n_splits;
    for (int k = 0; k < sched->n_splits; k++) {
        const enum ggml_status st = run_split(sched, &sched->splits[k]);
        if (st != GGML_STATUS_SUCCESS) return st;
    }
    time_graph_done(sched);
    return GGML_STATUS_SUCCESS;
}

enum ggml_status ggml_backend_sched_graph_compute(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    const enum ggml_status st = ggml_backend_sched_graph_compute_async(sched, graph);
    ggml_backend_sched_synchronize(sched);
    return st;
}

void ggml_backend_sched_synchronize(ggml_backend_sched_t sched) {
    for (int i = 0; sched && i < sched->n_backends; i++) ggml_backend_synchronize(sched->backends[i]);
}
