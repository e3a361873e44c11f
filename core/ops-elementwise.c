/*
 * ops-elementwise.c - constructors of the element-wise operators:
 * broadcasting arithmetic, GGML_OP_UNARY activations, gated linear units,
 * scale, clamp, leaky_relu, fill, tri, diag masks and arange.
 */
#include <math.h>

#include "ggml-impl.h"

/* ------------------------------------------------------------- helpers */

static bool float_type_ok(const char *func, const struct ggml_tensor *t, const char *role) {
    if (ggmlc__is_float_type(t->type)) return true;
    char s[GGMLC_SHAPE_STR];
    ggmlc__op_fail(GGMLC_ERR_TYPE, func, "operand %s %s is not F32, F16 or BF16", role, ggmlc__shape_str(t, s));
    return false;
}

/* The result: a new tensor like a, or (inplace) a view of a that the op overwrites. */
static struct ggml_tensor *result_like(struct ggml_context *ctx, struct ggml_tensor *a, bool inplace) {
    return inplace ? ggmlc__view_node(ctx, a) : ggml_dup_tensor(ctx, a);
}

/* a OP b with b repeated over a; result of a's type (or `type` for add_cast). */
static struct ggml_tensor *binary_op(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                     enum ggml_op op, bool inplace) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR];
    if (!ggml_can_repeat(b, a))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, func, "cannot broadcast b %s to a %s (each b->ne[i] must divide a->ne[i])",
                             ggmlc__shape_str(b, sb), ggmlc__shape_str(a, sa));
    /* as in ggml, add also takes quantized weights (plus an F32 b), e.g. to merge adapters */
    const bool quantized_add = op == GGML_OP_ADD && ggml_is_quantized(a->type) && b->type == GGML_TYPE_F32;
    if (!quantized_add && (!float_type_ok(func, a, "a") || !float_type_ok(func, b, "b"))) return NULL;
    if (b->type != a->type && b->type != GGML_TYPE_F32)
        return ggmlc__op_fail(GGMLC_ERR_TYPE, func, "b %s must be F32 or of a's type %s", ggmlc__shape_str(b, sb),
                             ggml_type_name(a->type));
    struct ggml_tensor *r = result_like(ctx, a, inplace);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, op, a, b, NULL);
    return r;
}

struct ggml_tensor *ggml_add(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) { return binary_op(__func__, ctx, a, b, GGML_OP_ADD, false); }
struct ggml_tensor *ggml_add_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) { return binary_op(__func__, ctx, a, b, GGML_OP_ADD, true); }
struct ggml_tensor *ggml_sub(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) { return binary_op(__func__, ctx, a, b, GGML_OP_SUB, false); }
struct ggml_tensor *ggml_sub_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) { return binary_op(__func__, ctx, a, b, GGML_OP_SUB, true); }
struct ggml_tensor *ggml_mul(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) { return binary_op(__func__, ctx, a, b, GGML_OP_MUL, false); }
struct ggml_tensor *ggml_mul_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) { return binary_op(__func__, ctx, a, b, GGML_OP_MUL, true); }
struct ggml_tensor *ggml_div(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) { return binary_op(__func__, ctx, a, b, GGML_OP_DIV, false); }
struct ggml_tensor *ggml_div_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) { return binary_op(__func__, ctx, a, b, GGML_OP_DIV, true); }

struct ggml_tensor *ggml_add_cast(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, enum ggml_type type) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR];
    if (!ggml_can_repeat(b, a))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "cannot broadcast b %s to a %s", ggmlc__shape_str(b, sb),
                             ggmlc__shape_str(a, sa));
    if (!(ggml_is_quantized(a->type) && b->type == GGML_TYPE_F32) && (!float_type_ok(__func__, a, "a") || !float_type_ok(__func__, b, "b")))
        return NULL;
    if (!ggmlc__is_float_type(type) && !ggml_is_quantized(type))
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "result type %s is neither a float nor a quantized type", ggml_type_name(type));
    struct ggml_tensor *r = ggmlc__new_node(ctx, type, GGML_MAX_DIMS, a->ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_ADD, a, b, NULL);
    return r;
}

static struct ggml_tensor *add1_impl(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, bool inplace) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    char sb[GGMLC_SHAPE_STR];
    if (!ggml_is_scalar(b)) return ggmlc__op_fail(GGMLC_ERR_SHAPE, func, "b %s is not a scalar", ggmlc__shape_str(b, sb));
    struct ggml_tensor *r = binary_op(func, ctx, a, b, GGML_OP_ADD1, inplace);
    return r;
}

struct ggml_tensor *ggml_add1(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) { return add1_impl(__func__, ctx, a, b, false); }
struct ggml_tensor *ggml_add1_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) { return add1_impl(__func__, ctx, a, b, true); }

/* ------------------------------------------------------- simple math ops */

static struct ggml_tensor *math_op(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_op op, bool inplace) {
    GGMLC_CHECK_SRC(a);
    if (!float_type_ok(func, a, "a")) return NULL;
    struct ggml_tensor *r = result_like(ctx, a, inplace);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, op, a, NULL, NULL);
    return r;
}

#define MATH_OP(name, OP)                                                                                           \
    struct ggml_tensor *ggml_##name(struct ggml_context *ctx, struct ggml_tensor *a) {                              \
        return math_op(__func__, ctx, a, GGML_OP_##OP, false);                                                       \
    }                                                                                                               \
    struct ggml_tensor *ggml_##name##_inplace(struct ggml_context *ctx, struct ggml_tensor *a) {                    \
        return math_op(__func__, ctx, a, GGML_OP_##OP, true);                                                        \
    }
MATH_OP(sqr, SQR)
MATH_OP(sqrt, SQRT)
MATH_OP(log, LOG)
MATH_OP(sin, SIN)
MATH_OP(cos, COS)

/* --------------------------------------------------------------- unary */

static struct ggml_tensor *unary_impl(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_unary_op op, bool inplace) {
    GGMLC_CHECK_SRC(a);
    if ((unsigned)op >= GGML_UNARY_OP_COUNT) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "unknown unary op %d", (int)op);
    if (!float_type_ok(func, a, "a")) return NULL;
    struct ggml_tensor *r = result_like(ctx, a, inplace);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, (int32_t)op);
    ggmlc__node_set(r, GGML_OP_UNARY, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_unary(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_unary_op op) { return unary_impl(__func__, ctx, a, op, false); }
struct ggml_tensor *ggml_unary_inplace(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_unary_op op) { return unary_impl(__func__, ctx, a, op, true); }

#define UNARY_OP(name, OP)                                                                                          \
    struct ggml_tensor *ggml_##name(struct ggml_context *ctx, struct ggml_tensor *a) {                              \
        return unary_impl(__func__, ctx, a, GGML_UNARY_OP_##OP, false);                                              \
    }                                                                                                               \
    struct ggml_tensor *ggml_##name##_inplace(struct ggml_context *ctx, struct ggml_tensor *a) {                    \
        return unary_impl(__func__, ctx, a, GGML_UNARY_OP_##OP, true);                                               \
    }
UNARY_OP(abs, ABS)
UNARY_OP(sgn, SGN)
UNARY_OP(neg, NEG)
UNARY_OP(step, STEP)
UNARY_OP(tanh, TANH)
UNARY_OP(elu, ELU)
UNARY_OP(relu, RELU)
UNARY_OP(sigmoid, SIGMOID)
UNARY_OP(gelu, GELU)
UNARY_OP(gelu_erf, GELU_ERF)
UNARY_OP(gelu_quick, GELU_QUICK)
UNARY_OP(silu, SILU)
UNARY_OP(exp, EXP)
UNARY_OP(expm1, EXPM1)
UNARY_OP(softplus, SOFTPLUS)
UNARY_OP(floor, FLOOR)
UNARY_OP(ceil, CEIL)
UNARY_OP(round, ROUND)
UNARY_OP(trunc, TRUNC)

struct ggml_tensor *ggml_hardswish(struct ggml_context *ctx, struct ggml_tensor *a) { return unary_impl(__func__, ctx, a, GGML_UNARY_OP_HARDSWISH, false); }
struct ggml_tensor *ggml_hardsigmoid(struct ggml_context *ctx, struct ggml_tensor *a) { return unary_impl(__func__, ctx, a, GGML_UNARY_OP_HARDSIGMOID, false); }

static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

struct ggml_tensor *ggml_xielu(struct ggml_context *ctx, struct ggml_tensor *a, float alpha_n, float alpha_p, float beta, float eps) {
    struct ggml_tensor *r = unary_impl(__func__, ctx, a, GGML_UNARY_OP_XIELU, false);
    GGMLC_CHECK_SRC(r);
    /* the constrained coefficients are computed once, here, as ggml does */
    ggmlc__set_op_params_f32(r, 1, beta + softplus(alpha_n));
    ggmlc__set_op_params_f32(r, 2, softplus(alpha_p));
    ggmlc__set_op_params_f32(r, 3, beta);
    ggmlc__set_op_params_f32(r, 4, eps);
    return r;
}

struct ggml_tensor *ggml_leaky_relu(struct ggml_context *ctx, struct ggml_tensor *a, float negative_slope, bool inplace) {
    struct ggml_tensor *r = math_op(__func__, ctx, a, GGML_OP_LEAKY_RELU, inplace);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_f32(r, 0, negative_slope);
    return r;
}

/* ------------------------------------------------------ gated linear units */

static struct ggml_tensor *glu_impl(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                    enum ggml_glu_op op, bool swapped) {
    GGMLC_CHECK_SRC(a);
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR];
    if ((unsigned)op >= GGML_GLU_OP_COUNT) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "unknown glu op %d", (int)op);
    if (!float_type_ok(func, a, "a")) return NULL;
    int64_t ne[GGML_MAX_DIMS] = {a->ne[0], a->ne[1], a->ne[2], a->ne[3]};
    if (b) {
        if (!ggml_are_same_shape(a, b) || a->type != b->type)
            return ggmlc__op_fail(GGMLC_ERR_SHAPE, func, "a %s and b %s must have the same shape and type",
                                 ggmlc__shape_str(a, sa), ggmlc__shape_str(b, sb));
    } else {
        /* As in ggml, an odd width is floored: the last column takes no part. */
        if (a->ne[0] < 2)
            return ggmlc__op_fail(GGMLC_ERR_SHAPE, func, "a %s needs at least 2 columns to split in halves",
                                 ggmlc__shape_str(a, sa));
        ne[0] /= 2;
    }
    struct ggml_tensor *r = ggmlc__new_node(ctx, a->type, GGML_MAX_DIMS, ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, (int32_t)op);
    ggmlc__set_op_params_i32(r, 1, swapped ? 1 : 0);
    ggmlc__node_set(r, GGML_OP_GLU, a, b, NULL);
    return r;
}

struct ggml_tensor *ggml_glu(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_glu_op op, bool swapped) {
    return glu_impl(__func__, ctx, a, NULL, op, swapped);
}

struct ggml_tensor *ggml_glu_split(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, enum ggml_glu_op op) {
    GGMLC_CHECK_SRC(b);
    return glu_impl(__func__, ctx, a, b, op, false);
}

#define GLU_OP(name, OP)                                                                                               \
    struct ggml_tensor *ggml_##name(struct ggml_context *ctx, struct ggml_tensor *a) {                                 \
        return glu_impl(__func__, ctx, a, NULL, GGML_GLU_OP_##OP, false);                                               \
    }                                                                                                                  \
    struct ggml_tensor *ggml_##name##_swapped(struct ggml_context *ctx, struct ggml_tensor *a) {                       \
        return glu_impl(__func__, ctx, a, NULL, GGML_GLU_OP_##OP, true);                                                \
    }                                                                                                                  \
    struct ggml_tensor *ggml_##name##_split(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) { \
        GGMLC_CHECK_SRC(b);                                                                                            \
        return glu_impl(__func__, ctx, a, b, GGML_GLU_OP_##OP, false);                                                  \
    }
GLU_OP(reglu, REGLU)
GLU_OP(geglu, GEGLU)
GLU_OP(swiglu, SWIGLU)
GLU_OP(geglu_erf, GEGLU_ERF)
GLU_OP(geglu_quick, GEGLU_QUICK)

struct ggml_tensor *ggml_swiglu_oai(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, float alpha, float limit) {
    struct ggml_tensor *r = glu_impl(__func__, ctx, a, b, GGML_GLU_OP_SWIGLU_OAI, false);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_f32(r, 2, alpha);
    ggmlc__set_op_params_f32(r, 3, limit);
    return r;
}

/* ------------------------------------------------- scale, clamp, fill, ... */

static struct ggml_tensor *scale_impl(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, float s, float b, bool inplace) {
    struct ggml_tensor *r = math_op(func, ctx, a, GGML_OP_SCALE, inplace);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_f32(r, 0, s);
    ggmlc__set_op_params_f32(r, 1, b);
    return r;
}

struct ggml_tensor *ggml_scale(struct ggml_context *ctx, struct ggml_tensor *a, float s) { return scale_impl(__func__, ctx, a, s, 0.0f, false); }
struct ggml_tensor *ggml_scale_inplace(struct ggml_context *ctx, struct ggml_tensor *a, float s) { return scale_impl(__func__, ctx, a, s, 0.0f, true); }
struct ggml_tensor *ggml_scale_bias(struct ggml_context *ctx, struct ggml_tensor *a, float s, float b) { return scale_impl(__func__, ctx, a, s, b, false); }
struct ggml_tensor *ggml_scale_bias_inplace(struct ggml_context *ctx, struct ggml_tensor *a, float s, float b) { return scale_impl(__func__, ctx, a, s, b, true); }

struct ggml_tensor *ggml_clamp(struct ggml_context *ctx, struct ggml_tensor *a, float min, float max) {
    /* a view of a, as in ggml: clamp overwrites its operand */
    struct ggml_tensor *r = math_op(__func__, ctx, a, GGML_OP_CLAMP, true);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_f32(r, 0, min);
    ggmlc__set_op_params_f32(r, 1, max);
    return r;
}

static struct ggml_tensor *fill_impl(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, float c, bool inplace) {
    struct ggml_tensor *r = math_op(func, ctx, a, GGML_OP_FILL, inplace);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_f32(r, 0, c);
    return r;
}

struct ggml_tensor *ggml_fill(struct ggml_context *ctx, struct ggml_tensor *a, float c) { return fill_impl(__func__, ctx, a, c, false); }
struct ggml_tensor *ggml_fill_inplace(struct ggml_context *ctx, struct ggml_tensor *a, float c) { return fill_impl(__func__, ctx, a, c, true); }

struct ggml_tensor *ggml_tri(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_tri_type type) {
    GGMLC_CHECK_SRC(a);
    if ((unsigned)type > GGML_TRI_TYPE_LOWER)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "unknown triangle type %d", (int)type);
    struct ggml_tensor *r = math_op(__func__, ctx, a, GGML_OP_TRI, false);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, (int32_t)type);
    return r;
}

static struct ggml_tensor *diag_mask_impl(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, int n_past,
                                          enum ggml_op op, bool inplace) {
    struct ggml_tensor *r = math_op(func, ctx, a, op, inplace);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, n_past);
    return r;
}

struct ggml_tensor *ggml_diag_mask_inf(struct ggml_context *ctx, struct ggml_tensor *a, int n_past) {
    return diag_mask_impl(__func__, ctx, a, n_past, GGML_OP_DIAG_MASK_INF, false);
}
struct ggml_tensor *ggml_diag_mask_inf_inplace(struct ggml_context *ctx, struct ggml_tensor *a, int n_past) {
    return diag_mask_impl(__func__, ctx, a, n_past, GGML_OP_DIAG_MASK_INF, true);
}
struct ggml_tensor *ggml_diag_mask_zero(struct ggml_context *ctx, struct ggml_tensor *a, int n_past) {
    return diag_mask_impl(__func__, ctx, a, n_past, GGML_OP_DIAG_MASK_ZERO, false);
}
struct ggml_tensor *ggml_diag_mask_zero_inplace(struct ggml_context *ctx, struct ggml_tensor *a, int n_past) {
    return diag_mask_impl(__func__, ctx, a, n_past, GGML_OP_DIAG_MASK_ZERO, true);
}

struct ggml_tensor *ggml_diag(struct ggml_context *ctx, struct ggml_tensor *a) {
    GGMLC_CHECK_SRC(a);
    char sa[GGMLC_SHAPE_STR];
    if (a->ne[1] != 1) return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "a %s must be a row vector (ne[1] = 1)", ggmlc__shape_str(a, sa));
    if (!float_type_ok(__func__, a, "a")) return NULL;
    const int64_t ne[GGML_MAX_DIMS] = {a->ne[0], a->ne[0], a->ne[2], a->ne[3]};
    struct ggml_tensor *r = ggmlc__new_node(ctx, a->type, GGML_MAX_DIMS, ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_DIAG, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_arange(struct ggml_context *ctx, float start, float stop, float step) {
    if (!(step != 0.0f) || !isfinite(start) || !isfinite(stop) || !isfinite(step) || (stop - start) / step < 0.0f)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "[%g, %g) with step %g is not a valid range", start, stop, step);
    const int64_t steps = (int64_t)ceilf((stop - start) / step);
    struct ggml_tensor *r = ggmlc__new_node(ctx, GGML_TYPE_F32, 1, &steps);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_f32(r, 0, start);
    ggmlc__set_op_params_f32(r, 1, stop);
    ggmlc__set_op_params_f32(r, 2, step);
    ggmlc__node_set(r, GGML_OP_ARANGE, NULL, NULL, NULL);
    return r;
}
