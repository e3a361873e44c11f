/*
 * backend-graph.c - computing graphs on one backend (plans, the default
 * per-node loop), and copying a graph to another backend to compare two
 * backends node by node.  (Placing tensors in buffers is in tensor-alloc.c.)
 */
#include <stdlib.h>

#include "backend-impl.h"

/* --------------------------------------------------------- computation */

static void barrier_single_task(const struct ggmlc_op_call *call) { (void)call; }

/* For plugins without graph_compute: each node's kernel, as one task. */
static enum ggml_status compute_nodes_one_task(ggml_backend_t backend, struct ggml_cgraph *cgraph) {
    const struct ggmlc_op_call call = {
        .ith = 0, .nth = 1, .backend_ctx = backend->context, .barrier = barrier_single_task,
    };
    for (int i = 0; i < cgraph->n_nodes; i++) {
        struct ggml_tensor *node = cgraph->nodes[i];
        if (ggmlc_op_is_view(node->op) || ggml_is_empty(node)) continue;
        ggmlc_clear_error(); /* a kernel's own reason, if it gives one, is kept below */
        const ggmlc_op_fn fn = ggmlc_device_op(backend->device, node);
        const enum ggml_status status = fn ? fn(&call, node) : GGML_STATUS_FAILED;
        if (status != GGML_STATUS_SUCCESS) {
            if (ggmlc_last_status() == GGMLC_OK)
                ggmlc_set_error(GGMLC_ERR_BACKEND, "%s: computing node %d '%s' (%s) failed", ggml_backend_name(backend), i,
                                node->name, ggml_op_desc(node));
            return status;
        }
    }
    return GGML_STATUS_SUCCESS;
}

/* The first node the backend cannot compute, or NULL. */
static struct ggml_tensor *first_unsupported_node(ggml_backend_t backend, struct ggml_cgraph *cgraph) {
    for (int i = 0; i < cgraph->n_nodes; i++) {
        struct ggml_tensor *node = cgraph->nodes[i];
        if (!ggmlc_op_is_view(node->op) && !ggml_backend_supports_op(backend, node)) return node;
    }
    return NULL;
}

/* A plugin with graph_compute_from: it computes until a node it cannot run after all, the
 * CPU computes that node (backend-fallback.c), and the plugin resumes after it. */
static enum ggml_status compute_resuming(ggml_backend_t backend, struct ggml_cgraph *cgraph) {
    const int n = cgraph->n_nodes;
    for (int first = 0; first < n;) {
        int stopped_at = n;
        const enum ggml_status st =
            backend->iface.graph_compute_from(backend, cgraph, first, &stopped_at);
        if (st != GGML_STATUS_SUCCESS || stopped_at == n) return st;
        if (stopped_at < first || stopped_at > n) {
            ggmlc_set_error(GGMLC_ERR_BACKEND,
                            "%s: graph_compute_from stopped at node %d, outside [%d, %d]",
                            ggml_backend_name(backend), stopped_at, first, n);
            return GGML_STATUS_FAILED;
        }
        const enum ggml_status cpu_st =
            ggmlc__fallback_compute_node(backend, cgraph->nodes[stopped_at]);
        if (cpu_st != GGML_STATUS_SUCCESS) return cpu_st;
        first = stopped_at + 1;
    }
    return GGML_STATUS_SUCCESS;
}

enum ggml_status ggml_backend_graph_compute_async(ggml_backend_t backend, struct ggml_cgraph *cgraph) {
    if (!backend || !cgraph) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_graph_compute: NULL backend or graph");
        return GGML_STATUS_FAILED;
    }
    if (!ggmlc__graph_complete(cgraph, "ggml_backend_graph_compute") ||
        !ggmlc__graph_buffers_live(cgraph, "ggml_backend_graph_compute"))
        return GGML_STATUS_FAILED;
    struct ggml_tensor *unsupported = first_unsupported_node(backend, cgraph);
    if (unsupported) return ggmlc__fallback_compute_graph(backend, cgraph, unsupported);
    return ggmlc__graph_compute_async_assigned(backend, cgraph);
}

/* The scheduler's splits: the graph was checked whole, and each node went to this backend only
 * after its supports_op agreed, so the walk above would only repeat that (about 0.2 us a node
 * on Vulkan, every token of a decode loop). */
enum ggml_status ggmlc__graph_compute_async_assigned(ggml_backend_t backend, struct ggml_cgraph *cgraph) {
    if (backend->iface.graph_compute_from) return compute_resuming(backend, cgraph);
    if (backend->iface.graph_compute) return backend->iface.graph_compute(backend, cgraph);
    return compute_nodes_one_task(backend, cgraph);
}

enum ggml_status ggml_backend_graph_compute(ggml_backend_t backend, struct ggml_cgraph *cgraph) {
    const enum ggml_status status = ggml_backend_graph_compute_async(backend, cgraph);
    ggml_backend_synchronize(backend);
    return status;
}

/* A plan only remembers the graph: no plugin needs preparation yet. */
ggml_backend_graph_plan_t ggml_backend_graph_plan_create(ggml_backend_t backend, struct ggml_cgraph *cgraph) {
    if (!backend || !cgraph) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_graph_plan_create: NULL backend or graph");
        return NULL;
    }
    struct ggml_cgraph **plan = malloc(sizeof *plan);
    if (!plan) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_backend_graph_plan_create: out of memory");
        return NULL;
    }
    *plan = cgraph;
    return plan;
}

void ggml_backend_graph_plan_free(ggml_backend_t backend, ggml_backend_graph_plan_t plan) { free(plan); }

enum ggml_status ggml_backend_graph_plan_compute(ggml_backend_t backend, ggml_backend_graph_plan_t plan) {
    if (!plan) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_graph_plan_compute: NULL plan");
        return GGML_STATUS_FAILED;
    }
    return ggml_backend_graph_compute(backend, *(struct ggml_cgraph **)plan);
}

/* ---------------------------------------------------------- graph copy */

/* Originals mapped to their copies (by hash slot), and the originals in the order copied. */
struct copy_map {
    struct ggml_hash_set set;
    struct ggml_tensor **copies;
    struct ggml_tensor **originals;
    size_t n;
    struct ggml_context *ctx_allocated, *ctx_unallocated;
};

/* The copy of t (and, first, of its view source and operands); NULL when a context is full. */
static struct ggml_tensor *copy_tensor(struct copy_map *map, struct ggml_tensor *t) {
    if (!t) return NULL;
    const size_t slot = ggmlc__hash_find(&map->set, t);
    if (slot == GGML_HASHSET_FULL) return NULL;
    if (ggmlc__hash_contains(&map->set, t)) return map->copies[slot];
    struct ggml_tensor *view_src = t->view_src ? copy_tensor(map, t->view_src) : NULL;
    if (t->view_src && !view_src) return NULL;
    /* views take no memory of their own: they are placed with ggml_backend_view_init */
    struct ggml_tensor *c = ggml_dup_tensor(t->view_src ? map->ctx_unallocated : map->ctx_allocated, t);
    if (!c) return NULL;
    memcpy(c->nb, t->nb, sizeof c->nb);
    c->op = t->op;
    memcpy(c->op_params, t->op_params, sizeof c->op_params);
    c->flags = t->flags;
    c->view_src = view_src;
    c->view_offs = t->view_offs;
    ggml_set_name(c, t->name);
    for (int i = 0; i < GGML_MAX_SRC; i++) {
        if (t->src[i] && !(c->src[i] = copy_tensor(map, t->src[i]))) return NULL;
    }
    /* t's slot is taken anew: copying its sources may have filled the one found above, and
     * a stale slot overwrote a source's copy (a failure that came and went with ASLR) */
    const size_t at = ggmlc__hash_insert(&map->set, t);
    if (at == GGML_HASHSET_FULL || at == GGML_HASHSET_ALREADY_EXISTS) return NULL;
    map->copies[at] = c;
    map->originals[map->n++] = t;
    return c;
}

/* Give the copies their views' addresses and the originals' data. */
static bool fill_copies(struct copy_map *map) {
    for (size_t i = 0; i < map->n; i++) {
        struct ggml_tensor *c = map->copies[ggmlc__hash_find(&map->set, map->originals[i])];
        if (c->view_src && !c->data && ggml_backend_view_init(c) != GGML_STATUS_SUCCESS) return false;
    }
    for (size_t i = 0; i < map->n; i++) {
        struct ggml_tensor *t = map->originals[i];
        if (!t->view_src && t->data) ggml_backend_tensor_copy(t, map->copies[ggmlc__hash_find(&map->set, t)]);
    }
    return true;
}

struct ggml_backend_graph_copy ggml_backend_graph_copy(ggml_backend_t backend, struct ggml_cgraph *graph) {
    struct ggml_backend_graph_copy out = {0};
    const size_t n_tensors = (size_t)graph->n_nodes + (size_t)graph->n_leafs;
    struct copy_map map = {.set = ggmlc__hash_set_new(n_tensors * 2 + 16)};
    map.copies = calloc(map.set.size, sizeof *map.copies);
    map.originals = calloc(map.set.size, sizeof *map.originals);
    const size_t tensors_mem = map.set.size * ggml_tensor_overhead();
    map.ctx_allocated = ggml_init((struct ggml_init_params){
        tensors_mem + ggml_graph_overhead_custom(graph->size > 0 ? graph->size : graph->n_nodes + 1, false), NULL, true});
    map.ctx_unallocated = ggml_init((struct ggml_init_params){tensors_mem, NULL, true});
    bool ok = map.set.keys && map.copies && map.originals && map.ctx_allocated && map.ctx_unallocated;
    struct ggml_cgraph *copy = NULL;
    if (ok) copy = ggml_new_graph_custom(map.ctx_allocated, graph->size > 0 ? graph->size : graph->n_nodes + 1, false);
    ok = ok && copy;
    for (int i = 0; ok && i < graph->n_nodes; i++) ok = (copy->nodes[i] = copy_tensor(&map, graph->nodes[i])) != NULL;
    for (int i = 0; ok && i < graph->n_leafs; i++) ok = (copy->leafs[i] = copy_tensor(&map, graph->leafs[i])) != NULL;
    if (ok) {
        copy->n_nodes = graph->n_nodes;
        copy->n_leafs = graph->n_leafs;
        for (int i = 0; i < copy->n_nodes; i++) ggmlc__hash_insert(&copy->visited_hash_set, copy->nodes[i]);
        for (int i = 0; i < copy->n_leafs; i++) ggmlc__hash_insert(&copy->visited_hash_set, copy->leafs[i]);
        out.buffer = ggml_backend_alloc_ctx_tensors(map.ctx_allocated, backend);
        ok = out.buffer && fill_copies(&map);
    }
    if (!ok) {
        if (ggmlc_last_status() == GGMLC_OK)
            ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_backend_graph_copy: cannot copy a graph of %d nodes to %s", graph->n_nodes,
                            ggml_backend_name(backend));
        ggml_backend_buffer_free(out.buffer);
        if (map.ctx_allocated) ggml_free(map.ctx_allocated);
        if (map.ctx_unallocated) ggml_free(map.ctx_unallocated);
        out = (struct ggml_backend_graph_copy){0};
    } else {
        out.ctx_allocated = map.ctx_allocated;
        out.ctx_unallocated = map.ctx_unallocated;
        out.graph = copy;
    }
    ggmlc__hash_set_free(&map.set);
    free(map.copies);
    free(map.originals);
    return out;
}

void ggml_backend_graph_copy_free(struct ggml_backend_graph_copy copy) {
    ggml_backend_buffer_free(copy.buffer);
    if (copy.ctx_allocated) ggml_free(copy.ctx_allocated);
    if (copy.ctx_unallocated) ggml_free(copy.ctx_unallocated);
}

/* Node i alone, on one backend. */
static bool compute_node(ggml_backend_t backend, struct ggml_cgraph *graph, int i) {
    if (ggmlc_op_is_view(graph->nodes[i]->op)) return true;
    struct ggml_cgraph one = ggmlc__graph_view(graph, i, i + 1);
    return ggml_backend_graph_compute(backend, &one) == GGML_STATUS_SUCCESS;
}

static bool is_test_node(const struct ggml_tensor *t, struct ggml_tensor const *const *test_nodes, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (test_nodes[i] == t) return true;
    return false;
}

bool ggml_backend_compare_graph_backend(ggml_backend_t backend1, ggml_backend_t backend2, struct ggml_cgraph *graph,
                                        ggml_backend_eval_callback callback, void *user_data,
                                        struct ggml_tensor const *const *test_nodes, size_t num_test_nodes) {
    if (!backend1 || !backend2 || !graph || !callback) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_compare_graph_backend: NULL argument");
        return false;
    }
    struct ggml_backend_graph_copy copy = ggml_backend_graph_copy(backend2, graph);
    if (!copy.graph) return false;
    bool ok = true;
    const size_t n_tests = test_nodes ? num_test_nodes : 0;
    size_t n_seen = 0;
    for (int i = 0; ok && i < graph->n_nodes; i++) {
        /* with test nodes, compute everything up to the last of them but compare only them */
        ok = compute_node(backend1, graph, i) && compute_node(backend2, copy.graph, i);
        if (!ok) break;
        const bool tested = n_tests > 0 && is_test_node(graph->nodes[i], test_nodes, n_tests);
        if ((n_tests == 0 || tested) && !callback(i, graph->nodes[i], copy.graph->nodes[i], user_data)) break;
        if (tested && ++n_seen == n_tests) break;
    }
    ggml_backend_graph_copy_free(copy);
    return ok;
}
