/*
 * quant-dot-rows-k.c - portable multi-row dot products (quant-dot.h) of Q4_1
 * and Q5_1 against Q8_1 rows.  Each weight block is decoded once into levels
 * (and scales), then dotted with the same block of every activation row; each row's arithmetic is that of the portable single-row dot
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

void cpu_quant_rows_k_fill_generic(cpu_vec_dot_rows_table t) {
    t[GGML_TYPE_Q4_1] = rows_q4_1;
    t[GGML_TYPE_Q5_1] = rows_q5_1;
}
