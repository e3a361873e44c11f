/*
 * quant-dot-rows-k.c - portable multi-row dot products (quant-dot.h) of the
 * types quant-dot-rows.c leaves out: Q4_1 and Q5_1 against Q8_1 rows, Q2_K,
 * Q3_K and IQ4_XS against Q8_K rows.  Each weight block is decoded once into
 * levels (and scales), then dotted with the same block of every activation
 * row; each row's arithmetic is that of the portable single-row dot
 * (quant-dot.c), so its result is the same to the bit.
 */
#include "quant-dot.h"

static float fp16(ggml_fp16_t h) { return ggmlc_fp16_to_fp32(h); }

static int dot_levels(const int8_t *q, const int8_t *y, int n) {
    int isum = 0;
    for (int j = 0; j < n; j++) isum += q[j] * y[j];
    return isum;
}

/* ------------------------------------------ Q4_1 and Q5_1 against Q8_1 rows */

/* Block i of a Q4_1 or Q5_1 row as 32 unsigned levels in the order of the Q8_1 values. */
static void levels_q4_1(const void *vx, int i, int8_t q[32]) {
    const block_q4_1 *x = (const block_q4_1 *)vx + i;
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)(x->qs[j] & 0xf);
        q[j + 16] = (int8_t)(x->qs[j] >> 4);
    }
}

static void levels_q5_1(const void *vx, int i, int8_t q[32]) {
    const block_q5_1 *x = (const block_q5_1 *)vx + i;
    uint32_t qh;
    memcpy(&qh, x->qh, 4);
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)((x->qs[j] & 0xf) | ((qh >> j) & 1) << 4);
        q[j + 16] = (int8_t)((x->qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4);
    }
}

/* d and m of block i: the first two halves of both block types. */
static void scale_min(const void *vx, size_t block_size, int i, float *d, float *m) {
    ggml_fp16_t h[2];
    memcpy(h, (const char *)vx + (size_t)i * block_size, sizeof h);
    *d = fp16(h[0]);
    *m = fp16(h[1]);
}

static void rows_min32(void (*levels_of)(const void *, int, int8_t *), size_t block_size, int n, const void *x,
                       const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    float sums[CPU_QUANT_MAX_ROWS] = {0};
    for (int i = 0; i < n / QK8_1; i++) {
        int8_t q[32];
        float d, m;
        levels_of(x, i, q);
        scale_min(x, block_size, i, &d, &m);
        for (int r = 0; r < y->nrows; r++) {
            const block_q8_1 *yb = (const block_q8_1 *)(const void *)(y->qs + r * y->qs_stride) + i;
            sums[r] += d * fp16(yb->d) * (float)dot_levels(q, yb->qs, 32) + m * fp16(yb->s);
        }
    }
    for (int r = 0; r < y->nrows; r++) s[r * s_stride] = sums[r];
}

static void rows_q4_1(int n, const void *x, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    rows_min32(levels_q4_1, sizeof(block_q4_1), n, x, y, s, s_stride);
}

static void rows_q5_1(int n, const void *x, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    rows_min32(levels_q5_1, sizeof(block_q5_1), n, x, y, s, s_stride);
}

/* ----------------------------------------------- K-quants against Q8_K rows */

static const block_q8_K *q8k_block(const struct cpu_q8_rows *y, int r, int i) {
    return (const block_q8_K *)(const void *)(y->qs + r * y->qs_stride) + i;
}

/* sum_j scale_j * (q . y)_j over sub-blocks of `len` values. */
static int scaled_isum(const int8_t *q, const int *scale, int len, const int8_t *y) {
    int isum = 0;
    for (int j = 0; j < QK_K / len; j++) isum += scale[j] * dot_levels(q + len * j, y + len * j, len);
    return isum;
}

/* Q2_K and Q3_K: value e's two low bits at byte (e / 128) * 32 + e % 32, shift 2 * ((e % 128) / 32). */
static int low2(const uint8_t *qs, int e) { return (qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

static void rows_q2_K(int n, const void *vx, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    const block_q2_K *x = vx;
    float sums[CPU_QUANT_MAX_ROWS] = {0};
    for (int i = 0; i < n / QK_K; i++) {
        int8_t q[QK_K];
        int sc[16];
        for (int e = 0; e < QK_K; e++) q[e] = (int8_t)low2(x[i].qs, e);
        for (int j = 0; j < 16; j++) sc[j] = x[i].scales[j] & 0xf;
        for (int r = 0; r < y->nrows; r++) {
            const block_q8_K *yb = q8k_block(y, r, i);
            int summs = 0;
            for (int j = 0; j < 16; j++) summs += yb->bsums[j] * (x[i].scales[j] >> 4);
            const int isum = scaled_isum(q, sc, 16, yb->qs);
            sums[r] += yb->d * fp16(x[i].d) * (float)isum - yb->d * fp16(x[i].dmin) * (float)summs;
        }
    }
    for (int r = 0; r < y->nrows; r++) s[r * s_stride] = sums[r];
}

static void rows_q3_K(int n, const void *vx, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    const block_q3_K *x = vx;
    float sums[CPU_QUANT_MAX_ROWS] = {0};
    for (int i = 0; i < n / QK_K; i++) {
        int8_t q[QK_K];
        int sc[16];
        for (int e = 0; e < QK_K; e++) q[e] = (int8_t)(low2(x[i].qs, e) - (((x[i].hmask[e % 32] >> (e / 32)) & 1) ? 0 : 4));
        for (int j = 0; j < 16; j++) {
            const int low = j < 8 ? x[i].scales[j] & 0xf : x[i].scales[j - 8] >> 4;
            sc[j] = (low | ((x[i].scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
        }
        for (int r = 0; r < y->nrows; r++) {
            const block_q8_K *yb = q8k_block(y, r, i);
            sums[r] += yb->d * fp16(x[i].d) * (float)scaled_isum(q, sc, 16, yb->qs);
        }
    }
    for (int r = 0; r < y->nrows; r++) s[r * s_stride] = sums[r];
}

static void rows_iq4_xs(int n, const void *vx, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    const block_iq4_xs *x = vx;
    float sums[CPU_QUANT_MAX_ROWS] = {0};
    for (int i = 0; i < n / QK_K; i++) {
        int8_t q[QK_K];
        int sc[8];
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *qs = x[i].qs + 16 * ib;
            for (int j = 0; j < 16; j++) {
                q[32 * ib + j] = ggmlc_kvalues_iq4nl[qs[j] & 0xf];
                q[32 * ib + j + 16] = ggmlc_kvalues_iq4nl[qs[j] >> 4];
            }
            sc[ib] = (((x[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | ((x[i].scales_h >> (2 * ib)) & 3) << 4) - 32;
        }
        for (int r = 0; r < y->nrows; r++) {
            const block_q8_K *yb = q8k_block(y, r, i);
            sums[r] += yb->d * fp16(x[i].d) * (float)scaled_isum(q, sc, 32, yb->qs);
        }
    }
    for (int r = 0; r < y->nrows; r++) s[r * s_stride] = sums[r];
}

void cpu_quant_rows_k_fill_generic(cpu_vec_dot_rows_table t) {
    t[GGML_TYPE_Q4_1] = rows_q4_1;
    t[GGML_TYPE_Q5_1] = rows_q5_1;
    t[GGML_TYPE_Q2_K] = rows_q2_K;
    t[GGML_TYPE_Q3_K] = rows_q3_K;
    t[GGML_TYPE_IQ4_XS] = rows_iq4_xs;
}
