/*
 * quant-dot-lowbit.c - dot products of ggml's newest weight types, Q1_0, Q2_0
 * and NVFP4, with Q8_0 activations (ggml's vec_dot_type for all three).
 *
 * They sum in the order of ggml's x86 build, so that a product's bits equal
 * ggml's: Q1_0 and NVFP4 in the eight float lanes of its AVX2 kernels (each
 * lane an exact integer sum of four neighbouring values, scaled and fused per
 * block, then ggml's 256-bit horizontal sum), Q2_0 as its portable kernel,
 * which ggml's x86 build uses too (products rounded apart from the sums).
 * fmaf keeps the fused steps' bits on every CPU.  Measured: products of all
 * three types equal those of ggml 8e800cef's CPU backend (stable-diffusion.cpp's
 * ggml, -march=native on Zen 4) bit for bit, 1 and 9 activation rows.
 */
#include <math.h>

#include "quant-dot.h"

/* ------------------------------------------------------------ Q1_0 */

/* Lane k of one Q8_0 block against 32 signs: sum of y[4k..4k+3], each negated where its bit is 0. */
static inline int q1_0_lane(const uint8_t *bits, const int8_t *y, int k) {
    int lane = 0;
    for (int j = 4 * k; j < 4 * k + 4; j++) lane += (bits[j / 8] >> (j % 8)) & 1 ? y[j] : -y[j];
    return lane;
}

/* One Q1_0 block (128 signs) spans four Q8_0 blocks: their lanes are scaled by the activation
 * scales (a product, then fused), then the block's lanes fused into the sum by its scale. */
static void dot_q1_0(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q1_0 *x = vx;
    const block_q8_0 *y = vy;
    float acc[8] = {0};
    for (int ib = 0; ib < n / QK1_0; ib++) {
        float block[8];
        for (int q = 0; q < QK1_0 / QK8_0; q++) {
            const block_q8_0 *yb = &y[ib * (QK1_0 / QK8_0) + q];
            const float dy = ggmlc_fp16_to_fp32(yb->d);
            for (int k = 0; k < 8; k++) {
                const float lane = (float)q1_0_lane(x[ib].qs + q * (QK8_0 / 8), yb->qs, k);
                block[k] = q == 0 ? dy * lane : fmaf(dy, lane, block[k]);
            }
        }
        const float dx = ggmlc_fp16_to_fp32(x[ib].d);
        for (int k = 0; k < 8; k++) acc[k] = fmaf(dx, block[k], acc[k]);
    }
    *s = cpu_sum_lanes8(acc);
}

/* ------------------------------------------------------------ Q2_0 */

/* a * b rounded on its own: never fused into a following addition, whatever the compiler's
 * -ffp-contract (ggml's portable Q2_0 kernel rounds the products apart; measured). */
static inline float lowbit_product(float a, float b) {
    volatile float p = a * b;
    return p;
}

/* One Q2_0 block (64 codes, level = code - 1) spans two Q8_0 blocks: each block's integer
 * sum is fused into the block total by the activation scale, the total by the weight scale. */
static void dot_q2_0(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q2_0 *x = vx;
    const block_q8_0 *y = vy;
    float sum = 0.0f;
    for (int ib = 0; ib < n / QK2_0; ib++) {
        float block = 0.0f;
        for (int q = 0; q < QK2_0 / QK8_0; q++) {
            const block_q8_0 *yb = &y[ib * (QK2_0 / QK8_0) + q];
            const uint8_t *codes = x[ib].qs + q * (QK8_0 / 4);
            int isum = 0;
            for (int j = 0; j < QK8_0; j++) isum += (((codes[j / 4] >> (j % 4 * 2)) & 3) - 1) * yb->qs[j];
            block += lowbit_product(ggmlc_fp16_to_fp32(yb->d), (float)isum);
        }
        sum += lowbit_product(ggmlc_fp16_to_fp32(x[ib].d), block);
    }
    *s = sum;
}

/* ------------------------------------------------------------ NVFP4 */

/* Value j (0..15) of sub-block g as a doubled E2M1 level: the low nibbles hold values 0..7. */
static inline int nvfp4_level(const block_nvfp4 *x, int g, int j) {
    const uint8_t byte = x->qs[g * (QK_NVFP4_SUB / 2) + j % (QK_NVFP4_SUB / 2)];
    return ggmlc_kvalues_mxfp4[j < QK_NVFP4_SUB / 2 ? byte & 0xf : byte >> 4];
}

/* One NVFP4 block (4 sub-blocks of 16) spans two Q8_0 blocks; lanes 0-3 of a Q8_0 block cover
 * its first sub-block, lanes 4-7 its second, each scaled by (sub-block scale * activation scale). */
static void dot_nvfp4(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_nvfp4 *x = vx;
    const block_q8_0 *y = vy;
    float acc[8] = {0};
    for (int ib = 0; ib < n / QK_NVFP4; ib++) {
        for (int q = 0; q < QK_NVFP4 / QK8_0; q++) {
            const block_q8_0 *yb = &y[ib * (QK_NVFP4 / QK8_0) + q];
            const float dy = ggmlc_fp16_to_fp32(yb->d);
            for (int k = 0; k < 8; k++) {
                const int g = 2 * q + k / 4; /* the sub-block of lane k */
                int lane = 0;
                for (int j = 4 * k; j < 4 * k + 4; j++) lane += nvfp4_level(&x[ib], g, j % QK_NVFP4_SUB) * yb->qs[j];
                acc[k] = fmaf(ggmlc_ue4m3_to_fp32_half(x[ib].d[g]) * dy, (float)lane, acc[k]);
            }
        }
    }
    *s = cpu_sum_lanes8(acc);
}

void cpu_quant_dot_fill_lowbit(cpu_vec_dot_table table) {
    table[GGML_TYPE_Q1_0] = dot_q1_0;
    table[GGML_TYPE_Q2_0] = dot_q2_0;
    table[GGML_TYPE_NVFP4] = dot_nvfp4;
}

bool cpu_quant_lowbit_type(enum ggml_type type) {
    return type == GGML_TYPE_Q1_0 || type == GGML_TYPE_Q2_0 || type == GGML_TYPE_NVFP4;
}
