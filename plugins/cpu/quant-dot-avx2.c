/*
 * quant-dot-avx2.c - AVX2 dot products of quantized weights with Q8
 * activations (see quant-dot.h; Q8_0's and Q4_0's: quant-match-avx2.c).
 * Compiled for AVX2/FMA/F16C by the target pragma; used only when
 * type-traits.c found those on the CPU.
 *
 * Signed int8 x int8 products use maddubs (unsigned x signed) on |x| and
 * sign(y, x); unsigned levels (Q4_1, Q5_1, K-quants) go to maddubs directly.
 * maddubs sums pairs into int16, which never saturates here: |x| <= 128,
 * |y| <= 127 gives at most 2 * 128 * 127 < 32768.
 */
#include "quant-dot.h"
#include "quant-match.h"

#include <stddef.h>

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c")
#include <immintrin.h>

#include "quant-dot-x86.h"

/* 8 int32 sums of adjacent groups of four products of signed bytes. */
static inline __m256i dot_i8(__m256i x, __m256i y) {
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* The same with x unsigned (x <= 127 after the caller's construction, or nibbles). */
static inline __m256i dot_u8(__m256i x, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1));
}

/* ------------------------------------------------- 32-value blocks */

/* One block's dot product as 8 int32 partial sums, per format. */
static inline __m256i blk_q4_1(const block_q4_1 *x, const block_q8_1 *y) {
    return dot_u8(qd_unpack_nibbles(x->qs), qd_load32(y->qs));
}

static inline __m256i blk_q5_0(const block_q5_0 *x, const block_q8_0 *y) {
    return dot_i8(_mm256_sub_epi8(qd_q5_levels(x->qs, x->qh), _mm256_set1_epi8(16)), qd_load32(y->qs));
}

static inline __m256i blk_q5_1(const block_q5_1 *x, const block_q8_1 *y) {
    return dot_u8(qd_q5_levels(x->qs, x->qh), qd_load32(y->qs));
}

/* Block scales: f16 d of both (four at once or one). */
#define SCALES4_D(x, y, i) QD_SCALES4(x, y, i)
#define SCALE1_D(x, y, i)  (qd_h2f((x)[i].d) * qd_h2f((y)[i].d))
/* The min term m_x * s_y of Q4_1/Q5_1 against Q8_1 (s = d * sum of the block's values). */
#define MINS4_MS(x, y, i)                                                                                     \
    qd_scales4(_mm_setr_epi16((short)(x)[i].m, (short)(x)[(i) + 1].m, (short)(x)[(i) + 2].m, (short)(x)[(i) + 3].m, \
                              (short)(y)[i].s, (short)(y)[(i) + 1].s, (short)(y)[(i) + 2].s, (short)(y)[(i) + 3].s))
#define MIN1_MS(x, y, i)  (qd_h2f((x)[i].m) * qd_h2f((y)[i].s))
#define MINS4_NONE(x, y, i) _mm_setzero_ps()
#define MIN1_NONE(x, y, i)  0.0f

/* A dot product over 32-value blocks, four blocks per step: the scales of the four converted
 * together, the weight row prefetched ahead, two accumulators for the FMA latency. */
#define DOT_32(name, xt, yt, BLOCK, SCALES4, SCALE1, MINS4, MIN1)                                              \
    static void name(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) { \
        const xt *x = vx;                                                                                      \
        const yt *y = vy;                                                                                      \
        const int nb = n / 32;                                                                                 \
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();                                         \
        __m128 mins = _mm_setzero_ps();                                                                        \
        float tail = 0;                                                                                        \
        int i = 0;                                                                                             \
        for (; i + 3 < nb; i += 4) {                                                                           \
            _mm_prefetch((const char *)(x + i) + QD_PREFETCH, _MM_HINT_T0);                                    \
            _mm_prefetch((const char *)(x + i) + QD_PREFETCH + 64, _MM_HINT_T0);                               \
            const __m128 sc = SCALES4(x, y, i);                                                                \
            mins = _mm_add_ps(mins, MINS4(x, y, i));                                                           \
            acc0 = _mm256_fmadd_ps(qd_lane(sc, 0), _mm256_cvtepi32_ps(BLOCK(&x[i], &y[i])), acc0);             \
            acc1 = _mm256_fmadd_ps(qd_lane(sc, 1), _mm256_cvtepi32_ps(BLOCK(&x[i + 1], &y[i + 1])), acc1);     \
            acc0 = _mm256_fmadd_ps(qd_lane(sc, 2), _mm256_cvtepi32_ps(BLOCK(&x[i + 2], &y[i + 2])), acc0);     \
            acc1 = _mm256_fmadd_ps(qd_lane(sc, 3), _mm256_cvtepi32_ps(BLOCK(&x[i + 3], &y[i + 3])), acc1);     \
        }                                                                                                      \
        for (; i < nb; i++) {                                                                                  \
            acc0 = _mm256_fmadd_ps(_mm256_set1_ps(SCALE1(x, y, i)), _mm256_cvtepi32_ps(BLOCK(&x[i], &y[i])), acc0); \
            tail += MIN1(x, y, i);                                                                             \
        }                                                                                                      \
        mins = _mm_add_ps(mins, _mm_movehl_ps(mins, mins));                                                    \
        mins = _mm_add_ss(mins, _mm_movehdup_ps(mins));                                                        \
        *s = qd_hsum_ps(_mm256_add_ps(acc0, acc1)) + _mm_cvtss_f32(mins) + tail;                               \
    }

DOT_32(dot_q4_1, block_q4_1, block_q8_1, blk_q4_1, SCALES4_D, SCALE1_D, MINS4_MS, MIN1_MS)
DOT_32(dot_q5_0, block_q5_0, block_q8_0, blk_q5_0, SCALES4_D, SCALE1_D, MINS4_NONE, MIN1_NONE)
DOT_32(dot_q5_1, block_q5_1, block_q8_1, blk_q5_1, SCALES4_D, SCALE1_D, MINS4_MS, MIN1_MS)

/* ----------------------------------------------- K-quants against Q8_K */

/* Q4_K / Q5_K super-block: sum_j sc_j * (q . y)_j in eight int32 lanes; qh NULL for Q4_K. */
static inline __attribute__((always_inline)) __m256i k45_lanes(const uint8_t *qs, const uint8_t *qh,
                                                               __m128i sm, const int8_t *q8) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm)); /* sc_0..7 as int16 */
    const __m256i hbits = qh ? qd_load32(qh) : _mm256_setzero_si256();
    __m256i acc = _mm256_setzero_si256();
    QD_UNROLL_ALL
    for (int g = 0; g < 4; g++) {
        const __m256i q = qd_load32(qs + 32 * g);
        __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        if (qh) {
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * g), one), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * g + 1), one), 4));
        }
        const __m256i plo = _mm256_maddubs_epi16(lo, qd_load32(q8 + 64 * g));
        const __m256i phi = _mm256_maddubs_epi16(hi, qd_load32(q8 + 64 * g + 32));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(plo, qd_word(scales, 2 * g)));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(phi, qd_word(scales, 2 * g + 1)));
    }
    return acc;
}

/* Q6_K: sum_j sc_j * ((q - 32) . y)_j = sum_j sc_j * (q . y)_j - 32 * sum_j sc_j * bsum_j, q in [0, 63];
 * the first sum in eight lanes, the second's sum_j sc_j * bsum_j in *offset's. */
static inline __attribute__((always_inline)) __m256i q6_K_lanes(const block_q6_K *x,
                                                                const block_q8_K *y,
                                                                __m256i *offset) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
    *offset = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y->bsums));
    __m256i acc = _mm256_setzero_si256();
    QD_UNROLL_ALL
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = x->ql + 64 * h;
        const __m256i qh = qd_load32(x->qh + 32 * h);
        const __m256i ql0 = qd_load32(ql), ql1 = qd_load32(ql + 32);
        const __m256i lows[4] = {_mm256_and_si256(ql0, m4), _mm256_and_si256(ql1, m4),
                                 _mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                 _mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4)};
        QD_UNROLL_ALL
        for (int k = 0; k < 4; k++) {
            const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), m2);
            const __m256i q = _mm256_or_si256(lows[k], _mm256_slli_epi16(high, 4));
            const __m256i p = _mm256_maddubs_epi16(q, qd_load32(y->qs + 128 * h + 32 * k));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, qd_scale_pair(sc16, 8 * h + 2 * k)));
        }
    }
    return acc;
}

/* ggml's lanes: the offset of each lane taken off. */
static inline __attribute__((always_inline)) __m256i q6_K_lanes6(const block_q6_K *x,
                                                                 const block_q8_K *y) {
    __m256i offset;
    const __m256i acc = q6_K_lanes(x, y, &offset);
    return _mm256_sub_epi32(acc, _mm256_slli_epi32(offset, 5));
}

Q6_K_DOT(q6_K_lanes6)
K45_DOTS(k45_lanes)

/* Q2_K: 2-bit levels in the packed order (byte l of a 32-byte group holds values l, l+32,
 * l+64, l+96 of its 128); each 32 values span two 16-value sub-blocks with 4-bit scales. */
static void dot_q2_K(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q2_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i m2 = _mm256_set1_epi8(3);
    const __m128i m4 = _mm_set1_epi8(0x0f);
    __m256 accf = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_K; i++) {
        /* 4-bit scales (low nibbles) and mins (high nibbles) of the 16 sub-blocks as int16 */
        const __m128i packed = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(packed, m4));
        const __m256i min16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), m4));
        const __m256i mins =
            _mm256_madd_epi16(min16, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        __m256i acc = _mm256_setzero_si256();
        QD_UNROLL_ALL
        for (int h = 0; h < 2; h++) {
            const __m256i q = qd_load32(x[i].qs + 32 * h);
            QD_UNROLL_ALL
            for (int k = 0; k < 4; k++) {
                const __m256i levels = _mm256_and_si256(_mm256_srli_epi16(q, 2 * k), m2);
                const __m256i p = _mm256_maddubs_epi16(levels, qd_load32(y[i].qs + 128 * h + 32 * k));
                acc =
                    _mm256_add_epi32(acc, _mm256_madd_epi16(p, qd_scale_pair(sc16, 8 * h + 2 * k)));
            }
        }
        /* ggml's order: the mins' lanes, then the levels', into the same float lanes */
        accf = _mm256_fmadd_ps(_mm256_set1_ps(-y[i].d * qd_h2f(x[i].dmin)),
                               _mm256_cvtepi32_ps(mins), accf);
        accf =
            _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * qd_h2f(x[i].d)), _mm256_cvtepi32_ps(acc), accf);
    }
    *s = qd_hsum_ps(accf);
}

/* Q3_K: levels low2 - 4 * (1 - high) in [-4, 3] (q3_K_clear4, quant-dot-x86.h), multiplied as
 * |level| . sign(y, level) so that each lane holds its own values' exact sum, as ggml's do. */
static void dot_q3_K(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q3_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i m2 = _mm256_set1_epi8(3);
    __m256 accf = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_K; i++) {
        const __m256i sc16 = q3_K_scales16(x[i].scales);
        const __m256i hm = qd_load32(x[i].hmask);
        __m256i acc = _mm256_setzero_si256();
        QD_UNROLL_ALL
        for (int h = 0; h < 2; h++) {
            const __m256i q = qd_load32(x[i].qs + 32 * h);
            QD_UNROLL_ALL
            for (int k = 0; k < 4; k++) {
                const __m256i levels = _mm256_sub_epi8(
                    _mm256_and_si256(_mm256_srli_epi16(q, 2 * k), m2), q3_K_clear4(hm, 4 * h + k));
                const __m256i p = _mm256_maddubs_epi16(
                    _mm256_abs_epi8(levels),
                    _mm256_sign_epi8(qd_load32(y[i].qs + 128 * h + 32 * k), levels));
                const __m256i scale = qd_scale_pair(sc16, 8 * h + 2 * k);
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, scale));
            }
        }
        accf =
            _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * qd_h2f(x[i].d)), _mm256_cvtepi32_ps(acc), accf);
    }
    *s = qd_hsum_ps(accf);
}

/* IQ4_XS: IQ4_NL levels per 32 values with 6-bit sub-block scales (stored +32).  Two
 * sub-blocks per 32-byte load: one table lookup of each nibble half for both, swapped into
 * value order by two lane permutes (the same lanes, so the same sums as one at a time). */
static void dot_iq4_xs(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_iq4_xs *x = vx;
    const block_q8_K *y = vy;
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ggmlc_kvalues_iq4nl));
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 accf = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_K; i++) {
        int16_t ls[8];
        QD_UNROLL_ALL for (int ib = 0; ib < 8; ib++) ls[ib] =
            (int16_t)((((x[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) |
                       ((x[i].scales_h >> (2 * ib)) & 3) << 4) -
                      32);
        __m256i acc = _mm256_setzero_si256();
        QD_UNROLL_ALL for (int ib = 0; ib < 8; ib += 2) {
            const __m256i raw = qd_load32(x[i].qs + 16 * ib);
            const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(raw, m4));
            const __m256i hi =
                _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4));
            const __m256i q[2] = {_mm256_permute2x128_si256(lo, hi, 0x20),
                                  _mm256_permute2x128_si256(lo, hi, 0x31)};
            QD_UNROLL_ALL for (int k = 0; k < 2; k++) {
                const __m256i q8 = qd_load32(y[i].qs + 32 * (ib + k));
                const __m256i p =
                    _mm256_maddubs_epi16(_mm256_sign_epi8(q[k], q[k]), _mm256_sign_epi8(q8, q[k]));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(ls[ib + k])));
            }
        }
        accf =
            _mm256_fmadd_ps(_mm256_set1_ps(qd_h2f(x[i].d) * y[i].d), _mm256_cvtepi32_ps(acc), accf);
    }
    *s = qd_hsum_ps(accf);
}

QD_WROWS(dot_q2_K)
QD_WROWS(dot_q3_K)
QD_WROWS(dot_q4_K)
QD_WROWS(dot_q5_K)
QD_WROWS(dot_q6_K)
QD_WROWS(dot_iq4_xs)

void cpu_quant_wrows_fill_avx2(cpu_vec_dot_wrows_table t) {
    t[GGML_TYPE_Q2_K] = wrows_dot_q2_K;
    t[GGML_TYPE_Q3_K] = wrows_dot_q3_K;
    t[GGML_TYPE_Q4_K] = wrows_dot_q4_K;
    t[GGML_TYPE_Q5_K] = wrows_dot_q5_K;
    t[GGML_TYPE_Q6_K] = wrows_dot_q6_K;
    t[GGML_TYPE_IQ4_XS] = wrows_dot_iq4_xs;
}

void cpu_quant_dot_fill_avx2(cpu_vec_dot_table t) {
    t[GGML_TYPE_Q4_1] = dot_q4_1;
    t[GGML_TYPE_Q5_0] = dot_q5_0;
    t[GGML_TYPE_Q5_1] = dot_q5_1;
    t[GGML_TYPE_Q4_K] = dot_q4_K;
    t[GGML_TYPE_Q5_K] = dot_q5_K;
    t[GGML_TYPE_Q6_K] = dot_q6_K;
    t[GGML_TYPE_Q2_K] = dot_q2_K;
    t[GGML_TYPE_Q3_K] = dot_q3_K;
    t[GGML_TYPE_IQ4_XS] = dot_iq4_xs;
}

#else
void cpu_quant_dot_fill_avx2(cpu_vec_dot_table t) { (void)t; }
void cpu_quant_wrows_fill_avx2(cpu_vec_dot_wrows_table t) { (void)t; }
#endif
