/*
 * quant-match-cols-avx2.c - the column kernels of Q8_0 and Q4_0 (see
 * quant-match.h) for CPUs with AVX2 but not AVX-512 VNNI: one weight row
 * against a group of up to eight activation rows, each weight block decoded
 * once for all of them.
 *
 * Block-serial order (repacked Q4_0) reads the group's interleaved layout,
 * lane c of every register being row c: the four nibbles of group k of a block
 * are broadcast to all lanes, and maddubs(nibbles, y) needs no sign (the
 * nibbles are unsigned) and gives int16 pairs of at most 15 * 127 * 2; the
 * eight groups of a block add up in int16 (at most 8 * 3810 = 30480, exact),
 * one madd gives every row's block sum, corrected by -8 times the activations'
 * block sums, and each block is one FMA per row as in ggml.  Per block this
 * is about 35 vector operations for eight rows, where the multi-row kernel
 * takes about 8 per row (each row's block sum is a horizontal sum).
 *
 * Measured (Zen 3 VM, AVX2; one thread, CPU time, 7168 x 4096 weights streamed,
 * best of 7 with the kernels alternating in one process, loaded machine,
 * 2026-12-03 17:45 UTC), ms at 8 / 4 / 3 / 2 rows, this file's kernel against
 * the multi-row one: block-serial Q4_0 3.95 / 4.0 / 3.97 / 3.98 against
 * 11.4 / 5.9 / 4.5 / 3.2 (one row: 2.1); eight-lane Q8_0 6.7 against 7.2 at 8
 * rows, 4.2 against 4.6 at 5; eight-lane Q4_0 6.9 against 8.0 at 8 rows.
 * Spelling the eight-lane products with int16 activations and two madd (no
 * sign) was 1.1-1.2x slower; broadcasting the weight groups by loads from a
 * stored copy of the block instead of shuffles, 1.4x slower.
 *
 * Eight-lane order (Q8_0, and Q4_0 matrices ggml does not repack): here the
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
static inline float scale_q8_0(const void *row, int b) { return qd_h2f(((const block_q8_0 *)row)[b].d); }
static inline float scale_q4_0(const void *row, int b) { return qd_h2f(((const block_q4_0 *)row)[b].d); }

/* Dword k of a block's 32 bytes in all lanes, from its two halves each in both 128-bit lanes
 * (a shuffle: broadcast loads from a stored copy of the block waited on store forwarding,
 * 1.4x slower). */
static inline __m256i splat_dword(const __m256i halves[2], int k) {
    const __m256i h = halves[k / 4];
    switch (k % 4) { /* the shuffle takes an immediate: a constant per case (k is one once unrolled) */
    case 0: return _mm256_shuffle_epi32(h, 0x00);
    case 1: return _mm256_shuffle_epi32(h, 0x55);
    case 2: return _mm256_shuffle_epi32(h, 0xaa);
    default: return _mm256_shuffle_epi32(h, 0xff);
    }
}

/* A Q4_0 block's nibbles as its two halves of 16 unsigned values, each in both 128-bit lanes:
 * values 0-15 (the low nibbles) and 16-31 (the high ones). */
static inline void nibble_halves(const uint8_t *qs, __m256i halves[2]) {
    const __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs)), m = _mm256_set1_epi8(0x0f);
    halves[0] = _mm256_and_si256(b, m);
    halves[1] = _mm256_and_si256(_mm256_srli_epi16(b, 4), m);
}

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

/* Block-serial Q4_0, nw (1 or 2) weight rows sharing each load of the activations. */
static inline __attribute__((always_inline)) void cols_serial_q4_0_nw(int n, const char *x, size_t x_stride,
                                                                      const struct cpu_q8_rows *y, float *s,
                                                                      size_t s_stride, const int nw) {
    const struct cpu_q8_cols *c = y->cols;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int b = 0; b < n / QK8_0; b++) {
        __m256i u[2][2], even[2], odd[2]; /* two int16 partial sums per row: half the dependency chain */
        for (int j = 0; j < nw; j++) {
            const block_q4_0 *row = (const block_q4_0 *)(x + j * x_stride);
            _mm_prefetch((const char *)(row + b) + COLS_PREFETCH, _MM_HINT_T0);
            nibble_halves(row[b].qs, u[j]);
            even[j] = odd[j] = _mm256_setzero_si256();
        }
        QD_UNROLL_ROWS for (int k = 0; k < 8; k += 2) {
            const __m256i q0 = qd_load32(c->qs + (8 * (size_t)b + k) * 32), q1 = qd_load32(c->qs + (8 * (size_t)b + k + 1) * 32);
            for (int j = 0; j < nw; j++) {
                even[j] = _mm256_add_epi16(even[j], _mm256_maddubs_epi16(splat_dword(u[j], k), q0));
                odd[j] = _mm256_add_epi16(odd[j], _mm256_maddubs_epi16(splat_dword(u[j], k + 1), q1));
            }
        }
        const __m256i sums8 = _mm256_slli_epi32(_mm256_loadu_si256((const __m256i *)(c->sums + 8 * (size_t)b)), 3);
        const __m256 dy = _mm256_loadu_ps(c->d + 8 * (size_t)b);
        for (int j = 0; j < nw; j++) {
            const __m256i isum = _mm256_sub_epi32(_mm256_madd_epi16(_mm256_add_epi16(even[j], odd[j]), ones), sums8);
            const __m256 d = _mm256_mul_ps(_mm256_set1_ps(qd_h2f(((const block_q4_0 *)(x + j * x_stride))[b].d)), dy);
            acc[j] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc[j]);
        }
    }
    for (int j = 0; j < nw; j++) cols_store_rows(acc[j], s + j, s_stride, y->nrows);
}

static void cols_serial_q4_0(int n, const void *x, size_t x_stride, int nw, const struct cpu_q8_rows *y, float *s,
                             size_t s_stride) {
    if (nw == 2) cols_serial_q4_0_nw(n, x, x_stride, y, s, s_stride, 2);
    else cols_serial_q4_0_nw(n, x, x_stride, y, s, s_stride, 1);
}

cpu_vec_dot_cols_t cpu_qmatch_cols_avx2(enum ggml_type type, bool serial) {
    switch (type) {
    case GGML_TYPE_Q8_0: return cols_lanes_q8_0;
    case GGML_TYPE_Q4_0: return serial ? cols_serial_q4_0 : cols_lanes_q4_0;
    default:             return NULL;
    }
}

#else
cpu_vec_dot_cols_t cpu_qmatch_cols_avx2(enum ggml_type type, bool serial) { (void)type, (void)serial; return NULL; }
#endif
