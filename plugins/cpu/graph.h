/*
 * graph.h - what plugin.c needs from the graph walker (graph.c) and the op
 * table (vtable.c).
 */
#ifndef GGMLC_CPU_GRAPH_H
#define GGMLC_CPU_GRAPH_H

#include "cpu-impl.h"

/* Fill the op table from every kernel family (idempotent; called by the plugin's init). */
CPU_HIDDEN void cpu_vtable_init(void);
/* Whether the table has a kernel for node and its types and shapes (views: always). */
CPU_HIDDEN bool cpu_supports_node(const struct ggml_tensor *node);

/* Tasks node is split into with n_threads threads (1 for views and empty nodes). */
CPU_HIDDEN int cpu_node_n_tasks(const struct ggml_tensor *node, int n_threads);
/* Scratch bytes the graph needs with n_threads threads (the largest node's need). */
CPU_HIDDEN size_t cpu_graph_work_size(struct ggml_cgraph *graph, int n_threads);

/* Chunk claiming: the next of a node's n_chunks chunks for the calling task.  Start with
 * *last = -1 and call again after each chunk; a result >= n_chunks means none is left.  In
 * the graph walker the tasks share the chunks first come, first served (a task on a core that
 * another process holds, or on a slower one, takes fewer), so a node may claim chunks once;
 * elsewhere task ith takes chunks ith, ith + nth, ...  Which task computes a chunk must not
 * change the result. */
CPU_HIDDEN int64_t cpu_claim_chunk(const struct ggmlc_op_call *call, int64_t n_chunks, int64_t *last);

/* How to run one graph. */
struct cpu_compute_params {
    struct ggml_threadpool *pool;
    int n_threads;              /* at most the pool's size */
    void *wdata;                /* cpu_graph_work_size bytes (NULL when that is 0) */
    size_t wsize;
    ggml_abort_callback abort_callback;
    void *abort_callback_data;
    void *backend_ctx;          /* given to kernels in ggmlc_op_call */
};

/* Compute every node of graph in order.  GGML_STATUS_FAILED (with ggmlc_set_error)
 * when a node is unsupported or the work buffer is too small, GGML_STATUS_ABORTED
 * when the abort callback asked for it. */
CPU_HIDDEN enum ggml_status cpu_graph_compute(struct ggml_cgraph *graph, const struct cpu_compute_params *params);

#endif /* GGMLC_CPU_GRAPH_H */
