/*
 * ops-custom.c - constructors of the user-defined operators: map_custom1/2/3
 * and custom_4d / custom_inplace.  The function, the task count and the
 * user data travel in op_params; the CPU plugin calls the function from
 * each of the node's tasks with ith/nth.
 */
#include "ggml-impl.h"
/* the op_params layouts the CPU kernels read are in ggmlc-plugin.h */

static bool n_tasks_ok(const char *func, int n_tasks) {
    if (n_tasks == GGML_N_TASKS_MAX || n_tasks > 0) return true;
    ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "n_tasks = %d (must be positive or GGML_N_TASKS_MAX)", n_tasks);
    return false;
}

static struct ggml_tensor *custom_node(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, bool inplace,
                                       bool fun_set, int n_tasks) {
    GGMLC_CHECK_SRC(a);
    if (!fun_set) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "NULL function");
    if (!n_tasks_ok(func, n_tasks)) return NULL;
    return inplace ? ggmlc__view_node(ctx, a) : ggml_dup_tensor(ctx, a);
}

static struct ggml_tensor *map1(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, ggml_custom1_op_t fun,
                                int n_tasks, void *userdata, bool inplace) {
    struct ggml_tensor *r = custom_node(func, ctx, a, inplace, fun != NULL, n_tasks);
    GGMLC_CHECK_SRC(r);
    const struct ggml_map_custom1_op_params p = {fun, n_tasks, userdata};
    ggmlc__set_op_params(r, &p, sizeof p);
    ggmlc__node_set(r, GGML_OP_MAP_CUSTOM1, a, NULL, NULL);
    return r;
}

static struct ggml_tensor *map2(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                ggml_custom2_op_t fun, int n_tasks, void *userdata, bool inplace) {
    GGMLC_CHECK_SRC(b);
    struct ggml_tensor *r = custom_node(func, ctx, a, inplace, fun != NULL, n_tasks);
    GGMLC_CHECK_SRC(r);
    const struct ggml_map_custom2_op_params p = {fun, n_tasks, userdata};
    ggmlc__set_op_params(r, &p, sizeof p);
    ggmlc__node_set(r, GGML_OP_MAP_CUSTOM2, a, b, NULL);
    return r;
}

static struct ggml_tensor *map3(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                struct ggml_tensor *c, ggml_custom3_op_t fun, int n_tasks, void *userdata, bool inplace) {
    GGMLC_CHECK_SRC(b);
    GGMLC_CHECK_SRC(c);
    struct ggml_tensor *r = custom_node(func, ctx, a, inplace, fun != NULL, n_tasks);
    GGMLC_CHECK_SRC(r);
    const struct ggml_map_custom3_op_params p = {fun, n_tasks, userdata};
    ggmlc__set_op_params(r, &p, sizeof p);
    ggmlc__node_set(r, GGML_OP_MAP_CUSTOM3, a, b, c);
    return r;
}

struct ggml_tensor *ggml_map_custom1(struct ggml_context *ctx, struct ggml_tensor *a, ggml_custom1_op_t fun, int n_tasks, void *userdata) {
    return map1(__func__, ctx, a, fun, n_tasks, userdata, false);
}
struct ggml_tensor *ggml_map_custom1_inplace(struct ggml_context *ctx, struct ggml_tensor *a, ggml_custom1_op_t fun, int n_tasks, void *userdata) {
    return map1(__func__, ctx, a, fun, n_tasks, userdata, true);
}
struct ggml_tensor *ggml_map_custom2(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, ggml_custom2_op_t fun,
                                     int n_tasks, void *userdata) {
    return map2(__func__, ctx, a, b, fun, n_tasks, userdata, false);
}
struct ggml_tensor *ggml_map_custom2_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, ggml_custom2_op_t fun,
                                             int n_tasks, void *userdata) {
    return map2(__func__, ctx, a, b, fun, n_tasks, userdata, true);
}
struct ggml_tensor *ggml_map_custom3(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c,
                                     ggml_custom3_op_t fun, int n_tasks, void *userdata) {
    return map3(__func__, ctx, a, b, c, fun, n_tasks, userdata, false);
}
struct ggml_tensor *ggml_map_custom3_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c,
                                             ggml_custom3_op_t fun, int n_tasks, void *userdata) {
    return map3(__func__, ctx, a, b, c, fun, n_tasks, userdata, true);
}

/* Sources args[0..n_args) into r->src[first..]; false (error recorded) when they do not fit. */
static bool set_args(const char *func, struct ggml_tensor *r, int first, struct ggml_tensor **args, int n_args) {
    if (n_args < 0 || first + n_args > GGML_MAX_SRC || (n_args > 0 && !args)) {
        ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "%d arguments (at most %d)", n_args, GGML_MAX_SRC - first);
        return false;
    }
    for (int i = 0; i < n_args; i++) {
        if (!args[i]) return false; /* a failed operand: the chain fails once, where it failed */
        r->src[first + i] = args[i];
    }
    return true;
}

struct ggml_tensor *ggml_custom_4d(struct ggml_context *ctx, enum ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3,
                                   struct ggml_tensor **args, int n_args, ggml_custom_op_t fun, int n_tasks, void *userdata) {
    if (!fun) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "NULL function");
    if (!n_tasks_ok(__func__, n_tasks)) return NULL;
    if (n_args < 0 || n_args > GGML_MAX_SRC)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "%d arguments (at most %d)", n_args, GGML_MAX_SRC);
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, type, ne0, ne1, ne2, ne3);
    GGMLC_CHECK_SRC(r);
    if (!set_args(__func__, r, 0, args, n_args)) return NULL;
    const struct ggml_custom_op_params p = {fun, n_tasks, userdata};
    ggmlc__set_op_params(r, &p, sizeof p);
    r->op = GGML_OP_CUSTOM;
    return r;
}

struct ggml_tensor *ggml_custom_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor **args, int n_args,
                                        ggml_custom_op_t fun, int n_tasks, void *userdata) {
    GGMLC_CHECK_SRC(a);
    if (!fun) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "NULL function");
    if (!n_tasks_ok(__func__, n_tasks)) return NULL;
    if (n_args < 0 || n_args > GGML_MAX_SRC - 1)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "%d arguments (at most %d)", n_args, GGML_MAX_SRC - 1);
    struct ggml_tensor *r = ggmlc__view_node(ctx, a);
    GGMLC_CHECK_SRC(r);
    r->src[0] = a;
    if (!set_args(__func__, r, 1, args, n_args)) return NULL;
    const struct ggml_custom_op_params p = {fun, n_tasks, userdata};
    ggmlc__set_op_params(r, &p, sizeof p);
    r->op = GGML_OP_CUSTOM;
    return r;
}
