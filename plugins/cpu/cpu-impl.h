/*
 * cpu-impl.h - what the files of the CPU plugin share.
 *
 * Kernels are grouped in families (ops-<family>.c); each family fills its
 * entries of the plugin's op table in cpu_ops_<family>_register().  A kernel
 * is a ggmlc_op_fn: it computes its share (task call->ith of call->nth) of
 * dst; call->wdata is scratch shared by the node's tasks (work_size bytes),
 * call->barrier() waits for all tasks of the node.
 */
#ifndef GGMLC_CPU_IMPL_H
#define GGMLC_CPU_IMPL_H

#include "ggml.h"
#include "ggml-cpu.h"
#include "ggmlc-plugin.h"

#define CPU_HIDDEN __attribute__((visibility("hidden")))

struct cpu_op_table {
    /* the kernel of each operator (NULL = unsupported) */
    ggmlc_op_fn compute[GGML_OP_COUNT];
    /* finer check of types and shapes (NULL = every node of that op is supported) */
    bool (*supports[GGML_OP_COUNT])(const struct ggml_tensor *node);
    /* scratch bytes a node needs with n_threads tasks (NULL = none) */
    size_t (*work_size[GGML_OP_COUNT])(const struct ggml_tensor *node, int n_threads);
    /* tasks to split a node into (NULL = n_threads); 1 for inherently serial ops */
    int (*n_tasks[GGML_OP_COUNT])(const struct ggml_tensor *node, int n_threads);
    /* whether node's tasks never meet (no call->barrier): the graph walker may then run them
     * on whichever threads come first, several on one (NULL = they may meet) */
    bool (*tasks_free[GGML_OP_COUNT])(const struct ggml_tensor *node);
};

/* One registration function per family, called once when the plugin loads. */
CPU_HIDDEN void cpu_ops_elementwise_register(struct cpu_op_table *t); /* ops-elementwise*.c, ops-custom.c */
CPU_HIDDEN void cpu_ops_matmul_register(struct cpu_op_table *t);      /* ops-matmul.c */
CPU_HIDDEN void cpu_ops_nn_register(struct cpu_op_table *t);          /* ops-norm.c, ops-softmax.c, ops-rope.c, ops-attn.c, ops-loss.c */
CPU_HIDDEN void cpu_ops_index_register(struct cpu_op_table *t);       /* ops-index.c, ops-sort.c, ops-seq.c */
CPU_HIDDEN void cpu_ops_conv_register(struct cpu_op_table *t);        /* ops-conv.c, ops-pool.c, ops-image.c */
CPU_HIDDEN void cpu_ops_backward_register(struct cpu_op_table *t);    /* ops-backward.c: operators added by autograd */

/* The filled table (valid after the plugin's init). */
CPU_HIDDEN const struct cpu_op_table *cpu_op_table(void);

/* Per-type CPU kernels: row conversion from f32, dot product against vec_dot_type
 * rows (quantized types dot against activations quantized on the fly). */
struct cpu_type_traits {
    ggml_from_float_t from_float;
    ggml_vec_dot_t    vec_dot;
    enum ggml_type    vec_dot_type;
};
/* Never NULL; fields are NULL for types without CPU kernels (type-traits.c). */
CPU_HIDDEN const struct cpu_type_traits *cpu_get_type_traits(enum ggml_type type);

/* Why the task of call failed (it then returns an error status): recorded as the node's error,
 * which cpu_graph_compute reports once, on its caller's thread (the task with the lowest ith
 * wins, so the first bad input in the node's order is named); outside a graph, set at once. */
CPU_HIDDEN void cpu_task_error(const struct ggmlc_op_call *call, enum ggmlc_status status, const char *fmt, ...)
    GGML_ATTRIBUTE_FORMAT(3, 4);
/* Fail node's task: value v of index tensor idx, at [i0, i1, i2], is not in [0, limit)
 * (ops-index.c; the message every index-taking kernel gives). */
CPU_HIDDEN enum ggml_status cpu_index_out_of_range(const struct ggmlc_op_call *call, const struct ggml_tensor *node,
                                                   const struct ggml_tensor *idx, int64_t v, int64_t i0, int64_t i1,
                                                   int64_t i2, int64_t limit);

/* Split [0, n) evenly into nth parts; part ith is [*start, *end). */
static inline void cpu_split_range(int64_t n, int ith, int nth, int64_t *start, int64_t *end) {
    const int64_t per = (n + nth - 1) / nth;
    *start = per * ith < n ? per * ith : n;
    *end = *start + per < n ? *start + per : n;
}

#endif /* GGMLC_CPU_IMPL_H */
