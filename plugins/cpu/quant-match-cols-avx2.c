/*
 * quant-match-cols-avx2.c - the column kernels of Q8_0 and Q4_0 (see
 * quant-match.h) for CPUs with AVX2 but not AVX-512 VNNI: one weight row
 * against a group of up to eight activation rows, each weight block decoded
 * once for all of them.
 *
 * Eight-lane order (Q8_0, and Q4_0 matrices outside a CPU_REPACK buffer): the
 * interleaved layout does not pay on AVX2 (without vpdpbusd, a group of
 * eight rows costs a broadcast, sign, maddubs, madd, conversion and FMA, no
 * fewer than one row does in the multi-row kernel).  So each row's products
 * are the multi-row kernel's, ggml's vec_dot lanes (maddubs(|w|, sign(y, w)),
 * madd with ones, lane k summing values 4k..4k+3, acc_k = fma(dx * dy, lane_k,
 * acc_k), ggml's horizontal sum), but the scale products dx * dy of all eight
 * rows are one vector product per block from the group's scale plane, stored a
 * pass ahead and read with broadcast loads.
 */
#include "quant-match.h"

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c")
#include <immintrin.h>

#include "quant-dot-x86.h"
#include "quant-match-cols-x86.h"

static inline __m256i levels_q8_0(const void *row, int b) { return qd_levels_q8_0((const block_q8_0 *)row + b); }
static inline __m256i levels_q4_0(const void *row, int b) { return qd_levels_q4_0((const block_q4_0 *)row + b); }
static inline float scale_q8_0(const void *row, int b) { return qd_h2f_lead((const block_q8_0 *)row + b); }
static inline float scale_q4_0(const void *row, int b) { return qd_h2f_lead((const block_q4_0 *)row + b); }

/* Blocks per pass of the eight-lane kernels: their scale products dx * dy take 32 bytes each. */
#define LANES_CHUNK 64

/* The eight-lane kernel body for nr (constant) rows: each row's products as in the multi-row
 * kernel (values from the planes y->qs), the block scales of all rows multiplied at once from
 * the group's scale plane (one vector product per block) and stored a pass ahead, so each row
 * takes its product with a broadcast load. */
#define COLS_LANES_AVX2(type, LEVELS, SCALE, BLOCK)                                                                 \
    static inline __attribute__((always_inline)) void lanes_row_##type##_nr(int n, const void *vrow,              \
                                                                          const struct cpu_q8_rows *y, float *s,    \
                                                                          size_t s_stride, const int nr) {         \
        const char *row = vrow;                                                                                     \
        const __m256i ones = _mm256_set1_epi16(1);                                                                  \
        __m256 acc[CPU_QUANT_MAX_ROWS];                                                                             \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps();                                  \
        for (int b0 = 0; b0 < n / QK8_0; b0 += LANES_CHUNK) {                                                       \
            const int b1 = b0 + LANES_CHUNK < n / QK8_0 ? b0 + LANES_CHUNK : n / QK8_0;                             \
            float d[LANES_CHUNK][8] __attribute__((aligned(32)));                                                   \
            for (int b = b0; b < b1; b++)                                                                           \
                _mm256_store_ps(d[b - b0], _mm256_mul_ps(_mm256_set1_ps(SCALE(row, b)), _mm256_loadu_ps(y->cols->d + 8 * (size_t)b))); \
            for (int b = b0; b < b1; b++) {                                                                         \
                _mm_prefetch(row + (size_t)b * sizeof(BLOCK) + COLS_PREFETCH, _MM_HINT_T0);                         \
                const __m256i w = LEVELS(row, b), w_abs = _mm256_sign_epi8(w, w);                                   \
                QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                                       \
                    const __m256i q = qd_load32(y->qs + r * y->qs_stride + (size_t)b * QK8_0);                      \
                    const __m256i lane = _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs, _mm256_sign_epi8(q, w)), ones); \
                    acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(&d[b - b0][r]), _mm256_cvtepi32_ps(lane), acc[r]); \
                }                                                                                                   \
            }                                                                                                       \
        }                                                                                                           \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) s[r * s_stride] = qd_hsum_ps(acc[r]);                          \
    }                                                                                                               \
    QD_ROWS_DISPATCH(lanes_row_##type)                                                                              \
    static void cols_lanes_##type(int n, const void *x, size_t x_stride, int nw, const struct cpu_q8_rows *y, float *s, \
                                  size_t s_stride) {                                                                \
        for (int j = 0; j < nw; j++) lanes_row_##type(n, (const char *)x + j * x_stride, y, s + j, s_stride);       \
    }

COLS_LANES_AVX2(q8_0, levels_q8_0, scale_q8_0, block_q8_0)
COLS_LANES_AVX2(q4_0, levels_q4_0, scale_q4_0, block_q4_0)

cpu_vec_dot_cols_t cpu_qmatch_cols_avx2(enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_Q8_0: return cols_lanes_q8_0;
    case GGML_TYPE_Q4_0: return cols_lanes_q4_0;
    default:             return NULL;
    }
}

#else
cpu_vec_dot_cols_t cpu_qmatch_cols_avx2(enum ggml_type type) { (void)type; return NULL; }
#endif
