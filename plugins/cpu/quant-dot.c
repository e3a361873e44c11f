/*
 * quant-dot.c - portable dot products of the weight types with their
 * vec_dot_type (see quant-dot.h): integer sums per block, scaled in float.
 * They define the results the SIMD paths must reproduce.  Q8_0, Q4_0, IQ4_NL
 * and MXFP4 are summed in ggml's orders by quant-match.c instead, Q1_0, Q2_0
 * and NVFP4 by quant-dot-lowbit.c.
 */
#include <math.h>
#include <string.h>

#include "quant-dot.h"

static inline float fp16(ggml_fp16_t h) { return ggmlc_fp16_to_fp32(h); }

/* ------------------------------------------------------------ floats */

static void dot_f32(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const float *x = vx, *y = vy;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)x[i] * y[i];
    *s = (float)sum;
}

static void dot_f16(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const ggml_fp16_t *x = vx, *y = vy;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)fp16(x[i]) * fp16(y[i]);
    *s = (float)sum;
}

static void dot_bf16(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const ggml_bf16_t *x = vx, *y = vy;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)ggmlc_bf16_to_fp32(x[i]) * ggmlc_bf16_to_fp32(y[i]);
    *s = (float)sum;
}

/* ------------------------------------------------- 32-value blocks */

/* Q4_1 and Q5_1 add m * sum(y), which Q8_1 carries as s = d_y * sum(q_y). */
static void dot_q4_1(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q4_1 *x = vx;
    const block_q8_1 *y = vy;
    float sum = 0;
    for (int i = 0; i < n / QK8_1; i++) {
        int isum = 0;
        for (int j = 0; j < 16; j++) isum += (x[i].qs[j] & 0xf) * y[i].qs[j] + (x[i].qs[j] >> 4) * y[i].qs[j + 16];
        sum += fp16(x[i].d) * fp16(y[i].d) * (float)isum + fp16(x[i].m) * fp16(y[i].s);
    }
    *s = sum;
}

static inline int q5_level(const uint8_t *qs, uint32_t qh, int j) {
    const int low = j < 16 ? qs[j] & 0xf : qs[j - 16] >> 4;
    return low | (int)((qh >> j) & 1) << 4;
}

static void dot_q5_0(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y = vy;
    float sum = 0;
    for (int i = 0; i < n / QK8_0; i++) {
        uint32_t qh;
        memcpy(&qh, x[i].qh, 4);
        int isum = 0;
        for (int j = 0; j < 32; j++) isum += (q5_level(x[i].qs, qh, j) - 16) * y[i].qs[j];
        sum += fp16(x[i].d) * fp16(y[i].d) * (float)isum;
    }
    *s = sum;
}

static void dot_q5_1(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q5_1 *x = vx;
    const block_q8_1 *y = vy;
    float sum = 0;
    for (int i = 0; i < n / QK8_1; i++) {
        uint32_t qh;
        memcpy(&qh, x[i].qh, 4);
        int isum = 0;
        for (int j = 0; j < 32; j++) isum += q5_level(x[i].qs, qh, j) * y[i].qs[j];
        sum += fp16(x[i].d) * fp16(y[i].d) * (float)isum + fp16(x[i].m) * fp16(y[i].s);
    }
    *s = sum;
}


/* The 8-bit formats: integer sums per block, scaled by both block scales.  Q8_1 and Q8_K
 * with themselves (each its own vec_dot_type, as ggml's test-quantize-fns calls them): their
 * sums s and bsums are not needed, there is no offset to undo. */
static int dot_i8(const int8_t *x, const int8_t *y, int n) {
    int isum = 0;
    for (int j = 0; j < n; j++) isum += x[j] * y[j];
    return isum;
}

static void dot_q8_1(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q8_1 *x = vx, *y = vy;
    float sum = 0;
    for (int i = 0; i < n / QK8_1; i++) sum += fp16(x[i].d) * fp16(y[i].d) * (float)dot_i8(x[i].qs, y[i].qs, QK8_1);
    *s = sum;
}

static void dot_q8_K(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q8_K *x = vx, *y = vy;
    float sum = 0;
    for (int i = 0; i < n / QK_K; i++) sum += x[i].d * y[i].d * (float)dot_i8(x[i].qs, y[i].qs, QK_K);
    *s = sum;
}

/* ----------------------------------------------- K-quants against Q8_K */

/* Q2_K and Q3_K in ggml's x86 lane order (see Q4_K below): lane k the products of values
 * 4k..4k+3 of every 32 times their 16-value scale, acc_k = fma(y.d * x.d, lane_k, acc_k).  Q2_K
 * first adds its mins into the same lanes, acc_k = fma(-y.d * x.dmin, m[2k] bsum[2k] +
 * m[2k+1] bsum[2k+1], acc_k); Q3_K's levels are signed (-4..3). */
static void dot_q2_K(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q2_K *x = vx;
    const block_q8_K *y = vy;
    float acc[8] = {0};
    for (int i = 0; i < n / QK_K; i++) {
        int lanes[8] = {0};
        for (int e = 0; e < QK_K; e++)
            lanes[(e % 32) / 4] += (x[i].scales[e / 16] & 0xf) * cpu_k_low2(x[i].qs, e) * y[i].qs[e];
        const float d = y[i].d * fp16(x[i].d), dmin = -y[i].d * fp16(x[i].dmin);
        for (int k = 0; k < 8; k++) {
            const int mins = (x[i].scales[2 * k] >> 4) * y[i].bsums[2 * k] +
                             (x[i].scales[2 * k + 1] >> 4) * y[i].bsums[2 * k + 1];
            acc[k] = fmaf(dmin, (float)mins, acc[k]);
            acc[k] = fmaf(d, (float)lanes[k], acc[k]);
        }
    }
    *s = cpu_sum_lanes8(acc);
}

static void dot_q3_K(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q3_K *x = vx;
    const block_q8_K *y = vy;
    float acc[8] = {0};
    for (int i = 0; i < n / QK_K; i++) {
        const uint8_t *sc = x[i].scales;
        int lanes[8] = {0};
        for (int e = 0; e < QK_K; e++) {
            const int j = e / 16, low = j < 8 ? sc[j] & 0xf : sc[j - 8] >> 4;
            const int scale = (low | ((sc[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
            const int q = cpu_k_low2(x[i].qs, e);
            const int high = (x[i].hmask[e % 32] >> (e / 32)) & 1;
            lanes[(e % 32) / 4] += scale * (q - (high ? 0 : 4)) * y[i].qs[e];
        }
        const float d = y[i].d * fp16(x[i].d);
        for (int k = 0; k < 8; k++) acc[k] = fmaf(d, (float)lanes[k], acc[k]);
    }
    *s = cpu_sum_lanes8(acc);
}

/* Q4_K, Q5_K and Q6_K in ggml's x86 order (its AVX2 vec_dot, which its AVX-512 builds run
 * too), so that K-quant models give ggml's logits: a super-block's integer sum is kept in
 * eight lanes, lane k holding the products of values 4k..4k+3 of every 32 values times their
 * sub-block scale; per super-block acc_k = fma(y.d * x.d, lane_k, acc_k), and the lanes are
 * added at the end (cpu_sum_lanes8).  The mins of Q4_K and Q5_K (sum_j m_j * bsum pairs) go
 * their own way: Q4_K in four fused lanes (lane k: sub-blocks 2k, 2k + 1), Q5_K as one
 * fused scalar sum, each times -y.d * x.dmin. */
static void k45_lanes(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh,
                      const block_q8_K *y, int lanes[8], int mins[4]) {
    memset(lanes, 0, 8 * sizeof *lanes);
    for (int j = 0; j < QK_K / 32; j++) {
        int sc, m;
        cpu_k4_scale_min(scales, j, &sc, &m);
        if (j % 2 == 0) mins[j / 2] = 0;
        mins[j / 2] += m * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
        for (int l = 0; l < 32; l++) {
            const int e = 32 * j + l;
            const uint8_t b = qs[(e / 64) * 32 + e % 32];
            int q = (e % 64) < 32 ? b & 0xf : b >> 4;
            if (qh) q |= ((qh[e % 32] >> (2 * (e / 64) + ((e % 64) >= 32))) & 1) << 4;
            lanes[l / 4] += sc * q * y->qs[e];
        }
    }
}

static void dot_q4_K(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    float acc[8] = {0}, accm[4] = {0};
    for (int i = 0; i < n / QK_K; i++) {
        int lanes[8], mins[4];
        k45_lanes(x[i].scales, x[i].qs, NULL, &y[i], lanes, mins);
        const float d = y[i].d * fp16(x[i].d), dmin = -y[i].d * fp16(x[i].dmin);
        for (int k = 0; k < 8; k++) acc[k] = fmaf(d, (float)lanes[k], acc[k]);
        for (int k = 0; k < 4; k++) accm[k] = fmaf(dmin, (float)mins[k], accm[k]);
    }
    *s = cpu_sum_lanes8(acc) + ((accm[0] + accm[2]) + (accm[1] + accm[3]));
}

static void dot_q5_K(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q5_K *x = vx;
    const block_q8_K *y = vy;
    float acc[8] = {0}, summs = 0;
    for (int i = 0; i < n / QK_K; i++) {
        int lanes[8], mins[4];
        k45_lanes(x[i].scales, x[i].qs, x[i].qh, &y[i], lanes, mins);
        const float d = y[i].d * fp16(x[i].d), dmin = -y[i].d * fp16(x[i].dmin);
        for (int k = 0; k < 8; k++) acc[k] = fmaf(d, (float)lanes[k], acc[k]);
        summs = fmaf(dmin, (float)(mins[0] + mins[1] + mins[2] + mins[3]), summs);
    }
    *s = cpu_sum_lanes8(acc) + summs;
}

/* Q6_K: levels q in [0, 63] (the -32 comes back as 32 * sum_j sc_j * bsum_j, lane k taking
 * the 16-value groups 2k, 2k + 1); a value's scale is that of its 16. */
static void dot_q6_K(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    float acc[8] = {0};
    for (int i = 0; i < n / QK_K; i++) {
        int lanes[8] = {0};
        for (int e = 0; e < QK_K; e++)
            lanes[(e % 32) / 4] +=
                x[i].scales[e / 16] * (cpu_q6_K_level(&x[i], e) + 32) * y[i].qs[e];
        for (int k = 0; k < 8; k++)
            lanes[k] -= 32 * (x[i].scales[2 * k] * y[i].bsums[2 * k] +
                              x[i].scales[2 * k + 1] * y[i].bsums[2 * k + 1]);
        const float d = y[i].d * fp16(x[i].d);
        for (int k = 0; k < 8; k++) acc[k] = fmaf(d, (float)lanes[k], acc[k]);
    }
    *s = cpu_sum_lanes8(acc);
}

/* IQ4_XS in ggml's x86 lane order: lane k the products of values 4k..4k+3 of every 32 times
 * their scale, acc_k = fma(x.d * y.d, lane_k, acc_k). */
static void dot_iq4_xs(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_iq4_xs *x = vx;
    const block_q8_K *y = vy;
    float acc[8] = {0};
    for (int i = 0; i < n / QK_K; i++) {
        int lanes[8] = {0};
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const int ls = ((x[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | ((x[i].scales_h >> (2 * ib)) & 3) << 4;
            const uint8_t *qs = x[i].qs + 16 * ib;
            const int8_t *q8 = y[i].qs + 32 * ib;
            for (int j = 0; j < 16; j++) {
                lanes[j / 4] += (ls - 32) * ggmlc_kvalues_iq4nl[qs[j] & 0xf] * q8[j];
                lanes[4 + j / 4] += (ls - 32) * ggmlc_kvalues_iq4nl[qs[j] >> 4] * q8[j + 16];
            }
        }
        const float d = fp16(x[i].d) * y[i].d;
        for (int k = 0; k < 8; k++) acc[k] = fmaf(d, (float)lanes[k], acc[k]);
    }
    *s = cpu_sum_lanes8(acc);
}

void cpu_quant_dot_fill_generic(cpu_vec_dot_table t) {
    t[GGML_TYPE_F32] = dot_f32;
    t[GGML_TYPE_F16] = dot_f16;
    t[GGML_TYPE_BF16] = dot_bf16;
    t[GGML_TYPE_Q4_1] = dot_q4_1;
    t[GGML_TYPE_Q5_0] = dot_q5_0;
    t[GGML_TYPE_Q5_1] = dot_q5_1;
    t[GGML_TYPE_Q8_1] = dot_q8_1;
    t[GGML_TYPE_Q8_K] = dot_q8_K;
    t[GGML_TYPE_Q2_K] = dot_q2_K;
    t[GGML_TYPE_Q3_K] = dot_q3_K;
    t[GGML_TYPE_Q4_K] = dot_q4_K;
    t[GGML_TYPE_Q5_K] = dot_q5_K;
    t[GGML_TYPE_Q6_K] = dot_q6_K;
    t[GGML_TYPE_IQ4_XS] = dot_iq4_xs;
}
