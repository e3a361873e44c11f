/*
 * ops-norm.c - NORM, RMS_NORM, L2_NORM, GROUP_NORM and RMS_NORM_BACK.
 * Statistics are accumulated in double: rows of large values with a small
 * spread would otherwise lose their variance to cancellation.
 */
#include "graph.h" /* cpu_claim_rows */
#include "ops-nn.h"

/* Scratch: one row (two for the backward). */
static size_t one_row_work(const struct ggml_tensor *dst, int n_threads) { return nn_scratch_bytes(dst->ne[0], n_threads); }
static size_t two_rows_work(const struct ggml_tensor *dst, int n_threads) {
    return nn_scratch_bytes(2 * dst->ne[0], n_threads);
}

/* y = (x - mean) / sqrt(var + eps). */
static void norm_row(float *x, int64_t n, float eps) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += x[i];
    const double mean = sum / (double)n;
    double var = 0.0;
    for (int64_t i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
    const double inv = 1.0 / sqrt(var / (double)n + eps);
    for (int64_t i = 0; i < n; i++) x[i] = (float)((x[i] - mean) * inv);
}

/* y = x / sqrt(mean(x^2) + eps), rounded as ggml's CPU backend rounds it (so that models
 * normalized here give ggml's bits): float squares summed in double, the mean and the
 * scale in float. */
static void rms_norm_row(float *x, int64_t n, float eps) {
    double sq = 0.0;
    for (int64_t i = 0; i < n; i++) sq += (double)(x[i] * x[i]);
    const float mean = (float)(sq / (double)n);
    const float inv = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

/* y = x / max(|x|, eps). */
static void l2_norm_row(float *x, int64_t n, float eps) {
    double sq = 0.0;
    for (int64_t i = 0; i < n; i++) sq += (double)x[i] * x[i];
    const float inv = (float)(1.0 / fmax(sqrt(sq), (double)eps));
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

static enum ggml_status row_norm_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst,
                                         void (*row_fn)(float *, int64_t, float)) {
    const struct ggml_tensor *src = dst->src[0];
    const float eps = ggmlc_op_param_f32(dst, 0);
    float *x = nn_scratch(call, dst->ne[0]);
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(src), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        nn_row_index(src, r, &i1, &i2, &i3);
        nn_row_load(src, i1, i2, i3, x);
        row_fn(x, src->ne[0], eps);
        nn_row_store(dst, i1, i2, i3, x);
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status norm_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    return row_norm_compute(call, dst, norm_row);
}
/* Rows of f32 whose values lie contiguous (the common case, in place or not). */
static bool f32_rows(const struct ggml_tensor *t) {
    return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float);
}

/* Rows whose double sums are accumulated together (below). */
#define NORM_ROWS 8

/* Rows [r, r + count) of t (count <= NORM_ROWS), f32 rows (f32_rows). */
static void f32_row_group(const struct ggml_tensor *t, int64_t r, int count,
                          float *rows[NORM_ROWS]) {
    for (int j = 0; j < count; j++) {
        int64_t i1, i2, i3;
        nn_row_index(t, r + j, &i1, &i2, &i3);
        rows[j] = (float *)ew_row(t, i1, i2, i3);
    }
}

/* rms_norm_row of count (<= NORM_ROWS) rows at once, x[j] into y[j] (y[j] may be x[j]).  Each
 * row's squares are summed in double in its own order, as rms_norm_row sums them, so the
 * results are the same bits; but a row's sum is a chain of dependent double additions (four
 * cycles each: 0.36 ms for ggmlc-gpt's 2048 rows of 128), and the chains of several rows run
 * side by side. */
EW_CLONES static void rms_norm_rows(float *const x[NORM_ROWS], float *const y[NORM_ROWS], int count,
                                    int64_t n, float eps) {
    double sq[NORM_ROWS] = {0};
    if (count == NORM_ROWS) { /* the chains in registers */
        const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3], *x4 = x[4], *x5 = x[5],
                    *x6 = x[6], *x7 = x[7];
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
        for (int64_t i = 0; i < n; i++) {
            s0 += (double)(x0[i] * x0[i]), s1 += (double)(x1[i] * x1[i]);
            s2 += (double)(x2[i] * x2[i]), s3 += (double)(x3[i] * x3[i]);
            s4 += (double)(x4[i] * x4[i]), s5 += (double)(x5[i] * x5[i]);
            s6 += (double)(x6[i] * x6[i]), s7 += (double)(x7[i] * x7[i]);
        }
        sq[0] = s0, sq[1] = s1, sq[2] = s2, sq[3] = s3, sq[4] = s4, sq[5] = s5, sq[6] = s6,
        sq[7] = s7;
    } else {
        for (int j = 0; j < count; j++)
            for (int64_t i = 0; i < n; i++) sq[j] += (double)(x[j][i] * x[j][i]);
    }
    for (int j = 0; j < count; j++) {
        const float mean = (float)(sq[j] / (double)n), inv = 1.0f / sqrtf(mean + eps);
        for (int64_t i = 0; i < n; i++) y[j][i] = x[j][i] * inv;
    }
}

static enum ggml_status rms_norm_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0];
    if (!f32_rows(src) || !f32_rows(dst)) return row_norm_compute(call, dst, rms_norm_row);
    const float eps = ggmlc_op_param_f32(dst, 0);
    for (int64_t last = -1, r0 = 0, r1 = 0; cpu_claim_rows(call, ggml_nrows(src), &last, &r0, &r1);)
        for (int64_t r = r0; r < r1; r += NORM_ROWS) {
            const int count = r1 - r < NORM_ROWS ? (int)(r1 - r) : NORM_ROWS;
            float *x[NORM_ROWS], *y[NORM_ROWS];
            f32_row_group(src, r, count, x);
            f32_row_group(dst, r, count, y);
            rms_norm_rows(x, y, count, src->ne[0], eps);
        }
    return GGML_STATUS_SUCCESS;
}
static enum ggml_status l2_norm_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    return row_norm_compute(call, dst, l2_norm_row);
}

/* dx = r*dy - r^3 * x * <x, dy>/n with r = 1/sqrt(mean(x^2) + eps) for count (<= NORM_ROWS)
 * rows: x[j], dy[j] in, dx[j] out (dx[j] may be dy[j]).  Each row's sums run in double in its
 * own order; the rows' chains of additions run side by side (see rms_norm_rows). */
EW_CLONES static void rms_norm_back_rows(float *const x[NORM_ROWS], float *const dy[NORM_ROWS],
                                         float *const dx[NORM_ROWS], int count, int64_t n,
                                         float eps) {
    double sq[NORM_ROWS] = {0}, dot[NORM_ROWS] = {0};
    int j = 0;
    for (; j + 4 <= count; j += 4) { /* four rows' chains in registers */
        const float *x0 = x[j], *x1 = x[j + 1], *x2 = x[j + 2], *x3 = x[j + 3];
        const float *d0 = dy[j], *d1 = dy[j + 1], *d2 = dy[j + 2], *d3 = dy[j + 3];
        double q0 = 0, q1 = 0, q2 = 0, q3 = 0, p0 = 0, p1 = 0, p2 = 0, p3 = 0;
        for (int64_t i = 0; i < n; i++) {
            q0 += (double)x0[i] * x0[i], p0 += (double)x0[i] * d0[i];
            q1 += (double)x1[i] * x1[i], p1 += (double)x1[i] * d1[i];
            q2 += (double)x2[i] * x2[i], p2 += (double)x2[i] * d2[i];
            q3 += (double)x3[i] * x3[i], p3 += (double)x3[i] * d3[i];
        }
        sq[j] = q0, sq[j + 1] = q1, sq[j + 2] = q2, sq[j + 3] = q3;
        dot[j] = p0, dot[j + 1] = p1, dot[j + 2] = p2, dot[j + 3] = p3;
    }
    for (; j < count; j++)
        for (int64_t i = 0; i < n; i++) {
            sq[j] += (double)x[j][i] * x[j][i];
            dot[j] += (double)x[j][i] * dy[j][i];
        }
    for (j = 0; j < count; j++) {
        const double rinv = 1.0 / sqrt(sq[j] / (double)n + eps);
        const double coef = rinv * rinv * rinv * dot[j] / (double)n;
        for (int64_t i = 0; i < n; i++) dx[j][i] = (float)(rinv * dy[j][i] - coef * x[j][i]);
    }
}

/* src0 = dy, src1 = x; rows of other types or strides go through f32 copies, one at a time. */
static enum ggml_status rms_norm_back_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *dy_t = dst->src[0], *x_t = dst->src[1];
    const float eps = ggmlc_op_param_f32(dst, 0);
    const int64_t n = dst->ne[0];
    const bool direct = f32_rows(dy_t) && f32_rows(x_t) && f32_rows(dst);
    float *scratch = nn_scratch(call, 2 * n);
    for (int64_t last = -1, r0 = 0, r1 = 0; cpu_claim_rows(call, ggml_nrows(dst), &last, &r0, &r1);)
        for (int64_t r = r0; r < r1; r += direct ? NORM_ROWS : 1) {
            float *x[NORM_ROWS], *dy[NORM_ROWS], *dx[NORM_ROWS];
            int64_t i1, i2, i3;
            if (direct) {
                const int count = r1 - r < NORM_ROWS ? (int)(r1 - r) : NORM_ROWS;
                f32_row_group(x_t, r, count, x);
                f32_row_group(dy_t, r, count, dy);
                f32_row_group(dst, r, count, dx);
                rms_norm_back_rows(x, dy, dx, count, n, eps);
                continue;
            }
            nn_row_index(dst, r, &i1, &i2, &i3);
            dy[0] = dx[0] = scratch, x[0] = scratch + n;
            nn_row_load(dy_t, i1, i2, i3, dy[0]);
            nn_row_load(x_t, i1, i2, i3, x[0]);
            rms_norm_back_rows(x, dy, dx, 1, n, eps);
            nn_row_store(dst, i1, i2, i3, dx[0]);
        }
    return GGML_STATUS_SUCCESS;
}

/* Sum over channels [c0, c1) of batch i3 of x (or of (x - mean)^2 when squared). */
static double group_moment(const struct ggml_tensor *src, float *x, int64_t i3, int64_t c0, int64_t c1, double mean,
                           bool squared) {
    double acc = 0.0;
    for (int64_t i2 = c0; i2 < c1; i2++) {
        for (int64_t i1 = 0; i1 < src->ne[1]; i1++) {
            nn_row_load(src, i1, i2, i3, x);
            for (int64_t i = 0; i < src->ne[0]; i++) acc += squared ? (x[i] - mean) * (x[i] - mean) : x[i];
        }
    }
    return acc;
}

/* Group g of batch i3 holds channels [g*gs, min((g+1)*gs, ne2)), gs = ceil(ne2 / n_groups);
 * each group is normalised over all its ne0*ne1*channels values.  Tasks take groups. */
static enum ggml_status group_norm_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0];
    const struct ggmlc_group_norm_params p = ggmlc_group_norm_params_of(dst);
    const int n_groups = p.n_groups;
    const float eps = p.eps;
    const int64_t ne2 = src->ne[2], gs = (ne2 + n_groups - 1) / n_groups;
    float *x = nn_scratch(call, src->ne[0]);
    int64_t j0, j1;
    cpu_split_range((int64_t)n_groups * src->ne[3], call->ith, call->nth, &j0, &j1);
    for (int64_t j = j0; j < j1; j++) {
        const int64_t i3 = j / n_groups, c0 = (j % n_groups) * gs, c1 = c0 + gs < ne2 ? c0 + gs : ne2;
        if (c0 >= c1) continue;
        /* two passes over the group (mean, then spread) keep large offsets from cancelling */
        const double count = (double)(src->ne[0] * src->ne[1] * (c1 - c0));
        const double mean = group_moment(src, x, i3, c0, c1, 0.0, false) / count;
        const double var = group_moment(src, x, i3, c0, c1, mean, true) / count;
        const double inv = 1.0 / sqrt(var + eps);
        for (int64_t i2 = c0; i2 < c1; i2++) {
            for (int64_t i1 = 0; i1 < src->ne[1]; i1++) {
                nn_row_load(src, i1, i2, i3, x);
                for (int64_t i = 0; i < src->ne[0]; i++) x[i] = (float)((x[i] - mean) * inv);
                nn_row_store(dst, i1, i2, i3, x);
            }
        }
    }
    return GGML_STATUS_SUCCESS;
}

void cpu_nn_norm_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_NORM] = norm_compute;
    t->compute[GGML_OP_RMS_NORM] = rms_norm_compute;
    t->compute[GGML_OP_L2_NORM] = l2_norm_compute;
    t->compute[GGML_OP_GROUP_NORM] = group_norm_compute;
    t->compute[GGML_OP_RMS_NORM_BACK] = rms_norm_back_compute;
    t->work_size[GGML_OP_NORM] = one_row_work;
    t->work_size[GGML_OP_RMS_NORM] = one_row_work;
    t->work_size[GGML_OP_L2_NORM] = one_row_work;
    t->work_size[GGML_OP_GROUP_NORM] = one_row_work;
    t->work_size[GGML_OP_RMS_NORM_BACK] = two_rows_work;
}
