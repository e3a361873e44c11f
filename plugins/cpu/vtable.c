/*
 * vtable.c - the CPU plugin's op table, filled once by every kernel family,
 * and the device's supports_op built on it.
 */
#include <pthread.h>
#include <string.h>

#include "graph.h"
#include "repack.h"

static struct cpu_op_table op_table;
static pthread_once_t op_table_once = PTHREAD_ONCE_INIT;

static void fill_op_table(void) {
    memset(&op_table, 0, sizeof op_table);
    cpu_ops_elementwise_register(&op_table);
    cpu_ops_matmul_register(&op_table);
    cpu_ops_nn_register(&op_table);
    cpu_ops_index_register(&op_table);
    cpu_ops_conv_register(&op_table);
    cpu_ops_backward_register(&op_table);
}

void cpu_vtable_init(void) { pthread_once(&op_table_once, fill_op_table); }

const struct cpu_op_table *cpu_op_table(void) {
    cpu_vtable_init();
    return &op_table;
}

bool cpu_supports_node(const struct ggml_tensor *node) {
    if ((unsigned)node->op >= GGML_OP_COUNT) return false;
    if (!cpu_repack_node_supported(node)) return false; /* packed weights: MUL_MAT only (repack.h) */
    if (ggmlc_op_is_view(node->op)) return true;
    const struct cpu_op_table *t = cpu_op_table();
    return t->compute[node->op] && (!t->supports[node->op] || t->supports[node->op](node));
}
