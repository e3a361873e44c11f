/*
 * ops-norm.c - NORM, RMS_NORM, L2_NORM, GROUP_NORM and RMS_NORM_BACK.
 * Statistics are accumulated in double: rows of large values with a small
 * spread would otherwise lose their variance to cancellation.
 */
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
static enum ggml_status rms_norm_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    return row_norm_compute(call, dst, rms_norm_row);
}
static enum ggml_status l2_norm_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    return row_norm_compute(call, dst, l2_norm_row);
}

/* dx = r*dy - r^3 * x * <x, dy>/n with r = 1/sqrt(mean(x^2) + eps); src0 = dy, src1 = x. */
static enum ggml_status rms_norm_back_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *dy_t = dst->src[0], *x_t = dst->src[1];
    const float eps = ggmlc_op_param_f32(dst, 0);
    const int64_t n = dst->ne[0];
    float *dy = nn_scratch(call, 2 * n), *x = dy + n;
    int64_t r0, r1;
    cpu_split_range(ggml_nrows(dst), call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        nn_row_index(dst, r, &i1, &i2, &i3);
        nn_row_load(dy_t, i1, i2, i3, dy);
        nn_row_load(x_t, i1, i2, i3, x);
        double sq = 0.0, dot = 0.0;
        for (int64_t i = 0; i < n; i++) {
            sq += (double)x[i] * x[i];
            dot += (double)x[i] * dy[i];
        }
        const double rinv = 1.0 / sqrt(sq / (double)n + eps);
        const double coef = rinv * rinv * rinv * dot / (double)n;
        for (int64_t i = 0; i < n; i++) dy[i] = (float)(rinv * dy[i] - coef * x[i]);
        nn_row_store(dst, i1, i2, i3, dy);
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
