/*
 * ops-custom.c - user-defined operators: the node's function is called once
 * per task with (ith, nth) and the user data, as ggml does.  The number of
 * tasks is the node's n_tasks (GGML_N_TASKS_MAX: every thread).
 */
#include "ops-ew.h"
#include "ggmlc-plugin.h" /* the custom operators' parameter readers */

static enum ggml_status compute_custom1(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_map_custom1_op_params p = ggmlc_map_custom1_params_of(dst);
    p.fun(dst, dst->src[0], call->ith, call->nth, p.userdata);
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status compute_custom2(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_map_custom2_op_params p = ggmlc_map_custom2_params_of(dst);
    p.fun(dst, dst->src[0], dst->src[1], call->ith, call->nth, p.userdata);
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status compute_custom3(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_map_custom3_op_params p = ggmlc_map_custom3_params_of(dst);
    p.fun(dst, dst->src[0], dst->src[1], dst->src[2], call->ith, call->nth, p.userdata);
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status compute_custom(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_custom_op_params p = ggmlc_custom_op_params_of(dst);
    p.fun(dst, call->ith, call->nth, p.userdata);
    return GGML_STATUS_SUCCESS;
}

/* All four layouts start with the function and n_tasks at the same offsets. */
static int tasks_custom(const struct ggml_tensor *node, int n_threads) {
    const struct ggml_custom_op_params p = ggmlc_custom_op_params_of(node);
    return p.n_tasks == GGML_N_TASKS_MAX || p.n_tasks > n_threads ? n_threads : p.n_tasks;
}

static bool supports_custom(const struct ggml_tensor *node) {
    const struct ggml_custom_op_params p = ggmlc_custom_op_params_of(node);
    return p.fun != NULL;
}

void cpu_ops_custom_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_MAP_CUSTOM1] = compute_custom1;
    t->compute[GGML_OP_MAP_CUSTOM2] = compute_custom2;
    t->compute[GGML_OP_MAP_CUSTOM3] = compute_custom3;
    t->compute[GGML_OP_CUSTOM] = compute_custom;
    const enum ggml_op ops[] = {GGML_OP_MAP_CUSTOM1, GGML_OP_MAP_CUSTOM2, GGML_OP_MAP_CUSTOM3, GGML_OP_CUSTOM};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        t->supports[ops[i]] = supports_custom;
        t->n_tasks[ops[i]] = tasks_custom;
    }
}
