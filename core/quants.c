/*
 * quants.c - the 32-value block formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 * Q8_1), the scale-search helpers shared with the K-quants, and the
 * public entry points ggml_quantize_chunk / ggml_validate_row_data.
 *
 * Nibble order in every 4-bit format: byte j holds value j in its low
 * nibble and value j + 16 in its high nibble.  Scales are stored as f16.
 */
#include "ggml-impl.h"
#include "quants.h"

#define GROUP_MAX_EPS 1e-15f

static inline float fp16(ggml_fp16_t h) { return ggmlc_fp16_to_fp32(h); }
static inline ggml_fp16_t to_fp16(float f) { return ggmlc_fp32_to_fp16(f); }
static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Signed value of largest magnitude (the first one on ties) and its magnitude. */
static float signed_absmax(const float *x, int n, float *amax_out) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
    }
    *amax_out = amax;
    return max;
}

static void min_max(const float *x, int n, float *min, float *max) {
    *min = INFINITY;
    *max = -INFINITY;
    for (int j = 0; j < n; j++) {
        if (x[j] < *min) *min = x[j];
        if (x[j] > *max) *max = x[j];
    }
}

/* ------------------------------------------------------------- Q4_0 */

/* The scale maps the signed extreme to level -8, so the full [-8, 7] range is used. */
void ggmlc__quantize_row_q4_0_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    block_q4_0 *y = vy;
    for (int64_t i = 0; i < k / QK4_0; i++, x += QK4_0) {
        float amax;
        const float d = signed_absmax(x, QK4_0, &amax) / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = to_fp16(d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            const int lo = (int8_t)(x[j] * id + 8.5f), hi = (int8_t)(x[j + 16] * id + 8.5f);
            y[i].qs[j] = (uint8_t)((lo < 15 ? lo : 15) | (hi < 15 ? hi : 15) << 4);
        }
    }
}

void ggmlc__dequantize_row_q4_0(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_q4_0 *x = vx;
    for (int64_t i = 0; i < k / QK4_0; i++, y += QK4_0) {
        const float d = fp16(x[i].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            y[j] = ((x[i].qs[j] & 0x0f) - 8) * d;
            y[j + 16] = ((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

/* ------------------------------------------------------------- Q4_1 */

void ggmlc__quantize_row_q4_1_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    block_q4_1 *y = vy;
    for (int64_t i = 0; i < k / QK4_1; i++, x += QK4_1) {
        float min, max;
        min_max(x, QK4_1, &min, &max);
        const float d = (max - min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = to_fp16(d);
        y[i].m = to_fp16(min);
        for (int j = 0; j < QK4_1 / 2; j++) {
            const int lo = (int8_t)((x[j] - min) * id + 0.5f), hi = (int8_t)((x[j + 16] - min) * id + 0.5f);
            y[i].qs[j] = (uint8_t)((lo < 15 ? lo : 15) | (hi < 15 ? hi : 15) << 4);
        }
    }
}

void ggmlc__dequantize_row_q4_1(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_q4_1 *x = vx;
    for (int64_t i = 0; i < k / QK4_1; i++, y += QK4_1) {
        const float d = fp16(x[i].d), m = fp16(x[i].m);
        for (int j = 0; j < QK4_1 / 2; j++) {
            y[j] = (x[i].qs[j] & 0x0f) * d + m;
            y[j + 16] = (x[i].qs[j] >> 4) * d + m;
        }
    }
}

/* ------------------------------------------------------- Q5_0 / Q5_1 */

/* Low 4 bits as in Q4; the fifth bit of value j goes to bit j of the 32-bit qh. */
static void pack_5bit(const int *levels, uint8_t *qs, uint8_t qh_bytes[4]) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((levels[j] & 0x0f) | (levels[j + 16] & 0x0f) << 4);
        qh |= (uint32_t)((levels[j] >> 4) & 1) << j;
        qh |= (uint32_t)((levels[j + 16] >> 4) & 1) << (j + 16);
    }
    memcpy(qh_bytes, &qh, 4);
}

static void unpack_5bit(const uint8_t *qs, const uint8_t qh_bytes[4], int *levels) {
    uint32_t qh;
    memcpy(&qh, qh_bytes, 4);
    for (int j = 0; j < 16; j++) {
        levels[j] = (qs[j] & 0x0f) | (int)((qh >> j) & 1) << 4;
        levels[j + 16] = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
    }
}

void ggmlc__quantize_row_q5_0_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    block_q5_0 *y = vy;
    for (int64_t i = 0; i < k / QK5_0; i++, x += QK5_0) {
        float amax;
        const float d = signed_absmax(x, QK5_0, &amax) / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int levels[QK5_0];
        for (int j = 0; j < QK5_0; j++) {
            const int l = (int8_t)(x[j] * id + 16.5f);
            levels[j] = l < 31 ? l : 31;
        }
        y[i].d = to_fp16(d);
        pack_5bit(levels, y[i].qs, y[i].qh);
    }
}

void ggmlc__dequantize_row_q5_0(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_q5_0 *x = vx;
    for (int64_t i = 0; i < k / QK5_0; i++, y += QK5_0) {
        const float d = fp16(x[i].d);
        int levels[QK5_0];
        unpack_5bit(x[i].qs, x[i].qh, levels);
        for (int j = 0; j < QK5_0; j++) y[j] = (levels[j] - 16) * d;
    }
}

void ggmlc__quantize_row_q5_1_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    block_q5_1 *y = vy;
    for (int64_t i = 0; i < k / QK5_1; i++, x += QK5_1) {
        float min, max;
        min_max(x, QK5_1, &min, &max);
        const float d = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int levels[QK5_1];
        for (int j = 0; j < QK5_1; j++) levels[j] = (uint8_t)((x[j] - min) * id + 0.5f);
        y[i].d = to_fp16(d);
        y[i].m = to_fp16(min);
        pack_5bit(levels, y[i].qs, y[i].qh);
    }
}

void ggmlc__dequantize_row_q5_1(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_q5_1 *x = vx;
    for (int64_t i = 0; i < k / QK5_1; i++, y += QK5_1) {
        const float d = fp16(x[i].d), m = fp16(x[i].m);
        int levels[QK5_1];
        unpack_5bit(x[i].qs, x[i].qh, levels);
        for (int j = 0; j < QK5_1; j++) y[j] = levels[j] * d + m;
    }
}

/* ------------------------------------------------------- Q8_0 / Q8_1 */

void ggmlc__quantize_row_q8_0_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    block_q8_0 *y = vy;
    for (int64_t i = 0; i < k / QK8_0; i++, x += QK8_0) {
        float amax;
        signed_absmax(x, QK8_0, &amax);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = to_fp16(d);
        for (int j = 0; j < QK8_0; j++) y[i].qs[j] = (int8_t)roundf(x[j] * id);
    }
}

void ggmlc__dequantize_row_q8_0(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_q8_0 *x = vx;
    for (int64_t i = 0; i < k / QK8_0; i++, y += QK8_0) {
        const float d = fp16(x[i].d);
        for (int j = 0; j < QK8_0; j++) y[j] = x[i].qs[j] * d;
    }
}

/* Q8_1 also stores d * sum(q), which the Q4_1/Q5_1 dot products need for the minimum term. */
void ggmlc__quantize_row_q8_1_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT vy, int64_t k) {
    block_q8_1 *y = vy;
    for (int64_t i = 0; i < k / QK8_1; i++, x += QK8_1) {
        float amax;
        signed_absmax(x, QK8_1, &amax);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int sum = 0;
        for (int j = 0; j < QK8_1; j++) {
            y[i].qs[j] = (int8_t)roundf(x[j] * id);
            sum += y[i].qs[j];
        }
        y[i].d = to_fp16(d);
        y[i].s = to_fp16(sum * d);
    }
}

void ggmlc__dequantize_row_q8_1(const void *GGML_RESTRICT vx, float *GGML_RESTRICT y, int64_t k) {
    const block_q8_1 *x = vx;
    for (int64_t i = 0; i < k / QK8_1; i++, y += QK8_1) {
        const float d = fp16(x[i].d);
        for (int j = 0; j < QK8_1; j++) y[j] = x[i].qs[j] * d;
    }
}

/* ------------------------------------------------ scale-search helpers */

static inline float qx_weight(const float *w, float x, int i, int rmse_type) {
    if (w) return w[i];
    switch (rmse_type) {
    case 1:  return x * x;
    case 2:  return 1.0f;
    case 3:  return fabsf(x);
    default: return sqrtf(fabsf(x));
    }
}

/* Weighted least-squares fit of levels for one trial inverse scale: sum w x l and sum w l^2. */
static void qx_fit(int n, int nmax, const float *x, const float *w, int rmse_type, float iscale,
                   int8_t *L, float *sumlx, float *suml2) {
    float slx = 0.0f, sl2 = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = clampi(ggmlc_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        if (L) L[i] = (int8_t)(l + nmax);
        const float wi = qx_weight(w, x[i], i, rmse_type);
        slx += wi * x[i] * l;
        sl2 += wi * l * l;
    }
    *sumlx = slx;
    *suml2 = sl2;
}

/* Try 19 inverse scales around nmax/max and keep the one with the best weighted fit. */
float ggmlc__make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type, const float *w) {
    float amax;
    const float max = signed_absmax(x, n, &amax);
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = -nmax / max;
    if (rmse_type == 0) {
        for (int i = 0; i < n; i++) L[i] = (int8_t)(nmax + clampi(ggmlc_nearest_int(iscale * x[i]), -nmax, nmax - 1));
        return 1.0f / iscale;
    }
    bool return_early = false;
    if (rmse_type < 0) { rmse_type = -rmse_type; return_early = true; }
    float sumlx, suml2;
    qx_fit(n, nmax, x, w, rmse_type, iscale, L, &sumlx, &suml2);
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    if (return_early) return suml2 > 0 ? 0.5f * (scale + 1.0f / iscale) : 1.0f / iscale;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        qx_fit(n, nmax, x, w, rmse_type, iscale, NULL, &sumlx, &suml2);
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            qx_fit(n, nmax, x, w, rmse_type, iscale, L, &sumlx, &suml2);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Weighted error of levels L with scale and min. */
static float qkx_error(int n, const float *x, const float *w, const uint8_t *L, float scale, float min, bool use_mad) {
    float err = 0.0f;
    for (int i = 0; i < n; i++) {
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        err += (w ? w[i] : x[i] * x[i]) * diff;
    }
    return err;
}

/* Scale and min by weighted least squares over nstep+1 trial grids (w NULL: x^2). */
float ggmlc__make_qkx_quants(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min,
                            uint8_t *Laux, float rmin, float rdelta, int nstep, bool use_mad) {
    float min = x[0], max = x[0];
    float sum_w = w ? w[0] : x[0] * x[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float wi = w ? w[i] : x[i] * x[i];
        sum_w += wi;
        sum_x += wi * x[i];
    }
    if (min > 0) min = 0;
    if (max <= min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.0f;
    }
    float iscale = nmax / (max - min);
    float scale = 1.0f / iscale;
    for (int i = 0; i < n; i++) L[i] = (uint8_t)clampi(ggmlc_nearest_int(iscale * (x[i] - min)), 0, nmax);
    float best_err = qkx_error(n, x, w, L, scale, min, use_mad);
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            const int l = clampi(ggmlc_nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            const float wi = w ? w[i] : x[i] * x[i];
            sum_l += wi * l;
            sum_l2 += wi * l * l;
            sum_xl += wi * l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D <= 0) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        const float err = qkx_error(n, x, w, Laux, this_scale, this_min, use_mad);
        if (err < best_err) {
            memcpy(L, Laux, (size_t)n);
            best_err = err;
            scale = this_scale;
            min = this_min;
        }
    }
    *the_min = -min;
    return scale;
}

/* Levels of non-negative values (sub-block scales) in [0, nmax], refined by coordinate descent. */
float ggmlc__make_qp_quants(int n, int nmax, const float *x, uint8_t *L, const float *w) {
    float max = 0;
    for (int i = 0; i < n; i++) max = fmaxf(max, x[i]);
    if (max < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = nmax / max;
    const float scale = 1.0f / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; i++) {
        const float diff = x[i] - scale * ggmlc_nearest_int(iscale * x[i]);
        best_mse += w[i] * diff * diff;
    }
    for (int is = -4; is <= 4; is++) {
        if (is == 0) continue;
        const float iscale_is = (0.1f * is + nmax) / max, scale_is = 1.0f / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; i++) {
            const int l = ggmlc_nearest_int(iscale_is * x[i]);
            const float diff = x[i] - scale_is * (l < nmax ? l : nmax);
            mse += w[i] * diff * diff;
        }
        if (mse < best_mse) { best_mse = mse; iscale = iscale_is; }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = ggmlc_nearest_int(iscale * x[i]);
        L[i] = (uint8_t)(l < nmax ? l : nmax);
        sumlx += w[i] * x[i] * L[i];
        suml2 += w[i] * L[i] * L[i];
    }
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i = 0; i < n; i++) {
            float slx = sumlx - w[i] * x[i] * L[i], sl2 = suml2 - w[i] * L[i] * L[i];
            if (!(slx > 0 && sl2 > 0)) continue;
            int new_l = ggmlc_nearest_int(x[i] * sl2 / slx);
            new_l = new_l < nmax ? new_l : nmax;
            if (new_l == L[i]) continue;
            slx += w[i] * x[i] * new_l;
            sl2 += w[i] * new_l * new_l;
            if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = (uint8_t)new_l;
                sumlx = slx;
                suml2 = sl2;
                n_changed++;
            }
        }
        if (!n_changed) break;
    }
    return suml2 > 0 ? sumlx / suml2 : 0.0f;
}

/* ------------------------------------------- imatrix-weighted Q4/Q5 */

/* Per-value weights: importance times the value's magnitude against the row's spread. */
static void imatrix_weights(const float *x, const float *qw, int n, float sigma2, float *w) {
    for (int j = 0; j < n; j++) w[j] = qw[j] * sqrtf(sigma2 + x[j] * x[j]);
}

static float row_sigma2(const float *x, int64_t n) {
    float sum_x2 = 0;
    for (int64_t j = 0; j < n; j++) sum_x2 += x[j] * x[j];
    return sum_x2 / n;
}

/* Shared driver of the legacy formats: symmetric (Q4_0/Q5_0) or with a min (Q4_1/Q5_1). */
static size_t quantize_legacy(const float *src, void *dst, int64_t nrow, int64_t n_per_row, const float *qw,
                              enum ggml_type type) {
    const size_t row_size = ggml_row_size(type, n_per_row);
    const int nmax = type == GGML_TYPE_Q4_0 ? 8 : type == GGML_TYPE_Q5_0 ? 16 : type == GGML_TYPE_Q4_1 ? 15 : 31;
    char *out = dst;
    for (int64_t r = 0; r < nrow; r++, src += n_per_row, out += row_size) {
        const float sigma2 = row_sigma2(src, n_per_row);
        for (int64_t ib = 0; ib < n_per_row / 32; ib++) {
            const float *xb = src + 32 * ib;
            float w[32], min = 0.0f, d;
            int levels[32];
            imatrix_weights(xb, qw + 32 * ib, 32, sigma2, w);
            if (type == GGML_TYPE_Q4_0 || type == GGML_TYPE_Q5_0) {
                int8_t L[32];
                d = ggmlc__make_qx_quants(32, nmax, xb, L, 1, w);
                for (int j = 0; j < 32; j++) levels[j] = L[j];
            } else {
                uint8_t L[32], Laux[32];
                d = ggmlc__make_qkx_quants(32, nmax, xb, w, L, &min, Laux, -0.9f, 0.05f, 36, false);
                for (int j = 0; j < 32; j++) levels[j] = L[j];
            }
            switch (type) {
            case GGML_TYPE_Q4_0: {
                block_q4_0 *b = (block_q4_0 *)out + ib;
                b->d = to_fp16(d);
                for (int j = 0; j < 16; j++) b->qs[j] = (uint8_t)(levels[j] | levels[j + 16] << 4);
                break;
            }
            case GGML_TYPE_Q4_1: {
                block_q4_1 *b = (block_q4_1 *)out + ib;
                b->d = to_fp16(d);
                b->m = to_fp16(-min);
                for (int j = 0; j < 16; j++) b->qs[j] = (uint8_t)(levels[j] | levels[j + 16] << 4);
                break;
            }
            case GGML_TYPE_Q5_0: {
                block_q5_0 *b = (block_q5_0 *)out + ib;
                b->d = to_fp16(d);
                pack_5bit(levels, b->qs, b->qh);
                break;
            }
            default: {
                block_q5_1 *b = (block_q5_1 *)out + ib;
                b->d = to_fp16(d);
                b->m = to_fp16(-min);
                pack_5bit(levels, b->qs, b->qh);
                break;
            }
            }
        }
    }
    return (size_t)nrow * row_size;
}

#define LEGACY_QUANTIZE(name, TYPE) \
    size_t ggmlc__quantize_##name(const float *src, void *dst, int64_t nrow, int64_t n_per_row, const float *qw) { \
        if (!qw) { \
            ggmlc__quantize_row_##name##_ref(src, dst, nrow * n_per_row); \
            return (size_t)nrow * ggml_row_size(TYPE, n_per_row); \
        } \
        return quantize_legacy(src, dst, nrow, n_per_row, qw, TYPE); \
    }
LEGACY_QUANTIZE(q4_0, GGML_TYPE_Q4_0)
LEGACY_QUANTIZE(q4_1, GGML_TYPE_Q4_1)
LEGACY_QUANTIZE(q5_0, GGML_TYPE_Q5_0)
LEGACY_QUANTIZE(q5_1, GGML_TYPE_Q5_1)
