/* ops-matmul.c - the matmul family of CPU kernels (see cpu-impl.h). */
#include "cpu-impl.h"

void cpu_ops_matmul_register(struct cpu_op_table *t) {
    (void)t;
}
