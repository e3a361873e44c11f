/*
 * ops-index.c - constructors of the indexing and sorting operators: get_rows,
 * get_rows_back, set_rows, add_id, argsort, top_k.  Shapes follow ggml's
 * documented contract; see include/ggml.h.
 */
#include "ggml-impl.h"

static bool is_index_type(enum ggml_type type) { return type == GGML_TYPE_I32 || type == GGML_TYPE_I64; }

struct ggml_tensor *ggml_get_rows(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (b->type != GGML_TYPE_I32)
        return ggmlc_op_fail_shapes(GGMLC_ERR_TYPE, __func__, "row indices must be I32", a, b);
    if (b->ne[1] != a->ne[2] || b->ne[2] != a->ne[3] || b->ne[3] != 1)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "indices [n, ne2, ne3] must match the data's dims 2 and 3", a, b);
    /* Rows come out as f32 (dequantized / widened), except integer tables which stay I32. */
    const enum ggml_type type = a->type == GGML_TYPE_I32 ? GGML_TYPE_I32 : GGML_TYPE_F32;
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, type, a->ne[0], b->ne[0], b->ne[1], b->ne[2]);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_GET_ROWS, a, b, NULL);
    return r;
}

struct ggml_tensor *ggml_get_rows_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    GGMLC_CHECK_SRC(c);
    if (b->type != GGML_TYPE_I32 || !ggml_is_vector(b))
        return ggmlc_op_fail_shapes(GGMLC_ERR_TYPE, __func__, "row indices must be an I32 vector", a, b);
    /* As in ggml, the gradient may hold more rows than there are indices: row i of it goes
     * to index i, the rows past the last index are not used. */
    if (!ggml_is_matrix(a) || !ggml_is_matrix(c) || a->ne[0] != c->ne[0] || a->ne[1] < b->ne[0])
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__,
                                    "gradient [E, m] needs m >= the n indices and data [E, R]", a, c);
    struct ggml_tensor *r = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, c->ne[0], c->ne[1]);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_GET_ROWS_BACK, a, b, NULL);
    return r;
}

struct ggml_tensor *ggml_set_rows(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *c) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    GGMLC_CHECK_SRC(c);
    if (!is_index_type(c->type))
        return ggmlc_op_fail_shapes(GGMLC_ERR_TYPE, __func__, "row indices must be I64 or I32", b, c);
    if (b->type != GGML_TYPE_F32 && b->type != GGML_TYPE_F16)
        return ggmlc_op_fail_shapes(GGMLC_ERR_TYPE, __func__, "source rows must be F32 or F16", a, b);
    if (a->ne[0] != b->ne[0] || a->ne[2] != b->ne[2] || a->ne[3] != b->ne[3])
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "destination and source must agree in dims 0, 2 and 3", a, b);
    if (b->ne[1] != c->ne[0] || c->ne[3] != 1 || c->ne[1] == 0 || c->ne[2] == 0 ||
        b->ne[2] % c->ne[1] != 0 || b->ne[3] % c->ne[2] != 0)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "indices [n, i2, i3] must cover the source rows (dims 2, 3 broadcast)", b, c);
    if (a->nb[0] != ggml_type_size(a->type) || b->nb[0] != ggml_type_size(b->type))
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "rows must be contiguous", a, b);
    struct ggml_tensor *r = ggmlc__view_node(ctx, a);
    GGMLC_CHECK_SRC(r);
    /* the destination is src[2], as in ggml: so it joins the graph (and is allocated there)
     * even when the result's view source is its only link to it */
    ggmlc__node_set(r, GGML_OP_SET_ROWS, b, c, a);
    return r;
}

struct ggml_tensor *ggml_add_id(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *ids) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    GGMLC_CHECK_SRC(ids);
    if (ids->type != GGML_TYPE_I32)
        return ggmlc_op_fail_shapes(GGMLC_ERR_TYPE, __func__, "ids must be I32", a, ids);
    if (a->type != GGML_TYPE_F32 || b->type != GGML_TYPE_F32)
        return ggmlc_op_fail_shapes(GGMLC_ERR_TYPE, __func__, "a and b must be F32", a, b);
    if (a->ne[0] != b->ne[0] || !ggml_is_matrix(b) || a->ne[3] != 1)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "a [E, n_used, T] and b [E, n_expert] must share E", a, b);
    if (ids->ne[0] != a->ne[1] || ids->ne[1] != a->ne[2] || !ggml_is_matrix(ids))
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "ids must be [n_used, T] of a", a, ids);
    struct ggml_tensor *r = ggml_dup_tensor(ctx, a);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_ADD_ID, a, b, ids);
    return r;
}

struct ggml_tensor *ggml_argsort(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_sort_order order) {
    GGMLC_CHECK_SRC(a);
    if (a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_I32)
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "argsort sorts F32 or I32 rows, not %s", ggml_type_name(a->type));
    if (order != GGML_SORT_ORDER_ASC && order != GGML_SORT_ORDER_DESC)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "unknown sort order %d", (int)order);
    if (a->ne[0] > INT32_MAX)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "rows of %lld elements do not fit I32 indices", (long long)a->ne[0]);
    struct ggml_tensor *r = ggml_new_tensor(ctx, GGML_TYPE_I32, GGML_MAX_DIMS, a->ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, (int32_t)order);
    ggmlc__node_set(r, GGML_OP_ARGSORT, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_top_k(struct ggml_context *ctx, struct ggml_tensor *a, int k) {
    GGMLC_CHECK_SRC(a);
    if (a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_I32)
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "top_k selects from F32 or I32 rows, not %s", ggml_type_name(a->type));
    if (k < 1 || k > a->ne[0]) {
        char sa[GGMLC_SHAPE_STR];
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "k = %d must be in [1, ne0] for %s", k, ggmlc__shape_str(a, sa));
    }
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, GGML_TYPE_I32, k, a->ne[1], a->ne[2], a->ne[3]);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, k);
    ggmlc__node_set(r, GGML_OP_TOP_K, a, NULL, NULL);
    return r;
}
