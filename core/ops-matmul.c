/*
 * ops-matmul.c - constructors of the matrix products: mul_mat, mul_mat_id,
 * out_prod.  They check ggml's shape rules and build nodes; the backends
 * compute them.  Results are always F32.
 */
#include "ggml-impl.h"

/* Types a product operand may have: the float types and the block formats. */
static bool is_product_type(enum ggml_type type) {
    return ggmlc__type_is_valid(type) && type != GGML_TYPE_I8 && type != GGML_TYPE_I16 && type != GGML_TYPE_I32 &&
           type != GGML_TYPE_I64 && type != GGML_TYPE_F64;
}

/* Activations (the second operand) must be plain floats. */
static bool is_activation_type(enum ggml_type type) {
    return ggmlc__is_float_type(type);
}

/* Weights of a supported type and float activations; otherwise one error naming func. */
static bool product_types_ok(const char *func, const struct ggml_tensor *a, const struct ggml_tensor *b) {
    if (is_product_type(a->type) && is_activation_type(b->type)) return true;
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR];
    ggmlc__op_fail(GGMLC_ERR_TYPE, func, "unsupported operand types: a %s, b %s (b must be f32, f16 or bf16)",
                  ggmlc__shape_str(a, sa), ggmlc__shape_str(b, sb));
    return false;
}

struct ggml_tensor *ggml_mul_mat(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR];
    if (!product_types_ok(__func__, a, b)) return NULL;
    if (a->ne[0] != b->ne[0] || a->ne[2] == 0 || a->ne[3] == 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__,
                             "a %s and b %s: need a->ne[0] == b->ne[0] and b->ne[2], b->ne[3] multiples of a's",
                             ggmlc__shape_str(a, sa), ggmlc__shape_str(b, sb));
    if (ggml_is_transposed(a))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "a %s is transposed (nb[0] > nb[1]); make it contiguous first",
                             ggmlc__shape_str(a, sa));
    const int64_t ne[4] = {a->ne[1], b->ne[1], b->ne[2], b->ne[3]};
    struct ggml_tensor *r = ggmlc__new_node(ctx, GGML_TYPE_F32, 4, ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_MUL_MAT, a, b, NULL);
    return r;
}

void ggml_mul_mat_set_prec(struct ggml_tensor *a, enum ggml_prec prec) {
    if (!a) return;
    if (a->op != GGML_OP_MUL_MAT && a->op != GGML_OP_MUL_MAT_ID) {
        ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "node is a %s, not a matrix product", ggml_op_name(a->op));
        return;
    }
    if (prec != GGML_PREC_DEFAULT && prec != GGML_PREC_F32) {
        ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "unknown precision %d", (int)prec);
        return;
    }
    /* CPU accumulation is always f32; the setting is kept for backends that can do less. */
    ggmlc__set_op_params_i32(a, 0, (int32_t)prec);
}

struct ggml_tensor *ggml_mul_mat_id(struct ggml_context *ctx, struct ggml_tensor *as, struct ggml_tensor *b,
                                    struct ggml_tensor *ids) {
    GGMLC_CHECK_SRC(as);
    GGMLC_CHECK_SRC(b);
    GGMLC_CHECK_SRC(ids);
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR], si[GGMLC_SHAPE_STR];
    ggmlc__shape_str(as, sa);
    ggmlc__shape_str(b, sb);
    ggmlc__shape_str(ids, si);
    if (!is_product_type(as->type) || !is_activation_type(b->type) || ids->type != GGML_TYPE_I32)
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "unsupported types: as %s, b %s, ids %s (ids must be i32)", sa, sb, si);
    if (as->ne[3] != 1 || b->ne[3] != 1 || ids->ne[2] != 1 || ids->ne[3] != 1)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "as %s and b %s must be 3-D, ids %s 2-D", sa, sb, si);
    if (as->ne[0] != b->ne[0] || ids->ne[1] != b->ne[2] || b->ne[1] == 0 || ids->ne[0] % b->ne[1] != 0)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__,
                             "as %s, b %s, ids %s: need as->ne[0] == b->ne[0], ids->ne[1] == b->ne[2] "
                             "and ids->ne[0] a multiple of b->ne[1]",
                             sa, sb, si);
    if (ggml_is_transposed(as))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "as %s is transposed", sa);
    const int64_t ne[4] = {as->ne[1], ids->ne[0], b->ne[2], 1};
    struct ggml_tensor *r = ggmlc__new_node(ctx, GGML_TYPE_F32, 4, ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_MUL_MAT_ID, as, b, ids);
    return r;
}

struct ggml_tensor *ggml_out_prod(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR];
    if (!product_types_ok(__func__, a, b)) return NULL;
    if (a->ne[1] != b->ne[1] || a->ne[2] == 0 || a->ne[3] == 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__,
                             "a %s and b %s: need a->ne[1] == b->ne[1] and b->ne[2], b->ne[3] multiples of a's",
                             ggmlc__shape_str(a, sa), ggmlc__shape_str(b, sb));
    if (ggml_is_transposed(a))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "a %s is transposed", ggmlc__shape_str(a, sa));
    const int64_t ne[4] = {a->ne[0], b->ne[0], b->ne[2], b->ne[3]};
    struct ggml_tensor *r = ggmlc__new_node(ctx, GGML_TYPE_F32, 4, ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_OUT_PROD, a, b, NULL);
    return r;
}
