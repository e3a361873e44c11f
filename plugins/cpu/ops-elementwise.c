/* ops-elementwise.c - the elementwise family of CPU kernels (see cpu-impl.h): arithmetic,
 * activations, gated units, reductions, copies, layout changes and custom operators,
 * one file each (ops-ew.h lists them). */
#include "ops-ew.h"

void cpu_ops_elementwise_register(struct cpu_op_table *t) {
    cpu_ops_binary_register(t);
    cpu_ops_unary_register(t);
    cpu_ops_glu_register(t);
    cpu_ops_matrix_register(t);
    cpu_ops_reduce_register(t);
    cpu_ops_copy_register(t);
    cpu_ops_layout_register(t);
    cpu_ops_custom_register(t);
}
