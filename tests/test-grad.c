/*
 * test-grad.c - gradients of every differentiable operator checked against
 * central finite differences on the CPU backend, one TAP line per case.
 *
 * Each case builds out = f(params) and the scalar loss sum(out * w) with fixed
 * random weights w (so every output element matters differently); autograd's
 * dloss/dparam is compared with (loss(x+h) - loss(x-h)) / 2h on up to
 * MAX_CHECKED elements of each parameter.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggmlc.h"
#include "ggml.h"
#include "testutil.h"

#define MAX_PARAMS  4
#define MAX_CHECKED 48

typedef struct ggml_tensor *(*build_fn)(struct ggml_context *ctx, struct ggml_tensor **p);

struct grad_case {
    const char *name;
    build_fn build;
    int n_params;
    int64_t ne[MAX_PARAMS][4];
    float lo, hi;       /* parameter values are uniform in [lo, hi) */
    double tol;         /* allowed |autograd - numeric| / (|numeric| + scale) */
    bool no_grad[MAX_PARAMS]; /* inputs that are not parameters (indices, masks) */
    enum ggml_type type[MAX_PARAMS]; /* 0 = F32 */
};

static float eval_loss(struct ggml_context *ctx, struct ggml_cgraph *gf, struct ggml_tensor *loss) {
    ggml_graph_compute_with_ctx(ctx, gf, 2);
    return ggml_get_f32_1d(loss, 0);
}

static void run_case(const struct grad_case *c) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){64 << 20, NULL, false});
    struct ggml_tensor *p[MAX_PARAMS] = {NULL};
    for (int i = 0; i < c->n_params; i++) {
        const enum ggml_type type = c->type[i] ? c->type[i] : GGML_TYPE_F32;
        p[i] = ggml_new_tensor_4d(ctx, type, c->ne[i][0] ? c->ne[i][0] : 1, c->ne[i][1] ? c->ne[i][1] : 1,
                                  c->ne[i][2] ? c->ne[i][2] : 1, c->ne[i][3] ? c->ne[i][3] : 1);
        const int64_t n = ggml_nelements(p[i]);
        for (int64_t j = 0; j < n; j++) {
            if (type == GGML_TYPE_I32) ((int32_t *)p[i]->data)[j] = (int32_t)((3 * j + 1) % (int64_t)c->hi); /* indices below hi */
            else ((float *)p[i]->data)[j] = test_uniform(c->lo, c->hi);
        }
        if (!c->no_grad[i]) ggml_set_param(p[i]);
    }
    struct ggml_tensor *out = c->build(ctx, p);
    if (!out) {
        tap_ok(false, "%s: graph construction failed: %s", c->name, ggmlc_last_error());
        ggml_free(ctx);
        return;
    }
    struct ggml_tensor *w = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, out->ne);
    for (int64_t j = 0; j < ggml_nelements(w); j++) ((float *)w->data)[j] = test_uniform(-1, 1);
    struct ggml_tensor *loss = ggml_sum(ctx, ggml_mul(ctx, out->type == GGML_TYPE_F32 ? out : ggml_cast(ctx, out, GGML_TYPE_F32), w));
    ggml_set_loss(loss);

    struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, 4096, true);
    ggml_build_forward_expand(gf, loss);
    struct ggml_cgraph *gb = ggml_graph_dup(ctx, gf, true);
    ggml_build_backward_expand(ctx, gb, NULL);
    ggml_graph_reset(gb);
    ggml_graph_compute_with_ctx(ctx, gb, 2);

    bool ok = true;
    double worst = 0;
    for (int i = 0; i < c->n_params && ok; i++) {
        if (c->no_grad[i]) continue;
        struct ggml_tensor *g = ggml_graph_get_grad(gb, p[i]);
        if (!g) {
            tap_diag("%s: no gradient for parameter %d", c->name, i);
            ok = false;
            break;
        }
        const int64_t n = ggml_nelements(p[i]);
        float *grad = malloc(sizeof(float) * (size_t)n);
        tensor_get_f32(g, grad);
        float *x = (float *)p[i]->data;
        const int64_t stride = n > MAX_CHECKED ? n / MAX_CHECKED : 1;
        for (int64_t j = 0; j < n; j += stride) {
            const float x0 = x[j], h = 1e-3f * fmaxf(1.0f, fabsf(x0));
            x[j] = x0 + h;
            const double lp = eval_loss(ctx, gf, loss);
            x[j] = x0 - h;
            const double lm = eval_loss(ctx, gf, loss);
            x[j] = x0;
            const double numeric = (lp - lm) / (2.0 * h);
            const double err = fabs(grad[j] - numeric) / (fabs(numeric) + 0.05);
            if (err > worst || isnan(err)) worst = isnan(err) ? INFINITY : err;
            if (!(err <= c->tol)) {
                tap_diag("%s: param %d element %lld: autograd %.6g, finite difference %.6g", c->name, i, (long long)j,
                         grad[j], numeric);
                ok = false;
                break;
            }
        }
        free(grad);
    }
    tap_ok(ok, "%s: gradient matches finite differences (worst relative error %.2g)", c->name, worst);
    ggml_free(ctx);
}

/* ------------------------------------------------------------ the cases */

#define P0 p[0]
#define P1 p[1]
#define P2 p[2]
#define BUILD(fname, expr) \
    static struct ggml_tensor *fname(struct ggml_context *ctx, struct ggml_tensor **p) { (void)p; return (expr); }

BUILD(b_add, ggml_add(ctx, P0, P1))
BUILD(b_sub, ggml_sub(ctx, P0, P1))
BUILD(b_mul, ggml_mul(ctx, P0, P1))
BUILD(b_div, ggml_div(ctx, P0, P1))
BUILD(b_sqr, ggml_sqr(ctx, P0))
BUILD(b_sqrt, ggml_sqrt(ctx, P0))
BUILD(b_log, ggml_log(ctx, P0))
BUILD(b_sin, ggml_sin(ctx, P0))
BUILD(b_cos, ggml_cos(ctx, P0))
BUILD(b_sum, ggml_sum(ctx, P0))
BUILD(b_sum_rows, ggml_sum_rows(ctx, P0))
BUILD(b_mean, ggml_mean(ctx, P0))
BUILD(b_repeat, ggml_repeat(ctx, P0, P1))
BUILD(b_concat, ggml_concat(ctx, P0, P1, 1))
BUILD(b_scale, ggml_scale(ctx, P0, -1.7f))
BUILD(b_cont_perm, ggml_cont(ctx, ggml_permute(ctx, P0, 2, 0, 1, 3)))
BUILD(b_transpose, ggml_cont(ctx, ggml_transpose(ctx, P0)))
BUILD(b_reshape, ggml_reshape_2d(ctx, P0, 6, 4))
BUILD(b_view, ggml_view_2d(ctx, P0, 3, 2, P0->nb[1], P0->nb[0]))
BUILD(b_mul_mat, ggml_mul_mat(ctx, P0, P1))
BUILD(b_mul_mat_bcast, ggml_mul_mat(ctx, P0, P1))
BUILD(b_soft_max, ggml_soft_max(ctx, P0))
BUILD(b_soft_max_ext, ggml_soft_max_ext(ctx, P0, P1, 0.7f, 0.0f))
BUILD(b_soft_max_alibi, ggml_soft_max_ext(ctx, P0, P1, 0.5f, 8.0f))
/* attention sinks (src[2], one logit per head) are added to the node after it is built */
static struct ggml_tensor *b_soft_max_sinks(struct ggml_context *ctx, struct ggml_tensor **p) {
    struct ggml_tensor *y = ggml_soft_max_ext(ctx, P0, P1, 0.5f, 8.0f);
    ggml_soft_max_add_sinks(y, P2);
    return y;
}
BUILD(b_norm, ggml_norm(ctx, P0, 1e-5f))
BUILD(b_rms_norm, ggml_rms_norm(ctx, P0, 1e-5f))
BUILD(b_group_norm, ggml_group_norm(ctx, P0, 2, 1e-5f))
BUILD(b_l2_norm, ggml_l2_norm(ctx, P0, 1e-6f))
/* clamp overwrites its operand (as in ggml): clamp a copy so the parameter survives */
BUILD(b_clamp, ggml_clamp(ctx, ggml_scale(ctx, P0, 1.0f), -0.5f, 0.6f))
BUILD(b_leaky_relu, ggml_leaky_relu(ctx, P0, 0.1f, false))
BUILD(b_abs, ggml_abs(ctx, P0))
BUILD(b_neg, ggml_neg(ctx, P0))
BUILD(b_tanh, ggml_tanh(ctx, P0))
BUILD(b_elu, ggml_elu(ctx, P0))
BUILD(b_relu, ggml_relu(ctx, P0))
BUILD(b_sigmoid, ggml_sigmoid(ctx, P0))
BUILD(b_gelu, ggml_gelu(ctx, P0))
BUILD(b_gelu_erf, ggml_gelu_erf(ctx, P0))
BUILD(b_gelu_quick, ggml_gelu_quick(ctx, P0))
BUILD(b_silu, ggml_silu(ctx, P0))
BUILD(b_hardswish, ggml_hardswish(ctx, P0))
BUILD(b_hardsigmoid, ggml_hardsigmoid(ctx, P0))
BUILD(b_exp, ggml_exp(ctx, P0))
BUILD(b_expm1, ggml_expm1(ctx, P0))
BUILD(b_softplus, ggml_softplus(ctx, P0))
BUILD(b_swiglu, ggml_swiglu(ctx, P0))
BUILD(b_geglu_split, ggml_geglu_split(ctx, P0, P1))
BUILD(b_reglu_swapped, ggml_reglu_swapped(ctx, P0))
BUILD(b_swiglu_oai, ggml_swiglu_oai(ctx, P0, P1, 1.702f, 1.2f))
BUILD(b_cross_entropy, ggml_cross_entropy_loss(ctx, P0, ggml_soft_max(ctx, P1)))
BUILD(b_cumsum, ggml_cumsum(ctx, P0))
BUILD(b_tri_lower, ggml_tri(ctx, P0, GGML_TRI_TYPE_LOWER))
BUILD(b_tri_upper_diag, ggml_tri(ctx, P0, GGML_TRI_TYPE_UPPER_DIAG))
BUILD(b_acc, ggml_acc(ctx, P0, P1, P0->nb[1], P0->nb[2], P0->nb[3], P0->nb[0]))
BUILD(b_set, ggml_set(ctx, P0, P1, P0->nb[1], P0->nb[2], P0->nb[3], P0->nb[1]))
BUILD(b_get_rows, ggml_get_rows(ctx, P0, P1))
BUILD(b_pad, ggml_pad(ctx, P0, 2, 1, 0, 0))
BUILD(b_diag_mask_inf, ggml_soft_max(ctx, ggml_diag_mask_inf(ctx, P0, 1)))
BUILD(b_pool_2d_avg, ggml_pool_2d(ctx, P0, GGML_OP_POOL_AVG, 2, 2, 2, 2, 0, 0))
BUILD(b_pool_2d_max, ggml_pool_2d(ctx, P0, GGML_OP_POOL_MAX, 2, 2, 2, 2, 0, 0))
BUILD(b_pool_2d_pad, ggml_pool_2d(ctx, P0, GGML_OP_POOL_AVG, 3, 3, 2, 2, 1, 1))
BUILD(b_pool_1d, ggml_pool_1d(ctx, P0, GGML_OP_POOL_MAX, 3, 2, 1))
BUILD(b_conv_2d, ggml_conv_2d(ctx, P0, P1, 1, 1, 1, 1, 1, 1))
BUILD(b_rope_norm, ggml_rope_ext(ctx, P0, P1, NULL, 8, GGML_ROPE_TYPE_NORMAL, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f))
BUILD(b_rope_neox, ggml_rope_ext(ctx, P0, P1, NULL, 8, GGML_ROPE_TYPE_NEOX, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f))

BUILD(b_conv_2d_direct, ggml_conv_2d_direct(ctx, P0, P1, 1, 1, 1, 1, 1, 1))
BUILD(b_conv_2d_direct_s2, ggml_conv_2d_direct(ctx, P0, P1, 2, 2, 0, 1, 1, 1))
BUILD(b_conv_transpose_2d, ggml_conv_transpose_2d_p0(ctx, P0, P1, 2))
BUILD(b_upscale, ggml_upscale(ctx, P0, 2, GGML_SCALE_MODE_NEAREST))
BUILD(b_bilinear, ggml_interpolate(ctx, P0, 7, 5, 2, 1, GGML_SCALE_MODE_BILINEAR))
BUILD(b_bilinear_ac, ggml_interpolate(ctx, P0, 5, 7, 2, 1, GGML_SCALE_MODE_BILINEAR | GGML_SCALE_FLAG_ALIGN_CORNERS))
BUILD(b_bicubic, ggml_interpolate(ctx, P0, 6, 5, 2, 1, GGML_SCALE_MODE_BICUBIC))
/* set_rows writes into its destination in place (as in ggml), which is not an operand of the node */
BUILD(b_set_rows, ggml_set_rows(ctx, P0, P1, P2))
BUILD(b_flash_attn, ggml_flash_attn_ext(ctx, P0, P1, P2, NULL, 0.5f, 0.0f, 0.0f))
BUILD(b_flash_attn_mask, ggml_flash_attn_ext(ctx, P0, P1, P2, ggml_cast(ctx, p[3], GGML_TYPE_F16), 0.5f, 0.0f, 0.0f))
BUILD(b_flash_attn_softcap, ggml_flash_attn_ext(ctx, P0, P1, P2, NULL, 0.5f, 0.0f, 2.0f))
BUILD(b_rope_offset, ggml_rope_set_offset(ggml_rope_ext(ctx, P0, P1, NULL, 4, GGML_ROPE_TYPE_NEOX, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f), 2))
BUILD(b_rope_multi, ggml_rope_multi(ctx, P0, P1, NULL, 8, (int[]){2, 1, 1, 0}, GGML_ROPE_TYPE_MROPE, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f))

static const struct grad_case cases[] = {
    {"add (broadcast)", b_add, 2, {{5, 4, 3}, {5, 1, 3}}, -1, 1, 1e-2},
    {"sub (broadcast)", b_sub, 2, {{5, 4, 3}, {1, 4, 1}}, -1, 1, 1e-2},
    {"mul (broadcast)", b_mul, 2, {{5, 4, 3}, {5, 4, 1}}, -1, 1, 1e-2},
    {"div (broadcast)", b_div, 2, {{5, 4, 2}, {5, 1, 1}}, 0.5f, 2, 1e-2},
    {"sqr", b_sqr, 1, {{7, 3}}, -2, 2, 1e-2},
    {"sqrt", b_sqrt, 1, {{7, 3}}, 0.5f, 3, 1e-2},
    {"log", b_log, 1, {{7, 3}}, 0.5f, 3, 1e-2},
    {"sin", b_sin, 1, {{7, 3}}, -3, 3, 1e-2},
    {"cos", b_cos, 1, {{7, 3}}, -3, 3, 1e-2},
    {"sum", b_sum, 1, {{7, 3, 2}}, -1, 1, 1e-2},
    {"sum_rows", b_sum_rows, 1, {{7, 3, 2}}, -1, 1, 1e-2},
    {"mean", b_mean, 1, {{7, 3, 2}}, -1, 1, 1e-2},
    {"repeat", b_repeat, 2, {{3, 1, 2}, {6, 4, 2}}, -1, 1, 1e-2, {false, true}},
    {"concat", b_concat, 2, {{4, 3, 2}, {4, 2, 2}}, -1, 1, 1e-2},
    {"scale", b_scale, 1, {{5, 3}}, -1, 1, 1e-2},
    {"cont(permute)", b_cont_perm, 1, {{4, 3, 2}}, -1, 1, 1e-2},
    {"transpose", b_transpose, 1, {{4, 3}}, -1, 1, 1e-2},
    {"reshape", b_reshape, 1, {{4, 3, 2}}, -1, 1, 1e-2},
    {"view", b_view, 1, {{5, 4}}, -1, 1, 1e-2},
    {"mul_mat", b_mul_mat, 2, {{6, 5}, {6, 3}}, -1, 1, 1e-2},
    {"mul_mat (broadcast over dims 2, 3)", b_mul_mat_bcast, 2, {{6, 5, 1, 2}, {6, 3, 3, 2}}, -1, 1, 1e-2},
    {"soft_max", b_soft_max, 1, {{6, 4}}, -2, 2, 1e-2},
    {"soft_max_ext (scale, mask)", b_soft_max_ext, 2, {{6, 4, 2}, {6, 4}}, -2, 2, 1e-2, {false, true}},
    {"soft_max_ext (ALiBi)", b_soft_max_alibi, 2, {{6, 4, 4}, {6, 4}}, -2, 2, 1e-2, {false, true}},
    {"soft_max_ext (ALiBi) with attention sinks", b_soft_max_sinks, 3, {{6, 4, 3, 2}, {6, 4}, {3}}, -2, 2, 1e-2, {false, true, false}},
    {"norm", b_norm, 1, {{8, 3}}, -2, 2, 2e-2},
    {"rms_norm", b_rms_norm, 1, {{8, 3}}, -2, 2, 2e-2},
    {"group_norm", b_group_norm, 1, {{3, 2, 4, 2}}, -2, 2, 2e-2},
    {"l2_norm", b_l2_norm, 1, {{8, 3}}, -2, 2, 2e-2},
    {"clamp", b_clamp, 1, {{9, 3}}, -1, 1, 1e-2},
    {"leaky_relu", b_leaky_relu, 1, {{9, 3}}, -1, 1, 1e-2},
    {"abs", b_abs, 1, {{9, 3}}, -1, 1, 1e-2},
    {"neg", b_neg, 1, {{9, 3}}, -1, 1, 1e-2},
    {"tanh", b_tanh, 1, {{9, 3}}, -2, 2, 1e-2},
    {"elu", b_elu, 1, {{9, 3}}, -2, 2, 1e-2},
    {"relu", b_relu, 1, {{9, 3}}, -2, 2, 1e-2},
    {"sigmoid", b_sigmoid, 1, {{9, 3}}, -3, 3, 1e-2},
    {"gelu", b_gelu, 1, {{9, 3}}, -3, 3, 1e-2},
    {"gelu_erf", b_gelu_erf, 1, {{9, 3}}, -3, 3, 1e-2},
    {"gelu_quick", b_gelu_quick, 1, {{9, 3}}, -3, 3, 1e-2},
    {"silu", b_silu, 1, {{9, 3}}, -3, 3, 1e-2},
    {"hardswish", b_hardswish, 1, {{9, 3}}, -4, 4, 1e-2},
    {"hardsigmoid", b_hardsigmoid, 1, {{9, 3}}, -4, 4, 1e-2},
    {"exp", b_exp, 1, {{9, 3}}, -2, 2, 1e-2},
    {"expm1", b_expm1, 1, {{9, 3}}, -2, 2, 1e-2},
    {"softplus", b_softplus, 1, {{9, 3}}, -3, 3, 1e-2},
    {"swiglu", b_swiglu, 1, {{10, 3}}, -2, 2, 1e-2},
    {"geglu_split", b_geglu_split, 2, {{5, 3}, {5, 3}}, -2, 2, 1e-2},
    {"reglu_swapped", b_reglu_swapped, 1, {{10, 3}}, -2, 2, 1e-2},
    {"swiglu_oai (clamped)", b_swiglu_oai, 2, {{7, 3}, {7, 3}}, -2, 2, 1e-2},
    {"cross_entropy_loss", b_cross_entropy, 2, {{7, 4}, {7, 4}}, -2, 2, 1e-2, {false, true}},
    {"cumsum", b_cumsum, 1, {{7, 3}}, -1, 1, 1e-2},
    {"tri (lower)", b_tri_lower, 1, {{5, 5, 2}}, -1, 1, 1e-2},
    {"tri (upper with the diagonal)", b_tri_upper_diag, 1, {{5, 5, 2}}, -1, 1, 1e-2},
    {"acc", b_acc, 2, {{6, 4}, {3, 2}}, -1, 1, 1e-2},
    {"set", b_set, 2, {{6, 4}, {4, 2}}, -1, 1, 1e-2},
    {"get_rows", b_get_rows, 2, {{5, 6}, {4}}, -1, 6, 1e-2, {false, true}, {0, GGML_TYPE_I32}},
    {"pad", b_pad, 1, {{4, 3}}, -1, 1, 1e-2},
    {"diag_mask_inf + soft_max", b_diag_mask_inf, 1, {{5, 5}}, -2, 2, 1e-2},
    {"pool_2d avg", b_pool_2d_avg, 1, {{6, 4, 2}}, -1, 1, 1e-2},
    {"pool_2d max", b_pool_2d_max, 1, {{6, 4, 2}}, -1, 1, 1e-2},
    {"pool_2d avg, padded", b_pool_2d_pad, 1, {{7, 5, 2}}, -1, 1, 1e-2},
    {"pool_1d max, padded", b_pool_1d, 1, {{9, 3}}, -1, 1, 1e-2},
    {"conv_2d (im2col)", b_conv_2d, 2, {{3, 3, 2, 3}, {5, 6, 2, 1}}, -1, 1, 2e-2},
    {"rope (normal)", b_rope_norm, 2, {{8, 3, 4}, {4}}, -1, 20, 2e-2, {false, true}, {0, GGML_TYPE_I32}},
    {"rope (neox)", b_rope_neox, 2, {{8, 3, 4}, {4}}, -1, 20, 2e-2, {false, true}, {0, GGML_TYPE_I32}},
    {"rope (neox, dims 2..5 of 8)", b_rope_offset, 2, {{8, 3, 4}, {4}}, -1, 20, 2e-2, {false, true}, {0, GGML_TYPE_I32}},
    {"rope (multi-section)", b_rope_multi, 2, {{8, 3, 4}, {16}}, -1, 20, 2e-2, {false, true}, {0, GGML_TYPE_I32}},
    {"conv_2d direct", b_conv_2d_direct, 2, {{3, 3, 2, 3}, {5, 6, 2, 1}}, -1, 1, 2e-2},
    {"conv_2d direct (stride 2)", b_conv_2d_direct_s2, 2, {{3, 3, 2, 2}, {7, 6, 2, 2}}, -1, 1, 2e-2},
    {"conv_transpose_2d", b_conv_transpose_2d, 2, {{3, 3, 2, 3}, {4, 3, 3, 1}}, -1, 1, 2e-2},
    {"upscale (nearest)", b_upscale, 1, {{3, 2, 2}}, -1, 1, 1e-2},
    {"interpolate (bilinear)", b_bilinear, 1, {{4, 3, 2}}, -1, 1, 1e-2},
    {"interpolate (bilinear, align corners)", b_bilinear_ac, 1, {{3, 4, 2}}, -1, 1, 1e-2},
    {"interpolate (bicubic)", b_bicubic, 1, {{4, 3, 2}}, -1, 1, 1e-2},
    {"set_rows (rows written)", b_set_rows, 3, {{4, 6}, {4, 2}, {2}}, -1, 6, 1e-2, {true, false, true}, {0, 0, GGML_TYPE_I32}},
    {"flash_attn_ext (GQA)", b_flash_attn, 3, {{4, 3, 2}, {4, 5, 1}, {3, 5, 1}}, -1, 1, 2e-2},
    {"flash_attn_ext (mask)", b_flash_attn_mask, 4, {{4, 3, 2}, {4, 5, 2}, {3, 5, 2}, {5, 3}}, -1, 1, 2e-2, {false, false, false, true}},
    {"flash_attn_ext (softcap)", b_flash_attn_softcap, 3, {{4, 3, 2}, {4, 5, 2}, {3, 5, 2}}, -2, 2, 2e-2},
    /* found by ggml's test-backend-ops: a's batches are each shared by consecutive batches of b
     * (block broadcasting), and gated units of an odd width leave the last column unused */
    {"mul_mat (a of 2x2 batches shared by 2x3 batches of b)", b_mul_mat_bcast, 2, {{4, 3, 2, 2}, {4, 2, 4, 6}}, -1, 1, 1e-2},
    {"swiglu of an odd width (last column unused)", b_swiglu, 1, {{7, 3}}, -2, 2, 1e-2},
    {"reglu_swapped of an odd width", b_reglu_swapped, 1, {{9, 2}}, -2, 2, 1e-2},
};

/* ------------------------------------------- in-place ops on a gradient's path
 * Computed in place, an op overwrites its source: a parameter (as in ggml's test-backend-ops)
 * or an intermediate whose values the backward pass may need.  Like ggml, autograd refuses
 * them, clearly, instead of returning gradients that finite differences contradict. */

static struct ggml_tensor *ip_scale(struct ggml_context *ctx, struct ggml_tensor *x, struct ggml_tensor *pos) {
    (void)pos;
    return ggml_scale_inplace(ctx, x, 2.0f);
}
static struct ggml_tensor *ip_rms_norm(struct ggml_context *ctx, struct ggml_tensor *x, struct ggml_tensor *pos) {
    (void)pos;
    return ggml_rms_norm_inplace(ctx, x, 1e-6f);
}
static struct ggml_tensor *ip_soft_max(struct ggml_context *ctx, struct ggml_tensor *x, struct ggml_tensor *pos) {
    (void)pos;
    return ggml_soft_max_ext_inplace(ctx, x, NULL, 0.5f, 0.0f);
}
static struct ggml_tensor *ip_rope(struct ggml_context *ctx, struct ggml_tensor *x, struct ggml_tensor *pos) {
    return ggml_rope_ext_inplace(ctx, x, pos, NULL, 8, GGML_ROPE_TYPE_NEOX, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
}

static void test_inplace_refused(void) {
    static const struct {
        const char *name;
        struct ggml_tensor *(*build)(struct ggml_context *, struct ggml_tensor *, struct ggml_tensor *);
        bool on_intermediate; /* the in-place op overwrites x * 3, not the parameter x */
    } ip[] = {
        {"scale_inplace", ip_scale, false},  {"rms_norm_inplace", ip_rms_norm, false},
        {"soft_max_ext_inplace", ip_soft_max, false}, {"rope_ext_inplace", ip_rope, false},
        {"rms_norm_inplace of an intermediate", ip_rms_norm, true},
    };
    for (size_t i = 0; i < sizeof ip / sizeof ip[0]; i++) {
        struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, false});
        struct ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3);
        struct ggml_tensor *pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
        for (int j = 0; j < 3; j++) ((int32_t *)pos->data)[j] = j;
        for (int64_t j = 0; j < ggml_nelements(x); j++) ((float *)x->data)[j] = test_uniform(-1, 1);
        ggml_set_param(x);
        struct ggml_tensor *src = ip[i].on_intermediate ? ggml_scale(ctx, x, 3.0f) : x;
        struct ggml_tensor *loss = ggml_sum(ctx, ggml_sqr(ctx, ip[i].build(ctx, src, pos)));
        ggml_set_loss(loss);
        struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, 64, true);
        ggml_build_forward_expand(gf, loss);
        struct ggml_cgraph *gb = ggml_graph_dup(ctx, gf, true);
        ggmlc_clear_error();
        ggml_build_backward_expand(ctx, gb, NULL);
        tap_ok(ggmlc_last_status() == GGMLC_ERR_UNSUPPORTED && strstr(ggmlc_last_error(), "in place") != NULL &&
               ggml_graph_n_nodes(gb) == ggml_graph_n_nodes(gf) && ggml_graph_get_grad(gb, x) == NULL,
               "%s on a gradient's path is refused with a clear error (%s)", ip[i].name, ggmlc_last_error());
        ggml_free(ctx);
    }
}

/* An op without a gradient on a parameter's path (roll here; ggml aborts) is reported, never
 * treated as a constant that leaves the parameter a zero gradient. */
static void test_no_rule_reported(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, false});
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 3);
    for (int64_t j = 0; j < ggml_nelements(x); j++) ((float *)x->data)[j] = test_uniform(-1, 1);
    ggml_set_param(x);
    struct ggml_tensor *loss = ggml_sum(ctx, ggml_sqr(ctx, ggml_roll(ctx, ggml_scale(ctx, x, 2.0f), 1, 0, 0, 0)));
    ggml_set_loss(loss);
    struct ggml_cgraph *gb = ggml_new_graph_custom(ctx, 64, true);
    ggml_build_forward_expand(gb, loss);
    ggmlc_clear_error();
    ggml_build_backward_expand(ctx, gb, NULL);
    tap_ok(ggmlc_last_status() == GGMLC_ERR_UNSUPPORTED && strstr(ggmlc_last_error(), "ROLL") != NULL,
           "a parameter's gradient through roll (no rule) is reported (%s)", ggmlc_last_error());
    ggml_free(ctx);
}

/* As in ggml, a loss is an F32 scalar: another tensor is refused (not summed implicitly) and a
 * graph without a loss has no backward pass. */
static void test_loss_must_be_scalar(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, false});
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_set_param(x);
    struct ggml_tensor *y = ggml_sqr(ctx, x);
    ggmlc_clear_error();
    ggml_set_loss(y);
    tap_ok(ggmlc_last_status() == GGMLC_ERR_SHAPE && !(y->flags & GGML_TENSOR_FLAG_LOSS) &&
               strstr(ggmlc_last_error(), "scalar") != NULL,
           "ggml_set_loss on a [4] tensor is refused (%s)", ggmlc_last_error());
    struct ggml_cgraph *gb = ggml_new_graph_custom(ctx, 64, true);
    ggml_build_forward_expand(gb, y);
    const int n_forward = ggml_graph_n_nodes(gb);
    ggml_build_backward_expand(ctx, gb, NULL);
    tap_ok(ggmlc_last_status() == GGMLC_ERR_INVALID_ARG &&
               strstr(ggmlc_last_error(), "no loss") != NULL &&
               ggml_graph_n_nodes(gb) == n_forward && ggml_graph_get_grad(gb, x) == NULL,
           "a graph without a loss has no backward pass (%s)", ggmlc_last_error());
    struct ggml_tensor *half = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 1);
    ggmlc_clear_error();
    ggml_set_loss(half);
    tap_ok(ggmlc_last_status() == GGMLC_ERR_TYPE && !(half->flags & GGML_TENSOR_FLAG_LOSS),
           "ggml_set_loss on an F16 scalar is refused (%s)", ggmlc_last_error());
    ggmlc_clear_error();
    ggml_set_loss(NULL);
    tap_ok(ggmlc_last_status() == GGMLC_ERR_INVALID_ARG, "ggml_set_loss(NULL) is refused");
    struct ggml_tensor *sum = ggml_sum(ctx, y);
    ggmlc_clear_error();
    ggml_set_loss(sum);
    tap_ok(ggmlc_last_status() == GGMLC_OK && (sum->flags & GGML_TENSOR_FLAG_LOSS),
           "an F32 scalar is a loss");
    ggml_free(ctx);
}

/* ------------------------------ softmax with sinks against a double-precision model
 * ggml's test-backend-ops checks this case (loss = sum(y), its SOFT_MAX cases with sinks) with
 * finite differences of an f32 loss near the row count, whose rounding alone makes them miss its
 * bound by 10-1000x on every f32 backend.  Checked here against the exact gradients instead:
 * dL/dx = scale p p_sink, dL/dsink_h = -sum over head h's rows of p_sink (1 - p_sink). */

/* The probabilities of one row (logits z[0..n) and the sink s) in double; returns p_sink. */
static double softmax_row_exact(const double *z, int n, double s, double *p) {
    double max = s, sum = 0;
    for (int i = 0; i < n; i++) max = z[i] > max ? z[i] : max;
    for (int i = 0; i < n; i++) sum += p[i] = exp(z[i] - max);
    sum += exp(s - max);
    for (int i = 0; i < n; i++) p[i] /= sum;
    return exp(s - max) / sum;
}

static void test_soft_max_sinks_exact(void) {
    enum { N0 = 16, N1 = 16, NH = 3, N3 = 3 };
    const float scale = 0.1f, max_bias = 8.0f;
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){16 << 20, NULL, false});
    struct ggml_tensor *x = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, N0, N1, NH, N3);
    struct ggml_tensor *mask = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, N0, N1, 1, N3);
    struct ggml_tensor *sinks = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, NH);
    float *xd = x->data, *md = mask->data, *sd = sinks->data;
    for (int i = 0; i < N0 * N1 * NH * N3; i++) xd[i] = test_uniform(-1, 1);
    for (int i = 0; i < N0 * N1 * N3; i++) md[i] = test_uniform(-1, 1);
    for (int i = 0; i < NH; i++) sd[i] = test_uniform(-1, 1);
    ggml_set_param(x);
    ggml_set_param(sinks);
    struct ggml_tensor *y = ggml_soft_max_ext(ctx, x, mask, scale, max_bias);
    ggml_soft_max_add_sinks(y, sinks);
    struct ggml_cgraph *gb = test_compute_backward(ctx, ggml_sum(ctx, y), 256);
    struct ggml_tensor *gx = ggml_graph_get_grad(gb, x), *gs = ggml_graph_get_grad(gb, sinks);
    if (!gx || !gs) {
        tap_ok(false, "soft_max with sinks: gradients of x and of the sinks exist");
        ggml_free(ctx);
        return;
    }
    float ga_x[N0 * N1 * NH * N3], ga_s[NH];
    tensor_get_f32(gx, ga_x);
    tensor_get_f32(gs, ga_s);
    /* ALiBi slopes of NH heads, ggml's definition (in f32, as the operator computes them) */
    const int nhl = 2; /* largest power of two <= NH */
    const float m0 = powf(2.0f, -max_bias / nhl), m1 = powf(2.0f, -max_bias / 2.0f / nhl);
    double worst_x = 0, worst_s = 0, ref_s[NH] = {0};
    for (int i3 = 0; i3 < N3; i3++)
        for (int h = 0; h < NH; h++) {
            const float slope = h < nhl ? powf(m0, (float)(h + 1)) : powf(m1, (float)(2 * (h - nhl) + 1));
            for (int i1 = 0; i1 < N1; i1++) {
                const float *xr = xd + ((i3 * NH + h) * N1 + i1) * N0, *mr = md + (i3 * N1 + i1) * N0;
                const float *gr = ga_x + ((i3 * NH + h) * N1 + i1) * N0;
                double z[N0], p[N0];
                for (int i = 0; i < N0; i++) z[i] = (double)(xr[i] * scale) + (double)slope * mr[i];
                const double ps = softmax_row_exact(z, N0, sd[h], p);
                for (int i = 0; i < N0; i++) {
                    const double ref = scale * p[i] * ps;
                    worst_x = fmax(worst_x, fabs(gr[i] - ref) / ref);
                }
                ref_s[h] -= ps * (1.0 - ps);
            }
        }
    for (int h = 0; h < NH; h++) worst_s = fmax(worst_s, fabs(ga_s[h] - ref_s[h]) / fabs(ref_s[h]));
    tap_ok(worst_x < 2e-5, "soft_max with sinks, loss sum(y): dL/dx within 2e-5 of the exact gradient (worst relative error %.2g)", worst_x);
    tap_ok(worst_s < 2e-5, "soft_max with sinks, loss sum(y): dL/dsink within 2e-5 of the exact gradient (worst relative error %.2g)", worst_s);
    ggml_free(ctx);
}

int main(void) {
    test_seed(1234);
    test_loss_must_be_scalar();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
    test_inplace_refused();
    test_no_rule_reported();
    test_soft_max_sinks_exact();
    return tap_done();
}
