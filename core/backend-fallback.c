/*
 * backend-fallback.c - the one CPU fallback of every backend.
 *
 * Two cases reach it:
 *  - a graph with nodes the backend declines (supports_op false): a scheduler
 *    over {backend, CPU} splits it and runs those nodes on the CPU;
 *  - a node the backend's graph_compute_from stopped at although it claims it
 *    (a kernel that failed to build, an operand in memory the device cannot
 *    bind): its operands are read into host copies with the same shapes and
 *    strides, the CPU backend computes it, and what it wrote goes back through
 *    the buffers' set_tensor.  Slow but exact: the CPU is the reference every
 *    backend is tested against.
 * Each backend keeps one CPU backend and one scheduler for this, made on first
 * need and freed with it, instead of one of each per call.
 */
#include <stdlib.h>
#include <string.h>

#include "backend-impl.h"

/* The CPU backend that computes for backend, or NULL (backend is a CPU itself, or none loads). */
static ggml_backend_t fallback_cpu(ggml_backend_t backend) {
    if (ggml_backend_dev_type(backend->device) == GGML_BACKEND_DEVICE_TYPE_CPU) return NULL;
    if (!backend->fallback_cpu)
        backend->fallback_cpu = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    return backend->fallback_cpu;
}

/* The scheduler over {backend, CPU} for graphs of up to graph_size nodes (remade when larger). */
static ggml_backend_sched_t fallback_sched(ggml_backend_t backend, ggml_backend_t cpu,
                                           size_t graph_size) {
    if (backend->fallback_sched && backend->fallback_sched_size >= graph_size) {
        ggml_backend_sched_reset(backend->fallback_sched);
        return backend->fallback_sched;
    }
    ggml_backend_sched_free(backend->fallback_sched);
    ggml_backend_t pair[2] = {backend, cpu};
    backend->fallback_sched = ggml_backend_sched_new(pair, NULL, 2, graph_size, false, false);
    backend->fallback_sched_size = backend->fallback_sched ? graph_size : 0;
    return backend->fallback_sched;
}

/* The CPU backend for node, or NULL with the error recorded. */
static ggml_backend_t cpu_for_node(ggml_backend_t backend, const struct ggml_tensor *node) {
    ggml_backend_t cpu = fallback_cpu(backend);
    if (cpu && ggml_backend_supports_op(cpu, node)) return cpu;
    ggmlc_set_error(
        GGMLC_ERR_UNSUPPORTED,
        "ggml_backend_graph_compute: op %s of node '%s' is not supported by backend %s, "
        "nor by a CPU backend",
        ggml_op_desc(node), node->name, ggml_backend_name(backend));
    return NULL;
}

enum ggml_status ggmlc__fallback_compute_graph(ggml_backend_t backend, struct ggml_cgraph *graph,
                                              const struct ggml_tensor *unsupported) {
    ggml_backend_t cpu = cpu_for_node(backend, unsupported);
    if (!cpu) return GGML_STATUS_FAILED;
    ggml_backend_sched_t sched = fallback_sched(backend, cpu, (size_t)graph->n_nodes);
    return sched ? ggml_backend_sched_graph_compute(sched, graph) : GGML_STATUS_ALLOC_FAILED;
}

/* ------------------------------------------------------- one node */

/* Sources an op writes besides its result: AdamW's two moments. */
static bool src_written(const struct ggml_tensor *node, int i) {
    return node->op == GGML_OP_OPT_STEP_ADAMW && (i == 2 || i == 3);
}

/* A host tensor of ctx with t's type, shape and strides, holding a copy of t's bytes. */
static struct ggml_tensor *host_copy(struct ggml_context *ctx, const struct ggml_tensor *t,
                                     void **mem) {
    const size_t n = ggml_nbytes(t);
    *mem = malloc(n ? n : 1);
    struct ggml_tensor *h = *mem ? ggml_new_tensor(ctx, t->type, GGML_MAX_DIMS, t->ne) : NULL;
    if (!h) return NULL;
    memcpy(h->nb, t->nb, sizeof h->nb);
    ggml_set_name(h, t->name); /* for the CPU's messages */
    h->data = *mem;
    if (n) ggml_backend_tensor_get(t, h->data, 0, n);
    return h;
}

/* Host copies of a node (out) and its operands (src); mem[i] holds their bytes. */
struct node_copy {
    struct ggml_context *ctx;
    struct ggml_tensor *out;
    struct ggml_tensor *src[GGML_MAX_SRC];
    void *mem[GGML_MAX_SRC + 1];
};

/* Fill c with copies of node and its operands; false when host memory ran out or a read
 * failed (recorded).  out starts as a copy of node too: it keeps what an in-place op leaves. */
static bool copy_node(struct node_copy *c, const struct ggml_tensor *node) {
    const size_t graph_size = GGML_MAX_SRC + 1; /* the node and its operands (leaves) */
    const size_t ctx_size =
        (GGML_MAX_SRC + 2) * ggml_tensor_overhead() + ggml_graph_overhead_custom(graph_size, false);
    c->ctx = ggml_init((struct ggml_init_params){ctx_size, NULL, true});
    if (c->ctx) c->out = host_copy(c->ctx, node, &c->mem[GGML_MAX_SRC]);
    bool ok = c->out != NULL;
    for (int i = 0; ok && i < GGML_MAX_SRC; i++)
        if (node->src[i]) ok = (c->src[i] = host_copy(c->ctx, node->src[i], &c->mem[i])) != NULL;
    if (!ok)
        ggmlc_set_error(GGMLC_ERR_NOMEM,
                        "ggml_backend_graph_compute: out of host memory computing %s (node '%s') "
                        "on the CPU", ggml_op_desc(node), node->name);
    return ok && ggmlc_last_status() == GGMLC_OK; /* a failed download (device lost) is recorded */
}

static void free_node_copy(struct node_copy *c) {
    for (int i = 0; i <= GGML_MAX_SRC; i++) free(c->mem[i]);
    if (c->ctx) ggml_free(c->ctx);
}

/* Compute the copy on cpu, then write what the op wrote back into node's buffers. */
static enum ggml_status compute_copy(ggml_backend_t cpu, struct node_copy *c,
                                     struct ggml_tensor *node) {
    c->out->op = node->op;
    memcpy(c->out->op_params, node->op_params, sizeof c->out->op_params);
    c->out->flags = node->flags;
    memcpy(c->out->src, c->src, sizeof c->out->src);
    struct ggml_cgraph *g = ggml_new_graph_custom(c->ctx, GGML_MAX_SRC + 1, false);
    ggml_build_forward_expand(g, c->out);
    enum ggml_status s = ggml_backend_graph_compute(cpu, g);
    if (s != GGML_STATUS_SUCCESS) return s;
    ggml_backend_tensor_set(node, c->out->data, 0, ggml_nbytes(node));
    for (int i = 0; i < GGML_MAX_SRC; i++)
        if (node->src[i] && src_written(node, i))
            ggml_backend_tensor_set(node->src[i], c->src[i]->data, 0, ggml_nbytes(node->src[i]));
    return ggmlc_last_status() == GGMLC_OK ? GGML_STATUS_SUCCESS : GGML_STATUS_FAILED;
}

enum ggml_status ggmlc__fallback_compute_node(ggml_backend_t backend, struct ggml_tensor *node) {
    ggml_backend_t cpu = cpu_for_node(backend, node);
    if (!cpu) return GGML_STATUS_FAILED;
    ggmlc_clear_error(); /* the backend logged why it stopped */
    ggmlc_counter_add(GGMLC_COUNTER_FALLBACK_NODES, 1);
    struct node_copy c = {0};
    const enum ggml_status s =
        copy_node(&c, node) ? compute_copy(cpu, &c, node) : GGML_STATUS_FAILED;
    free_node_copy(&c);
    return s;
}

void ggmlc__fallback_free(ggml_backend_t backend) {
    ggml_backend_sched_free(backend->fallback_sched);
    ggml_backend_free(backend->fallback_cpu);
    backend->fallback_sched = NULL;
    backend->fallback_cpu = NULL;
}
