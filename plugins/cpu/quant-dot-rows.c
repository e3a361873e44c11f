/*
 * quant-dot-rows.c - portable multi-row dot products (see quant-dot.h): each
 * weight block is decoded once into 32 signed levels and a float scale, then
 * dotted with the same block of every activation row (Q8_0's and Q4_0's, in
 * ggml's order: quant-match.c).  Also the split of Q8_0 rows into the planes
 * the multi-row kernels read.
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

#define ROWS_KERNEL(type)                                                                \
    static void rows_##type(int n, const void *x, const struct cpu_q8_rows *y, float *s, \
                            size_t s_stride) {                                           \
        dot_rows(levels_##type, n, x, y, s, s_stride);                                   \
    }
ROWS_KERNEL(q5_0)

/* The K-quants and IQ4_XS: each row through the portable single-row dot, whose eight float lanes
 * (ggml's order, quant-dot.c) a kernel decoding once for all rows would keep per row; this
 * path is the reference the SIMD kernels are tested against, not a fast one. */
static void rows_by_dot(enum ggml_type type, int n, const void *vx, const struct cpu_q8_rows *y,
                        float *s, size_t s_stride) {
    const ggml_vec_dot_t dot = cpu_type_traits_on_path(type, CPU_QUANT_GENERIC)->vec_dot;
    for (int r = 0; r < y->nrows; r++)
        dot(n, &s[r * s_stride], 0, vx, 0, y->qs + r * y->qs_stride, 0, 1);
}

#define ROWS_BY_DOT(t, TYPE)                                                           \
    static void rows_##t(int n, const void *vx, const struct cpu_q8_rows *y, float *s, \
                         size_t s_stride) {                                            \
        rows_by_dot(TYPE, n, vx, y, s, s_stride);                                      \
    }
ROWS_BY_DOT(q4_K, GGML_TYPE_Q4_K)
ROWS_BY_DOT(q5_K, GGML_TYPE_Q5_K)
ROWS_BY_DOT(q6_K, GGML_TYPE_Q6_K)
ROWS_BY_DOT(q2_K, GGML_TYPE_Q2_K)
ROWS_BY_DOT(q3_K, GGML_TYPE_Q3_K)
ROWS_BY_DOT(iq4_xs, GGML_TYPE_IQ4_XS)

void cpu_quant_rows_fill_generic(cpu_vec_dot_rows_table t) {
    t[GGML_TYPE_Q5_0] = rows_q5_0;
    t[GGML_TYPE_Q4_K] = rows_q4_K;
    t[GGML_TYPE_Q5_K] = rows_q5_K;
    t[GGML_TYPE_Q6_K] = rows_q6_K;
    t[GGML_TYPE_Q2_K] = rows_q2_K;
    t[GGML_TYPE_Q3_K] = rows_q3_K;
    t[GGML_TYPE_IQ4_XS] = rows_iq4_xs;
}
