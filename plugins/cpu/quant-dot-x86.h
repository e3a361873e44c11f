/*
 * quant-dot-x86.h - small helpers shared by the AVX2 and AVX-512 dot
 * products, and the Q4_K / Q5_K / Q6_K dots built over either's lanes functions.
 * Include after the file's target pragma (AVX2 + F16C at least).
 */
#ifndef GGMLC_CPU_QUANT_DOT_X86_H
#define GGMLC_CPU_QUANT_DOT_X86_H

#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

/* How far ahead of the current block the weight row is prefetched: enough bytes to cover
 * DRAM latency at one core's streaming rate, so the dot product never waits on memory. */
#define QD_PREFETCH 1024

static inline float qd_h2f(ggml_fp16_t h) { return _cvtsh_ss(h); }
static inline __m256i qd_load32(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

static inline float qd_hsum_ps(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

static inline int qd_hsum_epi32(__m256i v) {
    __m128i r = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0x4e));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0xb1));
    return _mm_cvtsi128_si32(r);
}

/* 16 bytes of nibbles -> 32 bytes: low nibbles (values 0-15), then high nibbles (16-31).
 * The 16 bytes are loaded into both halves at once and only the upper half is shifted: two
 * vector operations, where shifting and masking each half then joining them took four
 * (Zen 3: the one-column Q4_0 product is bound by operations per block, not by memory). */
static inline __m256i qd_unpack_nibbles(const uint8_t *qs) {
    const __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    return _mm256_and_si256(_mm256_srlv_epi64(b, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0f));
}

/* The f16 scale that leads a block (p: the block's first byte; blocks hold more than 4
 * bytes), converted from the low half of a 32-bit load: one conversion, without the word
 * insert that a 16-bit value takes into a vector register. */
static inline float qd_h2f_lead(const void *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(v)));
}

/* The products x[i+k].d * y[i+k].d for k = 0..3 of two arrays of blocks with f16 scales d:
 * one conversion of eight halves instead of eight scalar ones. */
#define QD_SCALES4(x, y, i)                                                                                \
    qd_scales4(_mm_setr_epi16((short)(x)[(i)].d, (short)(x)[(i) + 1].d, (short)(x)[(i) + 2].d,             \
                              (short)(x)[(i) + 3].d, (short)(y)[(i)].d, (short)(y)[(i) + 1].d,             \
                              (short)(y)[(i) + 2].d, (short)(y)[(i) + 3].d))

static inline __m128 qd_scales4(__m128i halves) {
    const __m256 f = _mm256_cvtph_ps(halves);
    return _mm_mul_ps(_mm256_castps256_ps128(f), _mm256_extractf128_ps(f, 1));
}

/* Lane k of s in all eight lanes. */
static inline __m256 qd_lane(__m128 s, int k) {
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(s), _mm256_set1_epi32(k));
}

/* Q4_K/Q5_K scale field (12 bytes) -> the 8 six-bit scales in bytes 0-7 and the 8 mins in
 * bytes 8-15.  Words a, b, c of the field: scales 0-3 = a & 63, mins 0-3 = b & 63; scales
 * 4-7 = low nibbles of c with the top bits of a, mins 4-7 = high nibbles of c with those of b. */
static inline __m128i qd_k4_scales_mins(const uint8_t *q) {
    uint32_t a, b, c;
    memcpy(&a, q, 4);
    memcpy(&b, q + 4, 4);
    memcpy(&c, q + 8, 4);
    const uint32_t sc_hi = (c & 0x0f0f0f0f) | ((a >> 6) & 0x03030303) << 4;
    const uint32_t m_hi = ((c >> 4) & 0x0f0f0f0f) | ((b >> 6) & 0x03030303) << 4;
    return _mm_setr_epi32((int)(a & 0x3f3f3f3f), (int)sc_hi, (int)(b & 0x3f3f3f3f), (int)m_hi);
}

/* sum_j m_j * (bsums[2j] + bsums[2j+1]) for the 8 mins in bytes 8-15 of sm, in four lanes. */
static inline __m128i qd_k4_min_lanes(__m128i sm, const int16_t *bsums) {
    const __m256i b = _mm256_loadu_si256((const __m256i *)bsums);
    const __m128i pairs = _mm_hadd_epi16(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    return _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)), pairs);
}

/* The same summed. */
static inline int qd_k4_min_sum(__m128i sm, const int16_t *bsums) {
    __m128i r = qd_k4_min_lanes(sm, bsums);
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0x4e));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0xb1));
    return _mm_cvtsi128_si32(r);
}

/* Lane r = the sum of the lanes of a[r]: eight rows' integer sums in one register. */
static inline __m256i qd_reduce8(const __m256i a[8]) {
    const __m256i h01 = _mm256_hadd_epi32(a[0], a[1]), h23 = _mm256_hadd_epi32(a[2], a[3]);
    const __m256i h45 = _mm256_hadd_epi32(a[4], a[5]), h67 = _mm256_hadd_epi32(a[6], a[7]);
    const __m256i h0123 = _mm256_hadd_epi32(h01, h23), h4567 = _mm256_hadd_epi32(h45, h67);
    return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20),
                            _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

/* Word k of the 8 int16 in both 128-bit lanes of v, in every lane. */
static inline __m256i qd_word(__m256i v, int k) {
    return _mm256_shuffle_epi8(v, _mm256_set1_epi16((short)((2 * k + 1) << 8 | 2 * k)));
}

/* Word a of the low 128-bit lane broadcast over that lane, word b of the high lane over
 * the high one: one shuffle with a mask per lane, where two broadcasts and a blend took
 * three operations (the sub-block scales of Q3_K and Q6_K, 16 values a lane). */
static inline __m256i qd_word_pair(__m256i v, int a, int b) {
    const short lo = (short)((2 * a + 1) << 8 | 2 * a), hi = (short)((2 * b + 1) << 8 | 2 * b);
    return _mm256_shuffle_epi8(
        v, _mm256_setr_epi16(lo, lo, lo, lo, lo, lo, lo, lo, hi, hi, hi, hi, hi, hi, hi, hi));
}

/* Scales j and j + 1 of 16 int16 sub-block scales s16 (j even), broadcast over the low and
 * the high 128-bit lane: the multipliers of the maddubs pairs of 32 values whose halves
 * belong to sub-blocks j and j + 1 (Q2_K, Q3_K, Q6_K).  Called with constant j in unrolled
 * loops, where the lane copies are shared. */
static inline __m256i qd_scale_pair(__m256i s16, int j) {
    const __m256i half = j < 8 ? _mm256_permute2x128_si256(s16, s16, 0x00)
                               : _mm256_permute2x128_si256(s16, s16, 0x11);
    return qd_word_pair(half, j % 8, j % 8 + 1);
}

/* Q3_K's 16 six-bit scales (stored +32) as int16, unpacked with word-wide masks: the low four
 * bits of scales 0-7 and 8-15 are the low and high nibbles of bytes 0-7, their high two bits
 * the bit pairs 0-1, 2-3, 4-5, 6-7 of bytes 8-11 for scales 0-3, 4-7, 8-11, 12-15. */
static inline __m256i q3_K_scales16(const uint8_t *sc) {
    uint32_t a[3];
    memcpy(a, sc, 12);
    const uint32_t lo4 = 0x0f0f0f0f, hi2 = 0x03030303;
    /* from registers: a 16-byte load of four 4-byte stores would wait for them (no forwarding) */
    const __m128i u = _mm_setr_epi32((int)((a[0] & lo4) | ((a[2] >> 0) & hi2) << 4),
                                     (int)((a[1] & lo4) | ((a[2] >> 2) & hi2) << 4),
                                     (int)(((a[0] >> 4) & lo4) | ((a[2] >> 4) & hi2) << 4),
                                     (int)(((a[1] >> 4) & lo4) | ((a[2] >> 6) & hi2) << 4));
    return _mm256_cvtepi8_epi16(_mm_sub_epi8(u, _mm_set1_epi8(32)));
}

/* Q3_K: 4 * (1 - high) for the values whose hmask bit is bit b of each hmask byte, so that
 * their level is low2 minus it: hmask shifted to put the bit at bit 2 of its byte, and-not 4
 * (two operations). */
static inline __m256i q3_K_clear4(__m256i hm, int b) {
    const __m256i at2 = b < 2   ? _mm256_slli_epi16(hm, 2 - b)
                        : b > 2 ? _mm256_srli_epi16(hm, b - 2)
                                : hm;
    return _mm256_andnot_si256(at2, _mm256_set1_epi8(4));
}

/* Byte j = 0xff where bit j of bits is set. */
static inline __m256i qd_bits_to_bytes(uint32_t bits) {
    const __m256i shuf = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), shuf);
    const __m256i all_but_bit_j = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);
    return _mm256_cmpeq_epi8(_mm256_or_si256(spread, all_but_bit_j), _mm256_set1_epi64x(-1));
}

static inline __m256i qd_q5_levels(const uint8_t *qs, const uint8_t qh_bytes[4]) {
    uint32_t qh;
    memcpy(&qh, qh_bytes, 4);
    return _mm256_or_si256(qd_unpack_nibbles(qs), _mm256_and_si256(qd_bits_to_bytes(qh), _mm256_set1_epi8(0x10)));
}

/* Nibbles mapped through a 16-entry signed table (IQ4_NL levels, MXFP4 doubled E2M1 values). */
static inline __m256i qd_table_lookup(const uint8_t *qs, __m128i table) {
    const __m128i b = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(0x0f);
    return _mm256_set_m128i(_mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(b, 4), m)),
                            _mm_shuffle_epi8(table, _mm_and_si128(b, m)));
}

/* One 32-value block as 32 signed levels in the order of its Q8_0 activations, per weight
 * type whose vec_dot_type is Q8_0; QD_DX_* give the block's scale. */
static inline __m256i qd_levels_q4_0(const block_q4_0 *x) { return _mm256_sub_epi8(qd_unpack_nibbles(x->qs), _mm256_set1_epi8(8)); }
static inline __m256i qd_levels_q5_0(const block_q5_0 *x) { return _mm256_sub_epi8(qd_q5_levels(x->qs, x->qh), _mm256_set1_epi8(16)); }
static inline __m256i qd_levels_q8_0(const block_q8_0 *x) { return qd_load32(x->qs); }
static inline __m256i qd_levels_iq4_nl(const block_iq4_nl *x) {
    return qd_table_lookup(x->qs, _mm_loadu_si128((const __m128i *)ggmlc_kvalues_iq4nl));
}
static inline __m256i qd_levels_mxfp4(const block_mxfp4 *x) {
    return qd_table_lookup(x->qs, _mm_loadu_si128((const __m128i *)ggmlc_kvalues_mxfp4));
}
#define QD_DX_F16(x, i)  qd_h2f((x)[i].d)
#define QD_DX_E8M0(x, i) ggmlc_e8m0_to_fp32_half((x)[i].e)

/* A path's mat-vec kernel (cpu_vec_dot_wrows_t) over its single-row dot `dot`: the rows one
 * after another, the dot called directly (an indirect call per row cost a 768-value Q6_K
 * mat-vec 15% of its time). */
#define QD_WROWS(dot)                                                                             \
    static void wrows_##dot(int n, const void *x, size_t bx, int nw, const struct cpu_q8_rows *y, \
                            float *s) {                                                           \
        for (int w = 0; w < nw; w++)                                                              \
            dot(n, s + w, 0, (const char *)x + (size_t)w * bx, 0, y->qs, 0, 1);                   \
    }

/* Row loops fully unrolled, so that acc[r] are registers, not stack slots. */
#define QD_UNROLL_ROWS _Pragma("GCC unroll 8")

/* Loops over the fixed parts of a block (groups, halves, sub-blocks): unrolled, so their
 * shuffle masks and shift counts are constants and their decoded values stay in registers
 * (-O2 keeps them loops: a Q6_K super-block spilled its levels to the stack and built each
 * mask at run time, twice as slow as ggml's). */
#define QD_UNROLL_ALL _Pragma("GCC unroll 8")

/* A multi-row kernel `name` calling name##_nr(..., nr) with a constant row count, so that
 * the always-inline body keeps one accumulator per row in registers. */
#define QD_ROWS_DISPATCH(name)                                                                        \
    static void name(int n, const void *x, const struct cpu_q8_rows *y, float *s, size_t s_stride) { \
        switch (y->nrows) {                                                                          \
        case 1: name##_nr(n, x, y, s, s_stride, 1); break;                                           \
        case 2: name##_nr(n, x, y, s, s_stride, 2); break;                                           \
        case 3: name##_nr(n, x, y, s, s_stride, 3); break;                                           \
        case 4: name##_nr(n, x, y, s, s_stride, 4); break;                                           \
        case 5: name##_nr(n, x, y, s, s_stride, 5); break;                                           \
        case 6: name##_nr(n, x, y, s, s_stride, 6); break;                                           \
        case 7: name##_nr(n, x, y, s, s_stride, 7); break;                                           \
        default: name##_nr(n, x, y, s, s_stride, 8); break;                                          \
        }                                                                                            \
    }

/* The sum of four float lanes as ggml's AVX2 Q4_K dot sums its mins: (0 + 2) + (1 + 3). */
static inline float qd_hsum4_ps(__m128 m) {
    m = _mm_add_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_add_ss(m, _mm_movehdup_ps(m)));
}

/* ------------------------------------------- Q4_K, Q5_K, Q6_K in ggml's lane order
 *
 * The single-row dots of the portable model in quant-dot.c (ggml's AVX2 vec_dot): a
 * super-block's integer sum in eight int32 lanes, lane k the products of values 4k..4k+3 of
 * every 32 times their scale, added into eight float lanes by one FMA with y.d * x.d and
 * summed once at the end.  K45_DOTS(LANES) defines dot_q4_K and dot_q5_K over a file's
 * lanes function LANES(qs, qh, sm, q8) (qh NULL for Q4_K; sm from qd_k4_scales_mins), with
 * the mins of Q4_K in four fused lanes and those of Q5_K in one fused scalar, as ggml takes
 * them; Q6_K_DOT(LANES6) defines dot_q6_K over LANES6(x, y), the lanes with the -32 offset
 * taken off. */
#define K45_DOTS(LANES)                                                                         \
    static void dot_q4_K(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, \
                         size_t by, int nrc) {                                                  \
        const block_q4_K *x = vx;                                                               \
        const block_q8_K *y = vy;                                                               \
        __m256 acc = _mm256_setzero_ps();                                                       \
        __m128 accm = _mm_setzero_ps();                                                         \
        for (int i = 0; i < n / QK_K; i++) {                                                    \
            const __m128i sm = qd_k4_scales_mins(x[i].scales);                                  \
            const float d = y[i].d * qd_h2f(x[i].d), dmin = -y[i].d * qd_h2f(x[i].dmin);        \
            const __m256i lanes = LANES(x[i].qs, NULL, sm, y[i].qs);                            \
            accm = _mm_fmadd_ps(_mm_set1_ps(dmin),                                              \
                                _mm_cvtepi32_ps(qd_k4_min_lanes(sm, y[i].bsums)), accm);        \
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lanes), acc);           \
        }                                                                                       \
        *s = qd_hsum_ps(acc) + qd_hsum4_ps(accm);                                               \
    }                                                                                           \
    static void dot_q5_K(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, \
                         size_t by, int nrc) {                                                  \
        const block_q5_K *x = vx;                                                               \
        const block_q8_K *y = vy;                                                               \
        __m256 acc = _mm256_setzero_ps();                                                       \
        float summs = 0;                                                                        \
        for (int i = 0; i < n / QK_K; i++) {                                                    \
            const __m128i sm = qd_k4_scales_mins(x[i].scales);                                  \
            const float d = y[i].d * qd_h2f(x[i].d), dmin = -y[i].d * qd_h2f(x[i].dmin);        \
            const __m256i lanes = LANES(x[i].qs, x[i].qh, sm, y[i].qs);                         \
            summs = fmaf(dmin, (float)qd_k4_min_sum(sm, y[i].bsums), summs);                    \
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lanes), acc);           \
        }                                                                                       \
        *s = qd_hsum_ps(acc) + summs;                                                           \
    }

#define Q6_K_DOT(LANES6)                                                                        \
    static void dot_q6_K(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, \
                         size_t by, int nrc) {                                                  \
        const block_q6_K *x = vx;                                                               \
        const block_q8_K *y = vy;                                                               \
        __m256 acc = _mm256_setzero_ps();                                                       \
        for (int i = 0; i < n / QK_K; i++)                                                      \
            acc = _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * qd_h2f(x[i].d)),                      \
                                  _mm256_cvtepi32_ps(LANES6(&x[i], &y[i])), acc);               \
        *s = qd_hsum_ps(acc);                                                                   \
    }

#endif /* GGMLC_CPU_QUANT_DOT_X86_H */
