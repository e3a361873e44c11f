/* ops-nn.c - the nn family of CPU kernels (see cpu-impl.h): normalisations, softmax,
 * rope, attention, losses and optimizer steps, one file each (ops-nn.h). */
#include "ops-nn.h"

void cpu_ops_nn_register(struct cpu_op_table *t) {
    cpu_nn_norm_register(t);
    cpu_nn_softmax_register(t);
    cpu_nn_rope_register(t);
    cpu_nn_attn_register(t);
    cpu_nn_loss_register(t);
}
