/*
 * quant-match.c - portable Q8_0 and Q4_0 kernels that sum in ggml's x86
 * orders (see quant-match.h), and the choice of order per product.  The
 * fused multiply-adds are spelled fmaf so that every compiler and CPU gives
 * the same bits as ggml's vfmadd; the SIMD paths (quant-match-avx2.c) must
 * reproduce these results exactly.
 */
#include <math.h>

#include "quant-match.h"
#include "simd.h"

bool cpu_qmatch_type(enum ggml_type type) { return type == GGML_TYPE_Q8_0 || type == GGML_TYPE_Q4_0; }

bool cpu_qmatch_k_type(enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_Q2_K:
    case GGML_TYPE_Q3_K:
    case GGML_TYPE_Q4_K:
    case GGML_TYPE_Q5_K:
    case GGML_TYPE_Q6_K:
    case GGML_TYPE_IQ4_XS: return true;
    default: return false;
    }
}

bool cpu_qmatch_serial_type(enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_Q4_0:
    case GGML_TYPE_Q4_K:
    case GGML_TYPE_IQ4_NL:
    case GGML_TYPE_MXFP4: return true;
    case GGML_TYPE_Q2_K:
        return cpu_simd_features()->avx512f; /* as a native ggml build: only with AVX-512 */
    default: return false;
    }
}

/* Value j (0..31) of a Q4_0 block as a signed level. */
static inline int q4_0_level(const block_q4_0 *x, int j) {
    return (j < 16 ? x->qs[j] & 0xf : x->qs[j - 16] >> 4) - 8;
}

/* Value j (0..31) of a 32-value block of Q4_0, IQ4_NL or MXFP4 as a signed level. */
static inline int block32_level(enum ggml_type type, const void *x, int j) {
    if (type == GGML_TYPE_Q4_0) return q4_0_level(x, j);
    const uint8_t *qs =
        type == GGML_TYPE_IQ4_NL ? ((const block_iq4_nl *)x)->qs : ((const block_mxfp4 *)x)->qs;
    const int8_t *table = type == GGML_TYPE_IQ4_NL ? ggmlc_kvalues_iq4nl : ggmlc_kvalues_mxfp4;
    return table[j < 16 ? qs[j] & 0xf : qs[j - 16] >> 4];
}

static inline float block32_scale(enum ggml_type type, const void *x) {
    if (type == GGML_TYPE_MXFP4) return ggmlc_e8m0_to_fp32_half(((const block_mxfp4 *)x)->e);
    return ggmlc_fp16_to_fp32(type == GGML_TYPE_Q4_0 ? ((const block_q4_0 *)x)->d
                                                     : ((const block_iq4_nl *)x)->d);
}

/* Weight block b of a row (Q8_0, Q4_0, IQ4_NL, MXFP4) as 32 signed levels. */
static inline void weight_levels(enum ggml_type type, const void *row, int b, int8_t out[QK8_0]) {
    const void *x = (const char *)row + b * ggml_type_size(type);
    if (type == GGML_TYPE_Q8_0) {
        memcpy(out, ((const block_q8_0 *)x)->qs, QK8_0);
    } else {
        for (int j = 0; j < QK8_0; j++) out[j] = (int8_t)block32_level(type, x, j);
    }
}

static inline float weight_scale(enum ggml_type type, const void *row, int b) {
    const void *x = (const char *)row + b * ggml_type_size(type);
    return type == GGML_TYPE_Q8_0 ? ggmlc_fp16_to_fp32(((const block_q8_0 *)x)->d)
                                  : block32_scale(type, x);
}

/* acc[k] += d * (sum of x[4k..4k+3] * y[4k..4k+3]), fused. */
static inline void add_block_lanes(const int8_t *x, const int8_t *y, float d, float acc[8]) {
    for (int k = 0; k < 8; k++) {
        int lane = 0;
        for (int j = 4 * k; j < 4 * k + 4; j++) lane += x[j] * y[j];
        acc[k] = fmaf(d, (float)lane, acc[k]);
    }
}

static void lanes_rows(enum ggml_type type, int n, const void *vx, const struct cpu_q8_rows *y, float *s,
                       size_t s_stride) {
    float acc[CPU_QUANT_MAX_ROWS][8] = {{0}};
    for (int b = 0; b < n / QK8_0; b++) {
        int8_t w[QK8_0];
        weight_levels(type, vx, b, w);
        const float dx = weight_scale(type, vx, b);
        for (int r = 0; r < y->nrows; r++)
            add_block_lanes(w, y->qs + r * y->qs_stride + (size_t)b * QK8_0, dx * y->d[r * y->d_stride + b], acc[r]);
    }
    for (int r = 0; r < y->nrows; r++) s[r * s_stride] = cpu_sum_lanes8(acc[r]);
}

static void lanes_rows_q8_0(int n, const void *x, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    lanes_rows(GGML_TYPE_Q8_0, n, x, y, s, s_stride);
}

static void lanes_rows_q4_0(int n, const void *x, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    lanes_rows(GGML_TYPE_Q4_0, n, x, y, s, s_stride);
}

static void lanes_dot(enum ggml_type type, int n, float *s, const void *vx, const void *vy) {
    const block_q8_0 *y = vy;
    float acc[8] = {0};
    for (int b = 0; b < n / QK8_0; b++) {
        int8_t w[QK8_0];
        weight_levels(type, vx, b, w);
        add_block_lanes(w, y[b].qs, weight_scale(type, vx, b) * ggmlc_fp16_to_fp32(y[b].d), acc);
    }
    *s = cpu_sum_lanes8(acc);
}

static void lanes_rows_iq4_nl(int n, const void *x, const struct cpu_q8_rows *y, float *s,
                              size_t s_stride) {
    lanes_rows(GGML_TYPE_IQ4_NL, n, x, y, s, s_stride);
}

static void lanes_dot_q8_0(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    lanes_dot(GGML_TYPE_Q8_0, n, s, vx, vy);
}

static void lanes_dot_q4_0(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    lanes_dot(GGML_TYPE_Q4_0, n, s, vx, vy);
}

/* One activation row's Q8_0 blocks where they lie: block b's values at qs + b * qs_step, its
 * scale the float d[b] (planes) or the f16 at dh + b * dh_step bytes (blocks). */
struct q8_blocks {
    const int8_t *qs;
    size_t qs_step;
    const float *d;
    const char *dh;
    size_t dh_step;
};

static inline float q8_scale(const struct q8_blocks *y, int b) {
    if (y->d) return y->d[b];
    ggml_fp16_t h;
    memcpy(&h, y->dh + (size_t)b * y->dh_step, sizeof h);
    return ggmlc_fp16_to_fp32(h);
}

/* ggml's x86 vec_dot of IQ4_NL and MXFP4 (quant-match.h): block pairs, the even blocks in
 * one accumulator of eight lanes and the odd ones in another, the lanes of their sum added
 * as cpu_sum_lanes8; an odd last block one scalar FMA. */
static float vec2(enum ggml_type type, int n, const void *vx, const struct q8_blocks *y) {
    float acc[2][8] = {{0}}, sum[8];
    const int nb = n / QK8_0;
    int b = 0;
    for (; b + 1 < nb; b += 2)
        for (int h = 0; h < 2; h++) {
            int8_t w[QK8_0];
            weight_levels(type, vx, b + h, w);
            add_block_lanes(w, y->qs + (size_t)(b + h) * y->qs_step,
                            weight_scale(type, vx, b + h) * q8_scale(y, b + h), acc[h]);
        }
    for (int k = 0; k < 8; k++) sum[k] = acc[0][k] + acc[1][k];
    float r = cpu_sum_lanes8(sum);
    if (b < nb) {
        int8_t w[QK8_0];
        weight_levels(type, vx, b, w);
        int isum = 0;
        for (int j = 0; j < QK8_0; j++) isum += w[j] * y->qs[(size_t)b * y->qs_step + j];
        r = fmaf(weight_scale(type, vx, b) * q8_scale(y, b), (float)isum, r);
    }
    return r;
}

static void vec2_rows(enum ggml_type type, int n, const void *vx, const struct cpu_q8_rows *y,
                      float *s, size_t s_stride) {
    for (int r = 0; r < y->nrows; r++) {
        const struct q8_blocks yr = {y->qs + r * y->qs_stride, QK8_0, y->d + r * y->d_stride, NULL,
                                     0};
        s[r * s_stride] = vec2(type, n, vx, &yr);
    }
}

static void vec2_dot(enum ggml_type type, int n, float *s, const void *vx, const void *vy) {
    const block_q8_0 *y = vy;
    const struct q8_blocks yb = {y->qs, sizeof *y, NULL, (const char *)&y->d, sizeof *y};
    *s = vec2(type, n, vx, &yb);
}

#define VEC2(type, name)                                                                      \
    static void vec2_rows_##name(int n, const void *x, const struct cpu_q8_rows *y, float *s, \
                                 size_t s_stride) {                                           \
        vec2_rows(type, n, x, y, s, s_stride);                                                \
    }                                                                                         \
    static void vec2_dot_##name(int n, float *s, size_t bs, const void *vx, size_t bx,        \
                                const void *vy, size_t by, int nrc) {                         \
        vec2_dot(type, n, s, vx, vy);                                                         \
    }
VEC2(GGML_TYPE_IQ4_NL, iq4_nl)
VEC2(GGML_TYPE_MXFP4, mxfp4)

cpu_vec_dot_rows_t cpu_qmatch_vec2_rows_on_path(enum ggml_type type, enum cpu_quant_path path) {
    if (path == CPU_QUANT_AVX512VNNI && cpu_qmatch_vec2_rows_vnni(type))
        return cpu_qmatch_vec2_rows_vnni(type);
    if (path != CPU_QUANT_GENERIC && cpu_qmatch_vec2_rows_avx2(type))
        return cpu_qmatch_vec2_rows_avx2(type);
    return type == GGML_TYPE_IQ4_NL  ? vec2_rows_iq4_nl
           : type == GGML_TYPE_MXFP4 ? vec2_rows_mxfp4
                                     : NULL;
}

cpu_vec_dot_rows_t cpu_qmatch_vec2_rows(enum ggml_type type) {
    return cpu_qmatch_vec2_rows_on_path(type, cpu_current_quant_path());
}

void cpu_qmatch_fill_generic(cpu_vec_dot_table dots, cpu_vec_dot_rows_table rows) {
    dots[GGML_TYPE_Q8_0] = lanes_dot_q8_0;
    dots[GGML_TYPE_Q4_0] = lanes_dot_q4_0;
    rows[GGML_TYPE_Q8_0] = lanes_rows_q8_0;
    rows[GGML_TYPE_Q4_0] = lanes_rows_q4_0;
    dots[GGML_TYPE_IQ4_NL] = vec2_dot_iq4_nl;
    dots[GGML_TYPE_MXFP4] = vec2_dot_mxfp4;
    rows[GGML_TYPE_IQ4_NL] = lanes_rows_iq4_nl; /* tinyBLAS: ggml's mul_mat of 2+ columns */
    rows[GGML_TYPE_MXFP4] = vec2_rows_mxfp4;
}

float cpu_qmatch_serial_block32(enum ggml_type type, const void *x, const int8_t *qy, float dy,
                                float acc) {
    int isum = 0;
    for (int j = 0; j < QK8_0; j++) isum += block32_level(type, x, j) * qy[j];
    return fmaf((float)isum, block32_scale(type, x) * dy, acc);
}

/* Value e (0..255) of super-block i of a Q4_K or Q2_K row: its level (unsigned) and scale;
 * the min of its 16 values g (0..15). */
static void serial_k_value(enum ggml_type type, const void *vx, int i, int e, int *level,
                           int *scale) {
    if (type == GGML_TYPE_Q2_K) {
        const block_q2_K *x = (const block_q2_K *)vx + i;
        *level = cpu_k_low2(x->qs, e);
        *scale = x->scales[e / 16] & 0xf;
        return;
    }
    const block_q4_K *x = (const block_q4_K *)vx + i;
    const int j = e / 32, b = x->qs[32 * (j / 2) + e % 32];
    int m;
    cpu_k4_scale_min(x->scales, j, scale, &m);
    *level = j % 2 ? b >> 4 : b & 0xf;
}

static int serial_k_min16(enum ggml_type type, const void *vx, int i, int g) {
    if (type == GGML_TYPE_Q2_K) return ((const block_q2_K *)vx)[i].scales[g] >> 4;
    int sc, m;
    cpu_k4_scale_min(((const block_q4_K *)vx)[i].scales, g / 2, &sc, &m);
    return m;
}

void cpu_qmatch_serial_superblock(enum ggml_type type, const void *x, const block_q8_K *yb,
                                  int step, float *acc, float *accm) {
    /* d and dmin lead both block types */
    const ggml_fp16_t *h =
        type == GGML_TYPE_Q4_K ? &((const block_q4_K *)x)->d : &((const block_q2_K *)x)->d;
    const float d = ggmlc_fp16_to_fp32(h[0]), dmin = ggmlc_fp16_to_fp32(h[1]);
    for (int e0 = 0; e0 < QK_K; e0 += step) {
        int isum = 0, msum = 0;
        for (int e = e0; e < e0 + step; e++) {
            int level, scale;
            serial_k_value(type, x, 0, e, &level, &scale);
            isum += scale * level * yb->qs[e];
        }
        for (int g = e0 / 16; g < (e0 + step) / 16; g++)
            msum += serial_k_min16(type, x, 0, g) * yb->bsums[g];
        *acc = fmaf((float)isum, d * yb->d, *acc);
        *accm = fmaf((float)msum, dmin * yb->d, *accm);
    }
}

cpu_vec_dot_wrows_t cpu_qmatch_wrows_on_path(enum ggml_type type, enum cpu_quant_path path) {
    if (path == CPU_QUANT_AVX512VNNI && cpu_qmatch_wrows_vnni(type))
        return cpu_qmatch_wrows_vnni(type);
    if (path != CPU_QUANT_GENERIC) return cpu_qmatch_wrows_avx2(type);
    return NULL;
}

cpu_vec_dot_wrows_t cpu_qmatch_wrows(enum ggml_type type) {
    return cpu_qmatch_wrows_on_path(type, cpu_current_quant_path());
}

/* ------------------------------------------------------- column layout */

size_t cpu_q8_cols_size(int64_t nblocks, int width) {
    const size_t per_block = (size_t)width * (QK8_0 + 8 * sizeof(int32_t) + sizeof(float));
    return GGML_PAD((size_t)nblocks * per_block, 64);
}

struct cpu_q8_cols cpu_q8_cols_at(void *mem, int64_t nblocks, int width) {
    char *p = mem;
    struct cpu_q8_cols c;
    c.width = width;
    c.qs = (int8_t *)p;
    c.lane_corr = (int32_t *)(p += (size_t)nblocks * width * QK8_0);
    c.d = (float *)(p + (size_t)nblocks * width * 8 * sizeof(int32_t));
    return c;
}

void cpu_q8_0_to_cols(const block_q8_0 *blocks, int64_t nblocks, int c, const struct cpu_q8_cols *cols) {
    const int w = cols->width;
    for (int64_t b = 0; b < nblocks; b++) {
        for (int k = 0; k < 8; k++) {
            int32_t lane = 0;
            for (int j = 0; j < 4; j++) {
                const int8_t v = blocks ? blocks[b].qs[4 * k + j] : 0;
                cols->qs[(8 * b + k) * 4 * w + 4 * c + j] = v;
                lane += v;
            }
            cols->lane_corr[(8 * b + k) * w + c] = -128 * lane;
        }
        cols->d[w * b + c] = blocks ? ggmlc_fp16_to_fp32(blocks[b].d) : 0.0f;
    }
}

cpu_vec_dot_cols_t cpu_qmatch_cols_on_path(enum ggml_type type, enum cpu_quant_path path) {
    switch (path) {
    case CPU_QUANT_AVX512VNNI: return cpu_qmatch_cols_vnni(type);
    case CPU_QUANT_AVX2:       return cpu_qmatch_cols_avx2(type);
    default:                   return NULL;
    }
}

cpu_vec_dot_cols_t cpu_qmatch_cols(enum ggml_type type) {
    return cpu_qmatch_cols_on_path(type, cpu_current_quant_path());
}

cpu_vec_dot_cols_t cpu_qmatch_cols_wide_on_path(enum ggml_type type, enum cpu_quant_path path) {
    return path == CPU_QUANT_AVX512VNNI ? cpu_qmatch_cols_wide_vnni(type) : NULL;
}

cpu_vec_dot_cols_t cpu_qmatch_cols_wide(enum ggml_type type) {
    return cpu_qmatch_cols_wide_on_path(type, cpu_current_quant_path());
}
