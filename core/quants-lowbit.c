/*
 * quants-lowbit.c - reference (de)quantization of ggml's newest block formats:
 * Q1_0 (128 signs and one f16 magnitude), Q2_0 (64 two-bit levels {-1, 0, 1, 2}
 * times an f16 scale) and NVFP4 (64 E2M1 values in 4 groups of 16, each with an
 * unsigned E4M3 scale). The rules follow ggml's reference quantizers so encoded
 * bytes match ggml's (layouts in include/ggmlc-blocks.h).
 */
#include "quants.h"

/* ------------------------------------------------------------ Q1_0 */

/* The scale is the mean magnitude; bit j (LSB first) is set where x[j] >= 0. */
void ggmlc__quantize_row_q1_0_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    block_q1_0 *y = vy;
    for (int64_t i = 0; i < k / QK1_0; i++, x += QK1_0) {
        float sum_abs = 0.0f;
        for (int j = 0; j < QK1_0; j++) sum_abs += fabsf(x[j]);
        y[i].d = ggmlc_fp32_to_fp16(sum_abs / QK1_0);
        memset(y[i].qs, 0, sizeof y[i].qs);
        for (int j = 0; j < QK1_0; j++)
            if (x[j] >= 0.0f) y[i].qs[j / 8] |= (uint8_t)(1u << (j % 8));
    }
}

void ggmlc__dequantize_row_q1_0(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_q1_0 *x = vx;
    for (int64_t i = 0; i < k / QK1_0; i++, y += QK1_0) {
        const float d = ggmlc_fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK1_0; j++) y[j] = (x[i].qs[j / 8] >> (j % 8)) & 1 ? d : -d;
    }
}

/* ------------------------------------------------------------ Q2_0 */

/* The scale is the largest magnitude; code q = round(x / d) + 1 clamped to 0..3 (roundf:
 * halves away from zero), four codes a byte, the first in the low bits. */
void ggmlc__quantize_row_q2_0_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    block_q2_0 *y = vy;
    for (int64_t i = 0; i < k / QK2_0; i++, x += QK2_0) {
        float amax = 0.0f;
        for (int j = 0; j < QK2_0; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
        const float inv = amax > 0.0f ? 1.0f / amax : 0.0f;
        y[i].d = ggmlc_fp32_to_fp16(amax);
        memset(y[i].qs, 0, sizeof y[i].qs);
        for (int j = 0; j < QK2_0; j++) {
            int q = (int)roundf(x[j] * inv) + 1;
            q = q < 0 ? 0 : q > 3 ? 3 : q;
            y[i].qs[j / 4] |= (uint8_t)(q << (j % 4 * 2));
        }
    }
}

void ggmlc__dequantize_row_q2_0(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_q2_0 *x = vx;
    for (int64_t i = 0; i < k / QK2_0; i++, y += QK2_0) {
        const float d = ggmlc_fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK2_0; j++)
            y[j] = (float)(((x[i].qs[j / 4] >> (j % 4 * 2)) & 3) - 1) * d;
    }
}

/* ------------------------------------------------------------ NVFP4 */

/* Each group of 16 gets the scale amax / 6 (E2M1's largest value reaches amax) rounded to
 * UE4M3; byte j of a group holds value j (low nibble) and value j + 8 (high nibble). */
void ggmlc__quantize_row_nvfp4_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy,
                                   int64_t k) {
    block_nvfp4 *y = vy;
    const int half = QK_NVFP4_SUB / 2;
    for (int64_t i = 0; i < k / QK_NVFP4; i++)
        for (int g = 0; g < QK_NVFP4 / QK_NVFP4_SUB; g++, x += QK_NVFP4_SUB) {
            float amax = 0.0f;
            for (int j = 0; j < QK_NVFP4_SUB; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
            y[i].d[g] = ggmlc_fp32_to_ue4m3(amax / 6.0f);
            const float d = ggmlc_ue4m3_to_fp32_half(y[i].d[g]);
            for (int j = 0; j < half; j++)
                y[i].qs[g * half + j] = (uint8_t)(ggmlc__nearest_e2m1(x[j], d) |
                                                  ggmlc__nearest_e2m1(x[j + half], d) << 4);
        }
}

void ggmlc__dequantize_row_nvfp4(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_nvfp4 *x = vx;
    const int half = QK_NVFP4_SUB / 2;
    for (int64_t i = 0; i < k / QK_NVFP4; i++)
        for (int g = 0; g < QK_NVFP4 / QK_NVFP4_SUB; g++, y += QK_NVFP4_SUB) {
            const float d = ggmlc_ue4m3_to_fp32_half(x[i].d[g]);
            for (int j = 0; j < half; j++) {
                y[j] = ggmlc_kvalues_mxfp4[x[i].qs[g * half + j] & 0xf] * d;
                y[j + half] = ggmlc_kvalues_mxfp4[x[i].qs[g * half + j] >> 4] * d;
            }
        }
}
