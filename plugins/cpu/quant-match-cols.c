/*
 * quant-match-cols.c - AVX-512 VNNI column kernels of Q8_0 and Q4_0 (see
 * quant-match.h): one weight row against a group of eight activation rows
 * laid out as struct cpu_q8_cols, lane c of every register being row c.
 * Two weight rows share every load of the activations.
 *
 * Eight-lane order (Q8_0, and Q4_0 matrices outside a CPU_REPACK buffer): ggml's
 * lane k of a block is the sum of its values 4k..4k+3 times the activation's;
 * here one vpdpbusd gives that lane for all eight activation rows, so accumulator k
 * holds lane k of every row and the final pairing of the lanes is done for
 * all rows at once.  vpdpbusd multiplies unsigned by signed bytes: the weight
 * levels enter as level + 128 and the accumulation starts from -128 times the
 * activations' four-value sums (cpu_q8_cols.lane_corr), exact int32 throughout.
 */
#include "quant-match.h"

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#include <immintrin.h>

#include "quant-dot-x86.h"
#include "quant-match-cols-x86.h"

/* The 32 levels of a weight block + 128 as unsigned bytes, in value order. */
static inline __m256i biased_q8_0(const void *row, int b) {
    return _mm256_xor_si256(qd_load32(((const block_q8_0 *)row)[b].qs), _mm256_set1_epi8((char)0x80));
}
static inline __m256i biased_q4_0(const void *row, int b) {
    return _mm256_add_epi8(qd_unpack_nibbles(((const block_q4_0 *)row)[b].qs), _mm256_set1_epi8(120));
}
static inline float scale_q8_0(const void *row, int b) { return qd_h2f(((const block_q8_0 *)row)[b].d); }
static inline float scale_q4_0(const void *row, int b) { return qd_h2f(((const block_q4_0 *)row)[b].d); }

/* Four-byte group k of a block's bytes (stored at w) in every lane: a broadcast load, which
 * costs no shuffle (vpermd from a register made these kernels shuffle-bound). */
static inline __m256i group(const int32_t w[8], int k) { return _mm256_set1_epi32(w[k]); }

/* nw (1 or 2) weight rows at once: each load of the activations' values and corrections
 * serves both rows (the loads, not the arithmetic, bound these kernels). */
#define COLS_LANES(type, BIASED, SCALE, BLOCK)                                                                       \
    static inline __attribute__((always_inline)) void cols_lanes_##type##_nw(                                        \
        int n, const char *x, size_t x_stride, const struct cpu_q8_rows *y, float *s, size_t s_stride, const int nw) { \
        const struct cpu_q8_cols *c = y->cols;                                                                       \
        __m256 acc[2][8];                                                                                            \
        for (int j = 0; j < nw; j++)                                                                                 \
            for (int k = 0; k < 8; k++) acc[j][k] = _mm256_setzero_ps();                                             \
        for (int b = 0; b < n / QK8_0; b++) {                                                                        \
            int32_t w[2][8] __attribute__((aligned(32)));                                                            \
            __m256 d[2];                                                                                             \
            for (int j = 0; j < nw; j++) {                                                                           \
                const char *row = x + j * x_stride;                                                                  \
                _mm_prefetch(row + (size_t)b * sizeof(BLOCK) + COLS_PREFETCH, _MM_HINT_T0);                          \
                _mm256_store_si256((__m256i *)w[j], BIASED(row, b));                                                 \
                d[j] = _mm256_mul_ps(_mm256_set1_ps(SCALE(row, b)), _mm256_loadu_ps(c->d + 8 * (size_t)b));          \
            }                                                                                                        \
            QD_UNROLL_ROWS for (int k = 0; k < 8; k++) {                                                             \
                const size_t g = 8 * (size_t)b + k; /* group k of block b */                                         \
                const __m256i corr = _mm256_loadu_si256((const __m256i *)(c->lane_corr + g * 8));                    \
                const __m256i q = qd_load32(c->qs + g * 32);                                                         \
                for (int j = 0; j < nw; j++) {                                                                       \
                    const __m256i lane = _mm256_dpbusd_epi32(corr, group(w[j], k), q); /* ggml's lane k, 8 rows */   \
                    acc[j][k] = _mm256_fmadd_ps(d[j], _mm256_cvtepi32_ps(lane), acc[j][k]);                          \
                }                                                                                                    \
            }                                                                                                        \
        }                                                                                                            \
        for (int j = 0; j < nw; j++) { /* ggml's pairing of the lanes: ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)) */  \
            const __m256 even = _mm256_add_ps(_mm256_add_ps(acc[j][0], acc[j][4]), _mm256_add_ps(acc[j][2], acc[j][6])); \
            const __m256 odd = _mm256_add_ps(_mm256_add_ps(acc[j][1], acc[j][5]), _mm256_add_ps(acc[j][3], acc[j][7])); \
            cols_store_rows(_mm256_add_ps(even, odd), s + j, s_stride, y->nrows);                                    \
        }                                                                                                            \
    }                                                                                                                \
    static void cols_lanes_##type(int n, const void *x, size_t x_stride, int nw, const struct cpu_q8_rows *y, float *s, \
                                  size_t s_stride) {                                                                 \
        if (nw == 2) cols_lanes_##type##_nw(n, x, x_stride, y, s, s_stride, 2);                                      \
        else cols_lanes_##type##_nw(n, x, x_stride, y, s, s_stride, 1);                                              \
    }

COLS_LANES(q8_0, biased_q8_0, scale_q8_0, block_q8_0)
COLS_LANES(q4_0, biased_q4_0, scale_q4_0, block_q4_0)

/* ------------------------------------------------------- wide groups
 *
 * Q8_0 against a group of CPU_QMATCH_WIDE activation rows, lane c of every 512-bit
 * register being row c: the same arithmetic as cols_lanes_q8_0 (accumulator k of a weight
 * row holds ggml's lane k of all 16 rows), half the instructions per product, which is
 * what bound the 256-bit kernels (six per cycle needed to feed the two pipes that run the
 * vpdpbusd and the FMAs).  Up to WIDE_WROWS weight rows share each load of the group.
 * Measured on the H200 host's Xeon (AVX-512 VNNI; wall time, one sample each, 2026-12-03
 * 14:44 UTC), Q8_0, m = 512, ms, 8-row kernels -> these (2 weight rows; 3 rows in brackets):
 * 2 threads 768 x 768 7.5 -> 4.6 (6.2), 2048 x 768 14.4 -> 11.1 (17.3), 768 x 2048 17.1 ->
 * 13.0 (14.3); 1 thread 768 x 2048 23.8 -> 19.8 (19.9), 4096 x 4096 256 -> 188 (181), but
 * 768 x 768 8.8 -> 10.1 (12.9) and 2048 x 768 21.8 -> 31.8 (19.5); m = 136: 5.6 -> 4.9. */
#define WIDE_WROWS CPU_QMATCH_WIDE_WROWS

/* Lanes 0 .. nr - 1 of v to s[c * s_stride]. */
static inline void store_rows_wide(__m512 v, float *s, size_t s_stride, int nr) {
    float out[CPU_QMATCH_WIDE];
    _mm512_storeu_ps(out, v);
    for (int c = 0; c < nr; c++) s[c * s_stride] = out[c];
}

static inline __attribute__((always_inline)) void wide_lanes_q8_0_nw(int n, const char *x, size_t x_stride,
                                                                     const struct cpu_q8_rows *y, float *s,
                                                                     size_t s_stride, const int nw) {
    const struct cpu_q8_cols *c = y->cols;
    __m512 acc[WIDE_WROWS][8];
    for (int j = 0; j < nw; j++)
        for (int k = 0; k < 8; k++) acc[j][k] = _mm512_setzero_ps();
    for (int b = 0; b < n / QK8_0; b++) {
        int32_t w[WIDE_WROWS][8] __attribute__((aligned(32)));
        __m512 d[WIDE_WROWS];
        const __m512 dy = _mm512_loadu_ps(c->d + CPU_QMATCH_WIDE * (size_t)b);
        for (int j = 0; j < nw; j++) {
            const char *row = x + j * x_stride;
            _mm_prefetch(row + (size_t)b * sizeof(block_q8_0) + COLS_PREFETCH, _MM_HINT_T0);
            _mm256_store_si256((__m256i *)w[j], biased_q8_0(row, b));
            d[j] = _mm512_mul_ps(_mm512_set1_ps(scale_q8_0(row, b)), dy);
        }
        QD_UNROLL_ROWS for (int k = 0; k < 8; k++) {
            const size_t g = 8 * (size_t)b + k; /* group k of block b */
            const __m512i corr = _mm512_loadu_si512(c->lane_corr + g * CPU_QMATCH_WIDE);
            const __m512i q = _mm512_loadu_si512(c->qs + g * 4 * CPU_QMATCH_WIDE);
            for (int j = 0; j < nw; j++) {
                const __m512i lane = _mm512_dpbusd_epi32(corr, _mm512_set1_epi32(w[j][k]), q); /* ggml's lane k, 16 rows */
                acc[j][k] = _mm512_fmadd_ps(d[j], _mm512_cvtepi32_ps(lane), acc[j][k]);
            }
        }
    }
    for (int j = 0; j < nw; j++) { /* ggml's pairing of the lanes: ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)) */
        const __m512 even = _mm512_add_ps(_mm512_add_ps(acc[j][0], acc[j][4]), _mm512_add_ps(acc[j][2], acc[j][6]));
        const __m512 odd = _mm512_add_ps(_mm512_add_ps(acc[j][1], acc[j][5]), _mm512_add_ps(acc[j][3], acc[j][7]));
        store_rows_wide(_mm512_add_ps(even, odd), s + j, s_stride, y->nrows);
    }
}

static void wide_lanes_q8_0(int n, const void *x, size_t x_stride, int nw, const struct cpu_q8_rows *y, float *s,
                            size_t s_stride) {
    for (int j = 0; j < nw; j += WIDE_WROWS) {
        const char *rows = (const char *)x + j * x_stride;
        switch (nw - j < WIDE_WROWS ? nw - j : WIDE_WROWS) {
        case 1:  wide_lanes_q8_0_nw(n, rows, x_stride, y, s + j, s_stride, 1); break;
        case 2:  wide_lanes_q8_0_nw(n, rows, x_stride, y, s + j, s_stride, 2); break;
        default: wide_lanes_q8_0_nw(n, rows, x_stride, y, s + j, s_stride, WIDE_WROWS); break;
        }
    }
}

cpu_vec_dot_cols_t cpu_qmatch_cols_wide_vnni(enum ggml_type type) {
    return type == GGML_TYPE_Q8_0 ? wide_lanes_q8_0 : NULL;
}

cpu_vec_dot_cols_t cpu_qmatch_cols_vnni(enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_Q8_0: return cols_lanes_q8_0;
    case GGML_TYPE_Q4_0: return cols_lanes_q4_0;
    default:             return NULL;
    }
}

#else
cpu_vec_dot_cols_t cpu_qmatch_cols_vnni(enum ggml_type type) { (void)type; return NULL; }
cpu_vec_dot_cols_t cpu_qmatch_cols_wide_vnni(enum ggml_type type) { (void)type; return NULL; }
#endif
