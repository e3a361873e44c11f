/*
 * quant-match-avx2.c - AVX2 + FMA Q8_0, Q4_0, IQ4_NL and MXFP4 kernels in ggml's x86 orders
 * (quant-match.h).  The eight lanes of a 256-bit register are ggml's eight
 * lanes: maddubs + madd (exact for levels within +-127, as ggml's sign trick
 * needs too) give each lane the integer sum of four products; compiled again
 * with QMATCH_VNNI (quant-match-vnni.c), one vpdpbusd does.
 */
#include "quant-match.h"

#if defined(__x86_64__)
#ifdef QMATCH_VNNI /* quant-match-vnni.c: the same kernels with vpdpbusd */
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#define QMATCH_FILL     cpu_qmatch_fill_avx512vnni
#define QMATCH_WROWS_OF cpu_qmatch_wrows_vnni
#define QMATCH_VEC2     cpu_qmatch_vec2_rows_vnni
#else
#pragma GCC target("avx2,fma,f16c")
#define QMATCH_FILL     cpu_qmatch_fill_avx2
#define QMATCH_WROWS_OF cpu_qmatch_wrows_avx2
#define QMATCH_VEC2     cpu_qmatch_vec2_rows_avx2
#endif
#include <immintrin.h>

#include "quant-dot-x86.h"

/* Weight block b of a row as 32 signed levels. */
static inline __m256i levels_q8_0(const void *row, int b) { return qd_load32(((const block_q8_0 *)row)[b].qs); }
static inline __m256i levels_q4_0(const void *row, int b) {
    return _mm256_sub_epi8(qd_unpack_nibbles(((const block_q4_0 *)row)[b].qs), _mm256_set1_epi8(8));
}
static inline float scale_q8_0(const void *row, int b) { return qd_h2f_lead((const block_q8_0 *)row + b); }
static inline float scale_q4_0(const void *row, int b) { return qd_h2f_lead((const block_q4_0 *)row + b); }
static inline __m256i levels_iq4_nl(const void *row, int b) {
    return qd_levels_iq4_nl((const block_iq4_nl *)row + b);
}
static inline __m256i levels_mxfp4(const void *row, int b) {
    return qd_levels_mxfp4((const block_mxfp4 *)row + b);
}
static inline float scale_iq4_nl(const void *row, int b) {
    return qd_h2f_lead((const block_iq4_nl *)row + b);
}
static inline float scale_mxfp4(const void *row, int b) {
    return ggmlc_e8m0_to_fp32_half(((const block_mxfp4 *)row)[b].e);
}

/* Lane k: the sum of w[4k..4k+3] * y[4k..4k+3], with |w| taken unsigned and its sign moved to y. */
static inline __m256i lane_sums(__m256i w_abs, __m256i w, __m256i y) {
#ifdef QMATCH_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w_abs, _mm256_sign_epi8(y, w));
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs, _mm256_sign_epi8(y, w)), _mm256_set1_epi16(1));
#endif
}

/* lanes_rows_<type>: weight row x against 1-8 activation rows, eight lanes a row. */
#define QMATCH_LANES_ROWS(type, LEVELS, SCALE)                                                    \
    static inline __attribute__((always_inline)) void lanes_rows_##type##_nr(                     \
        int n, const void *vx, const struct cpu_q8_rows *y, float *s, size_t s_stride,            \
        const int nr) {                                                                           \
        __m256 acc[CPU_QUANT_MAX_ROWS];                                                           \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps();                 \
        for (int b = 0; b < n / QK8_0; b++) {                                                     \
            _mm_prefetch((const char *)vx + (size_t)b * sizeof(block_##type) + QD_PREFETCH,       \
                         _MM_HINT_T0);                                                            \
            const __m256i w = LEVELS(vx, b), w_abs = _mm256_sign_epi8(w, w);                      \
            /* dx * dy as a vector product of two broadcasts: the activation's scale broadcast  \
             * straight from memory (a load, where a scalar product then a broadcast takes a   \
             * shuffle: 10% of this kernel's time with 8 rows); the same float product */ \
            const __m256 dx = _mm256_set1_ps(SCALE(vx, b));                                       \
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                         \
                const __m256i q = qd_load32(y->qs + r * y->qs_stride + (size_t)b * QK8_0);        \
                const __m256 d =                                                                  \
                    _mm256_mul_ps(dx, _mm256_broadcast_ss(y->d + r * y->d_stride + b));           \
                acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lane_sums(w_abs, w, q)), acc[r]);  \
            }                                                                                     \
        }                                                                                         \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) s[r * s_stride] = qd_hsum_ps(acc[r]);         \
    }                                                                                             \
    static void lanes_rows_##type(int n, const void *x, const struct cpu_q8_rows *y, float *s,    \
                                  size_t s_stride) {                                              \
        switch (y->nrows) {                                                                       \
        case 1: lanes_rows_##type##_nr(n, x, y, s, s_stride, 1); break;                           \
        case 2: lanes_rows_##type##_nr(n, x, y, s, s_stride, 2); break;                           \
        case 3: lanes_rows_##type##_nr(n, x, y, s, s_stride, 3); break;                           \
        case 4: lanes_rows_##type##_nr(n, x, y, s, s_stride, 4); break;                           \
        case 5: lanes_rows_##type##_nr(n, x, y, s, s_stride, 5); break;                           \
        case 6: lanes_rows_##type##_nr(n, x, y, s, s_stride, 6); break;                           \
        case 7: lanes_rows_##type##_nr(n, x, y, s, s_stride, 7); break;                           \
        default: lanes_rows_##type##_nr(n, x, y, s, s_stride, 8); break;                          \
        }                                                                                         \
    }

/* The same lanes as vec_dot (one weight row, one Q8_0 row of blocks), for the types whose
 * vec_dot is this one-accumulator order (IQ4_NL's is vec2_dot_iq4_nl below). */
#define QMATCH_LANES_DOT(type, LEVELS, SCALE)                                                    \
    static void lanes_dot_##type(int n, float *s, size_t bs, const void *vx, size_t bx,          \
                                 const void *vy, size_t by, int nrc) {                           \
        const block_q8_0 *y = vy;                                                                \
        __m256 acc = _mm256_setzero_ps();                                                        \
        for (int b = 0; b < n / QK8_0; b++) {                                                    \
            const __m256i w = LEVELS(vx, b);                                                     \
            const __m256 d = _mm256_set1_ps(SCALE(vx, b) * qd_h2f(y[b].d));                      \
            acc = _mm256_fmadd_ps(                                                               \
                d, _mm256_cvtepi32_ps(lane_sums(_mm256_sign_epi8(w, w), w, qd_load32(y[b].qs))), \
                acc);                                                                            \
        }                                                                                        \
        *s = qd_hsum_ps(acc);                                                                    \
    }

QMATCH_LANES_ROWS(q8_0, levels_q8_0, scale_q8_0)
QMATCH_LANES_ROWS(q4_0, levels_q4_0, scale_q4_0)
QMATCH_LANES_ROWS(iq4_nl, levels_iq4_nl, scale_iq4_nl)
QMATCH_LANES_DOT(q8_0, levels_q8_0, scale_q8_0)
QMATCH_LANES_DOT(q4_0, levels_q4_0, scale_q4_0)

/* ggml's vec_dot order of IQ4_NL and MXFP4 (quant-match.h): block pairs into two
 * accumulators per row (even, odd blocks), the lanes of their sum added once, an odd last
 * block as one scalar FMA.  vec2_dot_<type>: the same over Q8_0 blocks (its vec_dot). */
#define QMATCH_VEC2_KERNEL(type, LEVELS, SCALE)                                                    \
    static inline __attribute__((always_inline)) void vec2_rows_##type##_nr(                       \
        int n, const void *vx, const struct cpu_q8_rows *y, float *s, size_t s_stride,             \
        const int nr) {                                                                            \
        __m256 acc0[CPU_QUANT_MAX_ROWS], acc1[CPU_QUANT_MAX_ROWS];                                 \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) acc0[r] = acc1[r] = _mm256_setzero_ps();       \
        const int nb = n / QK8_0;                                                                  \
        int b = 0;                                                                                 \
        for (; b + 1 < nb; b += 2) {                                                               \
            const __m256i w0 = LEVELS(vx, b), w1 = LEVELS(vx, b + 1);                              \
            const __m256i a0 = _mm256_sign_epi8(w0, w0), a1 = _mm256_sign_epi8(w1, w1);            \
            const __m256 dx0 = _mm256_set1_ps(SCALE(vx, b)),                                       \
                         dx1 = _mm256_set1_ps(SCALE(vx, b + 1));                                   \
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                          \
                const int8_t *q = y->qs + r * y->qs_stride + (size_t)b * QK8_0;                    \
                const float *dy = y->d + r * y->d_stride + b;                                      \
                acc0[r] =                                                                          \
                    _mm256_fmadd_ps(_mm256_mul_ps(dx0, _mm256_broadcast_ss(dy)),                   \
                                    _mm256_cvtepi32_ps(lane_sums(a0, w0, qd_load32(q))), acc0[r]); \
                acc1[r] = _mm256_fmadd_ps(                                                         \
                    _mm256_mul_ps(dx1, _mm256_broadcast_ss(dy + 1)),                               \
                    _mm256_cvtepi32_ps(lane_sums(a1, w1, qd_load32(q + QK8_0))), acc1[r]);         \
            }                                                                                      \
        }                                                                                          \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                              \
            float sum = qd_hsum_ps(_mm256_add_ps(acc0[r], acc1[r]));                               \
            if (b < nb) {                                                                          \
                const __m256i w = LEVELS(vx, b);                                                   \
                const int isum = qd_hsum_epi32(                                                    \
                    lane_sums(_mm256_sign_epi8(w, w), w,                                           \
                              qd_load32(y->qs + r * y->qs_stride + (size_t)b * QK8_0)));           \
                sum = fmaf(SCALE(vx, b) * y->d[r * y->d_stride + b], (float)isum, sum);            \
            }                                                                                      \
            s[r * s_stride] = sum;                                                                 \
        }                                                                                          \
    }                                                                                              \
    QD_ROWS_DISPATCH(vec2_rows_##type)                                                             \
    static void vec2_dot_##type(int n, float *s, size_t bs, const void *vx, size_t bx,             \
                                const void *vy, size_t by, int nrc) {                              \
        const block_q8_0 *y = vy;                                                                  \
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();                             \
        const int nb = n / QK8_0;                                                                  \
        int b = 0;                                                                                 \
        for (; b + 1 < nb; b += 2) {                                                               \
            const __m256i w0 = LEVELS(vx, b), w1 = LEVELS(vx, b + 1);                              \
            acc0 = _mm256_fmadd_ps(                                                                \
                _mm256_set1_ps(SCALE(vx, b) * qd_h2f(y[b].d)),                                     \
                _mm256_cvtepi32_ps(lane_sums(_mm256_sign_epi8(w0, w0), w0, qd_load32(y[b].qs))),   \
                acc0);                                                                             \
            acc1 = _mm256_fmadd_ps(_mm256_set1_ps(SCALE(vx, b + 1) * qd_h2f(y[b + 1].d)),          \
                                   _mm256_cvtepi32_ps(lane_sums(_mm256_sign_epi8(w1, w1), w1,      \
                                                                qd_load32(y[b + 1].qs))),          \
                                   acc1);                                                          \
        }                                                                                          \
        float sum = qd_hsum_ps(_mm256_add_ps(acc0, acc1));                                         \
        if (b < nb) {                                                                              \
            const __m256i w = LEVELS(vx, b);                                                       \
            const int isum =                                                                       \
                qd_hsum_epi32(lane_sums(_mm256_sign_epi8(w, w), w, qd_load32(y[b].qs)));           \
            sum = fmaf(SCALE(vx, b) * qd_h2f(y[b].d), (float)isum, sum);                           \
        }                                                                                          \
        *s = sum;                                                                                  \
    }

QMATCH_VEC2_KERNEL(iq4_nl, levels_iq4_nl, scale_iq4_nl)
QMATCH_VEC2_KERNEL(mxfp4, levels_mxfp4, scale_mxfp4)

cpu_vec_dot_rows_t QMATCH_VEC2(enum ggml_type type) {
    return type == GGML_TYPE_IQ4_NL  ? vec2_rows_iq4_nl
           : type == GGML_TYPE_MXFP4 ? vec2_rows_mxfp4
                                     : NULL;
}

/* ------------------------------------------ one activation row, a block of weight rows
 *
 * A row's eight-lane sum is a chain of k / 32 dependent FMAs, so one weight row at a time
 * runs at the FMA latency (4 cycles a block) plus a call, a dispatch and a reduction per
 * row: at 768 values that was a fifth of a decode mat-vec's time on Zen 5.  Here
 * QMATCH_WROWS weight rows go through the blocks together (independent chains the core
 * overlaps), and what depends only on the activation block is done once for all of them.
 * Each row's lanes are the same exact integers and its float operations those of
 * lanes_rows_<type> with one row, so the bits are too.  Each row prefetches the block at
 * the same place in the row QMATCH_WROWS rows on, which the next group reads. */
#define QMATCH_WROWS 4

/* Per activation block q: its part of every row's lane sums (wrows_prep_<type>), then a
 * weight row's eight lanes (wrows_lanes_<type>, levels l of block b of the row). */
#ifdef QMATCH_VNNI
/* Q8_0: (l + 128) unsigned times q, from -128 * (q's four-value sums) */
static inline __m256i wrows_prep_q8_0(__m256i q) {
    return _mm256_sub_epi32(
        _mm256_setzero_si256(),
        _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8((char)0x80), q));
}
static inline __m256i wrows_lanes_q8_0(const void *row, int b, __m256i q, __m256i prep) {
    return _mm256_dpbusd_epi32(
        prep, _mm256_xor_si256(levels_q8_0(row, b), _mm256_set1_epi8((char)0x80)), q);
}
/* Q4_0: the nibbles u unsigned times q, less 8 * (q's four-value sums) */
static inline __m256i wrows_prep_q4_0(__m256i q) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8), q);
}
static inline __m256i wrows_lanes_q4_0(const void *row, int b, __m256i q, __m256i prep) {
    const __m256i u = qd_unpack_nibbles(((const block_q4_0 *)row)[b].qs);
    return _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u, q), prep);
}
#else
static inline __m256i wrows_prep_q8_0(__m256i q) { return q; }
static inline __m256i wrows_lanes_q8_0(const void *row, int b, __m256i q, __m256i prep) {
    const __m256i l = levels_q8_0(row, b);
    return lane_sums(_mm256_sign_epi8(l, l), l, prep);
}
/* Q4_0: pairs of u * q less pairs of 8 * q (int16, exact), then summed in fours */
static inline __m256i wrows_prep_q4_0(__m256i q) {
    return _mm256_maddubs_epi16(_mm256_set1_epi8(8), q);
}
static inline __m256i wrows_lanes_q4_0(const void *row, int b, __m256i q, __m256i prep) {
    const __m256i u = qd_unpack_nibbles(((const block_q4_0 *)row)[b].qs);
    return _mm256_madd_epi16(_mm256_sub_epi16(_mm256_maddubs_epi16(u, q), prep),
                             _mm256_set1_epi16(1));
}
#endif

#define QMATCH_WROWS_KERNEL(type, SCALE)                                                         \
    static inline __attribute__((always_inline)) void lanes_wrows_##type##_nw(                   \
        int n, const char *x, size_t bx, const int8_t *qy, const float *dy, float *s,            \
        const int nw) {                                                                          \
        __m256 acc[QMATCH_WROWS];                                                                \
        _Pragma("GCC unroll 4") for (int w = 0; w < nw; w++) acc[w] = _mm256_setzero_ps();       \
        for (int b = 0; b < n / QK8_0; b++) {                                                    \
            const __m256i q = qd_load32(qy + (size_t)b * QK8_0), prep = wrows_prep_##type(q);    \
            const __m256 dyb = _mm256_broadcast_ss(dy + b);                                      \
            _Pragma("GCC unroll 4") for (int w = 0; w < nw; w++) {                               \
                const char *row = x + (size_t)w * bx;                                            \
                _mm_prefetch(row + (size_t)b * sizeof(block_##type) + QMATCH_WROWS * bx,         \
                             _MM_HINT_T0);                                                       \
                const __m256 d = _mm256_mul_ps(_mm256_set1_ps(SCALE(row, b)), dyb);              \
                acc[w] = _mm256_fmadd_ps(                                                        \
                    d, _mm256_cvtepi32_ps(wrows_lanes_##type(row, b, q, prep)), acc[w]);         \
            }                                                                                    \
        }                                                                                        \
        _Pragma("GCC unroll 4") for (int w = 0; w < nw; w++) s[w] = qd_hsum_ps(acc[w]);          \
    }                                                                                            \
    static void lanes_wrows_##type(int n, const void *x, size_t bx, int nw,                      \
                                   const struct cpu_q8_rows *y, float *s) {                      \
        int w = 0;                                                                               \
        for (; w + QMATCH_WROWS <= nw; w += QMATCH_WROWS)                                        \
            lanes_wrows_##type##_nw(n, (const char *)x + (size_t)w * bx, bx, y->qs, y->d, s + w, \
                                    QMATCH_WROWS);                                               \
        for (; w < nw; w++)                                                                      \
            lanes_wrows_##type##_nw(n, (const char *)x + (size_t)w * bx, bx, y->qs, y->d, s + w, \
                                    1);                                                          \
    }

QMATCH_WROWS_KERNEL(q8_0, scale_q8_0)
QMATCH_WROWS_KERNEL(q4_0, scale_q4_0)

#ifdef QMATCH_VNNI
#define ROWS_Q4_0 lanes_rows_q4_0
#else
/* Q4_0 against one activation row (the matrix-vector product) on AVX2, where the kernel
 * above is bound by vector operations per block, not by memory (Zen 3: 1.84 ns per block
 * from cache against the 2.0 ns two threads get each block from memory at 85% of the read
 * bandwidth; this one 1.60 ns).  The nibbles u enter maddubs unsigned and the activation's pair sums times 8
 * (maddubs(8, y)) are subtracted: sum (u - 8) * y, the same exact integers as the sign
 * trick's (|15 * 127 * 2| and |8 * 127 * 2| fit int16), so the same lanes and bits, without
 * its subtraction of 8 and two sign operations; the weight row is prefetched. */
static void one_row_q4_0(int n, const block_q4_0 *x, const int8_t *qy, const float *dy, float *s) {
    const __m256i ones = _mm256_set1_epi16(1), eights = _mm256_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int b = 0; b < n / QK8_0; b++) {
        _mm_prefetch((const char *)(x + b) + QD_PREFETCH, _MM_HINT_T0);
        const __m256i y = qd_load32(qy + (size_t)b * QK8_0);
        const __m256i pairs = _mm256_sub_epi16(_mm256_maddubs_epi16(qd_unpack_nibbles(x[b].qs), y), _mm256_maddubs_epi16(eights, y));
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(qd_h2f_lead(&x[b])), _mm256_broadcast_ss(dy + b));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones)), acc);
    }
    *s = qd_hsum_ps(acc);
}

static void rows_q4_0_avx2(int n, const void *x, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    if (y->nrows == 1) one_row_q4_0(n, x, y->qs, y->d, s);
    else lanes_rows_q4_0(n, x, y, s, s_stride);
}
#define ROWS_Q4_0 rows_q4_0_avx2

#endif

void QMATCH_FILL(cpu_vec_dot_table dots, cpu_vec_dot_rows_table rows) {
    dots[GGML_TYPE_Q8_0] = lanes_dot_q8_0;
    dots[GGML_TYPE_Q4_0] = lanes_dot_q4_0;
    rows[GGML_TYPE_Q8_0] = lanes_rows_q8_0;
    rows[GGML_TYPE_Q4_0] = ROWS_Q4_0;
    dots[GGML_TYPE_IQ4_NL] = vec2_dot_iq4_nl;
    dots[GGML_TYPE_MXFP4] = vec2_dot_mxfp4;
    rows[GGML_TYPE_IQ4_NL] = lanes_rows_iq4_nl; /* tinyBLAS: ggml's mul_mat of 2+ columns */
    rows[GGML_TYPE_MXFP4] = vec2_rows_mxfp4;
}

cpu_vec_dot_wrows_t QMATCH_WROWS_OF(enum ggml_type type) {
    return type == GGML_TYPE_Q8_0   ? lanes_wrows_q8_0
           : type == GGML_TYPE_Q4_0 ? lanes_wrows_q4_0
                                    : NULL;
}

#elif defined(QMATCH_VNNI)
void cpu_qmatch_fill_avx512vnni(cpu_vec_dot_table dots, cpu_vec_dot_rows_table rows) {
    (void)dots, (void)rows;
}
cpu_vec_dot_wrows_t cpu_qmatch_wrows_vnni(enum ggml_type type) { return (void)type, NULL; }
cpu_vec_dot_rows_t cpu_qmatch_vec2_rows_vnni(enum ggml_type type) { return (void)type, NULL; }
#else
void cpu_qmatch_fill_avx2(cpu_vec_dot_table dots, cpu_vec_dot_rows_table rows) {
    (void)dots, (void)rows;
}
cpu_vec_dot_wrows_t cpu_qmatch_wrows_avx2(enum ggml_type type) { return (void)type, NULL; }
cpu_vec_dot_rows_t cpu_qmatch_vec2_rows_avx2(enum ggml_type type) { return (void)type, NULL; }
#endif
