/* ops-index.c - the index family of CPU kernels (see cpu-impl.h). */
#include "cpu-impl.h"

void cpu_ops_index_register(struct cpu_op_table *t) {
    (void)t;
}
