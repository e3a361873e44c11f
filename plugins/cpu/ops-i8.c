/*
 * ops-i8.c - stable-diffusion.cpp's int8 products (the semantics of ggml
 * 8e800cef, its fork): QUANTIZE_I8_CONVROT packs rows, each rotated in groups
 * and quantized to int8 with one f32 scale per row, and a MUL_MAT whose weights
 * are I8 (ggml_mul_mat_i8_tensorwise) dots such rows with the weight rows in
 * integers, then scales by the row's scale and the weight row's scale and adds
 * the bias.  Float activations are packed the same way first, into scratch.
 */
#include <math.h>

#include "ops-matmul.h"

#define I8_MAX_GROUP 256

/* Scale a group by 1/sqrt(n) and apply ggml's radix-4 butterfly at strides 1, 4, 16, ...:
 * an orthogonal rotation (n a power of 4) that spreads outliers over the group. */
static void rotate_group(float *v, int n) {
    const float scale = 1.0f / sqrtf((float)n);
    for (int i = 0; i < n; i++) v[i] *= scale;
    for (int stride = 1; stride < n; stride *= 4)
        for (int base = 0; base < n; base += 4 * stride)
            for (int j = base; j < base + stride; j++) {
                const float a = v[j], b = v[j + stride], c = v[j + 2 * stride], d = v[j + 3 * stride];
                v[j] = a + b + c - d;
                v[j + stride] = a + b - c + d;
                v[j + 2 * stride] = a - b + c + d;
                v[j + 3 * stride] = -a + b + c + d;
            }
}

/* Group g of a row, rotated when group > 0 (else the row itself, as one group). */
static const float *row_group(const float *row, int group, int64_t g, float *buf) {
    if (group == 0) return row;
    memcpy(buf, row + g * group, (size_t)group * sizeof(float));
    rotate_group(buf, group);
    return buf;
}

/* One row to int8 levels: the scale amax/127 over the (rotated) row, values rounded half
 * to even (lrintf in the default mode) and clamped to +-127; returns the scale. */
static float quantize_row_i8(const float *row, int64_t k, int group, int8_t *q) {
    float buf[I8_MAX_GROUP];
    const int64_t len = group ? group : k;
    float amax = 0.0f;
    for (int64_t g = 0; g < k / len; g++) {
        const float *v = row_group(row, group, g, buf);
        for (int64_t i = 0; i < len; i++) amax = fabsf(v[i]) > amax ? fabsf(v[i]) : amax;
    }
    const float scale = amax / 127.0f;
    if (scale == 0.0f) {
        memset(q, 0, (size_t)k);
        return scale;
    }
    const float inv = 1.0f / scale;
    for (int64_t g = 0; g < k / len; g++) {
        const float *v = row_group(row, group, g, buf);
        for (int64_t i = 0; i < len; i++) {
            const long level = lrintf(v[i] * inv);
            q[g * len + i] = (int8_t)(level < -127 ? -127 : level > 127 ? 127 : level);
        }
    }
    return scale;
}

/* Rows [this task's share] of contiguous f32 src into q (rows of k) and scales. */
static void quantize_rows(const struct ggmlc_op_call *call, const float *src, int64_t rows, int64_t k, int group,
                          int8_t *q, float *scales) {
    int64_t r0, r1;
    cpu_split_range(rows, call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) scales[r] = quantize_row_i8(src + r * k, k, group, q + r * k);
}

/* ------------------------------------------------ QUANTIZE_I8_CONVROT */

static enum ggml_status quantize_i8_convrot(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *src = dst->src[0];
    const int64_t k = src->ne[0], rows = ggml_nrows(src), padded = GGML_PAD(rows, 4);
    int8_t *q = dst->data;
    quantize_rows(call, src->data, rows, k, dst->op_params[0], q, (float *)(q + k * padded));
    if (call->ith == 0) memset(q + k * rows, 0, (size_t)(k * (padded - rows)));
    return GGML_STATUS_SUCCESS;
}

static bool quantize_i8_convrot_supports(const struct ggml_tensor *node) {
    const struct ggml_tensor *src = node->src[0];
    return src->type == GGML_TYPE_F32 && ggml_is_contiguous(src) && ggml_is_contiguous(node) &&
           node->op_params[0] > 0 && node->op_params[0] <= I8_MAX_GROUP;
}

/* ------------------------------------------------ MUL_MAT with I8 weights */

static size_t i8_quant_bytes(const struct ggml_tensor *node) {
    return node->src[1]->type == GGML_TYPE_I8 ? 0 : GGML_PAD((size_t)ggml_nelements(node->src[1]), sizeof(float));
}

size_t cpu_mul_mat_i8_work_size(const struct ggml_tensor *node, int n_threads) {
    return node->src[1]->type == GGML_TYPE_I8 ? 0 : i8_quant_bytes(node) + (size_t)ggml_nrows(node) * sizeof(float);
}

bool cpu_mul_mat_i8_supports(const struct ggml_tensor *node) {
    const struct ggml_tensor *w = node->src[0], *x = node->src[1];
    const bool packed = x->type == GGML_TYPE_I8 && x->op == GGML_OP_QUANTIZE_I8_CONVROT;
    return node->type == GGML_TYPE_F32 && ggml_is_contiguous(node) && ggml_is_contiguous(w) && ggml_is_contiguous(x) &&
           (x->type == GGML_TYPE_F32 || packed) && node->src[2] && node->op_params[2] >= 0 &&
           node->op_params[2] <= I8_MAX_GROUP;
}

static int32_t dot_i8(const int8_t *a, const int8_t *b, int64_t k) {
    int32_t sum = 0;
    for (int64_t i = 0; i < k; i++) sum += (int32_t)a[i] * b[i];
    return sum;
}

enum ggml_status cpu_mul_mat_i8_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *w = dst->src[0], *x = dst->src[1];
    const float *w_scale = dst->src[2]->data, *bias = dst->src[3] ? dst->src[3]->data : NULL;
    const int64_t k = w->ne[0], n = w->ne[1], rows = ggml_nrows(dst);
    const int8_t *q;
    const float *scales;
    if (x->type == GGML_TYPE_I8) { /* packed by QUANTIZE_I8_CONVROT: rows, padding, scales */
        q = x->data;
        scales = (const float *)(q + k * GGML_PAD(rows, 4));
    } else {
        int8_t *qw = call->wdata;
        float *sw = (float *)((char *)call->wdata + i8_quant_bytes(dst));
        quantize_rows(call, x->data, rows, k, dst->op_params[2], qw, sw);
        call->barrier(call);
        q = qw;
        scales = sw;
    }
    int64_t i0, i1;
    cpu_split_range(rows * n, call->ith, call->nth, &i0, &i1);
    float *out = dst->data;
    for (int64_t i = i0; i < i1; i++) {
        const int64_t row = i / n, col = i % n;
        const float v = (float)dot_i8((const int8_t *)w->data + col * k, q + row * k, k) * scales[row] * w_scale[col];
        out[i] = bias ? v + bias[col] : v;
    }
    return GGML_STATUS_SUCCESS;
}

void cpu_ops_i8_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_QUANTIZE_I8_CONVROT] = quantize_i8_convrot;
    t->supports[GGML_OP_QUANTIZE_I8_CONVROT] = quantize_i8_convrot_supports;
}
