/*
 * quant-dot-rows.c - portable multi-row dot products (see quant-dot.h): each
 * weight block is decoded once into 32 signed levels and a float scale, then
 * dotted with the same block of every activation row.  Also the split of Q8_0
 * rows into the planes the multi-row kernels read.
 */
#include "quant-dot.h"

void cpu_q8_0_to_planes(const block_q8_0 *blocks, int64_t nblocks, int8_t *qs, float *d, int32_t *sums) {
    for (int64_t b = 0; b < nblocks; b++) {
        memcpy(qs + b * QK8_0, blocks[b].qs, QK8_0);
        d[b] = ggmlc_fp16_to_fp32(blocks[b].d);
        int32_t sum = 0;
        for (int j = 0; j < QK8_0; j++) sum += blocks[b].qs[j];
        sums[b] = sum;
    }
}

/* Block i of a weight row as 32 signed levels (in the order of the Q8_0 values) and its scale. */
typedef float (*block_levels_fn)(const void *x, int64_t i, int8_t levels[32]);

static float levels_q4_0(const void *vx, int64_t i, int8_t q[32]) {
    const block_q4_0 *x = (const block_q4_0 *)vx + i;
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)((x->qs[j] & 0xf) - 8);
        q[j + 16] = (int8_t)((x->qs[j] >> 4) - 8);
    }
    return ggmlc_fp16_to_fp32(x->d);
}

static float levels_q5_0(const void *vx, int64_t i, int8_t q[32]) {
    const block_q5_0 *x = (const block_q5_0 *)vx + i;
    uint32_t qh;
    memcpy(&qh, x->qh, 4);
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)(((x->qs[j] & 0xf) | ((qh >> j) & 1) << 4) - 16);
        q[j + 16] = (int8_t)(((x->qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - 16);
    }
    return ggmlc_fp16_to_fp32(x->d);
}

static float levels_q8_0(const void *vx, int64_t i, int8_t q[32]) {
    const block_q8_0 *x = (const block_q8_0 *)vx + i;
    memcpy(q, x->qs, 32);
    return ggmlc_fp16_to_fp32(x->d);
}

static void table_levels(const uint8_t *qs, const int8_t table[16], int8_t q[32]) {
    for (int j = 0; j < 16; j++) {
        q[j] = table[qs[j] & 0xf];
        q[j + 16] = table[qs[j] >> 4];
    }
}

static float levels_iq4_nl(const void *vx, int64_t i, int8_t q[32]) {
    const block_iq4_nl *x = (const block_iq4_nl *)vx + i;
    table_levels(x->qs, ggmlc_kvalues_iq4nl, q);
    return ggmlc_fp16_to_fp32(x->d);
}

static float levels_mxfp4(const void *vx, int64_t i, int8_t q[32]) {
    const block_mxfp4 *x = (const block_mxfp4 *)vx + i;
    table_levels(x->qs, ggmlc_kvalues_mxfp4, q);
    return ggmlc_e8m0_to_fp32_half(x->e);
}

static void dot_rows(block_levels_fn levels_of, int n, const void *x, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    float sums[CPU_QUANT_MAX_ROWS] = {0};
    for (int64_t i = 0; i < n / QK8_0; i++) {
        int8_t q[32];
        const float dx = levels_of(x, i, q);
        for (int r = 0; r < y->nrows; r++) {
            const int8_t *qy = y->qs + r * y->qs_stride + i * QK8_0;
            int isum = 0;
            for (int j = 0; j < 32; j++) isum += q[j] * qy[j];
            sums[r] += dx * y->d[r * y->d_stride + i] * (float)isum;
        }
    }
    for (int r = 0; r < y->nrows; r++) s[r * s_stride] = sums[r];
}

#define ROWS_KERNEL(type)                                                                                   \
    static void rows_##type(int n, const void *x, const struct cpu_q8_rows *y, float *s, size_t s_stride) { \
        dot_rows(levels_##type, n, x, y, s, s_stride);                                                      \
    }
ROWS_KERNEL(q4_0)
ROWS_KERNEL(q5_0)
ROWS_KERNEL(q8_0)
ROWS_KERNEL(iq4_nl)
ROWS_KERNEL(mxfp4)

/* ----------------------------------------------- K-quants against Q8_K rows */

static const block_q8_K *q8k_row(const struct cpu_q8_rows *y, int r) {
    return (const block_q8_K *)(const void *)(y->qs + r * y->qs_stride);
}

/* Q4_K / Q5_K (qh NULL for Q4_K): each super-block's 256 levels and 8 scales/mins decoded
 * once for all rows. */
static float k45_row_sum(const uint8_t q[QK_K], const int sc[8], const int m[8], float d, float dmin, const block_q8_K *yb) {
    int isum = 0, summs = 0;
    for (int j = 0; j < 8; j++) {
        int sub = 0;
        for (int l = 0; l < 32; l++) sub += q[32 * j + l] * yb->qs[32 * j + l];
        isum += sc[j] * sub;
        summs += m[j] * (yb->bsums[2 * j] + yb->bsums[2 * j + 1]);
    }
    return yb->d * d * (float)isum - yb->d * dmin * (float)summs;
}

static void k45_rows(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, ggml_fp16_t d, ggml_fp16_t dmin,
                     const struct cpu_q8_rows *y, int i, float sums[CPU_QUANT_MAX_ROWS]) {
    uint8_t q[QK_K];
    int sc[8], m[8];
    for (int e = 0; e < QK_K; e++) {
        const uint8_t b = qs[(e / 64) * 32 + e % 32];
        q[e] = (e % 64) < 32 ? b & 0xf : b >> 4;
        if (qh) q[e] |= ((qh[e % 32] >> (2 * (e / 64) + ((e % 64) >= 32))) & 1) << 4;
    }
    for (int j = 0; j < 8; j++) cpu_k4_scale_min(scales, j, &sc[j], &m[j]);
    for (int r = 0; r < y->nrows; r++)
        sums[r] += k45_row_sum(q, sc, m, ggmlc_fp16_to_fp32(d), ggmlc_fp16_to_fp32(dmin), q8k_row(y, r) + i);
}

static void rows_q4_K(int n, const void *vx, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    const block_q4_K *x = vx;
    float sums[CPU_QUANT_MAX_ROWS] = {0};
    for (int i = 0; i < n / QK_K; i++) k45_rows(x[i].scales, x[i].qs, NULL, x[i].d, x[i].dmin, y, i, sums);
    for (int r = 0; r < y->nrows; r++) s[r * s_stride] = sums[r];
}

static void rows_q5_K(int n, const void *vx, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    const block_q5_K *x = vx;
    float sums[CPU_QUANT_MAX_ROWS] = {0};
    for (int i = 0; i < n / QK_K; i++) k45_rows(x[i].scales, x[i].qs, x[i].qh, x[i].d, x[i].dmin, y, i, sums);
    for (int r = 0; r < y->nrows; r++) s[r * s_stride] = sums[r];
}

static void rows_q6_K(int n, const void *vx, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    const block_q6_K *x = vx;
    float sums[CPU_QUANT_MAX_ROWS] = {0};
    for (int i = 0; i < n / QK_K; i++) {
        int8_t q[QK_K];
        for (int e = 0; e < QK_K; e++) q[e] = (int8_t)cpu_q6_K_level(&x[i], e);
        for (int r = 0; r < y->nrows; r++) {
            const block_q8_K *yb = q8k_row(y, r) + i;
            int isum = 0;
            for (int j = 0; j < 16; j++) {
                int sub = 0;
                for (int l = 0; l < 16; l++) sub += q[16 * j + l] * yb->qs[16 * j + l];
                isum += x[i].scales[j] * sub;
            }
            sums[r] += yb->d * ggmlc_fp16_to_fp32(x[i].d) * (float)isum;
        }
    }
    for (int r = 0; r < y->nrows; r++) s[r * s_stride] = sums[r];
}

void cpu_quant_rows_fill_generic(cpu_vec_dot_rows_table t) {
    CPU_QUANT_ROWS_FILL(t);
    t[GGML_TYPE_Q4_K] = rows_q4_K;
    t[GGML_TYPE_Q5_K] = rows_q5_K;
    t[GGML_TYPE_Q6_K] = rows_q6_K;
}
