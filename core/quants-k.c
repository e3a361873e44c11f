/*
 * quants-k.c - ggml's K-quants: 256-value super-blocks split into
 * sub-blocks of 16 or 32 values, each with its own quantized scale (and
 * min), plus Q8_K, the activation format the K-quant dot products use.
 *
 * Each quantizer runs in two passes: first find the best float scale (and
 * min) per sub-block, then quantize those scales against a super-block
 * scale and requantize the values with the scales actually stored, so the
 * levels fit what the dequantizer will compute.
 */
#include "ggml-impl.h"
#include "quants.h"

#define GROUP_MAX_EPS 1e-15f

static inline float fp16(ggml_fp16_t h) { return ggmlc_fp16_to_fp32(h); }
static inline ggml_fp16_t to_fp16(float f) { return ggmlc_fp32_to_fp16(f); }
static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Pack 256 2-bit levels: byte l of each 32-byte group holds values l, l+32, l+64, l+96. */
static void pack_2bit(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < QK_K; j += 128)
        for (int l = 0; l < 32; l++)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 | L[j + l + 96] << 6);
}

static inline int level_2bit(const uint8_t *qs, int e) {
    return (qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

/* ------------------------------------------------------------- Q2_K */

/* Sub-block (16 values) scale and min share one byte: scale low nibble, min high nibble. */
static void q2_K_requantize(const float *x, block_q2_K *y, uint8_t *L) {
    for (int j = 0; j < QK_K / 16; j++) {
        const float d = fp16(y->d) * (y->scales[j] & 0xf);
        if (d == 0.0f) continue;
        const float dm = fp16(y->dmin) * (y->scales[j] >> 4);
        for (int ii = 0; ii < 16; ii++)
            L[16 * j + ii] = (uint8_t)clampi(ggmlc_nearest_int((x[16 * j + ii] + dm) / d), 0, 3);
    }
    pack_2bit(L, y->qs);
}

void ggmlc__quantize_row_q2_K_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    block_q2_K *y = vy;
    uint8_t L[QK_K], Laux[16];
    float weights[16], mins[QK_K / 16], scales[QK_K / 16];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < QK_K / 16; j++) {
            for (int l = 0; l < 16; l++) weights[l] = fabsf(x[16 * j + l]);
            scales[j] = ggmlc__make_qkx_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        const float iscale = max_scale > 0 ? 15.0f / max_scale : 0.0f;
        const float imin = max_min > 0 ? 15.0f / max_min : 0.0f;
        for (int j = 0; j < QK_K / 16; j++) {
            const int ls = max_scale > 0 ? ggmlc_nearest_int(iscale * scales[j]) : 0;
            const int lm = max_min > 0 ? ggmlc_nearest_int(imin * mins[j]) : 0;
            y[i].scales[j] = (uint8_t)(ls | lm << 4);
        }
        y[i].d = to_fp16(max_scale > 0 ? max_scale / 15.0f : 0.0f);
        y[i].dmin = to_fp16(max_min > 0 ? max_min / 15.0f : 0.0f);
        q2_K_requantize(x, &y[i], L);
    }
}

void ggmlc__dequantize_row_q2_K(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_q2_K *x = vx;
    for (int64_t i = 0; i < k / QK_K; i++, y += QK_K) {
        const float d = fp16(x[i].d), dmin = fp16(x[i].dmin);
        for (int e = 0; e < QK_K; e++) {
            const uint8_t sc = x[i].scales[e / 16];
            y[e] = d * (sc & 0xf) * level_2bit(x[i].qs, e) - dmin * (sc >> 4);
        }
    }
}

static void quantize_q2_K_weighted(const float *x, block_q2_K *y, const float *qw) {
    uint8_t L[QK_K], Laux[16], Ls[QK_K / 16], Lm[QK_K / 16];
    float w[16], sw[QK_K / 16], mins[QK_K / 16], scales[QK_K / 16];
    float sumx2 = 0;
    for (int j = 0; j < QK_K; j++) sumx2 += x[j] * x[j];
    const float sigma2 = sumx2 / QK_K;
    for (int j = 0; j < QK_K / 16; j++) {
        sw[j] = 0;
        for (int l = 0; l < 16; l++) {
            w[l] = qw[16 * j + l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
            sw[j] += w[l];
        }
        scales[j] = ggmlc__make_qkx_quants(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], Laux, -0.9f, 0.05f, 36, false);
    }
    const float dm = ggmlc__make_qp_quants(QK_K / 16, 15, scales, Ls, sw);
    const float mm = ggmlc__make_qp_quants(QK_K / 16, 15, mins, Lm, sw);
    y->d = to_fp16(dm);
    y->dmin = to_fp16(mm);
    for (int j = 0; j < QK_K / 16; j++) y->scales[j] = (uint8_t)(Ls[j] | Lm[j] << 4);
    q2_K_requantize(x, y, L);
}

/* ------------------------------------------------------------- Q3_K */

/* 16 six-bit scales (stored +32): low nibbles in bytes 0-7, two high bits per scale in bytes 8-11. */
static void q3_K_set_scale(uint8_t *s, int j, int l) {
    if (j < 8) s[j] = (uint8_t)(l & 0xf);
    else s[j - 8] |= (uint8_t)((l & 0xf) << 4);
    s[8 + j % 4] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
}

static int q3_K_scale(const uint8_t *s, int j) {
    const int low = j < 8 ? s[j] & 0xf : s[j - 8] >> 4;
    return (low | ((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
}

/* Symmetric 3-bit levels in [-4, 3], refined by coordinate descent on the x^2-weighted fit. */
static float make_q3_quants(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); max = x[i]; }
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    const float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (int8_t)clampi(ggmlc_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * L[i];
        suml2 += w * L[i] * L[i];
    }
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i = 0; i < n; i++) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (!(slx > 0)) continue;
            float sl2 = suml2 - w * L[i] * L[i];
            const int new_l = clampi(ggmlc_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
            if (new_l == L[i]) continue;
            slx += w * x[i] * new_l;
            sl2 += w * new_l * new_l;
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = (int8_t)new_l;
                sumlx = slx;
                suml2 = sl2;
                n_changed++;
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return sumlx / suml2;
}

static void q3_K_requantize(const float *x, block_q3_K *y, int8_t *L) {
    for (int j = 0; j < QK_K / 16; j++) {
        const float d = fp16(y->d) * q3_K_scale(y->scales, j);
        if (d == 0.0f) continue;
        for (int ii = 0; ii < 16; ii++)
            L[16 * j + ii] = (int8_t)(clampi(ggmlc_nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
    }
    /* the high bit of value e goes to bit e/32 of hmask[e%32]; the low two bits as in Q2_K */
    memset(y->hmask, 0, sizeof y->hmask);
    uint8_t low[QK_K];
    for (int e = 0; e < QK_K; e++) {
        if (L[e] > 3) y->hmask[e % 32] |= (uint8_t)(1 << (e / 32));
        low[e] = (uint8_t)(L[e] & 3);
    }
    pack_2bit(low, y->qs);
}

void ggmlc__quantize_row_q3_K_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    block_q3_K *y = vy;
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max_scale = 0, amax = 0;
        for (int j = 0; j < QK_K / 16; j++) {
            scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > amax) { amax = fabsf(scales[j]); max_scale = scales[j]; }
        }
        memset(y[i].scales, 0, sizeof y[i].scales);
        if (max_scale != 0.0f) {
            const float iscale = -32.0f / max_scale;
            for (int j = 0; j < QK_K / 16; j++)
                q3_K_set_scale(y[i].scales, j, clampi(ggmlc_nearest_int(iscale * scales[j]), -32, 31) + 32);
            y[i].d = to_fp16(1.0f / iscale);
        } else {
            y[i].d = to_fp16(0.0f);
        }
        q3_K_requantize(x, &y[i], L);
    }
}

void ggmlc__dequantize_row_q3_K(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_q3_K *x = vx;
    for (int64_t i = 0; i < k / QK_K; i++, y += QK_K) {
        const float d = fp16(x[i].d);
        for (int e = 0; e < QK_K; e++) {
            const int high = (x[i].hmask[e % 32] >> (e / 32)) & 1;
            y[e] = d * q3_K_scale(x[i].scales, e / 16) * (level_2bit(x[i].qs, e) - (high ? 0 : 4));
        }
    }
}

static void quantize_q3_K_weighted(const float *x, block_q3_K *y, const float *qw) {
    int8_t L[QK_K], Ls[QK_K / 16];
    float w[16], sw[QK_K / 16], scales[QK_K / 16];
    float sumx2 = 0;
    for (int j = 0; j < QK_K; j++) sumx2 += x[j] * x[j];
    const float sigma2 = 2 * sumx2 / QK_K;
    for (int j = 0; j < QK_K / 16; j++) {
        sw[j] = 0;
        for (int l = 0; l < 16; l++) {
            w[l] = qw[16 * j + l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
            sw[j] += w[l];
        }
        scales[j] = ggmlc__make_qx_quants(16, 4, x + 16 * j, L + 16 * j, 1, w);
    }
    memset(y->scales, 0, sizeof y->scales);
    const float d_block = ggmlc__make_qx_quants(QK_K / 16, 32, scales, Ls, 1, sw);
    for (int j = 0; j < QK_K / 16; j++) q3_K_set_scale(y->scales, j, Ls[j]);
    y->d = to_fp16(d_block);
    q3_K_requantize(x, y, L);
}

/* ------------------------------------------------------ Q4_K / Q5_K */

/* 8 six-bit scales and mins in 12 bytes: scales 0-3 and mins 0-3 in the low six bits of
 * bytes 0-3 / 4-7; scales and mins 4-7 as nibbles in bytes 8-11 with their top two bits
 * in the high bits of bytes 0-3 / 4-7. */
static void k4_set_scale_min(uint8_t *q, int j, int ls, int lm) {
    if (j < 4) {
        q[j] = (uint8_t)ls;
        q[j + 4] = (uint8_t)lm;
    } else {
        q[j + 4] = (uint8_t)((ls & 0xf) | (lm & 0xf) << 4);
        q[j - 4] |= (uint8_t)((ls >> 4) << 6);
        q[j] |= (uint8_t)((lm >> 4) << 6);
    }
}

static void k4_get_scale_min(const uint8_t *q, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xf) | (q[j - 4] >> 6) << 4;
        *m = (q[j + 4] >> 4) | (q[j] >> 6) << 4;
    }
}

/* First pass of Q4_K/Q5_K: per-32 scales and mins (weighted by qw when given). */
static void k45_subblock_fit(const float *x, const float *qw, int nmax, uint8_t *L, float *scales, float *mins, float *sw) {
    uint8_t Laux[32];
    float w[32], sum_x2 = 0;
    for (int l = 0; l < QK_K; l++) sum_x2 += x[l] * x[l];
    for (int j = 0; j < QK_K / 32; j++) {
        const float *xs = x + 32 * j;
        if (qw) {
            const float sigma2 = 2 * sum_x2 / QK_K;
            for (int l = 0; l < 32; l++) w[l] = qw[32 * j + l] * sqrtf(sigma2 + xs[l] * xs[l]);
            sw[j] = 0;
            for (int l = 0; l < 32; l++) sw[j] += w[l];
            scales[j] = ggmlc__make_qkx_quants(32, nmax, xs, w, L + 32 * j, &mins[j], Laux, -0.9f, 0.05f, 36, false);
        } else {
            float sub_x2 = 0;
            for (int l = 0; l < 32; l++) sub_x2 += xs[l] * xs[l];
            const float av_x = sqrtf(sub_x2 / 32);
            for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(xs[l]);
            scales[j] = nmax == 15
                ? ggmlc__make_qkx_quants(32, nmax, xs, w, L + 32 * j, &mins[j], Laux, -1.0f, 0.1f, 20, false)
                : ggmlc__make_qkx_quants(32, nmax, xs, w, L + 32 * j, &mins[j], Laux, -0.5f, 0.1f, 15, false);
        }
    }
}

/* Second pass: store 6-bit scales/mins and the f16 super-block scales, requantize the values. */
static void k45_store_scales(const float *x, const float *qw, int nmax, ggml_fp16_t *d, ggml_fp16_t *dmin,
                             uint8_t *packed, uint8_t *L) {
    float scales[QK_K / 32], mins[QK_K / 32], sw[QK_K / 32];
    k45_subblock_fit(x, qw, nmax, L, scales, mins, sw);
    memset(packed, 0, K_SCALE_SIZE);
    if (qw) {
        uint8_t Ls[QK_K / 32], Lm[QK_K / 32];
        const float d_block = ggmlc__make_qp_quants(QK_K / 32, 63, scales, Ls, sw);
        const float m_block = ggmlc__make_qp_quants(QK_K / 32, 63, mins, Lm, sw);
        for (int j = 0; j < QK_K / 32; j++) k4_set_scale_min(packed, j, Ls[j], Lm[j]);
        *d = to_fp16(d_block);
        *dmin = to_fp16(m_block);
    } else {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < QK_K / 32; j++) {
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
        const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
        for (int j = 0; j < QK_K / 32; j++) {
            const int ls = ggmlc_nearest_int(inv_scale * scales[j]), lm = ggmlc_nearest_int(inv_min * mins[j]);
            k4_set_scale_min(packed, j, ls < 63 ? ls : 63, lm < 63 ? lm : 63);
        }
        *d = to_fp16(max_scale / 63.0f);
        *dmin = to_fp16(max_min / 63.0f);
    }
    for (int j = 0; j < QK_K / 32; j++) {
        int sc, m;
        k4_get_scale_min(packed, j, &sc, &m);
        const float dj = fp16(*d) * sc;
        if (dj == 0.0f) continue;
        const float dm = fp16(*dmin) * m;
        for (int ii = 0; ii < 32; ii++)
            L[32 * j + ii] = (uint8_t)clampi(ggmlc_nearest_int((x[32 * j + ii] + dm) / dj), 0, nmax);
    }
}

/* Low nibbles: each 32-byte group holds values [64g, 64g+32) low and [64g+32, 64g+64) high. */
static void pack_k_nibbles(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < QK_K; j += 64)
        for (int l = 0; l < 32; l++) qs[j / 2 + l] = (uint8_t)((L[j + l] & 0xf) | (L[j + l + 32] & 0xf) << 4);
}

static inline int k_nibble(const uint8_t *qs, int e) {
    const uint8_t b = qs[(e / 64) * 32 + e % 32];
    return (e % 64) < 32 ? b & 0xf : b >> 4;
}

static void quantize_q4_K_block(const float *x, block_q4_K *y, const float *qw) {
    uint8_t L[QK_K];
    k45_store_scales(x, qw, 15, &y->d, &y->dmin, y->scales, L);
    pack_k_nibbles(L, y->qs);
}

void ggmlc__quantize_row_q4_K_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    for (int64_t i = 0; i < k / QK_K; i++) quantize_q4_K_block(x + i * QK_K, (block_q4_K *)vy + i, NULL);
}

void ggmlc__dequantize_row_q4_K(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_q4_K *x = vx;
    for (int64_t i = 0; i < k / QK_K; i++, y += QK_K) {
        const float d = fp16(x[i].d), dmin = fp16(x[i].dmin);
        for (int j = 0; j < QK_K / 32; j++) {
            int sc, m;
            k4_get_scale_min(x[i].scales, j, &sc, &m);
            const float dj = d * sc, mj = dmin * m;
            for (int l = 0; l < 32; l++) y[32 * j + l] = dj * k_nibble(x[i].qs, 32 * j + l) - mj;
        }
    }
}

/* Q5_K: the fifth bit of value e is bit 2*(e/64) + ((e%64) >= 32) of qh[e%32]. */
static void quantize_q5_K_block(const float *x, block_q5_K *y, const float *qw) {
    uint8_t L[QK_K];
    k45_store_scales(x, qw, 31, &y->d, &y->dmin, y->scales, L);
    memset(y->qh, 0, sizeof y->qh);
    for (int e = 0; e < QK_K; e++)
        if (L[e] > 15) y->qh[e % 32] |= (uint8_t)(1 << (2 * (e / 64) + ((e % 64) >= 32)));
    pack_k_nibbles(L, y->qs);
}

void ggmlc__quantize_row_q5_K_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    for (int64_t i = 0; i < k / QK_K; i++) quantize_q5_K_block(x + i * QK_K, (block_q5_K *)vy + i, NULL);
}

void ggmlc__dequantize_row_q5_K(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_q5_K *x = vx;
    for (int64_t i = 0; i < k / QK_K; i++, y += QK_K) {
        const float d = fp16(x[i].d), dmin = fp16(x[i].dmin);
        for (int j = 0; j < QK_K / 32; j++) {
            int sc, m;
            k4_get_scale_min(x[i].scales, j, &sc, &m);
            const float dj = d * sc, mj = dmin * m;
            for (int l = 0; l < 32; l++) {
                const int e = 32 * j + l;
                const int high = (x[i].qh[e % 32] >> (2 * (e / 64) + ((e % 64) >= 32))) & 1;
                y[e] = dj * (k_nibble(x[i].qs, e) + 16 * high) - mj;
            }
        }
    }
}

/* ------------------------------------------------------------- Q6_K */

/* Value e (within a 128 half) : low nibble in ql (values l and l+64 share a byte, l+32 and
 * l+96 the byte 32 further), the two high bits in qh[l] at bit 2*((e%128)/32). */
static void quantize_q6_K_block(const float *x, block_q6_K *y, const float *qw) {
    int8_t L[QK_K];
    float scales[QK_K / 16], w[16];
    float max_scale = 0, max_abs_scale = 0, sigma2 = 0;
    if (qw) {
        for (int j = 0; j < QK_K; j++) sigma2 += x[j] * x[j];
        sigma2 = 2 * sigma2 / QK_K;
    }
    for (int ib = 0; ib < QK_K / 16; ib++) {
        if (qw)
            for (int j = 0; j < 16; j++) w[j] = qw[16 * ib + j] * sqrtf(sigma2 + x[16 * ib + j] * x[16 * ib + j]);
        scales[ib] = ggmlc__make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, qw ? w : NULL);
        if (fabsf(scales[ib]) > max_abs_scale) { max_abs_scale = fabsf(scales[ib]); max_scale = scales[ib]; }
    }
    if (max_abs_scale < GROUP_MAX_EPS) {
        memset(y, 0, sizeof *y);
        return;
    }
    const float iscale = -128.0f / max_scale;
    y->d = to_fp16(1.0f / iscale);
    for (int ib = 0; ib < QK_K / 16; ib++) {
        const int l = ggmlc_nearest_int(iscale * scales[ib]);
        y->scales[ib] = (int8_t)(l < 127 ? l : 127);
    }
    for (int j = 0; j < QK_K / 16; j++) {
        const float d = fp16(y->d) * y->scales[j];
        if (d == 0.0f) continue;
        for (int ii = 0; ii < 16; ii++)
            L[16 * j + ii] = (int8_t)(clampi(ggmlc_nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
    }
    for (int j = 0; j < QK_K; j += 128) {
        uint8_t *ql = y->ql + j / 2, *qh = y->qh + j / 4;
        const int8_t *Lj = L + j;
        for (int l = 0; l < 32; l++) {
            ql[l] = (uint8_t)((Lj[l] & 0xf) | (Lj[l + 64] & 0xf) << 4);
            ql[l + 32] = (uint8_t)((Lj[l + 32] & 0xf) | (Lj[l + 96] & 0xf) << 4);
            qh[l] = (uint8_t)((Lj[l] >> 4) | (Lj[l + 32] >> 4) << 2 | (Lj[l + 64] >> 4) << 4 | (Lj[l + 96] >> 4) << 6);
        }
    }
}

void ggmlc__quantize_row_q6_K_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    for (int64_t i = 0; i < k / QK_K; i++) quantize_q6_K_block(x + i * QK_K, (block_q6_K *)vy + i, NULL);
}

void ggmlc__dequantize_row_q6_K(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_q6_K *x = vx;
    for (int64_t i = 0; i < k / QK_K; i++, y += QK_K) {
        const float d = fp16(x[i].d);
        for (int e = 0; e < QK_K; e++) {
            const int half = e / 128, r = e % 128, l = r % 32, quarter = r / 32;
            const uint8_t b = x[i].ql[64 * half + l + 32 * (quarter & 1)];
            const int low = quarter < 2 ? b & 0xf : b >> 4;
            const int high = (x[i].qh[32 * half + l] >> (2 * quarter)) & 3;
            y[e] = d * x[i].scales[e / 16] * ((low | high << 4) - 32);
        }
    }
}

/* ------------------------------------------------------------- Q8_K */

/* f32 scale, int8 values, and the sums of each 16 values (used for the K-quant mins). */
void ggmlc__quantize_row_q8_K_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    block_q8_K *y = vy;
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < QK_K; j++)
            if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < QK_K; j++) {
            const int v = ggmlc_nearest_int(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int j = 0; j < QK_K / 16; j++) {
            int sum = 0;
            for (int ii = 0; ii < 16; ii++) sum += y[i].qs[16 * j + ii];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}

void ggmlc__dequantize_row_q8_K(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_q8_K *x = vx;
    for (int64_t i = 0; i < k / QK_K; i++, y += QK_K)
        for (int j = 0; j < QK_K; j++) y[j] = x[i].d * x[i].qs[j];
}

/* --------------------------------------------- row drivers with imatrix */

#define K_QUANTIZE(name, block_t, weighted_fn) \
    size_t ggmlc__quantize_##name(const float *src, void *dst, int64_t nrow, int64_t n_per_row, const float *qw) { \
        block_t *y = dst; \
        for (int64_t r = 0; r < nrow; r++) \
            for (int64_t ib = 0; ib < n_per_row / QK_K; ib++, y++) { \
                const float *x = src + r * n_per_row + ib * QK_K; \
                if (qw) weighted_fn(x, y, qw + ib * QK_K); \
                else ggmlc__quantize_row_##name##_ref(x, y, QK_K); \
            } \
        return (size_t)nrow * (size_t)(n_per_row / QK_K) * sizeof(block_t); \
    }
K_QUANTIZE(q2_K, block_q2_K, quantize_q2_K_weighted)
K_QUANTIZE(q3_K, block_q3_K, quantize_q3_K_weighted)
K_QUANTIZE(q4_K, block_q4_K, quantize_q4_K_block)
K_QUANTIZE(q5_K, block_q5_K, quantize_q5_K_block)
K_QUANTIZE(q6_K, block_q6_K, quantize_q6_K_block)
