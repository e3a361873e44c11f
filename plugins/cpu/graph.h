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

/* Chunks per task of cpu_claim_rows: enough that a task slowed down (its core shared with
 * another process) leaves its share to the others, few enough that claiming costs nothing. */
#define CPU_ROW_CHUNKS_PER_TASK 8

/* Row-wise kernels' share of nrows rows by chunk claiming: the next range [*r0, *r1) for the
 * calling task, false when none is left (start with *last = -1, as cpu_claim_chunk).  With
 * static halves, a node's threads waited for each other 5-6% of a 2-thread ggmlc-gpt training
 * step on a loaded VM. */
static inline bool cpu_claim_rows(const struct ggmlc_op_call *call, int64_t nrows, int64_t *last,
                                  int64_t *r0, int64_t *r1) {
    const int64_t most = (int64_t)CPU_ROW_CHUNKS_PER_TASK * call->nth;
    const int64_t n_chunks = nrows < most ? nrows : most;
    const int64_t c = cpu_claim_chunk(call, n_chunks, last);
    if (c >= n_chunks) return false;
    *r0 = nrows * c / n_chunks, *r1 = nrows * (c + 1) / n_chunks;
    return true;
}

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
