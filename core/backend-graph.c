/*
 * backend-graph.c - computing graphs on one backend (plans, the default
 * per-node loop), and copying a graph to another backend to compare two
 * backends node by node.  (Placing tensors in buffers is in alloc.c.)
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

/* A graph with nodes the backend lacks.  For now this is an error; the
 * scheduler is meant to take it over and run those nodes on the CPU. */
static enum ggml_status compute_with_cpu_fallback(ggml_backend_t backend, struct ggml_cgraph *cgraph,
                                                  struct ggml_tensor *unsupported) {
    (void)cgraph;
    ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "ggml_backend_graph_compute: op %s of node '%s' is not supported by backend %s",
                    ggml_op_desc(unsupported), unsupported->name, ggml_backend_name(backend));
    return GGML_STATUS_FAILED;
}

enum ggml_status ggml_backend_graph_compute_async(ggml_backend_t backend, struct ggml_cgraph *cgraph) {
    if (!backend || !cgraph) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_backend_graph_compute: NULL backend or graph");
        return GGML_STATUS_FAILED;
    }
    struct ggml_tensor *unsupported = first_unsupported_node(backend, cgraph);
    if (unsupported) return compute_with_cpu_fallback(backend, cgraph, unsupported);
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
