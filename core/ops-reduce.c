/*
 * ops-reduce.c - constructors of the reductions: sum, sum_rows, mean,
 * cumsum, argmax and count_equal.
 */
#include "ggml-impl.h"

static bool reduce_type_ok(const char *func, const struct ggml_tensor *a) {
    if (ggmlc__is_float_type(a->type)) return true;
    char sa[GGMLC_SHAPE_STR];
    ggmlc__op_fail(GGMLC_ERR_TYPE, func, "a %s is not F32, F16 or BF16", ggmlc__shape_str(a, sa));
    return false;
}

static struct ggml_tensor *reduce_node(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_op op,
                                       enum ggml_type type, int n_dims, const int64_t *ne) {
    GGMLC_CHECK_SRC(a);
    if (!reduce_type_ok(func, a)) return NULL;
    struct ggml_tensor *r = ggmlc__new_node(ctx, type, n_dims, ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, op, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_sum(struct ggml_context *ctx, struct ggml_tensor *a) {
    GGMLC_CHECK_SRC(a);
    const int64_t one = 1;
    return reduce_node(__func__, ctx, a, GGML_OP_SUM, a->type, 1, &one);
}

struct ggml_tensor *ggml_sum_rows(struct ggml_context *ctx, struct ggml_tensor *a) {
    GGMLC_CHECK_SRC(a);
    const int64_t ne[4] = {1, a->ne[1], a->ne[2], a->ne[3]};
    return reduce_node(__func__, ctx, a, GGML_OP_SUM_ROWS, a->type, 4, ne);
}

struct ggml_tensor *ggml_mean(struct ggml_context *ctx, struct ggml_tensor *a) {
    GGMLC_CHECK_SRC(a);
    const int64_t ne[4] = {1, a->ne[1], a->ne[2], a->ne[3]};
    return reduce_node(__func__, ctx, a, GGML_OP_MEAN, GGML_TYPE_F32, 4, ne);
}

struct ggml_tensor *ggml_cumsum(struct ggml_context *ctx, struct ggml_tensor *a) {
    GGMLC_CHECK_SRC(a);
    return reduce_node(__func__, ctx, a, GGML_OP_CUMSUM, a->type, 4, a->ne);
}

struct ggml_tensor *ggml_argmax(struct ggml_context *ctx, struct ggml_tensor *a) {
    GGMLC_CHECK_SRC(a);
    char sa[GGMLC_SHAPE_STR];
    if (!ggml_is_matrix(a)) return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "a %s must be a matrix", ggmlc__shape_str(a, sa));
    if (a->ne[0] > INT32_MAX) return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "rows of a %s are too long for I32 indices", ggmlc__shape_str(a, sa));
    if (a->ne[0] == 0) return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "rows of a %s are empty", ggmlc__shape_str(a, sa));
    return reduce_node(__func__, ctx, a, GGML_OP_ARGMAX, GGML_TYPE_I32, 1, &a->ne[1]);
}

struct ggml_tensor *ggml_count_equal(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR];
    if (!ggml_are_same_shape(a, b))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "a %s and b %s differ in shape", ggmlc__shape_str(a, sa), ggmlc__shape_str(b, sb));
    if (a->type != GGML_TYPE_I32 || b->type != GGML_TYPE_I32)
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "a %s and b %s must be I32", ggmlc__shape_str(a, sa), ggmlc__shape_str(b, sb));
    const int64_t one = 1;
    struct ggml_tensor *r = ggmlc__new_node(ctx, GGML_TYPE_I64, 1, &one);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_COUNT_EQUAL, a, b, NULL);
    return r;
}
