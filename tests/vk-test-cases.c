/*
 * vk-test-cases.c - op cases for test-vulkan.c: odd sizes, broadcasting,
 * non-contiguous views, f16/bf16 operands, large values.
 */
#include <string.h>

#include "vk-test-cases.h"

/* Constructors land in core one family at a time: weak references let a
 * case see a missing one (NULL) and be skipped rather than break the link. */
#pragma weak ggml_add
#pragma weak ggml_reshape_2d
#pragma weak ggml_add1
#pragma weak ggml_sub
#pragma weak ggml_mul
#pragma weak ggml_div
#pragma weak ggml_scale
#pragma weak ggml_scale_bias
#pragma weak ggml_unary
#pragma weak ggml_sqr
#pragma weak ggml_sqrt
#pragma weak ggml_log
#pragma weak ggml_sin
#pragma weak ggml_cos
#pragma weak ggml_clamp
#pragma weak ggml_leaky_relu
#pragma weak ggml_cpy
#pragma weak ggml_cont
#pragma weak ggml_dup
#pragma weak ggml_repeat
#pragma weak ggml_glu
#pragma weak ggml_glu_split
#pragma weak ggml_swiglu_oai
#pragma weak ggml_sum
#pragma weak ggml_sum_rows
#pragma weak ggml_mean
#pragma weak ggml_argmax
#pragma weak ggml_norm
#pragma weak ggml_rms_norm
#pragma weak ggml_l2_norm
#pragma weak ggml_group_norm
#pragma weak ggml_soft_max_ext
#pragma weak ggml_mul_mat
#pragma weak ggml_get_rows
#pragma weak ggml_set_rows
#pragma weak ggml_concat
#pragma weak ggml_pad
#pragma weak ggml_rope_ext
#pragma weak ggml_silu_back
#pragma weak ggml_repeat_back
#pragma weak ggml_conv_transpose_2d_p0
#pragma weak ggml_interpolate
#pragma weak ggml_diag_mask_inf
#pragma weak ggml_diag_mask_zero
#pragma weak ggml_flash_attn_ext
#pragma weak ggml_flash_attn_ext_add_sinks
#pragma weak ggml_im2col
#pragma weak ggml_pool_1d
#pragma weak ggml_pool_2d
#pragma weak ggml_argsort
#pragma weak ggml_top_k
#pragma weak ggml_out_prod
#pragma weak ggml_soft_max_ext_back
#pragma weak ggml_rms_norm_back
#pragma weak ggml_cross_entropy_loss
#pragma weak ggml_cross_entropy_loss_back
#pragma weak ggml_opt_step_adamw
#pragma weak ggml_opt_step_sgd

#define NEED(fn) do { if (!(fn)) return NULL; } while (0)

struct ggml_tensor *vk_test_leaf(struct ggml_context *ctx, enum ggml_type type, const char *name, int64_t n0, int64_t n1,
                                 int64_t n2, int64_t n3) {
    struct ggml_tensor *t = ggml_new_tensor_4d(ctx, type, n0, n1, n2, n3);
    if (t) ggml_set_name(t, name);
    return t;
}
#define leaf vk_test_leaf
#define F32(name, a, b, c, d) leaf(ctx, GGML_TYPE_F32, name, a, b, c, d)
#define F16(name, a, b, c, d) leaf(ctx, GGML_TYPE_F16, name, a, b, c, d)

/* ------------------------------------------------------------ binary */

static struct ggml_tensor *c_add_bcast(struct ggml_context *ctx) { NEED(ggml_add); return ggml_add(ctx, F32("a", 13, 7, 3, 2), F32("b", 13, 1, 3, 1)); }
static struct ggml_tensor *c_sub_bcast(struct ggml_context *ctx) { NEED(ggml_sub); return ggml_sub(ctx, F32("a", 13, 7, 3, 2), F32("b", 1, 7, 1, 2)); }
static struct ggml_tensor *c_mul_bcast(struct ggml_context *ctx) { NEED(ggml_mul); return ggml_mul(ctx, F32("big:a", 33, 5, 2, 3), F32("b", 33, 5, 1, 1)); }
/* rows of at least 256 values: binary.comp carries its coordinates a workgroup's width at a time */
static struct ggml_tensor *c_add_long_rows(struct ggml_context *ctx) { NEED(ggml_add); return ggml_add(ctx, F32("a", 300, 7, 3, 2), F32("b", 300, 1, 3, 1)); }
static struct ggml_tensor *c_div(struct ggml_context *ctx) { NEED(ggml_div); return ggml_div(ctx, F32("a", 31, 9, 1, 1), F32("pos:b", 31, 9, 1, 1)); }
static struct ggml_tensor *c_add_f16(struct ggml_context *ctx) { NEED(ggml_add); return ggml_add(ctx, F16("a", 40, 6, 2, 1), F32("b", 40, 1, 1, 1)); }
static struct ggml_tensor *c_add1(struct ggml_context *ctx) { NEED(ggml_add1); return ggml_add1(ctx, F32("a", 19, 4, 1, 1), F32("b", 1, 1, 1, 1)); }
static struct ggml_tensor *c_add_transposed(struct ggml_context *ctx) {
    NEED(ggml_add);
    struct ggml_tensor *a = ggml_transpose(ctx, F32("a", 11, 17, 1, 1));
    return ggml_add(ctx, a, F32("b", 17, 11, 1, 1));
}
static struct ggml_tensor *c_mul_view(struct ggml_context *ctx) {
    NEED(ggml_mul);
    struct ggml_tensor *base = F32("a", 20, 9, 1, 1);
    struct ggml_tensor *a = ggml_view_2d(ctx, base, 7, 9, base->nb[1], 3 * sizeof(float));
    return ggml_mul(ctx, a, F32("b", 7, 1, 1, 1));
}

/* ------------------------------------------------------------- unary */

#define UNARY_CASE(fn, op, kind) \
    static struct ggml_tensor *fn(struct ggml_context *ctx) { NEED(ggml_unary); return ggml_unary(ctx, F32(kind, 37, 5, 3, 1), op); }
UNARY_CASE(c_abs, GGML_UNARY_OP_ABS, "a")
UNARY_CASE(c_sgn, GGML_UNARY_OP_SGN, "a")
UNARY_CASE(c_neg, GGML_UNARY_OP_NEG, "a")
UNARY_CASE(c_step, GGML_UNARY_OP_STEP, "a")
UNARY_CASE(c_tanh, GGML_UNARY_OP_TANH, "big:a")
UNARY_CASE(c_elu, GGML_UNARY_OP_ELU, "big:a")
UNARY_CASE(c_relu, GGML_UNARY_OP_RELU, "a")
UNARY_CASE(c_sigmoid, GGML_UNARY_OP_SIGMOID, "big:a")
UNARY_CASE(c_gelu, GGML_UNARY_OP_GELU, "big:a")
UNARY_CASE(c_gelu_quick, GGML_UNARY_OP_GELU_QUICK, "big:a")
UNARY_CASE(c_silu, GGML_UNARY_OP_SILU, "big:a")
UNARY_CASE(c_hardswish, GGML_UNARY_OP_HARDSWISH, "big:a")
UNARY_CASE(c_hardsigmoid, GGML_UNARY_OP_HARDSIGMOID, "big:a")
UNARY_CASE(c_exp, GGML_UNARY_OP_EXP, "a")
UNARY_CASE(c_expm1, GGML_UNARY_OP_EXPM1, "a")
UNARY_CASE(c_softplus, GGML_UNARY_OP_SOFTPLUS, "big:a")
UNARY_CASE(c_gelu_erf, GGML_UNARY_OP_GELU_ERF, "big:a")
UNARY_CASE(c_floor, GGML_UNARY_OP_FLOOR, "big:a")
UNARY_CASE(c_ceil, GGML_UNARY_OP_CEIL, "big:a")
UNARY_CASE(c_round, GGML_UNARY_OP_ROUND, "big:a")
UNARY_CASE(c_trunc, GGML_UNARY_OP_TRUNC, "big:a")
static struct ggml_tensor *c_silu_f16(struct ggml_context *ctx) { NEED(ggml_unary); return ggml_unary(ctx, F16("a", 64, 3, 1, 1), GGML_UNARY_OP_SILU); }
static struct ggml_tensor *c_sqr(struct ggml_context *ctx) { NEED(ggml_sqr); return ggml_sqr(ctx, F32("a", 23, 4, 2, 1)); }
static struct ggml_tensor *c_sqrt(struct ggml_context *ctx) { NEED(ggml_sqrt); return ggml_sqrt(ctx, F32("pos:a", 23, 4, 2, 1)); }
static struct ggml_tensor *c_log(struct ggml_context *ctx) { NEED(ggml_log); return ggml_log(ctx, F32("pos:a", 23, 4, 2, 1)); }
static struct ggml_tensor *c_sin(struct ggml_context *ctx) { NEED(ggml_sin); return ggml_sin(ctx, F32("a", 23, 4, 2, 1)); }
static struct ggml_tensor *c_cos(struct ggml_context *ctx) { NEED(ggml_cos); return ggml_cos(ctx, F32("a", 23, 4, 2, 1)); }
static struct ggml_tensor *c_scale(struct ggml_context *ctx) { NEED(ggml_scale); return ggml_scale(ctx, F32("a", 29, 3, 1, 1), -2.5f); }
static struct ggml_tensor *c_scale_bias(struct ggml_context *ctx) { NEED(ggml_scale_bias); return ggml_scale_bias(ctx, F32("a", 29, 3, 1, 1), 0.5f, 3.0f); }
static struct ggml_tensor *c_clamp(struct ggml_context *ctx) { NEED(ggml_clamp); return ggml_clamp(ctx, F32("a", 29, 3, 1, 1), -0.3f, 0.4f); }
static struct ggml_tensor *c_leaky(struct ggml_context *ctx) { NEED(ggml_leaky_relu); return ggml_leaky_relu(ctx, F32("a", 29, 3, 1, 1), 0.1f, false); }

/* ------------------------------------------------------------ copies */

static struct ggml_tensor *c_cpy_f32_f16(struct ggml_context *ctx) { NEED(ggml_cpy); return ggml_cpy(ctx, F32("a", 21, 5, 2, 1), F16("d", 21, 5, 2, 1)); }
static struct ggml_tensor *c_cpy_f16_f32(struct ggml_context *ctx) { NEED(ggml_cpy); return ggml_cpy(ctx, F16("a", 21, 5, 2, 1), F32("d", 35, 3, 2, 1)); }
static struct ggml_tensor *c_cpy_f32_bf16(struct ggml_context *ctx) {
    NEED(ggml_cpy);
    return ggml_cpy(ctx, F32("a", 21, 5, 2, 1), leaf(ctx, GGML_TYPE_BF16, "d", 21, 5, 2, 1));
}
static struct ggml_tensor *c_cont_permuted(struct ggml_context *ctx) {
    NEED(ggml_cont);
    return ggml_cont(ctx, ggml_permute(ctx, F32("a", 5, 7, 3, 2), 2, 0, 3, 1));
}
static struct ggml_tensor *c_dup(struct ggml_context *ctx) { NEED(ggml_dup); return ggml_dup(ctx, F32("a", 9, 4, 1, 1)); }
static struct ggml_tensor *c_repeat(struct ggml_context *ctx) { NEED(ggml_repeat); return ggml_repeat(ctx, F32("a", 3, 1, 2, 1), F32("b", 6, 4, 2, 3)); }

/* --------------------------------------------------------------- glu */

#define GLU_CASE(fn, op, swapped) \
    static struct ggml_tensor *fn(struct ggml_context *ctx) { NEED(ggml_glu); return ggml_glu(ctx, F32("big:a", 34, 5, 2, 1), op, swapped); }
GLU_CASE(c_reglu, GGML_GLU_OP_REGLU, false)
GLU_CASE(c_geglu, GGML_GLU_OP_GEGLU, false)
GLU_CASE(c_swiglu, GGML_GLU_OP_SWIGLU, false)
GLU_CASE(c_swiglu_swapped, GGML_GLU_OP_SWIGLU, true)
GLU_CASE(c_geglu_erf, GGML_GLU_OP_GEGLU_ERF, false)
GLU_CASE(c_geglu_quick, GGML_GLU_OP_GEGLU_QUICK, true)
static struct ggml_tensor *c_swiglu_split(struct ggml_context *ctx) {
    NEED(ggml_glu_split);
    return ggml_glu_split(ctx, F32("a", 17, 3, 2, 1), F32("b", 17, 3, 2, 1), GGML_GLU_OP_SWIGLU);
}
static struct ggml_tensor *c_swiglu_oai(struct ggml_context *ctx) {
    NEED(ggml_swiglu_oai);
    return ggml_swiglu_oai(ctx, F32("big:a", 17, 3, 1, 1), F32("big:b", 17, 3, 1, 1), 1.702f, 7.0f);
}

/* -------------------------------------------------------- reductions */

static struct ggml_tensor *c_sum(struct ggml_context *ctx) { NEED(ggml_sum); return ggml_sum(ctx, F32("a", 301, 7, 3, 1)); }
static struct ggml_tensor *c_sum_rows(struct ggml_context *ctx) { NEED(ggml_sum_rows); return ggml_sum_rows(ctx, F32("a", 1001, 7, 3, 2)); }
/* long sums of values in [-30, 30) that mostly cancel, where float partial sums lose about 1e-6 of the total: compensated,
 * they stay within a rounding or two of the CPU's double sums */
static struct ggml_tensor *c_sum_long(struct ggml_context *ctx) { NEED(ggml_sum); return ggml_sum(ctx, F32("big:a", 1 << 20, 1, 1, 1)); }
static struct ggml_tensor *c_sum_rows_long(struct ggml_context *ctx) {
    NEED(ggml_sum_rows);
    return ggml_sum_rows(ctx, F32("big:a", 1 << 17, 3, 1, 1));
}
static struct ggml_tensor *c_mean(struct ggml_context *ctx) { NEED(ggml_mean); return ggml_mean(ctx, F32("a", 77, 7, 3, 1)); }
static struct ggml_tensor *c_argmax(struct ggml_context *ctx) { NEED(ggml_argmax); return ggml_argmax(ctx, F32("a", 300, 11, 1, 1)); }
static struct ggml_tensor *c_norm(struct ggml_context *ctx) { NEED(ggml_norm); return ggml_norm(ctx, F32("big:a", 513, 5, 2, 1), 1e-5f); }
/* rows longer than the values rows.comp keeps in registers (4 per invocation of 256) */
static struct ggml_tensor *c_norm_long_rows(struct ggml_context *ctx) { NEED(ggml_norm); return ggml_norm(ctx, F32("a", 2500, 3, 1, 1), 1e-5f); }
static struct ggml_tensor *c_rms_norm_long_rows(struct ggml_context *ctx) { NEED(ggml_rms_norm); return ggml_rms_norm(ctx, F32("a", 2500, 3, 1, 1), 1e-6f); }
static struct ggml_tensor *c_rms_norm(struct ggml_context *ctx) { NEED(ggml_rms_norm); return ggml_rms_norm(ctx, F32("a", 100, 5, 2, 1), 1e-6f); }
static struct ggml_tensor *c_l2_norm(struct ggml_context *ctx) { NEED(ggml_l2_norm); return ggml_l2_norm(ctx, F32("a", 100, 5, 2, 1), 1e-12f); }
static struct ggml_tensor *c_group_norm(struct ggml_context *ctx) { NEED(ggml_group_norm); return ggml_group_norm(ctx, F32("a", 9, 7, 10, 2), 3, 1e-6f); }
static struct ggml_tensor *c_rms_norm_view(struct ggml_context *ctx) {
    NEED(ggml_rms_norm);
    return ggml_rms_norm(ctx, ggml_transpose(ctx, F32("a", 6, 40, 1, 1)), 1e-6f);
}

static struct ggml_tensor *c_soft_max(struct ggml_context *ctx) {
    NEED(ggml_soft_max_ext);
    return ggml_soft_max_ext(ctx, F32("big:a", 300, 7, 2, 1), NULL, 1.0f, 0.0f);
}
static struct ggml_tensor *c_soft_max_mask(struct ggml_context *ctx) {
    NEED(ggml_soft_max_ext);
    return ggml_soft_max_ext(ctx, F32("a", 33, 7, 4, 2), F32("b", 33, 9, 1, 1), 0.125f, 0.0f);
}
static struct ggml_tensor *c_soft_max_alibi_f16(struct ggml_context *ctx) {
    NEED(ggml_soft_max_ext);
    return ggml_soft_max_ext(ctx, F32("a", 33, 7, 6, 1), F16("b", 33, 7, 1, 1), 0.5f, 8.0f);
}

/* ----------------------------------------------------------- mul_mat */

static struct ggml_tensor *c_mm_f32(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F32("a", 67, 33, 1, 1), F32("b", 67, 45, 1, 1)); }
static struct ggml_tensor *c_mm_f32_big(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F32("a", 256, 130, 1, 1), F32("b", 256, 200, 1, 1)); }
static struct ggml_tensor *c_mm_f16(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F16("a", 70, 65, 1, 1), F32("b", 70, 19, 1, 1)); }
static struct ggml_tensor *c_mm_f16_f16(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F16("a", 64, 40, 1, 1), F16("b", 64, 24, 1, 1)); }
/* tensor-core sized: partial 128x128 tiles, K a multiple of 8 (coopmat path where present) */
static struct ggml_tensor *c_mm_f16_tiles(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F16("a", 264, 300, 1, 1), F32("b", 264, 150, 1, 1)); }
static struct ggml_tensor *c_mm_f16_f16_batched(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F16("a", 64, 130, 2, 1), F16("b", 64, 33, 4, 1)); }
/* coopmat: an odd number of k slices with a partial last one (K = 520; 200 with an f32 b whose rows
 * are a view with a longer stride and 16-byte offset), full and partial tiles, broadcast batches */
static struct ggml_tensor *c_mm_f16_f16_deep(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F16("a", 520, 270, 2, 1), F16("b", 520, 140, 4, 1)); }
static struct ggml_tensor *c_mm_f16_view_b(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    struct ggml_tensor *b = F32("b", 216, 300, 1, 1);
    return ggml_mul_mat(ctx, F16("a", 200, 260, 1, 1), ggml_view_2d(ctx, b, 200, 290, b->nb[1], 4 * sizeof(float)));
}
/* whole 128x128 tiles, K a multiple of 32: the flexible-size coopmat variant where present (f16 and
 * f32 b, broadcast batches) */
static struct ggml_tensor *c_mm_f16_f16_whole(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F16("a", 256, 256, 1, 1), F16("b", 256, 128, 1, 1)); }
static struct ggml_tensor *c_mm_f16_whole(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F16("a", 96, 384, 1, 1), F32("b", 96, 256, 1, 1)); }
static struct ggml_tensor *c_mm_f16_f16_whole_batched(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F16("a", 64, 128, 2, 1), F16("b", 64, 128, 4, 1)); }
static struct ggml_tensor *c_mm_bf16(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_BF16, "a", 48, 20, 1, 1), F32("b", 48, 17, 1, 1));
}
/* Two products with block-format weights of their own in one graph, side by side and chained: where
 * the weights are dequantized for the tensor cores (test-vulkan-next.sh forces it) both reuse one
 * scratch region, so the second dequantization must wait for the first product. */
static struct ggml_tensor *c_mm_quant_pair(struct ggml_context *ctx) {
    NEED(ggml_mul_mat && ggml_add);
    struct ggml_tensor *b = F32("b", 256, 70, 1, 1);
    return ggml_add(ctx, ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_K, "a1", 256, 96, 1, 1), b),
                    ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q8_0, "a2", 256, 96, 1, 1), b));
}
/* (the chain: two quantized products of b rounded by the CPU, about 7e-5 apart) */
static struct ggml_tensor *c_mm_quant_chain(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    struct ggml_tensor *h = ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a1", 128, 160, 1, 1), F32("b", 128, 80, 1, 1));
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q6_K, "a2", 256, 48, 1, 1), ggml_reshape_2d(ctx, h, 256, 50));
}
static struct ggml_tensor *c_mm_batched(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F32("a", 33, 21, 2, 1), F32("b", 33, 12, 4, 3)); }
static struct ggml_tensor *c_mm_transposed_b(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    struct ggml_tensor *b = ggml_permute(ctx, F32("b", 24, 3, 10, 1), 0, 2, 1, 3); /* [24, 10, 3] with strided rows */
    return ggml_mul_mat(ctx, F32("a", 24, 15, 3, 1), b);
}
static struct ggml_tensor *c_mv_f32(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F32("a", 260, 37, 1, 1), F32("b", 260, 1, 1, 1)); }
static struct ggml_tensor *c_mv_f32_odd(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F32("a", 261, 37, 1, 1), F32("b", 261, 3, 1, 1)); }
static struct ggml_tensor *c_mv_f16(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F16("a", 512, 70, 1, 1), F32("b", 512, 5, 2, 1)); }
static struct ggml_tensor *c_mv_f16_f16(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F16("a", 96, 33, 1, 1), F16("b", 96, 2, 1, 1)); }
/* f16 weights at the row lengths mv.comp's tuning tells apart (mv_float_by_k): odd row counts, 8 columns, k not a multiple of 8 */
static struct ggml_tensor *c_mv_f16_k1536(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F16("a", 1536, 45, 1, 1), F32("b", 1536, 8, 1, 1)); }
static struct ggml_tensor *c_mv_f16_k3000(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F16("a", 3000, 29, 1, 1), F32("b", 3000, 1, 1, 1)); }
static struct ggml_tensor *c_mv_f16_k4104(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F16("a", 4104, 23, 1, 1), F32("b", 4104, 3, 1, 1)); }

/* ------------------------------------------------------------ indexing */

static struct ggml_tensor *c_get_rows(struct ggml_context *ctx) { NEED(ggml_get_rows); return ggml_get_rows(ctx, F32("a", 10, 9, 2, 1), leaf(ctx, GGML_TYPE_I32, "idx9:i", 6, 2, 1, 1)); }
static struct ggml_tensor *c_get_rows_f16(struct ggml_context *ctx) { NEED(ggml_get_rows); return ggml_get_rows(ctx, F16("a", 33, 12, 1, 1), leaf(ctx, GGML_TYPE_I32, "idx12:i", 7, 1, 1, 1)); }
static struct ggml_tensor *c_set_rows(struct ggml_context *ctx) {
    NEED(ggml_set_rows);
    return ggml_set_rows(ctx, F32("a", 12, 20, 3, 1), F32("b", 12, 5, 3, 1), leaf(ctx, GGML_TYPE_I64, "uniq20:i", 5, 3, 1, 1));
}
static struct ggml_tensor *c_set_rows_f16(struct ggml_context *ctx) {
    NEED(ggml_set_rows);
    return ggml_set_rows(ctx, F16("a", 12, 20, 2, 1), F32("b", 12, 4, 2, 1), leaf(ctx, GGML_TYPE_I32, "uniq20:i", 4, 1, 1, 1));
}
static struct ggml_tensor *c_concat0(struct ggml_context *ctx) { NEED(ggml_concat); return ggml_concat(ctx, F32("a", 5, 4, 3, 1), F32("b", 7, 4, 3, 1), 0); }
static struct ggml_tensor *c_concat2(struct ggml_context *ctx) { NEED(ggml_concat); return ggml_concat(ctx, F32("a", 5, 4, 3, 2), F32("b", 5, 4, 1, 2), 2); }
static struct ggml_tensor *c_pad(struct ggml_context *ctx) { NEED(ggml_pad); return ggml_pad(ctx, F32("a", 5, 4, 3, 1), 3, 0, 2, 1); }

/* -------------------------------------------------------------- rope */

static struct ggml_tensor *rope_case(struct ggml_context *ctx, enum ggml_type type, int mode, bool ff, float ext) {
    NEED(ggml_rope_ext);
    struct ggml_tensor *a = leaf(ctx, type, "a", 64, 4, 7, 1);
    struct ggml_tensor *pos = leaf(ctx, GGML_TYPE_I32, "idx4000:pos", 7, 1, 1, 1);
    struct ggml_tensor *f = ff ? F32("pos:ff", 24, 1, 1, 1) : NULL;
    return ggml_rope_ext(ctx, a, pos, f, 48, mode, 4096, 10000.0f, 0.5f, ext, 1.0f, 32.0f, 1.0f);
}
static struct ggml_tensor *c_rope(struct ggml_context *ctx) { return rope_case(ctx, GGML_TYPE_F32, 0, false, 0.0f); }
static struct ggml_tensor *c_rope_neox(struct ggml_context *ctx) { return rope_case(ctx, GGML_TYPE_F32, 2, false, 0.0f); }
static struct ggml_tensor *c_rope_yarn_ff(struct ggml_context *ctx) { return rope_case(ctx, GGML_TYPE_F32, 2, true, 1.0f); }
static struct ggml_tensor *c_rope_f16(struct ggml_context *ctx) { return rope_case(ctx, GGML_TYPE_F16, 0, false, 1.0f); }

/* ------------------------------------------------- quantized weights */

#define QUANT_CASE(fn, type, n) \
    static struct ggml_tensor *fn(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, leaf(ctx, type, "a", 96, 37, 1, 1), F32("b", 96, n, 1, 1)); }
QUANT_CASE(c_mv_q4_0, GGML_TYPE_Q4_0, 1)
QUANT_CASE(c_mv_q4_1, GGML_TYPE_Q4_1, 2)
QUANT_CASE(c_mv_q5_0, GGML_TYPE_Q5_0, 1)
QUANT_CASE(c_mv_q5_1, GGML_TYPE_Q5_1, 3)
QUANT_CASE(c_mv_q8_0, GGML_TYPE_Q8_0, 1)
QUANT_CASE(c_mm_q4_0, GGML_TYPE_Q4_0, 19)
QUANT_CASE(c_mm_q4_1, GGML_TYPE_Q4_1, 19)
QUANT_CASE(c_mm_q5_0, GGML_TYPE_Q5_0, 19)
QUANT_CASE(c_mm_q5_1, GGML_TYPE_Q5_1, 19)
QUANT_CASE(c_mm_q8_0, GGML_TYPE_Q8_0, 19)
/* Q8_0 / Q4_0 weights of the cooperative-matrix kernel (read as blocks, or dequantized first with
 * $GGMLC_VK_COOPMAT_BLOCKS=0): whole tiles (its FLEX variant too), f16 activations, and a broadcast
 * batch of activations that are a view (rows 128 floats apart, starting at the fifth) */
static struct ggml_tensor *quant_whole(struct ggml_context *ctx, enum ggml_type type, enum ggml_type b_type) {
    NEED(ggml_mul_mat);
    return ggml_mul_mat(ctx, leaf(ctx, type, "a", 256, 256, 1, 1), leaf(ctx, b_type, "b", 256, 128, 1, 1));
}
static struct ggml_tensor *c_mm_q8_0_whole(struct ggml_context *ctx) { return quant_whole(ctx, GGML_TYPE_Q8_0, GGML_TYPE_F32); }
static struct ggml_tensor *c_mm_q4_0_whole_f16(struct ggml_context *ctx) { return quant_whole(ctx, GGML_TYPE_Q4_0, GGML_TYPE_F16); }
static struct ggml_tensor *quant_batched_view(struct ggml_context *ctx, enum ggml_type type) {
    NEED(ggml_mul_mat);
    struct ggml_tensor *b = F32("b", 128, 21, 4, 3);
    if (!b) return NULL;
    b = ggml_view_4d(ctx, b, 96, 21, 4, 3, b->nb[1], b->nb[2], b->nb[3], 4 * sizeof(float));
    return ggml_mul_mat(ctx, leaf(ctx, type, "a", 96, 37, 2, 1), b);
}
static struct ggml_tensor *c_mm_q8_0_batched_view(struct ggml_context *ctx) { return quant_batched_view(ctx, GGML_TYPE_Q8_0); }
static struct ggml_tensor *c_mm_q4_0_batched_view(struct ggml_context *ctx) { return quant_batched_view(ctx, GGML_TYPE_Q4_0); }
/* Q8_0 / Q4_0 rows longer than the blocks' unsplit limit in a product of few columns, split along k
 * into short layers that the cooperative-matrix kernel serves as blocks: a partial tile and a tail of
 * k (2080 = 65 blocks of 32), and whole tiles of a prompt's down projection (FLEX) */
static struct ggml_tensor *quant_split(struct ggml_context *ctx, enum ggml_type type, int64_t k, int64_t rows, int64_t cols) {
    NEED(ggml_mul_mat);
    return ggml_mul_mat(ctx, leaf(ctx, type, "a", k, rows, 1, 1), F32("b", k, cols, 1, 1));
}
static struct ggml_tensor *c_mm_q8_0_split_long(struct ggml_context *ctx) { return quant_split(ctx, GGML_TYPE_Q8_0, 2080, 132, 24); }
static struct ggml_tensor *c_mm_q4_0_split_whole(struct ggml_context *ctx) { return quant_split(ctx, GGML_TYPE_Q4_0, 2048, 128, 64); }
/* the staged quantized mat-vec: K over one chunk of 128 blocks (b restaged per column), rows starting mid-word */
static struct ggml_tensor *c_mv_q8_0_long(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q8_0, "a", 4160, 9, 1, 1), F32("b", 4160, 3, 1, 1));
}
static struct ggml_tensor *c_mv_q4_0_long(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a", 4128, 7, 2, 1), F32("b", 4128, 1, 4, 1));
}
/* b at an offset of one float: the staged kernel's b is read 4 bytes at a time */
static struct ggml_tensor *c_mv_q4_1_offset_b(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    struct ggml_tensor *b = F32("b", 96, 3, 1, 1);
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_1, "a", 96, 21, 1, 1), ggml_view_2d(ctx, b, 96, 2, b->nb[1], sizeof(float)));
}
static struct ggml_tensor *c_mv_q8_0_offset_b(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    struct ggml_tensor *b = F32("b", 128, 2, 1, 1);
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q8_0, "a", 96, 19, 1, 1), ggml_view_2d(ctx, b, 96, 2, b->nb[1], 3 * sizeof(float)));
}
/* the grouped q4_0/q8_0 mat-vec (rows of whole 256-value groups, 16-byte aligned): odd row
 * counts, 1..8 columns, more groups per row than threads along k, broadcast batches */
VK_MUL_MAT_CASE(c_mvg_q4_0_n1, GGML_TYPE_Q4_0, 512, 37, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvg_q4_0_n3, GGML_TYPE_Q4_0, 768, 19, 3, 2, 4)
VK_MUL_MAT_CASE(c_mvg_q4_0_n8, GGML_TYPE_Q4_0, 256, 53, 8, 1, 1)
VK_MUL_MAT_CASE(c_mvg_q4_0_long, GGML_TYPE_Q4_0, 4608, 35, 2, 1, 1)
VK_MUL_MAT_CASE(c_mvg_q8_0_n1, GGML_TYPE_Q8_0, 1024, 41, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvg_q8_0_n5, GGML_TYPE_Q8_0, 512, 17, 5, 1, 1)
VK_MUL_MAT_CASE(c_mvg_q8_0_n8, GGML_TYPE_Q8_0, 256, 29, 8, 2, 2)
VK_MUL_MAT_CASE(c_mvg_q8_0_long, GGML_TYPE_Q8_0, 4608, 21, 1, 1, 1)
/* b at an offset of one float: the grouped kernel's b is then read 4 bytes at a time */
static struct ggml_tensor *c_mvg_q4_0_offset_b(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    struct ggml_tensor *b = F32("b", 520, 3, 1, 1);
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a", 512, 23, 1, 1), ggml_view_2d(ctx, b, 512, 2, b->nb[1], sizeof(float)));
}
/* weights the grouped kernel must leave to the others: a view one block in (offset not
 * 16-byte aligned), and rows of 256 values 162 bytes apart (stride not aligned) */
static struct ggml_tensor *c_mvg_q4_0_offset_a(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    struct ggml_tensor *a = leaf(ctx, GGML_TYPE_Q4_0, "a", 288, 13, 1, 1);
    return ggml_mul_mat(ctx, ggml_view_2d(ctx, a, 256, 13, a->nb[1], ggml_type_size(GGML_TYPE_Q4_0)), F32("b", 256, 1, 1, 1));
}
static struct ggml_tensor *c_mvg_q8_0_stride_a(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    struct ggml_tensor *a = leaf(ctx, GGML_TYPE_Q8_0, "a", 288, 11, 1, 1);
    return ggml_mul_mat(ctx, ggml_view_2d(ctx, a, 256, 11, a->nb[1], 0), F32("b", 256, 2, 1, 1));
}

/* float mat-vec with 8 columns and 16-byte loads */
static struct ggml_tensor *c_mv_f16_n8(struct ggml_context *ctx) { NEED(ggml_mul_mat); return ggml_mul_mat(ctx, F16("a", 1024, 45, 1, 1), F32("b", 1024, 8, 1, 1)); }
static struct ggml_tensor *c_mm_q4_0_batched(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a", 64, 13, 2, 1), F32("b", 64, 11, 4, 1));
}

/* ----------------------------------------------------- training ops */

static struct ggml_tensor *c_silu_back(struct ggml_context *ctx) { NEED(ggml_silu_back); return ggml_silu_back(ctx, F32("a", 37, 6, 2, 1), F32("big:x", 37, 6, 2, 1)); }
static struct ggml_tensor *c_cross_entropy(struct ggml_context *ctx) {
    NEED(ggml_cross_entropy_loss);
    return ggml_cross_entropy_loss(ctx, F32("big:x", 300, 9, 2, 1), F32("pos:t", 300, 9, 2, 1));
}
static struct ggml_tensor *c_cross_entropy_back(struct ggml_context *ctx) {
    NEED(ggml_cross_entropy_loss_back);
    return ggml_cross_entropy_loss_back(ctx, F32("g", 1, 1, 1, 1), F32("big:x", 300, 9, 2, 1), F32("pos:t", 300, 9, 2, 1));
}
static struct ggml_tensor *c_adamw(struct ggml_context *ctx) {
    NEED(ggml_opt_step_adamw);
    return ggml_opt_step_adamw(ctx, F32("w", 33, 7, 1, 1), F32("g", 33, 7, 1, 1), F32("m", 33, 7, 1, 1), F32("pos:v", 33, 7, 1, 1),
                               F32("pos:hp", 7, 1, 1, 1));
}
static struct ggml_tensor *c_sgd(struct ggml_context *ctx) {
    NEED(ggml_opt_step_sgd);
    return ggml_opt_step_sgd(ctx, F32("w", 33, 7, 1, 1), F32("g", 33, 7, 1, 1), F32("pos:hp", 2, 1, 1, 1));
}

static struct ggml_tensor *c_out_prod(struct ggml_context *ctx) { NEED(ggml_out_prod); return ggml_out_prod(ctx, F32("a", 33, 19, 1, 1), F32("b", 21, 19, 1, 1)); }
static struct ggml_tensor *c_out_prod_batched(struct ggml_context *ctx) { NEED(ggml_out_prod); return ggml_out_prod(ctx, F16("a", 17, 40, 2, 1), F32("b", 70, 40, 4, 1)); }
static struct ggml_tensor *c_soft_max_back(struct ggml_context *ctx) {
    NEED(ggml_soft_max_ext_back);
    return ggml_soft_max_ext_back(ctx, F32("dy", 70, 6, 2, 1), F32("pos:y", 70, 6, 2, 1), 0.7f, 0.0f);
}
static struct ggml_tensor *c_rms_norm_back(struct ggml_context *ctx) {
    NEED(ggml_rms_norm_back);
    return ggml_rms_norm_back(ctx, F32("dy", 300, 6, 2, 1), F32("x", 300, 6, 2, 1), 1e-6f);
}

static struct ggml_tensor *c_argsort_asc(struct ggml_context *ctx) { NEED(ggml_argsort); return ggml_argsort(ctx, F32("a", 300, 5, 2, 1), GGML_SORT_ORDER_ASC); }
static struct ggml_tensor *c_argsort_desc(struct ggml_context *ctx) { NEED(ggml_argsort); return ggml_argsort(ctx, F32("a", 1000, 3, 1, 1), GGML_SORT_ORDER_DESC); }
static struct ggml_tensor *c_argsort_ties(struct ggml_context *ctx) { NEED(ggml_argsort); return ggml_argsort(ctx, leaf(ctx, GGML_TYPE_F32, "idx4:a", 37, 4, 1, 1), GGML_SORT_ORDER_ASC); }
static struct ggml_tensor *c_top_k(struct ggml_context *ctx) { NEED(ggml_top_k); return ggml_top_k(ctx, F32("a", 500, 6, 1, 1), 7); }

/* --------------------------------------------------------- image ops */

static struct ggml_tensor *c_im2col_2d(struct ggml_context *ctx) {
    NEED(ggml_im2col);
    return ggml_im2col(ctx, F16("k", 3, 3, 4, 5), F32("x", 11, 9, 4, 2), 2, 1, 1, 2, 1, 2, true, GGML_TYPE_F32);
}
static struct ggml_tensor *c_im2col_2d_f16(struct ggml_context *ctx) {
    NEED(ggml_im2col);
    return ggml_im2col(ctx, F16("k", 2, 3, 3, 2), F32("x", 8, 7, 3, 1), 1, 2, 0, 1, 1, 1, true, GGML_TYPE_F16);
}
static struct ggml_tensor *c_im2col_1d(struct ggml_context *ctx) {
    NEED(ggml_im2col);
    return ggml_im2col(ctx, F16("k", 3, 4, 2, 1), F32("x", 20, 4, 3, 1), 2, 0, 1, 0, 2, 0, false, GGML_TYPE_F32);
}
static struct ggml_tensor *c_pool_2d_max(struct ggml_context *ctx) { NEED(ggml_pool_2d); return ggml_pool_2d(ctx, F32("x", 13, 11, 3, 2), GGML_OP_POOL_MAX, 3, 2, 2, 2, 1, 1); }
static struct ggml_tensor *c_pool_2d_avg(struct ggml_context *ctx) { NEED(ggml_pool_2d); return ggml_pool_2d(ctx, F32("x", 13, 11, 3, 2), GGML_OP_POOL_AVG, 2, 3, 1, 2, 1, 0); }
static struct ggml_tensor *c_pool_1d(struct ggml_context *ctx) { NEED(ggml_pool_1d); return ggml_pool_1d(ctx, F32("x", 30, 4, 2, 1), GGML_OP_POOL_AVG, 4, 3, 1); }

/* --------------------------------------------------------- attention */

static struct ggml_tensor *attn_case(struct ggml_context *ctx, enum ggml_type kv, bool mask, float max_bias, float softcap, bool sinks) {
    NEED(ggml_flash_attn_ext);
    struct ggml_tensor *q = F32("q", 64, 5, 4, 1);
    struct ggml_tensor *k = leaf(ctx, kv, "k", 64, 200, 2, 1), *v = leaf(ctx, kv, "v", 48, 200, 2, 1);
    struct ggml_tensor *m = mask ? F16(max_bias > 0 ? "m" : "causal:m", 200, 8, 1, 1) : NULL;
    struct ggml_tensor *r = ggml_flash_attn_ext(ctx, q, k, v, m, 0.125f, max_bias, softcap);
    if (r && sinks) {
        NEED(ggml_flash_attn_ext_add_sinks);
        ggml_flash_attn_ext_add_sinks(r, F32("s", 4, 1, 1, 1));
    }
    return r;
}
static struct ggml_tensor *c_flash_attn(struct ggml_context *ctx) { return attn_case(ctx, GGML_TYPE_F16, false, 0.0f, 0.0f, false); }
static struct ggml_tensor *c_flash_attn_mask(struct ggml_context *ctx) { return attn_case(ctx, GGML_TYPE_F16, true, 0.0f, 0.0f, false); }
static struct ggml_tensor *c_flash_attn_alibi_softcap(struct ggml_context *ctx) { return attn_case(ctx, GGML_TYPE_F32, true, 8.0f, 30.0f, false); }
static struct ggml_tensor *c_flash_attn_sinks(struct ggml_context *ctx) { return attn_case(ctx, GGML_TYPE_F16, true, 0.0f, 0.0f, true); }
/* decoding: one query of 8 heads over 1000 keys of 2 heads, a mask and sinks (the shape that splits keys) */
static struct ggml_tensor *c_flash_attn_decode(struct ggml_context *ctx) {
    NEED(ggml_flash_attn_ext);
    NEED(ggml_flash_attn_ext_add_sinks);
    struct ggml_tensor *k = leaf(ctx, GGML_TYPE_F16, "k", 128, 1000, 2, 1), *v = leaf(ctx, GGML_TYPE_F16, "v", 128, 1000, 2, 1);
    struct ggml_tensor *r = ggml_flash_attn_ext(ctx, F32("q", 128, 1, 8, 1), k, v, F16("m", 1000, 8, 1, 1), 0.09f, 0.0f, 0.0f);
    if (r) ggml_flash_attn_ext_add_sinks(r, F32("s", 8, 1, 1, 1));
    return r;
}

static struct ggml_tensor *c_diag_mask_inf(struct ggml_context *ctx) { NEED(ggml_diag_mask_inf); return ggml_diag_mask_inf(ctx, F32("a", 12, 9, 3, 1), 2); }
static struct ggml_tensor *c_diag_mask_zero(struct ggml_context *ctx) { NEED(ggml_diag_mask_zero); return ggml_diag_mask_zero(ctx, F32("a", 12, 9, 3, 1), 0); }

static struct ggml_tensor *c_upscale_nearest(struct ggml_context *ctx) { NEED(ggml_interpolate); return ggml_interpolate(ctx, F32("a", 5, 4, 3, 2), 11, 9, 3, 2, GGML_SCALE_MODE_NEAREST); }
static struct ggml_tensor *c_upscale_bilinear(struct ggml_context *ctx) { NEED(ggml_interpolate); return ggml_interpolate(ctx, F32("a", 5, 4, 3, 1), 12, 7, 6, 1, GGML_SCALE_MODE_BILINEAR); }
static struct ggml_tensor *c_upscale_bicubic_align(struct ggml_context *ctx) {
    NEED(ggml_interpolate);
    return ggml_interpolate(ctx, F32("a", 6, 5, 2, 1), 13, 9, 2, 1, GGML_SCALE_MODE_BICUBIC | GGML_SCALE_FLAG_ALIGN_CORNERS);
}

static struct ggml_tensor *c_repeat_back(struct ggml_context *ctx) { NEED(ggml_repeat_back); return ggml_repeat_back(ctx, F32("a", 12, 8, 6, 2), F32("b", 4, 1, 3, 2)); }
static struct ggml_tensor *c_conv_transpose_2d(struct ggml_context *ctx) {
    NEED(ggml_conv_transpose_2d_p0);
    return ggml_conv_transpose_2d_p0(ctx, F16("k", 3, 4, 5, 6), F32("x", 7, 6, 6, 2), 2);
}

static struct ggml_tensor *c_get_rows_q4_0(struct ggml_context *ctx) {
    NEED(ggml_get_rows);
    return ggml_get_rows(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a", 64, 10, 1, 1), leaf(ctx, GGML_TYPE_I32, "idx10:i", 6, 1, 1, 1));
}
static struct ggml_tensor *c_get_rows_q8_0(struct ggml_context *ctx) {
    NEED(ggml_get_rows);
    return ggml_get_rows(ctx, leaf(ctx, GGML_TYPE_Q8_0, "a", 96, 7, 2, 1), leaf(ctx, GGML_TYPE_I32, "idx7:i", 5, 2, 1, 1));
}

#define CASE(fn, err) {#fn + 2, fn, err, true}
static const struct vk_test_case cases[] = {
    CASE(c_add_bcast, 1e-12), CASE(c_add_long_rows, 1e-12), CASE(c_sub_bcast, 1e-12), CASE(c_mul_bcast, 1e-12), CASE(c_div, 1e-12),
    CASE(c_add_f16, 1e-6), CASE(c_add1, 1e-12), CASE(c_add_transposed, 1e-12), CASE(c_mul_view, 1e-12),
    CASE(c_abs, 1e-12), CASE(c_sgn, 1e-12), CASE(c_neg, 1e-12), CASE(c_step, 1e-12), CASE(c_tanh, 1e-8),
    CASE(c_elu, 1e-8), CASE(c_relu, 1e-12), CASE(c_sigmoid, 1e-8), CASE(c_gelu, 1e-6), CASE(c_gelu_quick, 1e-6),
    CASE(c_silu, 1e-8), CASE(c_hardswish, 1e-10), CASE(c_hardsigmoid, 1e-10), CASE(c_exp, 1e-8), CASE(c_expm1, 1e-8),
    CASE(c_softplus, 1e-8), CASE(c_gelu_erf, 1e-6), CASE(c_floor, 1e-12), CASE(c_ceil, 1e-12), CASE(c_round, 1e-12),
    CASE(c_trunc, 1e-12), CASE(c_silu_f16, 1e-5), CASE(c_sqr, 1e-12), CASE(c_sqrt, 1e-10), CASE(c_log, 1e-8),
    CASE(c_sin, 1e-8), CASE(c_cos, 1e-8), CASE(c_scale, 1e-12), CASE(c_scale_bias, 1e-12), CASE(c_clamp, 1e-12),
    CASE(c_leaky, 1e-12), CASE(c_diag_mask_inf, 0), CASE(c_diag_mask_zero, 0), CASE(c_cpy_f32_f16, 1e-12), CASE(c_cpy_f16_f32, 1e-12), CASE(c_cpy_f32_bf16, 1e-12),
    CASE(c_cont_permuted, 1e-12), CASE(c_dup, 1e-12), CASE(c_repeat, 1e-12),
    CASE(c_reglu, 1e-10), CASE(c_geglu, 1e-6), CASE(c_swiglu, 1e-8), CASE(c_swiglu_swapped, 1e-8),
    CASE(c_geglu_erf, 1e-6), CASE(c_geglu_quick, 1e-6), CASE(c_swiglu_split, 1e-8), CASE(c_swiglu_oai, 1e-8),
    CASE(c_sum, 1e-10), CASE(c_sum_rows, 1e-10), CASE(c_sum_long, 1e-13), CASE(c_sum_rows_long, 1e-13), CASE(c_mean, 1e-10), CASE(c_argmax, 0), CASE(c_norm, 1e-9),
    CASE(c_norm_long_rows, 1e-9), CASE(c_rms_norm_long_rows, 1e-9), CASE(c_rms_norm, 1e-9), CASE(c_l2_norm, 1e-9), CASE(c_group_norm, 1e-9), CASE(c_rms_norm_view, 1e-9),
    CASE(c_soft_max, 1e-9), CASE(c_soft_max_mask, 1e-9), CASE(c_soft_max_alibi_f16, 1e-9),
    CASE(c_mm_f32, 1e-10), CASE(c_mm_f32_big, 1e-10), CASE(c_mm_f16, VK_TOL_F16_ACT), CASE(c_mm_f16_f16, 1e-6), CASE(c_mm_f16_tiles, 1e-6), CASE(c_mm_f16_f16_batched, 1e-6), CASE(c_mm_f16_f16_deep, 1e-6), CASE(c_mm_f16_view_b, 1e-6),
    CASE(c_mm_f16_f16_whole, 1e-6), CASE(c_mm_f16_whole, 1e-6), CASE(c_mm_f16_f16_whole_batched, 1e-6),
    CASE(c_mm_quant_pair, 1e-4), CASE(c_mm_quant_chain, 3e-4),
    CASE(c_mm_bf16, VK_TOL_BF16_ACT), CASE(c_mm_batched, 1e-10), CASE(c_mm_transposed_b, 1e-10), CASE(c_mv_f32, 1e-10),
    CASE(c_mv_f32_odd, 1e-10), CASE(c_mv_f16, VK_TOL_F16_ACT), CASE(c_mv_f16_f16, 1e-6), CASE(c_mv_f16_k1536, VK_TOL_F16_ACT), CASE(c_mv_f16_k3000, VK_TOL_F16_ACT), CASE(c_mv_f16_k4104, VK_TOL_F16_ACT),
    CASE(c_get_rows, 0), CASE(c_get_rows_f16, 0), CASE(c_set_rows, 0), CASE(c_set_rows_f16, 0), CASE(c_concat0, 0),
    CASE(c_concat2, 0), CASE(c_pad, 0), CASE(c_rope, 1e-7), CASE(c_rope_neox, 1e-7), CASE(c_rope_yarn_ff, 1e-7),
    CASE(c_rope_f16, 1e-5),
    CASE(c_mv_q4_0, 1e-4), CASE(c_mv_q4_1, 1e-4), CASE(c_mv_q5_0, 1e-4), CASE(c_mv_q5_1, 1e-4), CASE(c_mv_q8_0, 1e-4),
    CASE(c_mm_q4_0, 1e-4), CASE(c_mm_q4_1, 1e-4), CASE(c_mm_q5_0, 1e-4), CASE(c_mm_q5_1, 1e-4), CASE(c_mm_q8_0, 1e-4),
    CASE(c_mm_q4_0_batched, 1e-4), CASE(c_mm_q8_0_whole, 1e-4), CASE(c_mm_q4_0_whole_f16, 1e-4), CASE(c_mm_q8_0_batched_view, 1e-4),
    CASE(c_mm_q4_0_batched_view, 1e-4), CASE(c_mm_q8_0_split_long, 1e-4), CASE(c_mm_q4_0_split_whole, 1e-4), CASE(c_mv_q8_0_long, 1e-4), CASE(c_mv_q4_0_long, 1e-4), CASE(c_mv_f16_n8, VK_TOL_F16_ACT), CASE(c_mv_q4_1_offset_b, 1e-4), CASE(c_mv_q8_0_offset_b, 1e-4),
    CASE(c_mvg_q4_0_n1, 1e-4), CASE(c_mvg_q4_0_n3, 1e-4), CASE(c_mvg_q4_0_n8, 1e-4), CASE(c_mvg_q4_0_long, 1e-4), CASE(c_mvg_q8_0_n1, 1e-4),
    CASE(c_mvg_q8_0_n5, 1e-4), CASE(c_mvg_q8_0_n8, 1e-4), CASE(c_mvg_q8_0_long, 1e-4), CASE(c_mvg_q4_0_offset_b, 1e-4), CASE(c_mvg_q4_0_offset_a, 1e-4),
    CASE(c_mvg_q8_0_stride_a, 1e-4),
    CASE(c_silu_back, 1e-10), CASE(c_cross_entropy, 1e-10), CASE(c_cross_entropy_back, 1e-10), CASE(c_adamw, 1e-10),
    CASE(c_sgd, 1e-12), CASE(c_out_prod, 1e-10), CASE(c_out_prod_batched, 1e-10), CASE(c_soft_max_back, 1e-10),
    /* f16 K/V: the CPU accumulates in f16 as ggml's CPU backend does (ops-attn-match.c) */
    CASE(c_flash_attn, 1e-5), CASE(c_flash_attn_mask, 1e-5), CASE(c_flash_attn_alibi_softcap, 1e-8), CASE(c_flash_attn_sinks, 1e-8), CASE(c_flash_attn_decode, 1e-8),
    CASE(c_get_rows_q4_0, 1e-12), CASE(c_get_rows_q8_0, 1e-12), CASE(c_repeat_back, 1e-12), CASE(c_conv_transpose_2d, 1e-6) /* f16 data on cooperative matrices (conv2d-cm.comp) */, CASE(c_upscale_nearest, 0), CASE(c_upscale_bilinear, 1e-12), CASE(c_upscale_bicubic_align, 1e-12), CASE(c_im2col_2d, 0), CASE(c_im2col_2d_f16, 0), CASE(c_im2col_1d, 0), CASE(c_pool_2d_max, 0), CASE(c_pool_2d_avg, 1e-12),
    CASE(c_pool_1d, 1e-12), CASE(c_rms_norm_back, 1e-10), CASE(c_argsort_asc, 0), CASE(c_argsort_desc, 0), CASE(c_argsort_ties, 0), CASE(c_top_k, 0),
};

const struct vk_test_case *vk_test_cases(size_t *n) {
    *n = sizeof cases / sizeof *cases;
    return cases;
}
