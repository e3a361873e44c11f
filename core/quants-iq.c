/*
 * quants-iq.c - non-linear 4-bit formats: IQ4_NL (32-value blocks) and
 * IQ4_XS (256-value super-blocks with 6-bit sub-block scales), which map
 * each nibble through a fixed 16-level table, and MXFP4 (OCP microscaling:
 * an E8M0 power-of-two scale and E2M1 values).
 */
#include "ggml-impl.h"
#include "quants.h"

#define GROUP_MAX_EPS 1e-15f


static inline float fp16(ggml_fp16_t h) { return ggmlc_fp16_to_fp32(h); }
static inline ggml_fp16_t to_fp16(float f) { return ggmlc_fp32_to_fp16(f); }

/* Index of the table level nearest to x (the table is sorted; ties go up). */
static int best_index_int8(const int8_t *values, float x) {
    if (x <= values[0]) return 0;
    if (x >= values[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (x < values[mid]) hi = mid;
        else lo = mid;
    }
    return x - values[hi - 1] < values[hi] - x ? hi - 1 : hi;
}

/* Weighted fit of the table levels for one trial inverse scale. */
static void iq4_fit(const float *x, const float *w, int n, float id, uint8_t *L, float *sumqx, float *sumq2) {
    float sqx = 0, sq2 = 0;
    for (int j = 0; j < n; j++) {
        const int l = best_index_int8(ggmlc_kvalues_iq4nl, id * x[j]);
        if (L) L[j] = (uint8_t)l;
        const float q = ggmlc_kvalues_iq4nl[l];
        sqx += w[j] * q * x[j];
        sq2 += w[j] * q * q;
    }
    *sumqx = sqx;
    *sumq2 = sq2;
}

/* Best scale of one 32-value block: start at -max/127 and try 15 nearby inverse scales. */
static float iq4_block_scale(const float *xb, const float *w, uint8_t *L) {
    float amax = 0, max = 0;
    for (int j = 0; j < 32; j++)
        if (fabsf(xb[j]) > amax) { amax = fabsf(xb[j]); max = xb[j]; }
    if (amax < GROUP_MAX_EPS) return 0.0f;
    const int ntry = 7;
    const float d0 = -max / ggmlc_kvalues_iq4nl[0];
    float sumqx, sumq2;
    iq4_fit(xb, w, 32, 1.0f / d0, L, &sumqx, &sumq2);
    float d = sumqx / sumq2, best = d * sumqx;
    for (int itry = -ntry; itry <= ntry; itry++) {
        const float id = (itry + ggmlc_kvalues_iq4nl[0]) / max;
        iq4_fit(xb, w, 32, id, NULL, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

/* Quantize n = 32 * nblocks values; weights x^2, or qw * sqrt(sigma2 + x^2) with an imatrix. */
static void iq4_weights(const float *x, const float *qw, int n, float *w) {
    float sigma2 = 0;
    for (int j = 0; j < n; j++) sigma2 += x[j] * x[j];
    sigma2 *= 2.0f / n;
    for (int j = 0; j < n; j++) w[j] = qw ? qw[j] * sqrtf(sigma2 + x[j] * x[j]) : x[j] * x[j];
}

static void pack_iq4(const uint8_t *L, uint8_t *qs, int n) {
    for (int i = 0; i < n / 32; i++)
        for (int j = 0; j < 16; j++) qs[16 * i + j] = (uint8_t)(L[32 * i + j] | L[32 * i + 16 + j] << 4);
}

static void quantize_iq4_nl_block(const float *x, block_iq4_nl *y, const float *qw) {
    float w[32];
    uint8_t L[32] = {0};
    iq4_weights(x, qw, 32, w);
    const float d = iq4_block_scale(x, w, L);
    y->d = to_fp16(d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 32; j++) L[j] = (uint8_t)best_index_int8(ggmlc_kvalues_iq4nl, id * x[j]);
    pack_iq4(L, y->qs, 32);
}

void ggmlc__quantize_row_iq4_nl_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    for (int64_t i = 0; i < k / QK4_NL; i++) quantize_iq4_nl_block(x + i * QK4_NL, (block_iq4_nl *)vy + i, NULL);
}

void ggmlc__dequantize_row_iq4_nl(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_iq4_nl *x = vx;
    for (int64_t i = 0; i < k / QK4_NL; i++, y += QK4_NL) {
        const float d = fp16(x[i].d);
        for (int j = 0; j < 16; j++) {
            y[j] = d * ggmlc_kvalues_iq4nl[x[i].qs[j] & 0xf];
            y[j + 16] = d * ggmlc_kvalues_iq4nl[x[i].qs[j] >> 4];
        }
    }
}

/* IQ4_XS: eight block scales quantized to 6 bits (stored +32) against d = -max_scale/32. */
static void quantize_iq4_xs_block(const float *x, block_iq4_xs *y, const float *qw) {
    float w[QK_K], scales[QK_K / 32];
    uint8_t L[QK_K] = {0};
    iq4_weights(x, qw, QK_K, w);
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < QK_K / 32; ib++) {
        scales[ib] = iq4_block_scale(x + 32 * ib, w + 32 * ib, L + 32 * ib);
        if (fabsf(scales[ib]) > amax_scale) { amax_scale = fabsf(scales[ib]); max_scale = scales[ib]; }
    }
    memset(y->scales_l, 0, sizeof y->scales_l);
    y->scales_h = 0;
    const float d = -max_scale / 32;
    y->d = to_fp16(d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int ib = 0; ib < QK_K / 32; ib++) {
        int l = ggmlc_nearest_int(id * scales[ib]);
        l = l < -32 ? -32 : l > 31 ? 31 : l;
        const float dl = d * l, idl = dl != 0.0f ? 1.0f / dl : 0.0f;
        for (int j = 0; j < 32; j++) L[32 * ib + j] = (uint8_t)best_index_int8(ggmlc_kvalues_iq4nl, idl * x[32 * ib + j]);
        l += 32;
        y->scales_l[ib / 2] |= (uint8_t)((l & 0xf) << (4 * (ib % 2)));
        y->scales_h |= (uint16_t)((l >> 4) << (2 * ib));
    }
    pack_iq4(L, y->qs, QK_K);
}

void ggmlc__quantize_row_iq4_xs_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    for (int64_t i = 0; i < k / QK_K; i++) quantize_iq4_xs_block(x + i * QK_K, (block_iq4_xs *)vy + i, NULL);
}

void ggmlc__dequantize_row_iq4_xs(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_iq4_xs *x = vx;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = fp16(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++, y += 32) {
            const int ls = ((x[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | ((x[i].scales_h >> (2 * ib)) & 3) << 4;
            const float dl = d * (ls - 32);
            const uint8_t *qs = x[i].qs + 16 * ib;
            for (int j = 0; j < 16; j++) {
                y[j] = dl * ggmlc_kvalues_iq4nl[qs[j] & 0xf];
                y[j + 16] = dl * ggmlc_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}

#define IQ4_QUANTIZE(name, block_t, per_block) \
    size_t ggmlc__quantize_##name(const float *src, void *dst, int64_t nrow, int64_t n_per_row, const float *qw) { \
        block_t *y = dst; \
        for (int64_t r = 0; r < nrow; r++) \
            for (int64_t ib = 0; ib < n_per_row / per_block; ib++, y++) \
                quantize_##name##_block(src + r * n_per_row + ib * per_block, y, qw ? qw + ib * per_block : NULL); \
        return (size_t)nrow * (size_t)(n_per_row / per_block) * sizeof(block_t); \
    }
IQ4_QUANTIZE(iq4_nl, block_iq4_nl, QK4_NL)
IQ4_QUANTIZE(iq4_xs, block_iq4_xs, QK_K)

/* ------------------------------------------------------------ MXFP4 */

/* Nearest doubled E2M1 level to x/d (first on ties); MXFP4 and NVFP4 share it. */
uint8_t ggmlc__nearest_e2m1(float x, float d) {
    int best = 0;
    float best_err = fabsf(ggmlc_kvalues_mxfp4[0] * d - x);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf(ggmlc_kvalues_mxfp4[i] * d - x);
        if (err < best_err) { best = i; best_err = err; }
    }
    return (uint8_t)best;
}

/* The exponent puts the largest magnitude near level 4 (of at most 6), leaving headroom. */
void ggmlc__quantize_row_mxfp4_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy,
                                   int64_t k) {
    block_mxfp4 *y = vy;
    for (int64_t i = 0; i < k / QK_MXFP4; i++, x += QK_MXFP4) {
        float amax = 0;
        for (int j = 0; j < QK_MXFP4; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
        const uint8_t e = amax > 0.0f ? (uint8_t)(floorf(log2f(amax)) - 2 + 127) : 0;
        const float d = ggmlc_e8m0_to_fp32_half(e);
        y[i].e = e;
        for (int j = 0; j < QK_MXFP4 / 2; j++)
            y[i].qs[j] =
                (uint8_t)(ggmlc__nearest_e2m1(x[j], d) | ggmlc__nearest_e2m1(x[j + 16], d) << 4);
    }
}

void ggmlc__dequantize_row_mxfp4(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_mxfp4 *x = vx;
    for (int64_t i = 0; i < k / QK_MXFP4; i++, y += QK_MXFP4) {
        const float d = ggmlc_e8m0_to_fp32_half(x[i].e);
        for (int j = 0; j < 16; j++) {
            y[j] = ggmlc_kvalues_mxfp4[x[i].qs[j] & 0xf] * d;
            y[j + 16] = ggmlc_kvalues_mxfp4[x[i].qs[j] >> 4] * d;
        }
    }
}
