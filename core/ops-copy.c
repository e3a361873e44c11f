/*
 * ops-copy.c - constructors of the operators that move data: dup, cpy,
 * cast, cont, set, acc, repeat, repeat_back and concat.
 */
#include "ggml-impl.h"

/* Types the copy kernels convert between (quantized types through their traits). */
static bool copy_type_ok(enum ggml_type type) {
    return ggmlc__is_float_type(type) || type == GGML_TYPE_I32 || ggml_is_quantized(type);
}

static struct ggml_tensor *dup_impl(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, bool inplace) {
    GGMLC_CHECK_SRC(a);
    struct ggml_tensor *r = inplace ? ggmlc__view_node(ctx, a) : ggml_dup_tensor(ctx, a);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_DUP, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_dup(struct ggml_context *ctx, struct ggml_tensor *a) { return dup_impl(__func__, ctx, a, false); }
struct ggml_tensor *ggml_dup_inplace(struct ggml_context *ctx, struct ggml_tensor *a) { return dup_impl(__func__, ctx, a, true); }

struct ggml_tensor *ggml_cpy(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR];
    if (ggml_nelements(a) != ggml_nelements(b))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "a %s and b %s have different element counts", ggmlc__shape_str(a, sa),
                             ggmlc__shape_str(b, sb));
    if (!copy_type_ok(a->type) || !copy_type_ok(b->type))
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "cannot copy %s to %s", ggml_type_name(a->type), ggml_type_name(b->type));
    struct ggml_tensor *r = ggml_view_tensor(ctx, b);
    GGMLC_CHECK_SRC(r);
    if (b->name[0])
        ggml_format_name(r, "%s (copy of %s)", b->name, a->name);
    else
        ggml_format_name(r, "%s (copy)", a->name);
    ggmlc__node_set(r, GGML_OP_CPY, a, b, NULL);
    return r;
}

struct ggml_tensor *ggml_cast(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_type type) {
    GGMLC_CHECK_SRC(a);
    if (!ggmlc__type_is_valid(type) || !copy_type_ok(a->type) || !copy_type_ok(type))
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "cannot convert %s to type id %d", ggml_type_name(a->type), (int)type);
    char sa[GGMLC_SHAPE_STR];
    if (a->ne[0] % ggml_blck_size(type) != 0)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "rows of a %s do not fill whole %s blocks", ggmlc__shape_str(a, sa),
                             ggml_type_name(type));
    struct ggml_tensor *r = ggmlc__new_node(ctx, type, GGML_MAX_DIMS, a->ne);
    GGMLC_CHECK_SRC(r);
    ggml_format_name(r, "%s (copy)", a->name);
    /* as in ggml: a CPY whose destination is the node itself */
    ggmlc__node_set(r, GGML_OP_CPY, a, r, NULL);
    return r;
}

struct ggml_tensor *ggml_cont_4d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    GGMLC_CHECK_SRC(a);
    char sa[GGMLC_SHAPE_STR];
    if (ne0 < 0 || ne1 < 0 || ne2 < 0 || ne3 < 0 || ggml_nelements(a) != ne0 * ne1 * ne2 * ne3)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "a %s cannot become [%lld, %lld, %lld, %lld]", ggmlc__shape_str(a, sa),
                             (long long)ne0, (long long)ne1, (long long)ne2, (long long)ne3);
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, a->type, ne0, ne1, ne2, ne3);
    GGMLC_CHECK_SRC(r);
    ggml_format_name(r, "%s (cont)", a->name);
    ggmlc__node_set(r, GGML_OP_CONT, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_cont(struct ggml_context *ctx, struct ggml_tensor *a) {
    GGMLC_CHECK_SRC(a);
    return ggml_cont_4d(ctx, a, a->ne[0], a->ne[1], a->ne[2], a->ne[3]);
}
struct ggml_tensor *ggml_cont_1d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0) { return ggml_cont_4d(ctx, a, ne0, 1, 1, 1); }
struct ggml_tensor *ggml_cont_2d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1) {
    return ggml_cont_4d(ctx, a, ne0, ne1, 1, 1);
}
struct ggml_tensor *ggml_cont_3d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2) {
    return ggml_cont_4d(ctx, a, ne0, ne1, ne2, 1);
}

/* ---------------------------------------------------------- set and acc */

/* op_params of SET and ACC: the view's byte strides and offset, and inplace. */
static struct ggml_tensor *set_acc_impl(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                        size_t nb1, size_t nb2, size_t nb3, size_t offset, bool inplace, enum ggml_op op) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR];
    /* as in ggml: acc adds F32; set also copies I32 into I32 (index tables) */
    const bool f32 = a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32;
    const bool i32_set = op == GGML_OP_SET && a->type == GGML_TYPE_I32 && b->type == GGML_TYPE_I32;
    if (!f32 && !i32_set)
        return ggmlc__op_fail(GGMLC_ERR_TYPE, func, "a %s and b %s must be F32 (set: or both I32)", ggmlc__shape_str(a, sa),
                             ggmlc__shape_str(b, sb));
    if (!ggml_is_contiguous(a))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, func, "a %s must be contiguous", ggmlc__shape_str(a, sa));
    /* the view of a that b lands in must lie inside a */
    const size_t es = ggml_element_size(a);
    if (offset % es != 0 || nb1 % es != 0 || nb2 % es != 0 || nb3 % es != 0)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "offset %zu and strides (%zu, %zu, %zu) must be multiples of %zu bytes",
                             offset, nb1, nb2, nb3, es);
    if (!ggml_is_empty(b)) {
        const size_t last = offset + (size_t)(b->ne[0] - 1) * es + (size_t)(b->ne[1] - 1) * nb1 + (size_t)(b->ne[2] - 1) * nb2 +
                            (size_t)(b->ne[3] - 1) * nb3;
        if (last + es > ggml_nbytes(a))
            return ggmlc__op_fail(GGMLC_ERR_SHAPE, func, "b %s at offset %zu with strides (%zu, %zu, %zu) reaches past a %s",
                                 ggmlc__shape_str(b, sb), offset, nb1, nb2, nb3, ggmlc__shape_str(a, sa));
    }
    struct ggml_tensor *r = inplace ? ggmlc__view_node(ctx, a) : ggml_dup_tensor(ctx, a);
    GGMLC_CHECK_SRC(r);
    const int32_t params[5] = {(int32_t)nb1, (int32_t)nb2, (int32_t)nb3, (int32_t)offset, inplace ? 1 : 0};
    if ((size_t)params[0] != nb1 || (size_t)params[1] != nb2 || (size_t)params[2] != nb3 || (size_t)params[3] != offset)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func,
                              "strides and offset must be below 2 GiB");
    ggmlc__set_op_params(r, params, sizeof params);
    ggmlc__node_set(r, op, a, b, NULL);
    return r;
}

struct ggml_tensor *ggml_acc(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    return set_acc_impl(__func__, ctx, a, b, nb1, nb2, nb3, offset, false, GGML_OP_ACC);
}
struct ggml_tensor *ggml_acc_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    return set_acc_impl(__func__, ctx, a, b, nb1, nb2, nb3, offset, true, GGML_OP_ACC);
}
struct ggml_tensor *ggml_set(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    return set_acc_impl(__func__, ctx, a, b, nb1, nb2, nb3, offset, false, GGML_OP_SET);
}
struct ggml_tensor *ggml_set_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    return set_acc_impl(__func__, ctx, a, b, nb1, nb2, nb3, offset, true, GGML_OP_SET);
}
struct ggml_tensor *ggml_set_1d(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t offset) {
    GGMLC_CHECK_SRC(a);
    return set_acc_impl(__func__, ctx, a, b, a->nb[1], a->nb[2], a->nb[3], offset, false, GGML_OP_SET);
}
struct ggml_tensor *ggml_set_1d_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t offset) {
    GGMLC_CHECK_SRC(a);
    return set_acc_impl(__func__, ctx, a, b, a->nb[1], a->nb[2], a->nb[3], offset, true, GGML_OP_SET);
}
struct ggml_tensor *ggml_set_2d(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t nb1, size_t offset) {
    GGMLC_CHECK_SRC(a);
    return set_acc_impl(__func__, ctx, a, b, nb1, a->nb[2], a->nb[3], offset, false, GGML_OP_SET);
}
struct ggml_tensor *ggml_set_2d_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, size_t nb1, size_t offset) {
    GGMLC_CHECK_SRC(a);
    return set_acc_impl(__func__, ctx, a, b, nb1, a->nb[2], a->nb[3], offset, true, GGML_OP_SET);
}

/* --------------------------------------------------- repeat and concat */

static struct ggml_tensor *repeat_to(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, const int64_t ne[4]) {
    char sa[GGMLC_SHAPE_STR];
    for (int i = 0; i < GGML_MAX_DIMS; i++)
        if (ne[i] < 0 || (a->ne[i] == 0 ? ne[i] != 0 : ne[i] % a->ne[i] != 0))
            return ggmlc__op_fail(GGMLC_ERR_SHAPE, func, "a %s cannot be repeated to [%lld, %lld, %lld, %lld]", ggmlc__shape_str(a, sa),
                                 (long long)ne[0], (long long)ne[1], (long long)ne[2], (long long)ne[3]);
    if (!ggmlc__is_float_type(a->type) && a->type != GGML_TYPE_I32 && a->type != GGML_TYPE_I16)
        return ggmlc__op_fail(GGMLC_ERR_TYPE, func, "cannot repeat %s tensors", ggml_type_name(a->type));
    struct ggml_tensor *r = ggmlc__new_node(ctx, a->type, GGML_MAX_DIMS, ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_REPEAT, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_repeat(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    return repeat_to(__func__, ctx, a, b->ne);
}

struct ggml_tensor *ggml_repeat_4d(struct ggml_context *ctx, struct ggml_tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    GGMLC_CHECK_SRC(a);
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    return repeat_to(__func__, ctx, a, ne);
}

struct ggml_tensor *ggml_repeat_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR];
    if (!ggml_can_repeat(b, a))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "b %s does not repeat to a %s", ggmlc__shape_str(b, sb), ggmlc__shape_str(a, sa));
    if (!ggmlc__is_float_type(a->type))
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "a %s is not F32, F16 or BF16", ggmlc__shape_str(a, sa));
    struct ggml_tensor *r = ggmlc__new_node(ctx, a->type, GGML_MAX_DIMS, b->ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_REPEAT_BACK, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_concat(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int dim) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR];
    if (dim < 0 || dim >= GGML_MAX_DIMS)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "dim = %d is not in 0..%d", dim, GGML_MAX_DIMS - 1);
    if (a->type != b->type)
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "a %s and b %s differ in type", ggmlc__shape_str(a, sa), ggmlc__shape_str(b, sb));
    int64_t ne[GGML_MAX_DIMS];
    for (int d = 0; d < GGML_MAX_DIMS; d++) {
        if (d != dim && a->ne[d] != b->ne[d])
            return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "a %s and b %s differ outside dimension %d", ggmlc__shape_str(a, sa),
                                 ggmlc__shape_str(b, sb), dim);
        ne[d] = d == dim ? a->ne[d] + b->ne[d] : a->ne[d];
    }
    /* Any type is moved as it is; a block format along dim 0 only in whole blocks. */
    const int64_t blck = ggml_blck_size(a->type);
    if (blck <= 0 || ggml_type_size(a->type) == 0)
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "cannot concatenate %s tensors", ggml_type_name(a->type));
    if (a->ne[0] % blck != 0 || b->ne[0] % blck != 0)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "rows of a %s and b %s are not whole %s blocks of %lld",
                             ggmlc__shape_str(a, sa), ggmlc__shape_str(b, sb), ggml_type_name(a->type), (long long)blck);
    struct ggml_tensor *r = ggmlc__new_node(ctx, a->type, GGML_MAX_DIMS, ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, dim);
    ggmlc__node_set(r, GGML_OP_CONCAT, a, b, NULL);
    return r;
}
