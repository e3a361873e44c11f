/*
 * ops-hc.c - DeepSeek V4 hyper-connections (GGML_OP_DSV4_HC_COMB, _PRE, _POST): the residual
 * stream is hc streams; hc_pre mixes them into a layer's input, hc_post spreads the layer's
 * output back over them, and hc_comb makes the per-token hc x hc mixing matrix (a softmax, then
 * alternating row and column normalizations, Sinkhorn-style).  Sums run in float in ggml's
 * order (over the streams in index order) and the multiply-adds that ggml's build for an FMA CPU
 * fuses are fmaf here: the results are ggml's bits (checked against llama.cpp 0a50d99's ggml,
 * AVX2 build, 2026-12-03).
 */
#include <math.h>

#include "cpu-convops.h"

/* Divide each line of comb (hc x hc, comb[dst + hc * src]) by eps plus its sum: the lines run
 * over src for each dst (over_src) or over dst for each src. */
static void hc_normalize(float *comb, int64_t hc, float eps, bool over_src) {
    const int64_t step = over_src ? hc : 1, line_step = over_src ? 1 : hc;
    for (int64_t l = 0; l < hc; l++) {
        float *line = comb + l * line_step, sum = eps;
        for (int64_t i = 0; i < hc; i++) sum += line[i * step];
        const float inv = 1.0f / sum;
        for (int64_t i = 0; i < hc; i++) line[i * step] *= inv;
    }
}

/* comb[:, src] = softmax over dst of mixes[2 hc + dst + hc src] * scale[2] + base[...], + eps. */
static void hc_softmax_columns(const struct ggml_tensor *mixes, const struct ggml_tensor *base,
                               float scale, float eps, int64_t t, int64_t hc, float *comb) {
    for (int64_t src = 0; src < hc; src++) {
        float *col = comb + hc * src, max = -INFINITY, sum = 0.0f;
        for (int64_t dst = 0; dst < hc; dst++) {
            const int64_t at = 2 * hc + dst + hc * src;
            col[dst] = fmaf(cpu_get_f32(mixes, at, t, 0, 0), scale, cpu_get_f32(base, at, 0, 0, 0));
            max = fmaxf(max, col[dst]);
        }
        for (int64_t dst = 0; dst < hc; dst++) sum += col[dst] = expf(col[dst] - max);
        const float inv = 1.0f / sum;
        for (int64_t dst = 0; dst < hc; dst++) col[dst] = fmaf(col[dst], inv, eps);
    }
}

static enum ggml_status hc_comb(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *mixes = dst->src[0], *scale = dst->src[1], *base = dst->src[2];
    const int64_t hc = dst->ne[0];
    const float eps = ggmlc_op_param_f32(dst, 0), s = cpu_get_f32(scale, 2, 0, 0, 0);
    const int32_t n_iter = dst->op_params[1];
    float *comb = (float *)((char *)call->wdata +
                            (size_t)call->ith * ((size_t)(hc * hc) * sizeof(float) + 64));
    int64_t t0, t1;
    cpu_split_range(dst->ne[2], call->ith, call->nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        hc_softmax_columns(mixes, base, s, eps, t, hc, comb);
        hc_normalize(comb, hc, eps, true);
        for (int32_t i = 1; i < n_iter; i++) {
            hc_normalize(comb, hc, eps, false);
            hc_normalize(comb, hc, eps, true);
        }
        for (int64_t src = 0; src < hc; src++)
            for (int64_t d = 0; d < hc; d++) cpu_set_f32(dst, d, src, t, 0, comb[d + hc * src]);
    }
    return GGML_STATUS_SUCCESS;
}

static size_t hc_comb_work(const struct ggml_tensor *node, int n_threads) {
    return (size_t)n_threads * ((size_t)(node->ne[0] * node->ne[0]) * sizeof(float) + 64);
}

/* result[i, t] = sum_h x[i, h, t] * weights[h, t] */
static enum ggml_status hc_pre(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *x = dst->src[0], *w = dst->src[1];
    const int64_t n_embd = x->ne[0], hc = x->ne[1];
    int64_t r0, r1;
    cpu_split_range(n_embd * x->ne[2], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i = r % n_embd, t = r / n_embd;
        float sum = 0.0f;
        for (int64_t h = 0; h < hc; h++)
            sum += cpu_get_f32(x, i, h, t, 0) * cpu_get_f32(w, h, t, 0, 0);
        cpu_set_f32(dst, i, t, 0, 0, sum);
    }
    return GGML_STATUS_SUCCESS;
}

/* result[i, d, t] = x[i, t] * post[d, t] + sum_s residual[i, s, t] * comb[d, s, t] */
static enum ggml_status hc_post(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *x = dst->src[0], *res = dst->src[1], *post = dst->src[2],
                             *comb = dst->src[3];
    const int64_t n_embd = dst->ne[0], hc = dst->ne[1];
    int64_t r0, r1;
    cpu_split_range(ggml_nelements(dst), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i = r % n_embd, d = (r / n_embd) % hc, t = r / (n_embd * hc);
        float sum = cpu_get_f32(x, i, t, 0, 0) * cpu_get_f32(post, d, t, 0, 0);
        for (int64_t s = 0; s < hc; s++)
            sum += cpu_get_f32(res, i, s, t, 0) * cpu_get_f32(comb, d, s, t, 0);
        cpu_set_f32(dst, i, d, t, 0, sum);
    }
    return GGML_STATUS_SUCCESS;
}

void cpu_ops_hc_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_DSV4_HC_COMB] = hc_comb;
    t->work_size[GGML_OP_DSV4_HC_COMB] = hc_comb_work;
    t->compute[GGML_OP_DSV4_HC_PRE] = hc_pre;
    t->compute[GGML_OP_DSV4_HC_POST] = hc_post;
}
