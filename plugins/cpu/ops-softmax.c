/*
 * ops-softmax.c - SOFT_MAX (scale, broadcast mask, ALiBi, sinks) and its
 * gradient SOFT_MAX_BACK.  Rows are split among the tasks.  SOFT_MAX rounds as
 * ggml's x86 CPU backend built for this CPU: logits * scale, fma(slope, mask, .),
 * the exponentials and their sum as ggml_vec_soft_max_f32 (cpu_softmax_exp_sum), the
 * sink's expf added last, then each value times (float)(1 / sum).
 */
#include "graph.h" /* cpu_claim_rows */
#include "ops-nn.h"

/* Scratch: the logits row and the mask row. */
static size_t soft_max_work(const struct ggml_tensor *dst, int n_threads) {
    return nn_scratch_bytes(2 * dst->ne[0], n_threads);
}

/* The row loops of the softmax, compiled for each x86-64 level (EW_CLONES): the same
 * operations in the same order at every level, a vector at a time. */
EW_CLONES static void row_scale(float *w, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++) w[i] *= scale;
}

/* out = the logits x times scale, then the mask times slope added fused (ggml's x86 rounding:
 * with FMA in the clone the fmaf is an instruction, and with slope 1 the plain sum, equal to
 * it).  One pass from x (out may be x): a copy of the row into out first, and of the mask row
 * into scratch, took a third of ggmlc-gpt's causal softmax. */
EW_CLONES static void scale_and_mask(float *out, const float *x, const float *restrict mask,
                                     int64_t n, float scale, float slope) {
    if (!mask) {
        if (scale != 1.0f)
            for (int64_t i = 0; i < n; i++) out[i] = x[i] * scale;
        else if (out != x)
            memcpy(out, x, (size_t)n * sizeof(float));
    } else if (slope == 1.0f) {
        if (scale != 1.0f)
            for (int64_t i = 0; i < n; i++) out[i] = x[i] * scale + mask[i];
        else
            for (int64_t i = 0; i < n; i++) out[i] = x[i] + mask[i];
    } else {
        if (scale != 1.0f)
            for (int64_t i = 0; i < n; i++) out[i] = fmaf(slope, mask[i], x[i] * scale);
        else
            for (int64_t i = 0; i < n; i++) out[i] = fmaf(slope, mask[i], x[i]);
    }
}

/* The exponentials of a row are taken in vectors of up to this many values (cpu_softmax_exp_sum). */
#define SOFTMAX_EXP_LANES 16

/* Whether p[0..8) are all -inf (a loop of fixed length the compiler turns into a vector compare). */
static inline bool all_minus_inf8(const float *p) {
    int all = 1;
    for (int i = 0; i < 8; i++) all &= p[i] == -INFINITY;
    return all;
}

/* The length of w[0..n) without its trailing -inf values (a causal mask's future), rounded up
 * to whole vectors of the exponentials' sum.  Those values' exponentials are zeros, which
 * added to a vector's lanes or to the sum change nothing: leaving them out (and writing the
 * zeros directly) gives the same bits, and a causal score matrix half the exponentials. */
static int64_t live_length(const float *w, int64_t n) {
    int64_t live = n;
    while (live >= 8 && all_minus_inf8(w + live - 8)) live -= 8; /* a vector compare at a time */
    while (live > 0 && w[live - 1] == -INFINITY) live--;
    live = (live + SOFTMAX_EXP_LANES - 1) / SOFTMAX_EXP_LANES * SOFTMAX_EXP_LANES;
    return live < n ? live : n;
}

/* Normalise w[0..n) in place into softmax probabilities; sink (or -INFINITY) joins the
 * normalisation without an output.  A row whose every logit is -inf becomes zeros
 * rather than NaN, so that a fully masked row does not poison what follows. */
static void softmax_row(float *w, int64_t n, float sink) {
    const float max = nn_row_max(w, n, sink);
    if (max == -INFINITY) {
        memset(w, 0, (size_t)n * sizeof(float));
        return;
    }
    const int64_t live = live_length(w, n);
    double sum = cpu_softmax_exp_sum(live, w, w, max); /* ggml's order: the sink's term last */
    if (sink != -INFINITY) sum += (double)expf(sink - max);
    row_scale(w, live, (float)(1.0 / sum));
    memset(w + live, 0, (size_t)(n - live) * sizeof(float));
}

static enum ggml_status soft_max_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0], *mask = dst->src[1], *sinks = dst->src[2];
    const struct ggmlc_soft_max_params sp = ggmlc_soft_max_params_of(dst);
    const float scale = sp.scale, max_bias = sp.max_bias;
    const int64_t n = src->ne[0];
    float *w = nn_scratch(call, 2 * n), *mrow = w + n;
    for (int64_t last = -1, r0 = 0, r1 = 0; cpu_claim_rows(call, ggml_nrows(src), &last, &r0, &r1);)
        for (int64_t r = r0; r < r1; r++) {
            int64_t i1, i2, i3;
            nn_row_index(src, r, &i1, &i2, &i3);
            float *out = nn_f32_row(dst, i1, i2, i3);
            if (!out) out = w;
            const float *x = nn_f32_row(src, i1, i2, i3),
                        *m = mask ? nn_f32_row(mask, i1, i2 % mask->ne[2], i3 % mask->ne[3]) : NULL;
            if (!x) nn_row_load(src, i1, i2, i3, out), x = out;
            if (mask && !m)
                ew_load(mrow, ew_row(mask, i1, i2 % mask->ne[2], i3 % mask->ne[3]), mask->type,
                        mask->nb[0], n),
                    m = mrow;
            scale_and_mask(out, x, m, n, scale, nn_alibi_slope(max_bias, src->ne[2], i2));
            const float sink = sinks ? *(const float *)nn_elem(sinks, i2, 0, 0, 0) : -INFINITY;
            softmax_row(out, n, sink);
            if (out == w) nn_row_store(dst, i1, i2, i3, w);
        }
    return GGML_STATUS_SUCCESS;
}

/* Scratch: the gradient row and the softmax row. */
static size_t soft_max_back_work(const struct ggml_tensor *dst, int n_threads) {
    return nn_scratch_bytes(2 * dst->ne[0], n_threads);
}

/* out = scale * y * (dy - <y, dy>) on one row (out may be dy: the graph may reuse its memory):
 * the dot product in eight partial sums (added pairwise), so that both loops vectorize; in
 * double, one element at a time, this was the slowest node of a GPT's training step after
 * the products. */
EW_CLONES static void soft_max_back_row(const float *y, const float *dy, float *out, int64_t n, float scale) {
    float part[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) part[l] += y[i + l] * dy[i + l];
    for (int w = 4; w >= 1; w /= 2)
        for (int l = 0; l < w; l++) part[l] += part[l + w];
    for (; i < n; i++) part[0] += y[i] * dy[i];
    const float dot = part[0];
    for (i = 0; i < n; i++) out[i] = scale * y[i] * (dy[i] - dot);
}

/* Row (i1, i2, i3) of t as f32: where it lies when it is f32 and contiguous, else converted
 * into buf. */
static const float *f32_row_of(const struct ggml_tensor *t, int64_t i1, int64_t i2, int64_t i3, float *buf) {
    const float *row = nn_f32_row(t, i1, i2, i3);
    if (row) return row;
    nn_row_load(t, i1, i2, i3, buf);
    return buf;
}

/* dx = scale * y * (dy - <y, dy>).  The mask and ALiBi slope are constants added to the
 * scaled logits, so they do not enter the gradient: max_bias needs no special case.  F32
 * contiguous rows are read and written where they lie (copying the three rows through
 * scratch took a third of the node in GPT training). */
static enum ggml_status soft_max_back_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *dy_t = dst->src[0], *y_t = dst->src[1];
    const float scale = ggmlc_soft_max_params_of(dst).scale;
    const int64_t n = dst->ne[0];
    float *dy_buf = nn_scratch(call, 2 * n), *y_buf = dy_buf + n;
    for (int64_t last = -1, r0 = 0, r1 = 0; cpu_claim_rows(call, ggml_nrows(dst), &last, &r0, &r1);)
        for (int64_t r = r0; r < r1; r++) {
            int64_t i1, i2, i3;
            nn_row_index(dst, r, &i1, &i2, &i3);
            const float *dy = f32_row_of(dy_t, i1, i2, i3, dy_buf),
                        *y = f32_row_of(y_t, i1, i2, i3, y_buf);
            float *out = nn_f32_row(dst, i1, i2, i3);
            soft_max_back_row(y, dy, out ? out : dy_buf, n, scale);
            if (!out) nn_row_store(dst, i1, i2, i3, dy_buf);
        }
    return GGML_STATUS_SUCCESS;
}

void cpu_nn_softmax_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_SOFT_MAX] = soft_max_compute;
    t->work_size[GGML_OP_SOFT_MAX] = soft_max_work;
    t->compute[GGML_OP_SOFT_MAX_BACK] = soft_max_back_compute;
    t->work_size[GGML_OP_SOFT_MAX_BACK] = soft_max_back_work;
}
