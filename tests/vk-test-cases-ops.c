/*
 * vk-test-cases-ops.c - more op cases for test-vulkan.c: the ops and modes
 * added to complete the Vulkan plugin's coverage (xIELU, the gradient of every
 * activation, add_id, cumsum, count_equal, soft_max with sinks, ...).
 */
#include <math.h>
#include <stdio.h>
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

/* repeated indices sum their gradient rows; more rows than one invocation's chunk */
static struct ggml_tensor *c_get_rows_back(struct ggml_context *ctx) {
    return ggml_get_rows_back(ctx, F32("dy", 37, 150, 1, 1), I32("idx130:i", 150, 1, 1, 1), F32("c", 37, 130, 1, 1));
}
/* a language model's embedding gradient: many indices (several tiles), small chunks of rows */
static struct ggml_tensor *c_get_rows_back_embedding(struct ggml_context *ctx) {
    return ggml_get_rows_back(ctx, F32("dy", 128, 1000, 1, 1), I32("idx256:i", 1000, 1, 1, 1), F32("c", 128, 256, 1, 1));
}
static struct ggml_tensor *c_get_rows_back_strided(struct ggml_context *ctx) {
    struct ggml_tensor *dy = ggml_transpose(ctx, F32("dy", 20, 9, 1, 1)); /* [9, 20] */
    return ggml_get_rows_back(ctx, dy, I32("idx5:i", 20, 1, 1, 1), F32("c", 9, 5, 1, 1));
}

/* fewer indices than gradient rows (ggml's test takes a view of half the indices): the rest is unused */
static struct ggml_tensor *c_get_rows_back_fewer(struct ggml_context *ctx) {
    struct ggml_tensor *idx = ggml_view_1d(ctx, I32("idx5:i", 8, 1, 1, 1), 4, 0);
    return ggml_get_rows_back(ctx, F32("dy", 33, 8, 1, 1), idx, F16("c", 33, 5, 1, 1));
}
static struct ggml_tensor *c_get_rows_back_f16(struct ggml_context *ctx) {
    return ggml_get_rows_back(ctx, F16("dy", 40, 70, 1, 1), I32("idx9:i", 70, 1, 1, 1), F16("c", 40, 9, 1, 1));
}
static struct ggml_tensor *c_get_rows_back_bf16(struct ggml_context *ctx) {
    return ggml_get_rows_back(ctx, leaf(ctx, GGML_TYPE_BF16, "dy", 24, 6, 1, 1), I32("idx4:i", 6, 1, 1, 1), F32("c", 24, 4, 1, 1));
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

/* ------------------------------------------------------ rope, every mode */

/* a [ne0, 4 heads, 7 positions, 2]: positions of four components (t, h, w, e) per token. */
static struct ggml_tensor *rope_multi_case(struct ggml_context *ctx, enum ggml_type type, int ne0, int n_dims, int mode,
                                           int s0, int s1, int s2, int s3, bool ff, bool back) {
    struct ggml_tensor *a = leaf(ctx, type, "a", ne0, 4, 7, 2);
    struct ggml_tensor *pos = I32("idx3000:pos", 4 * 7, 1, 1, 1);
    const int n_ff = mode == GGML_ROPE_TYPE_VISION ? ne0 / 2 : n_dims / 2;
    struct ggml_tensor *f = ff ? F32("pos:ff", n_ff, 1, 1, 1) : NULL;
    int sections[GGML_MROPE_SECTIONS] = {s0, s1, s2, s3};
    if (back) return ggml_rope_multi_back(ctx, a, pos, f, n_dims, sections, mode, 4096, 10000.0f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f);
    return ggml_rope_multi(ctx, a, pos, f, n_dims, sections, mode, 4096, 10000.0f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f);
}
static struct ggml_tensor *c_rope_mrope(struct ggml_context *ctx) { return rope_multi_case(ctx, GGML_TYPE_F32, 80, 64, GGML_ROPE_TYPE_MROPE, 12, 10, 10, 0, false, false); }
static struct ggml_tensor *c_rope_mrope_ff_e(struct ggml_context *ctx) { return rope_multi_case(ctx, GGML_TYPE_F32, 64, 48, GGML_ROPE_TYPE_MROPE, 8, 6, 6, 4, true, false); }
static struct ggml_tensor *c_rope_imrope(struct ggml_context *ctx) { return rope_multi_case(ctx, GGML_TYPE_F32, 80, 64, GGML_ROPE_TYPE_IMROPE, 11, 11, 10, 0, false, false); }
static struct ggml_tensor *c_rope_vision(struct ggml_context *ctx) { return rope_multi_case(ctx, GGML_TYPE_F32, 64, 32, GGML_ROPE_TYPE_VISION, 8, 8, 0, 0, false, false); }
static struct ggml_tensor *c_rope_vision_ff(struct ggml_context *ctx) { return rope_multi_case(ctx, GGML_TYPE_F32, 48, 24, GGML_ROPE_TYPE_VISION, 7, 5, 0, 0, true, false); }
static struct ggml_tensor *c_rope_mrope_f16(struct ggml_context *ctx) { return rope_multi_case(ctx, GGML_TYPE_F16, 80, 64, GGML_ROPE_TYPE_MROPE, 12, 10, 10, 0, false, false); }
static struct ggml_tensor *c_rope_mrope_back(struct ggml_context *ctx) { return rope_multi_case(ctx, GGML_TYPE_F32, 80, 64, GGML_ROPE_TYPE_MROPE, 12, 10, 10, 0, true, true); }
static struct ggml_tensor *c_rope_imrope_back(struct ggml_context *ctx) { return rope_multi_case(ctx, GGML_TYPE_F32, 80, 64, GGML_ROPE_TYPE_IMROPE, 11, 11, 10, 0, false, true); }
static struct ggml_tensor *c_rope_vision_back(struct ggml_context *ctx) { return rope_multi_case(ctx, GGML_TYPE_F32, 64, 32, GGML_ROPE_TYPE_VISION, 8, 8, 0, 0, true, true); }
static struct ggml_tensor *c_rope_neox_back(struct ggml_context *ctx) {
    struct ggml_tensor *a = F32("a", 64, 4, 7, 1), *pos = I32("idx4000:pos", 7, 1, 1, 1);
    return ggml_rope_ext_back(ctx, a, pos, NULL, 48, GGML_ROPE_TYPE_NEOX, 4096, 10000.0f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f);
}
/* a strided input: the K half of a fused QK tensor, as attention layers rope it */
static struct ggml_tensor *c_rope_mrope_view(struct ggml_context *ctx) {
    struct ggml_tensor *qk = F32("a", 128, 4, 7, 1);
    struct ggml_tensor *k = ggml_view_3d(ctx, qk, 64, 4, 7, qk->nb[1], qk->nb[2], 64 * sizeof(float));
    int sections[GGML_MROPE_SECTIONS] = {10, 6, 6, 2};
    return ggml_rope_multi(ctx, k, I32("idx500:pos", 4 * 7, 1, 1, 1), NULL, 48, sections, GGML_ROPE_TYPE_MROPE, 4096, 10000.0f, 1.0f,
                           0.0f, 1.0f, 0.0f, 0.0f);
}

/* ------------------------------------------------------ conv_2d (direct)
 * 1e-6: on devices with cooperative matrices conv2d-cm.comp rounds kernel and data to f16 (nmse
 * about 7e-8); tests/test-vulkan-conv bounds each value and checks the f32 kernels at 1e-5. */

static struct ggml_tensor *c_conv_2d_direct(struct ggml_context *ctx) {
    return ggml_conv_2d_direct(ctx, F32("k", 3, 3, 5, 6), F32("x", 13, 11, 5, 2), 1, 1, 1, 1, 1, 1);
}
static struct ggml_tensor *c_conv_2d_direct_f16_strided(struct ggml_context *ctx) {
    return ggml_conv_2d_direct(ctx, F16("k", 3, 2, 4, 3), F32("x", 17, 12, 4, 1), 2, 3, 2, 0, 2, 1);
}
/* the input a strided view: columns 1..10 of wider images */
static struct ggml_tensor *c_conv_2d_direct_view(struct ggml_context *ctx) {
    struct ggml_tensor *base = F32("x", 12, 9, 4, 2);
    struct ggml_tensor *v = ggml_view_4d(ctx, base, 10, 9, 4, 2, base->nb[1], base->nb[2], base->nb[3], sizeof(float));
    return ggml_conv_2d_direct(ctx, F32("k", 2, 2, 4, 3), v, 1, 1, 0, 1, 1, 2);
}

/* ------------------------------------------- pool_2d_back, im2col_back */

/* overlapping windows (stride < kernel) and padding; "idx4:" inputs make ties in max windows */
static struct ggml_tensor *c_pool_2d_back_max(struct ggml_context *ctx) {
    return ggml_pool_2d_back(ctx, F32("dy", 7, 6, 3, 2), F32("x", 13, 11, 3, 2), GGML_OP_POOL_MAX, 3, 2, 2, 2, 1, 1);
}
static struct ggml_tensor *c_pool_2d_back_max_ties(struct ggml_context *ctx) {
    return ggml_pool_2d_back(ctx, F32("dy", 6, 5, 2, 1), F32("idx4:x", 11, 10, 2, 1), GGML_OP_POOL_MAX, 3, 3, 2, 2, 1, 1);
}
static struct ggml_tensor *c_pool_2d_back_avg(struct ggml_context *ctx) {
    return ggml_pool_2d_back(ctx, F32("dy", 12, 4, 3, 1), F32("x", 13, 11, 3, 1), GGML_OP_POOL_AVG, 2, 3, 1, 3, 0, 1);
}
static struct ggml_tensor *c_pool_2d_back_f16(struct ggml_context *ctx) {
    return ggml_pool_2d_back(ctx, F32("dy", 4, 4, 2, 1), F16("x", 8, 8, 2, 1), GGML_OP_POOL_MAX, 2, 2, 2, 2, 0, 0);
}
static struct ggml_tensor *c_im2col_back_2d(struct ggml_context *ctx) {
    int64_t ne[4] = {11, 9, 4, 2};
    /* kernel [3, 3, 4, 5], stride 2x1, padding 1x2, dilation 1x2: OW 6, OH 9 */
    return ggml_im2col_back(ctx, F16("k", 3, 3, 4, 5), F32("g", 36, 6, 9, 2), ne, 2, 1, 1, 2, 1, 2, true);
}
static struct ggml_tensor *c_im2col_back_1d(struct ggml_context *ctx) {
    int64_t ne[4] = {20, 4, 3, 1};
    /* kernel [3, 4], stride 2, no padding, dilation 2: OW 8 */
    return ggml_im2col_back(ctx, F16("k", 3, 4, 2, 1), F32("g", 12, 8, 3, 1), ne, 2, 0, 0, 0, 2, 0, false);
}

/* ------------------------------------------- position-dependent, layout */

#define TRI_CASE(fn, type) static struct ggml_tensor *fn(struct ggml_context *ctx) { return ggml_tri(ctx, F32("a", 9, 11, 3, 1), type); }
TRI_CASE(c_tri_upper_diag, GGML_TRI_TYPE_UPPER_DIAG)
TRI_CASE(c_tri_upper, GGML_TRI_TYPE_UPPER)
TRI_CASE(c_tri_lower_diag, GGML_TRI_TYPE_LOWER_DIAG)
TRI_CASE(c_tri_lower, GGML_TRI_TYPE_LOWER)
static struct ggml_tensor *c_tri_f16(struct ggml_context *ctx) { return ggml_tri(ctx, F16("a", 12, 12, 2, 1), GGML_TRI_TYPE_LOWER_DIAG); }
static struct ggml_tensor *c_diag(struct ggml_context *ctx) { return ggml_diag(ctx, F32("a", 13, 1, 3, 2)); }
static struct ggml_tensor *c_arange(struct ggml_context *ctx) {
    (void)F32("unused", 1, 1, 1, 1); /* the case needs a leaf to fill */
    return ggml_arange(ctx, -3.5f, 40.0f, 0.37f);
}
static struct ggml_tensor *c_roll(struct ggml_context *ctx) { return ggml_roll(ctx, F32("a", 10, 7, 3, 2), 3, -2, 5, 1); }
static struct ggml_tensor *c_roll_f16_view(struct ggml_context *ctx) {
    return ggml_roll(ctx, ggml_transpose(ctx, F16("a", 6, 9, 1, 1)), -4, 2, 0, 0);
}
static struct ggml_tensor *c_pad_reflect_1d(struct ggml_context *ctx) { return ggml_pad_reflect_1d(ctx, F32("a", 10, 4, 3, 1), 3, 9); }
static struct ggml_tensor *c_timestep_embedding(struct ggml_context *ctx) {
    return ggml_timestep_embedding(ctx, F32("pos:t", 9, 1, 1, 1), 65, 10000);
}
static struct ggml_tensor *c_timestep_embedding_large(struct ggml_context *ctx) {
    return ggml_timestep_embedding(ctx, ggml_scale(ctx, F32("pos:t", 5, 1, 1, 1), 500.0f), 32, 10000);
}
static struct ggml_tensor *c_conv_2d_dw(struct ggml_context *ctx) {
    return ggml_conv_2d_dw_direct(ctx, F32("k", 3, 3, 1, 6), F32("x", 12, 10, 6, 2), 1, 2, 1, 1, 2, 1);
}
static struct ggml_tensor *c_conv_2d_dw_f16(struct ggml_context *ctx) {
    return ggml_conv_2d_dw_direct(ctx, F16("k", 5, 3, 1, 4), F32("x", 11, 9, 4, 1), 2, 1, 2, 0, 1, 1);
}

/* ------------------------------------------------------------ acc, set */

/* b lands in a [10, 8, 3] at offset (2, 1, 1) with a's strides */
static struct ggml_tensor *c_acc(struct ggml_context *ctx) {
    struct ggml_tensor *a = F32("a", 10, 8, 3, 1);
    return ggml_acc(ctx, a, F32("b", 6, 5, 2, 1), a->nb[1], a->nb[2], a->nb[3], (2 + 10 + 80) * sizeof(float));
}
static struct ggml_tensor *c_acc_inplace_chain(struct ggml_context *ctx) {
    struct ggml_tensor *a = ggml_scale(ctx, F32("a", 16, 6, 1, 1), 2.0f);
    return ggml_acc_inplace(ctx, a, F32("b", 5, 3, 1, 1), 2 * a->nb[1], a->nb[2], a->nb[3], 3 * sizeof(float));
}
static struct ggml_tensor *c_set(struct ggml_context *ctx) {
    struct ggml_tensor *a = F32("a", 10, 8, 3, 1);
    return ggml_set(ctx, a, F32("big:b", 6, 5, 2, 1), a->nb[1], a->nb[2], a->nb[3], (1 + 20) * sizeof(float));
}
static struct ggml_tensor *c_set_1d(struct ggml_context *ctx) { return ggml_set_1d(ctx, F32("a", 50, 1, 1, 1), F32("big:b", 17, 1, 1, 1), 8 * sizeof(float)); }
static struct ggml_tensor *c_set_2d(struct ggml_context *ctx) {
    struct ggml_tensor *a = F32("a", 12, 9, 1, 1);
    return ggml_set_2d(ctx, a, ggml_transpose(ctx, F32("big:b", 4, 7, 1, 1)), a->nb[1], 2 * a->nb[1] + 4 * sizeof(float));
}

/* rows too long to sort in shared memory: top_k by selection; ties ("idx" values) by index */
static struct ggml_tensor *c_top_k_long(struct ggml_context *ctx) { return ggml_top_k(ctx, F32("big:a", 5000, 3, 1, 1), 40); }
static struct ggml_tensor *c_top_k_long_ties(struct ggml_context *ctx) { return ggml_top_k(ctx, F32("idx50:a", 3001, 2, 1, 1), 200); }
/* k = 1023 selection rounds over 16384 values run past lavapipe's 65535 loop iterations per
 * invocation (ggml's test-backend-ops case): the rounds must be split over dispatches */
static struct ggml_tensor *c_top_k_many(struct ggml_context *ctx) { return ggml_top_k(ctx, F32("uniq16384:a", 16384, 1, 1, 1), 1023); }
static struct ggml_tensor *c_top_k_long_view(struct ggml_context *ctx) {
    return ggml_top_k(ctx, ggml_transpose(ctx, F32("a", 4, 2500, 1, 1)), 7);
}

/* ----------------------------------------- conv_transpose_1d, ssm_conv */

static struct ggml_tensor *c_conv_transpose_1d(struct ggml_context *ctx) {
    return ggml_conv_transpose_1d(ctx, F32("k", 5, 3, 4, 1), F32("x", 11, 4, 2, 1), 2, 0, 1);
}
static struct ggml_tensor *c_conv_transpose_1d_pad_dil_f16(struct ggml_context *ctx) {
    return ggml_conv_transpose_1d(ctx, F16("k", 4, 6, 3, 1), F32("x", 9, 3, 1, 1), 3, 2, 2);
}
static struct ggml_tensor *c_ssm_conv(struct ggml_context *ctx) { return ggml_ssm_conv(ctx, F32("sx", 3 + 9, 20, 2, 1), F32("c", 4, 20, 1, 1)); }

/* ----------------------------------------------- im2col_3d, conv_3d */

static struct ggml_tensor *c_im2col_3d(struct ggml_context *ctx) {
    /* kernel [2, 3, 2, IC 3 * OC 2], data [7, 6, 5, IC 3 * N 2] */
    return ggml_im2col_3d(ctx, F16("k", 2, 3, 2, 6), F32("x", 7, 6, 5, 6), 3, 1, 2, 1, 1, 0, 1, 1, 1, 2, GGML_TYPE_F32);
}
static struct ggml_tensor *c_im2col_3d_f16(struct ggml_context *ctx) {
    return ggml_im2col_3d(ctx, F16("k", 3, 2, 2, 2), F16("x", 6, 5, 4, 2), 2, 2, 1, 1, 1, 1, 0, 1, 1, 1, GGML_TYPE_F16);
}
static struct ggml_tensor *c_conv_3d(struct ggml_context *ctx) {
    /* IC 3, N 2, OC 4 */
    return ggml_conv_3d_direct(ctx, F32("k", 2, 3, 2, 12), F32("x", 7, 6, 5, 6), 1, 2, 1, 1, 0, 1, 1, 1, 2, 3, 2, 4);
}
static struct ggml_tensor *c_conv_3d_f16(struct ggml_context *ctx) {
    return ggml_conv_3d_direct(ctx, F16("k", 3, 3, 3, 4), F32("x", 6, 6, 5, 2), 2, 1, 1, 1, 1, 0, 1, 1, 1, 2, 1, 2);
}

/* ------------------------------------------ linear-attention recurrences */

/* S 16, H 3, T 10 tokens in 2 sequences */
static struct ggml_tensor *c_gated_linear_attn(struct ggml_context *ctx) {
    return ggml_gated_linear_attn(ctx, F32("k", 16, 3, 10, 1), F32("v", 16, 3, 10, 1), F32("q", 16, 3, 10, 1), F32("pos:g", 16, 3, 10, 1),
                                  F32("s", 16 * 16 * 3, 2, 1, 1), 0.25f);
}
static struct ggml_tensor *c_rwkv_wkv6(struct ggml_context *ctx) {
    return ggml_rwkv_wkv6(ctx, F32("k", 16, 3, 10, 1), F32("v", 16, 3, 10, 1), F32("r", 16, 3, 10, 1), F32("tf", 16, 3, 1, 1),
                          F32("pos:td", 16, 3, 10, 1), F32("s", 16 * 16 * 3, 2, 1, 1));
}
static struct ggml_tensor *c_rwkv_wkv7(struct ggml_context *ctx) {
    return ggml_rwkv_wkv7(ctx, F32("r", 16, 3, 10, 1), F32("pos:w", 16, 3, 10, 1), F32("k", 16, 3, 10, 1), F32("v", 16, 3, 10, 1),
                          F32("a", 16, 3, 10, 1), F32("b", 16, 3, 10, 1), F32("s", 16 * 16 * 3, 2, 1, 1));
}

/* Mamba 2 (scalar decay per head, 2 groups) and Mamba 1 (a decay per state); states from slots 2 and 0 of 3 */
static struct ggml_tensor *ssm_scan_case(struct ggml_context *ctx, bool mamba2) {
    const int d_state = 16, head_dim = 8, n_head = 4, n_tok = 5, n_seqs = 2, n_group = mamba2 ? 2 : 1;
    struct ggml_tensor *ids = I32("idx3:ids", n_seqs, 1, 1, 1);
    return ggml_ssm_scan(ctx, F32("s", d_state, head_dim, n_head, 3), F32("x", head_dim, n_head, n_tok, n_seqs), F32("dt", n_head, n_tok, n_seqs, 1),
                         F32("a", mamba2 ? 1 : d_state, n_head, 1, 1), F32("b", d_state, n_group, n_tok, n_seqs),
                         F32("c", d_state, n_group, n_tok, n_seqs), ids);
}
/* lavapipe ends an invocation's loops after 65535 iterations in all: 520 tokens of 128 states
 * each run past that in one invocation, so the kernel must split them */
static struct ggml_tensor *c_ssm_scan_long(struct ggml_context *ctx) {
    const int d_state = 128, head_dim = 2, n_head = 2, n_tok = 520;
    return ggml_ssm_scan(ctx, F32("s", d_state, head_dim, n_head, 1), F32("x", head_dim, n_head, n_tok, 1), F32("dt", n_head, n_tok, 1, 1),
                         ggml_neg(ctx, F32("pos:a", 1, n_head, 1, 1)) /* decaying: no overflow over 520 steps */,
                         F32("b", d_state, 1, n_tok, 1), F32("c", d_state, 1, n_tok, 1), I32("idx1:ids", 1, 1, 1, 1));
}
static struct ggml_tensor *c_ssm_scan_mamba2(struct ggml_context *ctx) { return ssm_scan_case(ctx, true); }
static struct ggml_tensor *c_ssm_scan_mamba1(struct ggml_context *ctx) { return ssm_scan_case(ctx, false); }

/* --------------------------------------------------- SAM window helpers */

static struct ggml_tensor *c_win_part(struct ggml_context *ctx) { return ggml_win_part(ctx, F32("a", 6, 11, 9, 1), 4); }
static struct ggml_tensor *c_win_unpart(struct ggml_context *ctx) { return ggml_win_unpart(ctx, F32("a", 6, 4, 4, 9), 11, 9, 4); }
static struct ggml_tensor *c_get_rel_pos(struct ggml_context *ctx) { return ggml_get_rel_pos(ctx, F32("a", 8, 13, 1, 1), 7, 7); }
static struct ggml_tensor *c_get_rel_pos_f16(struct ggml_context *ctx) { return ggml_get_rel_pos(ctx, F16("a", 8, 9, 1, 1), 5, 5); }
static struct ggml_tensor *c_add_rel_pos(struct ggml_context *ctx) {
    /* K 5, Qw 3, Qh 4, B 2 */
    return ggml_add_rel_pos(ctx, F32("a", 25, 12, 2, 1), F32("pw", 5, 3, 4, 2), F32("ph", 5, 3, 4, 2));
}

/* columns [K 4 * OC 3, T 9, N 2] back to [L, OC, N], stride 2, padding 1 */
static struct ggml_tensor *c_col2im_1d(struct ggml_context *ctx) { return ggml_col2im_1d(ctx, F32("a", 12, 9, 2, 1), 2, 3, 1); }

/* A = noise + a strong diagonal (well conditioned), 12 x 12, two batches */
static struct ggml_tensor *solve_tri_case(struct ggml_context *ctx, bool left, bool lower, bool uni) {
    struct ggml_tensor *a = ggml_add(ctx, F32("a", 12, 12, 2, 1), ggml_scale(ctx, ggml_diag(ctx, F32("pos:dg", 12, 1, 2, 1)), 4.0f));
    struct ggml_tensor *b = left ? F32("b", 5, 12, 2, 1) : F32("b", 12, 5, 2, 1);
    return ggml_solve_tri(ctx, a, b, left, lower, uni);
}
static struct ggml_tensor *c_solve_tri_left_lower(struct ggml_context *ctx) { return solve_tri_case(ctx, true, true, false); }
static struct ggml_tensor *c_solve_tri_left_upper_uni(struct ggml_context *ctx) { return solve_tri_case(ctx, true, false, true); }
static struct ggml_tensor *c_solve_tri_right_lower(struct ggml_context *ctx) { return solve_tri_case(ctx, false, true, false); }
static struct ggml_tensor *c_solve_tri_right_upper(struct ggml_context *ctx) { return solve_tri_case(ctx, false, false, false); }

/* declined: the view's cells overlap (rows 2 floats apart, 5 wide), so the order of the adds would matter */
static struct ggml_tensor *c_acc_overlapping(struct ggml_context *ctx) {
    struct ggml_tensor *a = F32("a", 40, 1, 1, 1);
    return ggml_acc(ctx, a, F32("b", 5, 4, 1, 1), 2 * sizeof(float), a->nb[2], a->nb[3], 0);
}

/* -------------------------------------------- quantizing copies (KV caches) */

/* Quantized results are read back through get_rows (every row, in a shuffled order), which
 * dequantizes on both backends: equal outputs mean the blocks hold the same levels and scales. */
static struct ggml_tensor *all_rows(struct ggml_context *ctx, struct ggml_tensor *q) {
    if (!q) return NULL;
    char name[32];
    snprintf(name, sizeof name, "uniq%d:rows", (int)q->ne[1]);
    return ggml_get_rows(ctx, q, leaf(ctx, GGML_TYPE_I32, name, q->ne[1], q->ne[2], q->ne[3], 1));
}

/* set_rows of b [k, 5, 3] into a quantized cache [k, 20, 3] at i64 rows, as a KV cache update */
static struct ggml_tensor *set_rows_quant(struct ggml_context *ctx, enum ggml_type type, const char *b_name) {
    struct ggml_tensor *cache = leaf(ctx, type, "a", 96, 20, 3, 1);
    return all_rows(ctx, ggml_set_rows(ctx, cache, F32(b_name, 96, 5, 3, 1), leaf(ctx, GGML_TYPE_I64, "uniq20:i", 5, 3, 1, 1)));
}
static struct ggml_tensor *c_set_rows_q4_0(struct ggml_context *ctx) { return set_rows_quant(ctx, GGML_TYPE_Q4_0, "b"); }
static struct ggml_tensor *c_set_rows_q4_1(struct ggml_context *ctx) { return set_rows_quant(ctx, GGML_TYPE_Q4_1, "b"); }
/* IQ4_NL (a KV cache type): the scale search of the CPU's quantizer, to the bit */
static struct ggml_tensor *c_set_rows_iq4_nl(struct ggml_context *ctx) { return set_rows_quant(ctx, GGML_TYPE_IQ4_NL, "b"); }
static struct ggml_tensor *c_cpy_f16_iq4_nl(struct ggml_context *ctx) {
    return all_rows(ctx, ggml_cpy(ctx, F16("a", 256, 64, 8, 1), leaf(ctx, GGML_TYPE_IQ4_NL, "d", 256, 64, 8, 1)));
}
static struct ggml_tensor *c_set_rows_q5_0(struct ggml_context *ctx) { return set_rows_quant(ctx, GGML_TYPE_Q5_0, "big:b"); }
static struct ggml_tensor *c_set_rows_q5_1(struct ggml_context *ctx) { return set_rows_quant(ctx, GGML_TYPE_Q5_1, "big:b"); }
static struct ggml_tensor *c_set_rows_q8_0(struct ggml_context *ctx) { return set_rows_quant(ctx, GGML_TYPE_Q8_0, "big:b"); }

/* b a row-strided view, i32 indices broadcast over b's dims 2 and 3 */
static struct ggml_tensor *c_set_rows_q8_0_view_bcast(struct ggml_context *ctx) {
    struct ggml_tensor *wide = F32("b", 80, 4, 2, 3);
    if (!wide) return NULL;
    struct ggml_tensor *b = ggml_view_4d(ctx, wide, 64, 4, 2, 3, wide->nb[1], wide->nb[2], wide->nb[3], 0);
    struct ggml_tensor *rows = ggml_set_rows(ctx, leaf(ctx, GGML_TYPE_Q8_0, "a", 64, 9, 2, 3), b, I32("uniq9:i", 4, 1, 3, 1));
    return all_rows(ctx, rows);
}

/* cpy of a transposed f32 view (an element stride of 7 floats) into a quantized [64, 7, 2] */
static struct ggml_tensor *cpy_quant(struct ggml_context *ctx, enum ggml_type type) {
    struct ggml_tensor *a = F32("big:a", 7, 64, 2, 1);
    if (!a) return NULL;
    return all_rows(ctx, ggml_cpy(ctx, ggml_transpose(ctx, a), leaf(ctx, type, "d", 64, 7, 2, 1)));
}
static struct ggml_tensor *c_cpy_transposed_q4_0(struct ggml_context *ctx) { return cpy_quant(ctx, GGML_TYPE_Q4_0); }
static struct ggml_tensor *c_cpy_transposed_q5_1(struct ggml_context *ctx) { return cpy_quant(ctx, GGML_TYPE_Q5_1); }
static struct ggml_tensor *c_cpy_transposed_q8_0(struct ggml_context *ctx) { return cpy_quant(ctx, GGML_TYPE_Q8_0); }
static struct ggml_tensor *c_cpy_transposed_iq4_nl(struct ggml_context *ctx) { return cpy_quant(ctx, GGML_TYPE_IQ4_NL); }

/* a block-format tensor copied as a permuted view (dims 1 and 2 swapped) into one of its
 * type: of the view's shape, or of rows 15 x 1 (rows taken in row-major order) */
static struct ggml_tensor *cpy_blocks(struct ggml_context *ctx, enum ggml_type type, int64_t d1, int64_t d2) {
    struct ggml_tensor *a = leaf(ctx, type, "a", 256, 3, 5, 1);
    if (!a) return NULL;
    struct ggml_tensor *permuted = ggml_permute(ctx, a, 0, 2, 1, 3); /* [256, 5, 3] */
    return all_rows(ctx, ggml_cpy(ctx, permuted, leaf(ctx, type, "d", 256, d1, d2, 1)));
}
static struct ggml_tensor *c_cpy_blocks_q4_K(struct ggml_context *ctx) { return cpy_blocks(ctx, GGML_TYPE_Q4_K, 5, 3); }
static struct ggml_tensor *c_cpy_blocks_q5_1_reshaped(struct ggml_context *ctx) { return cpy_blocks(ctx, GGML_TYPE_Q5_1, 15, 1); }

/* f16 and bf16 into a block format: widened to f32, then quantized as from f32.  32768 blocks of
 * f16 values, whose levels often sit a hair from a rounding edge: with a quotient 1 ulp off (the
 * scale's reciprocal through an unfused fma, on lavapipe) a few blocks came out differently */
static struct ggml_tensor *c_cpy_f16_q4_0(struct ggml_context *ctx) {
    return all_rows(ctx, ggml_cpy(ctx, F16("a", 256, 256, 16, 1), leaf(ctx, GGML_TYPE_Q4_0, "d", 256, 256, 16, 1)));
}
static struct ggml_tensor *c_cpy_bf16_q8_0_transposed(struct ggml_context *ctx) {
    struct ggml_tensor *a = ggml_transpose(ctx, leaf(ctx, GGML_TYPE_BF16, "big:a", 5, 96, 1, 1));
    return all_rows(ctx, ggml_cpy(ctx, a, leaf(ctx, GGML_TYPE_Q8_0, "d", 96, 5, 1, 1)));
}

/* block formats into f32 (dequantized): a permuted view, a plain copy, a strided destination */
static struct ggml_tensor *c_cpy_q4_K_f32_permuted(struct ggml_context *ctx) {
    struct ggml_tensor *a = ggml_permute(ctx, leaf(ctx, GGML_TYPE_Q4_K, "a", 256, 3, 5, 1), 0, 2, 1, 3); /* [256, 5, 3] */
    return ggml_cpy(ctx, a, F32("d", 256, 5, 3, 1));
}
static struct ggml_tensor *c_cpy_q5_0_f32(struct ggml_context *ctx) {
    return ggml_cpy(ctx, leaf(ctx, GGML_TYPE_Q5_0, "a", 64, 3, 5, 1), F32("d", 64, 3, 5, 1));
}
static struct ggml_tensor *c_cpy_q6_K_f32_into_view(struct ggml_context *ctx) {
    struct ggml_tensor *d = ggml_transpose(ctx, F32("d", 4, 256, 1, 1)); /* a strided destination [256, 4] */
    return ggml_cpy(ctx, leaf(ctx, GGML_TYPE_Q6_K, "a", 256, 4, 1, 1), d);
}

/* ------------------------------------- flash attention over quantized caches */

/* q [dk, 5 queries, 4 heads] (a permuted view when permuted) against k, v [d, 70, 2 heads] of
 * type kv, a causal f16 mask */
static struct ggml_tensor *attn_kv_case(struct ggml_context *ctx, enum ggml_type kv, int64_t dk, int64_t dv, bool permuted) {
    struct ggml_tensor *q = permuted ? ggml_permute(ctx, F32("q", dk, 4, 5, 1), 0, 2, 1, 3) : F32("q", dk, 5, 4, 1);
    struct ggml_tensor *k = leaf(ctx, kv, "k", dk, 70, 2, 1), *v = leaf(ctx, kv, "v", dv, 70, 2, 1);
    return ggml_flash_attn_ext(ctx, q, k, v, F16("causal:m", 70, 8, 1, 1), 0.125f, 0.0f, 0.0f);
}
static struct ggml_tensor *c_flash_attn_q8_0(struct ggml_context *ctx) { return attn_kv_case(ctx, GGML_TYPE_Q8_0, 64, 96, false); }
static struct ggml_tensor *c_flash_attn_q4_0_q_view(struct ggml_context *ctx) { return attn_kv_case(ctx, GGML_TYPE_Q4_0, 64, 64, true); }
static struct ggml_tensor *c_flash_attn_bf16(struct ggml_context *ctx) { return attn_kv_case(ctx, GGML_TYPE_BF16, 40, 40, false); }
static struct ggml_tensor *c_flash_attn_576_512(struct ggml_context *ctx) { return attn_kv_case(ctx, GGML_TYPE_F16, 576, 512, true); }

/* -------------------------- flash attention over many queries (flash-attn-tile.comp) */

/* q [dk, nq, heads, batch] against k, v [dk / dv, nkv, kv_heads, batch] of type kv; mask (named by
 * its fill, NULL: none) [nkv, mask_rows, 1, mask_batch] of type m; q named by its fill (NULL: "q") */
struct attn_shape {
    enum ggml_type kv, m;
    int64_t dk, dv, nq, nkv, heads, kv_heads, batch;
    const char *mask;
    int64_t mask_rows, mask_batch;
    const char *q;
};
static struct ggml_tensor *attn_many_case(struct ggml_context *ctx, struct attn_shape s, float max_bias, float softcap) {
    struct ggml_tensor *q = F32(s.q ? s.q : "q", s.dk, s.nq, s.heads, s.batch);
    struct ggml_tensor *k = leaf(ctx, s.kv, "k", s.dk, s.nkv, s.kv_heads, s.batch), *v = leaf(ctx, s.kv, "v", s.dv, s.nkv, s.kv_heads, s.batch);
    struct ggml_tensor *m = s.mask ? leaf(ctx, s.m, s.mask, s.nkv, s.mask_rows, 1, s.mask_batch) : NULL;
    return ggml_flash_attn_ext(ctx, q, k, v, m, 1.0f / sqrtf((float)s.dk), max_bias, softcap);
}
/* a prompt of 77 after 64 cached keys: 12 query heads on 4 K/V heads, the mask padded to 80 rows */
static struct ggml_tensor *c_flash_attn_many_gqa3(struct ggml_context *ctx) {
    return attn_many_case(ctx, (struct attn_shape){GGML_TYPE_F16, GGML_TYPE_F16, 64, 64, 77, 141, 12, 4, 1, "tril64:m", 80, 1}, 0.0f, 0.0f);
}
/* f32 K/V and mask, heads of 80, 2 query heads per K/V head, 2 batches with their own masks */
static struct ggml_tensor *c_flash_attn_many_gqa2_batch(struct ggml_context *ctx) {
    return attn_many_case(ctx, (struct attn_shape){GGML_TYPE_F32, GGML_TYPE_F32, 80, 80, 33, 70, 4, 2, 2, "causal:m", 33, 2}, 0.0f, 0.0f);
}
/* q8_0 K/V, heads of 128, 4 query heads on one K/V head, no mask, keys not a multiple of the tile's */
static struct ggml_tensor *c_flash_attn_many_q8_0_gqa4(struct ggml_context *ctx) {
    return attn_many_case(ctx, (struct attn_shape){GGML_TYPE_Q8_0, GGML_TYPE_F16, 128, 128, 40, 100, 4, 1, 1, NULL, 0, 0}, 0.0f, 0.0f);
}
/* heads of 256, one query head per K/V head, a causal mask and sinks */
static struct ggml_tensor *c_flash_attn_many_256_sinks(struct ggml_context *ctx) {
    struct ggml_tensor *r = attn_many_case(ctx, (struct attn_shape){GGML_TYPE_F16, GGML_TYPE_F16, 256, 256, 20, 45, 2, 2, 1, "tril25:m", 20, 1}, 0.0f, 0.0f);
    if (r) ggml_flash_attn_ext_add_sinks(r, F32("s", 2, 1, 1, 1));
    return r;
}
/* odd head sizes (67 for K, 35 for V), ALiBi and a soft cap over a random mask */
static struct ggml_tensor *c_flash_attn_many_odd_alibi(struct ggml_context *ctx) {
    return attn_many_case(ctx, (struct attn_shape){GGML_TYPE_F32, GGML_TYPE_F16, 67, 35, 19, 50, 6, 2, 1, "m", 24, 1}, 4.0f, 20.0f);
}

/* ------------- flash attention for prompts (flash-attn-cm.comp where cooperative matrices are) */

/* a prompt of 512 tokens, causal: 16 query heads on 4 K/V heads of 64 (the 100M llama's), f16 cache */
static struct ggml_tensor *c_flash_attn_pp_64(struct ggml_context *ctx) {
    return attn_many_case(ctx, (struct attn_shape){GGML_TYPE_F16, GGML_TYPE_F16, 64, 64, 512, 512, 16, 4, 1, "tril0:m", 512, 1}, 0.0f, 0.0f);
}
/* the same with heads of 128 */
static struct ggml_tensor *c_flash_attn_pp_128(struct ggml_context *ctx) {
    return attn_many_case(ctx, (struct attn_shape){GGML_TYPE_F16, GGML_TYPE_F16, 128, 128, 512, 512, 16, 4, 1, "tril0:m", 512, 1}, 0.0f, 0.0f);
}
/* odd sizes: heads of 68 for K (not whole chunks of 8: read a value at a time) and 40 for V, 3
 * query heads per K/V head, 83 queries after 58 cached keys (neither a whole tile), ALiBi and a
 * soft cap over an f16 mask of odd rows (read a value at a time) */
static struct ggml_tensor *c_flash_attn_pp_odd_alibi(struct ggml_context *ctx) {
    return attn_many_case(ctx, (struct attn_shape){GGML_TYPE_F16, GGML_TYPE_F16, 68, 40, 83, 141, 6, 2, 1, "tril58:m", 88, 1}, 4.0f, 30.0f);
}
/* f32 K/V, heads of 96, two batches with their own f32 masks, sinks */
static struct ggml_tensor *c_flash_attn_pp_f32_sinks(struct ggml_context *ctx) {
    struct ggml_tensor *r = attn_many_case(ctx, (struct attn_shape){GGML_TYPE_F32, GGML_TYPE_F32, 96, 96, 40, 100, 4, 2, 2, "causal:m", 40, 2}, 0.0f, 0.0f);
    if (r) ggml_flash_attn_ext_add_sinks(r, F32("s", 4, 1, 1, 1));
    return r;
}
/* queries in [-30, 30): scores spread over tens, so that a row's maximum keeps growing from tile to
 * tile by more than the kernel's slack and its O shrinks (rarely the case with small scores);
 * 200 queries after 100 cached keys, 4 query heads on 2 K/V heads of 64 */
static struct ggml_tensor *c_flash_attn_pp_big_scores(struct ggml_context *ctx) {
    return attn_many_case(ctx, (struct attn_shape){GGML_TYPE_F16, GGML_TYPE_F16, 64, 64, 200, 300, 4, 2, 1, "tril100:m", 200, 1, "big:q"}, 0.0f, 0.0f);
}
/* 5 query heads on 2 (a tile of rows does not end on a query's last head), an f16 mask of even rows
 * shared by the heads, two batches with their own masks of random values, ALiBi (each head's slope
 * times the mask), 150 queries after 64 cached keys */
static struct ggml_tensor *c_flash_attn_pp_gqa5_alibi(struct ggml_context *ctx) {
    return attn_many_case(ctx, (struct attn_shape){GGML_TYPE_F16, GGML_TYPE_F16, 64, 64, 150, 214, 10, 2, 2, "rtril64:m", 152, 2}, 8.0f, 0.0f);
}
/* bf16 K/V, heads of 64, no mask */
static struct ggml_tensor *c_flash_attn_pp_bf16(struct ggml_context *ctx) {
    return attn_many_case(ctx, (struct attn_shape){GGML_TYPE_BF16, GGML_TYPE_F16, 64, 64, 70, 130, 4, 4, 1, NULL, 0, 0}, 0.0f, 0.0f);
}

/* ------------------------------------------------ out_prod, more operand types */

/* a quantized [m, k] (blocks along m, as LoRA / backward products meet them), broadcast over b's batches */
static struct ggml_tensor *c_out_prod_q4_0(struct ggml_context *ctx) {
    return ggml_out_prod(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a", 96, 19, 1, 1), F32("b", 70, 19, 2, 1));
}
static struct ggml_tensor *c_out_prod_q6_K(struct ggml_context *ctx) {
    return ggml_out_prod(ctx, leaf(ctx, GGML_TYPE_Q6_K, "a", 256, 5, 1, 1), F32("b", 33, 5, 1, 1));
}
static struct ggml_tensor *c_out_prod_f32_f16(struct ggml_context *ctx) {
    return ggml_out_prod(ctx, F32("a", 33, 19, 1, 1), F16("b", 21, 19, 1, 1));
}
/* f16 b with a quantized a: the ALONG_M kernel reading f16 */
static struct ggml_tensor *c_out_prod_q4_0_f16(struct ggml_context *ctx) {
    return ggml_out_prod(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a", 64, 7, 1, 1), F16("b", 9, 7, 1, 1));
}
static struct ggml_tensor *c_out_prod_q5_K_f16(struct ggml_context *ctx) {
    return ggml_out_prod(ctx, leaf(ctx, GGML_TYPE_Q5_K, "a", 256, 6, 1, 1), F16("b", 13, 6, 2, 1));
}

/* ---------------------------------------- glu of odd rows, f32 x f16 products */

/* rows of 9: x is values 0..3, g values 4..7 (swapped: the other way), value 8 unused */
/* halves of at least 256 values: glu.comp carries its coordinates a workgroup's width at a time */
static struct ggml_tensor *c_swiglu_long_rows(struct ggml_context *ctx) { return ggml_glu(ctx, F32("a", 520, 5, 3, 2), GGML_GLU_OP_SWIGLU, false); }
static struct ggml_tensor *c_swiglu_odd(struct ggml_context *ctx) { return ggml_glu(ctx, F32("a", 9, 5, 3, 1), GGML_GLU_OP_SWIGLU, false); }
static struct ggml_tensor *c_geglu_odd_swapped_f16(struct ggml_context *ctx) {
    return ggml_glu(ctx, F16("a", 9, 5, 3, 1), GGML_GLU_OP_GEGLU, true);
}
/* f32 or quantized weights, f16 activations: the tiled kernel at every n (no matrix-vector kernel reads f16 b
 * under other weights than f16) */
static struct ggml_tensor *c_mul_mat_f32_f16(struct ggml_context *ctx) {
    return ggml_mul_mat(ctx, F32("a", 70, 19, 2, 1), F16("b", 70, 17, 2, 3));
}
static struct ggml_tensor *c_mul_mat_f32_f16_n8(struct ggml_context *ctx) { return ggml_mul_mat(ctx, F32("a", 64, 9, 1, 1), F16("b", 64, 8, 1, 1)); }
static struct ggml_tensor *c_mul_mat_q4_0_f16_n1(struct ggml_context *ctx) {
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a", 256, 37, 1, 1), F16("b", 256, 1, 1, 1));
}
static struct ggml_tensor *c_mul_mat_q8_0_f16(struct ggml_context *ctx) {
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q8_0, "a", 96, 45, 2, 1), F16("b", 96, 19, 4, 1));
}
static struct ggml_tensor *c_mul_mat_q6_K_f16(struct ggml_context *ctx) {
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q6_K, "a", 512, 17, 1, 1), F16("b", 512, 3, 1, 2));
}

/* i32 data moved as it is: concatenation, get_rows (values past 2^24, so f32 would round them) */
static struct ggml_tensor *c_concat_i32(struct ggml_context *ctx) { return ggml_concat(ctx, I32("wide:a", 11, 12, 3, 2), I32("wide:b", 11, 7, 3, 2), 1); }
static struct ggml_tensor *c_get_rows_i32(struct ggml_context *ctx) {
    return ggml_get_rows(ctx, I32("wide:a", 37, 9, 2, 1), I32("idx9:i", 5, 2, 1, 1));
}
/* ... and copied, made contiguous and repeated (i32 and i16: 16-bit words whose patterns include
 * f16 and bf16 NaNs, which a float path could change) */
static struct ggml_tensor *c_cont_i32_permuted(struct ggml_context *ctx) {
    return ggml_cont(ctx, ggml_permute(ctx, I32("wide:a", 10, 8, 3, 1), 1, 2, 0, 3));
}
static struct ggml_tensor *c_dup_i16_permuted(struct ggml_context *ctx) {
    return ggml_cont(ctx, ggml_permute(ctx, leaf(ctx, GGML_TYPE_I16, "wide:a", 10, 8, 3, 1), 0, 2, 1, 3));
}
static struct ggml_tensor *c_repeat_i32(struct ggml_context *ctx) {
    return ggml_repeat(ctx, I32("wide:a", 10, 5, 4, 1), I32("shape", 20, 5, 4, 3));
}
/* depthwise convolution on channels-innermost (CWHN) data and kernel: permuted views, as ggml's test builds them */
static struct ggml_tensor *c_conv_2d_dw_cwhn(struct ggml_context *ctx) {
    struct ggml_tensor *x = ggml_cont(ctx, ggml_permute(ctx, F32("x", 17, 14, 9, 1), 1, 2, 0, 3));
    struct ggml_tensor *k = ggml_cont(ctx, ggml_permute(ctx, F32("k", 3, 3, 1, 9), 2, 3, 1, 0));
    return ggml_conv_2d_dw_direct(ctx, ggml_permute(ctx, k, 3, 2, 0, 1), ggml_permute(ctx, x, 2, 0, 1, 3), 2, 1, 1, 0, 1, 2);
}

/* set of i32: b over a view of a (rows 1..3 of each matrix), moved as they are */
static struct ggml_tensor *c_set_i32(struct ggml_context *ctx) {
    struct ggml_tensor *a = I32("wide:a", 6, 5, 4, 1), *b = I32("wide:b", 6, 3, 4, 1);
    return ggml_set(ctx, a, b, a->nb[1], a->nb[2], a->nb[3], a->nb[1]);
}
static struct ggml_tensor *c_repeat_i16(struct ggml_context *ctx) {
    return ggml_repeat(ctx, leaf(ctx, GGML_TYPE_I16, "wide:a", 10, 5, 4, 1), leaf(ctx, GGML_TYPE_I16, "shape", 10, 5, 4, 2));
}

#define CASE(fn, err) {#fn + 2, fn, err, true}
#define DECLINED(fn) {#fn + 2, fn, 0, false}
static const struct vk_test_case cases[] = {
    CASE(c_xielu, 1e-10), CASE(c_xielu_small, 1e-10), CASE(c_xielu_f16, 1e-6),
    CASE(c_back_abs, 1e-12), CASE(c_back_sgn, 0), CASE(c_back_neg, 1e-12), CASE(c_back_step, 0), CASE(c_back_tanh, 1e-8),
    CASE(c_back_elu, 1e-8), CASE(c_back_relu, 1e-12), CASE(c_back_sigmoid, 1e-8), CASE(c_back_gelu, 1e-6),
    CASE(c_back_gelu_quick, 1e-6), CASE(c_back_silu, 1e-8), CASE(c_back_hardswish, 1e-10), CASE(c_back_hardsigmoid, 1e-10),
    CASE(c_back_exp, 1e-8), CASE(c_back_expm1, 1e-8), CASE(c_back_softplus, 1e-8), CASE(c_back_gelu_erf, 1e-6),
    CASE(c_back_xielu, 1e-8), CASE(c_back_floor, 0), CASE(c_back_round, 0), CASE(c_back_gelu_strided, 1e-6),
    CASE(c_add_id, 1e-12), CASE(c_cumsum, 1e-10), CASE(c_cumsum_short, 1e-10), CASE(c_cumsum_view, 1e-10),
    CASE(c_count_equal, 0), CASE(c_count_equal_argmax, 0), CASE(c_get_rows_back, 1e-12), CASE(c_get_rows_back_strided, 1e-12), CASE(c_get_rows_back_embedding, 1e-12), CASE(c_get_rows_back_fewer, 1e-12), CASE(c_get_rows_back_f16, 1e-12), CASE(c_get_rows_back_bf16, 1e-12), CASE(c_concat_i32, 0), CASE(c_get_rows_i32, 0), CASE(c_cont_i32_permuted, 0), CASE(c_dup_i16_permuted, 0),
    CASE(c_repeat_i32, 0), CASE(c_repeat_i16, 0), CASE(c_set_i32, 0), CASE(c_conv_2d_dw_cwhn, 1e-10),
    CASE(c_soft_max_sinks, 1e-9), CASE(c_soft_max_sinks_mask_alibi, 1e-9), CASE(c_soft_max_back_alibi, 1e-10),
    CASE(c_rope_mrope, 1e-7), CASE(c_rope_mrope_ff_e, 1e-7), CASE(c_rope_imrope, 1e-7), CASE(c_rope_vision, 1e-7),
    CASE(c_rope_vision_ff, 1e-7), CASE(c_rope_mrope_f16, 1e-5), CASE(c_rope_mrope_back, 1e-7), CASE(c_rope_imrope_back, 1e-7),
    CASE(c_rope_vision_back, 1e-7), CASE(c_rope_neox_back, 1e-7), CASE(c_rope_mrope_view, 1e-7),
    CASE(c_conv_2d_direct, 1e-6), CASE(c_conv_2d_direct_f16_strided, 1e-6), CASE(c_conv_2d_direct_view, 1e-6),
    CASE(c_pool_2d_back_max, 0), CASE(c_pool_2d_back_max_ties, 0), CASE(c_pool_2d_back_avg, 1e-12), CASE(c_pool_2d_back_f16, 0),
    CASE(c_im2col_back_2d, 1e-12), CASE(c_im2col_back_1d, 1e-12),
    CASE(c_tri_upper_diag, 0), CASE(c_tri_upper, 0), CASE(c_tri_lower_diag, 0), CASE(c_tri_lower, 0), CASE(c_tri_f16, 0),
    CASE(c_diag, 0), CASE(c_arange, 1e-12), CASE(c_roll, 0), CASE(c_roll_f16_view, 0), CASE(c_pad_reflect_1d, 0),
    CASE(c_timestep_embedding, 1e-10), CASE(c_timestep_embedding_large, 1e-9), CASE(c_conv_2d_dw, 1e-10), CASE(c_conv_2d_dw_f16, 1e-6),
    CASE(c_acc, 1e-12), CASE(c_acc_inplace_chain, 1e-12), CASE(c_set, 0), CASE(c_set_1d, 0), CASE(c_set_2d, 0),
    CASE(c_top_k_long, 0), CASE(c_top_k_long_ties, 0), CASE(c_top_k_long_view, 0), CASE(c_top_k_many, 0),
    CASE(c_conv_transpose_1d, 1e-12), CASE(c_conv_transpose_1d_pad_dil_f16, 1e-7), CASE(c_ssm_conv, 1e-12),
    CASE(c_im2col_3d, 0), CASE(c_im2col_3d_f16, 0), CASE(c_conv_3d, 1e-12), CASE(c_conv_3d_f16, 1e-7),
    CASE(c_gated_linear_attn, 1e-10), CASE(c_rwkv_wkv6, 1e-10), CASE(c_rwkv_wkv7, 1e-10),
    CASE(c_ssm_scan_mamba2, 1e-10), CASE(c_ssm_scan_mamba1, 1e-10), CASE(c_ssm_scan_long, 1e-10),
    CASE(c_win_part, 0), CASE(c_win_unpart, 0), CASE(c_get_rel_pos, 0), CASE(c_get_rel_pos_f16, 0), CASE(c_add_rel_pos, 1e-12),
    CASE(c_col2im_1d, 1e-12),
    CASE(c_solve_tri_left_lower, 1e-10), CASE(c_solve_tri_left_upper_uni, 1e-10), CASE(c_solve_tri_right_lower, 1e-10),
    CASE(c_solve_tri_right_upper, 1e-10),
    CASE(c_set_rows_q4_0, 1e-12), CASE(c_set_rows_q4_1, 1e-12), CASE(c_set_rows_q5_0, 1e-12), CASE(c_set_rows_q5_1, 1e-12),
    CASE(c_set_rows_q8_0, 1e-12), CASE(c_set_rows_q8_0_view_bcast, 1e-12), CASE(c_set_rows_iq4_nl, 0), CASE(c_cpy_f16_iq4_nl, 0),
    CASE(c_cpy_transposed_iq4_nl, 0),
    CASE(c_cpy_transposed_q4_0, 1e-12), CASE(c_cpy_transposed_q5_1, 1e-12), CASE(c_cpy_transposed_q8_0, 1e-12),
    CASE(c_flash_attn_q8_0, 1e-8), CASE(c_flash_attn_q4_0_q_view, 1e-8), CASE(c_flash_attn_bf16, 1e-8),
    CASE(c_flash_attn_576_512, 1e-6), /* f16 K/V: the CPU accumulates in f16 as ggml's does */
    /* many queries: on devices with cooperative matrices flash-attn-cm.comp, whose f16 Q, K, V and
     * weights give nmse 3e-8 to 1e-7 against the CPU (Mesa 26 lavapipe); f32 elsewhere (tiled kernel) */
    CASE(c_flash_attn_many_gqa3, 1e-6), CASE(c_flash_attn_many_gqa2_batch, 1e-6), CASE(c_flash_attn_many_q8_0_gqa4, 1e-8),
    CASE(c_flash_attn_many_256_sinks, 1e-6), CASE(c_flash_attn_many_odd_alibi, 1e-6),
    CASE(c_flash_attn_pp_64, 1e-6), CASE(c_flash_attn_pp_128, 1e-6), CASE(c_flash_attn_pp_odd_alibi, 1e-6),
    CASE(c_flash_attn_pp_f32_sinks, 1e-6), CASE(c_flash_attn_pp_bf16, 1e-6), CASE(c_flash_attn_pp_big_scores, 1e-6),
    CASE(c_flash_attn_pp_gqa5_alibi, 1e-6),
    CASE(c_out_prod_q4_0, 1e-10), CASE(c_out_prod_q6_K, 1e-10), CASE(c_out_prod_f32_f16, 1e-10),
    CASE(c_cpy_blocks_q4_K, 0), CASE(c_cpy_blocks_q5_1_reshaped, 0),
    CASE(c_swiglu_odd, 1e-10), CASE(c_swiglu_long_rows, 1e-10), CASE(c_geglu_odd_swapped_f16, 1e-6), CASE(c_mul_mat_f32_f16, 1e-10),
    CASE(c_out_prod_q4_0_f16, 1e-10), CASE(c_out_prod_q5_K_f16, 1e-10), CASE(c_mul_mat_f32_f16_n8, 1e-10),
    CASE(c_mul_mat_q4_0_f16_n1, 1e-4), CASE(c_mul_mat_q8_0_f16, 1e-4), CASE(c_mul_mat_q6_K_f16, 1e-4), /* the CPU quantizes b */
    CASE(c_cpy_f16_q4_0, 0), CASE(c_cpy_bf16_q8_0_transposed, 1e-12), CASE(c_cpy_q4_K_f32_permuted, 0),
    CASE(c_cpy_q5_0_f32, 0), CASE(c_cpy_q6_K_f32_into_view, 0),
    DECLINED(c_acc_overlapping),
};

const struct vk_test_case *vk_test_cases_ops(size_t *n) {
    *n = sizeof cases / sizeof *cases;
    return cases;
}
