/*
 * vk-test-cases-ops.c - more op cases for test-vulkan.c: the ops and modes
 * added to complete the Vulkan plugin's coverage (xIELU, the gradient of every
 * activation, add_id, cumsum, count_equal, soft_max with sinks, ...).
 */
#include <string.h>

#include "vk-test-cases.h"

#define leaf vk_test_leaf
#define F32(name, a, b, c, d) leaf(ctx, GGML_TYPE_F32, name, a, b, c, d)
#define F16(name, a, b, c, d) leaf(ctx, GGML_TYPE_F16, name, a, b, c, d)
#define I32(name, a, b, c, d) leaf(ctx, GGML_TYPE_I32, name, a, b, c, d)

/* ------------------------------------------------------------- xIELU */

static struct ggml_tensor *c_xielu(struct ggml_context *ctx) { return ggml_xielu(ctx, F32("big:a", 41, 5, 3, 1), 0.8f, 0.6f, 0.5f, -1e-6f); }
static struct ggml_tensor *c_xielu_small(struct ggml_context *ctx) { return ggml_xielu(ctx, F32("a", 41, 5, 1, 1), 0.8f, 0.6f, 0.5f, -1e-6f); }
static struct ggml_tensor *c_xielu_f16(struct ggml_context *ctx) { return ggml_xielu(ctx, F16("a", 64, 3, 1, 1), 1.5f, -0.2f, 0.25f, -1e-6f); }

/* ------------------------------------------ unary_back, every activation */

/* As autograd builds it: the forward node's parameters ride along (xIELU's). */
static struct ggml_tensor *unary_back_case(struct ggml_context *ctx, enum ggml_unary_op op) {
    struct ggml_tensor *x = F32("big:x", 37, 6, 2, 1), *dy = F32("dy", 37, 6, 2, 1);
    struct ggml_tensor *r = ggml_unary_back(ctx, x, dy, op);
    if (r && op == GGML_UNARY_OP_XIELU) {
        struct ggml_tensor *fwd = ggml_xielu(ctx, x, 0.8f, 0.6f, 0.5f, -1e-6f);
        if (!fwd) return NULL;
        memcpy(&r->op_params[1], &fwd->op_params[1], 4 * sizeof r->op_params[0]);
    }
    return r;
}
#define UNARY_BACK_CASE(fn, op) static struct ggml_tensor *fn(struct ggml_context *ctx) { return unary_back_case(ctx, op); }
UNARY_BACK_CASE(c_back_abs, GGML_UNARY_OP_ABS)
UNARY_BACK_CASE(c_back_sgn, GGML_UNARY_OP_SGN)
UNARY_BACK_CASE(c_back_neg, GGML_UNARY_OP_NEG)
UNARY_BACK_CASE(c_back_step, GGML_UNARY_OP_STEP)
UNARY_BACK_CASE(c_back_tanh, GGML_UNARY_OP_TANH)
UNARY_BACK_CASE(c_back_elu, GGML_UNARY_OP_ELU)
UNARY_BACK_CASE(c_back_relu, GGML_UNARY_OP_RELU)
UNARY_BACK_CASE(c_back_sigmoid, GGML_UNARY_OP_SIGMOID)
UNARY_BACK_CASE(c_back_gelu, GGML_UNARY_OP_GELU)
UNARY_BACK_CASE(c_back_gelu_quick, GGML_UNARY_OP_GELU_QUICK)
UNARY_BACK_CASE(c_back_silu, GGML_UNARY_OP_SILU)
UNARY_BACK_CASE(c_back_hardswish, GGML_UNARY_OP_HARDSWISH)
UNARY_BACK_CASE(c_back_hardsigmoid, GGML_UNARY_OP_HARDSIGMOID)
UNARY_BACK_CASE(c_back_exp, GGML_UNARY_OP_EXP)
UNARY_BACK_CASE(c_back_expm1, GGML_UNARY_OP_EXPM1)
UNARY_BACK_CASE(c_back_softplus, GGML_UNARY_OP_SOFTPLUS)
UNARY_BACK_CASE(c_back_gelu_erf, GGML_UNARY_OP_GELU_ERF)
UNARY_BACK_CASE(c_back_xielu, GGML_UNARY_OP_XIELU)
UNARY_BACK_CASE(c_back_floor, GGML_UNARY_OP_FLOOR)
UNARY_BACK_CASE(c_back_round, GGML_UNARY_OP_ROUND)
/* strided operands: x transposed */
static struct ggml_tensor *c_back_gelu_strided(struct ggml_context *ctx) {
    struct ggml_tensor *x = ggml_cont(ctx, F32("big:x", 9, 14, 1, 1));
    return ggml_unary_back(ctx, ggml_transpose(ctx, x), F32("dy", 14, 9, 1, 1), GGML_UNARY_OP_GELU);
}

/* ---------------------------------------------------- indexing, reductions */

static struct ggml_tensor *c_add_id(struct ggml_context *ctx) {
    return ggml_add_id(ctx, F32("a", 29, 4, 7, 1), F32("b", 29, 6, 1, 1), I32("idx6:ids", 4, 7, 1, 1));
}
static struct ggml_tensor *c_cumsum(struct ggml_context *ctx) { return ggml_cumsum(ctx, F32("a", 1000, 5, 2, 1)); }
static struct ggml_tensor *c_cumsum_short(struct ggml_context *ctx) { return ggml_cumsum(ctx, F32("big:a", 17, 3, 2, 2)); }
static struct ggml_tensor *c_cumsum_view(struct ggml_context *ctx) { return ggml_cumsum(ctx, ggml_transpose(ctx, F32("a", 6, 300, 1, 1))); }
static struct ggml_tensor *c_count_equal(struct ggml_context *ctx) {
    return ggml_count_equal(ctx, I32("idx3:a", 301, 7, 2, 1), I32("idx3:b", 301, 7, 2, 1));
}
/* count_equal's I64 result, as a float the comparison reads */
static struct ggml_tensor *c_count_equal_argmax(struct ggml_context *ctx) {
    struct ggml_tensor *a = ggml_argmax(ctx, F32("a", 10, 33, 1, 1)), *b = ggml_argmax(ctx, F32("b", 10, 33, 1, 1));
    return ggml_count_equal(ctx, a, b);
}

/* --------------------------------------------------------------- softmax */

static struct ggml_tensor *soft_max_sinks_case(struct ggml_context *ctx, bool mask, float max_bias) {
    struct ggml_tensor *r = ggml_soft_max_ext(ctx, F32("big:a", 45, 7, 4, 2), mask ? F16("b", 45, 9, 1, 1) : NULL, 0.25f, max_bias);
    if (r) ggml_soft_max_add_sinks(r, F32("big:s", 4, 1, 1, 1));
    return r;
}
static struct ggml_tensor *c_soft_max_sinks(struct ggml_context *ctx) { return soft_max_sinks_case(ctx, false, 0.0f); }
static struct ggml_tensor *c_soft_max_sinks_mask_alibi(struct ggml_context *ctx) { return soft_max_sinks_case(ctx, true, 8.0f); }
static struct ggml_tensor *c_soft_max_back_alibi(struct ggml_context *ctx) {
    return ggml_soft_max_ext_back(ctx, F32("dy", 70, 6, 4, 1), F32("pos:y", 70, 6, 4, 1), 0.7f, 8.0f);
}

#define CASE(fn, err) {#fn + 2, fn, err, true}
static const struct vk_test_case cases[] = {
    CASE(c_xielu, 1e-10), CASE(c_xielu_small, 1e-10), CASE(c_xielu_f16, 1e-6),
    CASE(c_back_abs, 1e-12), CASE(c_back_sgn, 0), CASE(c_back_neg, 1e-12), CASE(c_back_step, 0), CASE(c_back_tanh, 1e-8),
    CASE(c_back_elu, 1e-8), CASE(c_back_relu, 1e-12), CASE(c_back_sigmoid, 1e-8), CASE(c_back_gelu, 1e-6),
    CASE(c_back_gelu_quick, 1e-6), CASE(c_back_silu, 1e-8), CASE(c_back_hardswish, 1e-10), CASE(c_back_hardsigmoid, 1e-10),
    CASE(c_back_exp, 1e-8), CASE(c_back_expm1, 1e-8), CASE(c_back_softplus, 1e-8), CASE(c_back_gelu_erf, 1e-6),
    CASE(c_back_xielu, 1e-8), CASE(c_back_floor, 0), CASE(c_back_round, 0), CASE(c_back_gelu_strided, 1e-6),
    CASE(c_add_id, 1e-12), CASE(c_cumsum, 1e-10), CASE(c_cumsum_short, 1e-10), CASE(c_cumsum_view, 1e-10),
    CASE(c_count_equal, 0), CASE(c_count_equal_argmax, 0),
    CASE(c_soft_max_sinks, 1e-9), CASE(c_soft_max_sinks_mask_alibi, 1e-9), CASE(c_soft_max_back_alibi, 1e-10),
};

const struct vk_test_case *vk_test_cases_ops(size_t *n) {
    *n = sizeof cases / sizeof *cases;
    return cases;
}
