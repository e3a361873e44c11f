/*
 * quant-dot-avx512.c - AVX-512 VNNI dot products (see quant-dot.h) for the
 * formats that dominate matrix-vector time: Q3_K, Q4_K, Q5_K and Q6_K in 512-bit
 * registers (Q2_K uses the AVX2 kernel; Q8_0's and Q4_0's, in
 * ggml's order: quant-match-vnni.c).
 * vpdpbusd multiplies unsigned by signed bytes and adds groups of
 * four straight into int32 lanes, replacing AVX2's maddubs + madd pair.
 * The multi-row kernel (one weight row against several activation rows,
 * quant-dot.h) of Q5_0 is here too (Q8_0's and Q4_0's: quant-match-avx2.c).
 * Used only when type-traits.c found AVX-512 BW/VL and VNNI.
 */
#include "quant-dot.h"
#include "quant-match.h"

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#include <immintrin.h>

#include "quant-dot-x86.h"

/* Two blocks' eight int32 sums side by side in one 512-bit register. */
static inline __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

/* Scales s[k] and s[k + 1] of qd_scales4 in the low and high eight lanes. */
static inline __m512 lanes2(__m128 s, int k) {
    const __m512i idx = _mm512_set_epi32(k + 1, k + 1, k + 1, k + 1, k + 1, k + 1, k + 1, k + 1, k, k, k, k, k, k, k, k);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(s));
}

/* The nibbles of four blocks (16 bytes each at q0..q3) as two registers [low a, high a,
 * low b, high b] and [low c, high c, low d, high d], matching two Q8_0 blocks' 32 values each. */
static inline void unpack4_nibbles(const uint8_t *q0, const uint8_t *q1, const uint8_t *q2, const uint8_t *q3,
                                   __m512i *ab, __m512i *cd) {
    __m512i q = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)q0));
    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)q1), 1);
    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)q2), 2);
    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)q3), 3);
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
    *ab = _mm512_permutex2var_epi64(lo, _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), hi);
    *cd = _mm512_permutex2var_epi64(lo, _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4), hi);
}

#define UNPACK4(x, ab, cd) unpack4_nibbles((x)[0].qs, (x)[1].qs, (x)[2].qs, (x)[3].qs, ab, cd)

/* Q6_K: the AVX2 kernel's lanes (quant-dot-avx2.c, q6_K_lanes) for both 128-value halves of a
 * super-block at once, the second half in the high 256 bits: half the instructions for the same
 * integer sums, so the same bits.  Lane group g of 8 words (16 values) takes the sub-block scale
 * Q6_K_PAIRS(k)[8 g] in step k. */
#define QD_R8(v) v, v, v, v, v, v, v, v
#define Q6_K_PAIRS(k) \
    { QD_R8(2 * (k)), QD_R8(2 * (k) + 1), QD_R8(2 * (k) + 8), QD_R8(2 * (k) + 9) }
static const int16_t q6_K_pair_index[4][32]
    __attribute__((aligned(64))) = {Q6_K_PAIRS(0), Q6_K_PAIRS(1), Q6_K_PAIRS(2), Q6_K_PAIRS(3)};

static inline __attribute__((always_inline)) __m512i q6_K_lanes2(const block_q6_K *x,
                                                                 const block_q8_K *y,
                                                                 __m256i sc16) {
    const __m512i m4 = _mm512_set1_epi8(0x0f), m2 = _mm512_set1_epi8(3),
                  sc = _mm512_castsi256_si512(sc16);
    const __m512i qh = _mm512_loadu_si512(x->qh);
    const __m512i ql0 = join(qd_load32(x->ql), qd_load32(x->ql + 64)),
                  ql1 = join(qd_load32(x->ql + 32), qd_load32(x->ql + 96));
    const __m512i lows[4] = {_mm512_and_si512(ql0, m4), _mm512_and_si512(ql1, m4),
                             _mm512_and_si512(_mm512_srli_epi16(ql0, 4), m4),
                             _mm512_and_si512(_mm512_srli_epi16(ql1, 4), m4)};
    __m512i acc = _mm512_setzero_si512();
    QD_UNROLL_ALL
    for (int k = 0; k < 4; k++) {
        const __m512i high = _mm512_and_si512(_mm512_srli_epi16(qh, 2 * k), m2);
        const __m512i q = _mm512_or_si512(lows[k], _mm512_slli_epi16(high, 4));
        const __m512i yk = join(qd_load32(y->qs + 32 * k), qd_load32(y->qs + 128 + 32 * k));
        const __m512i scales = _mm512_permutexvar_epi16(_mm512_load_si512(q6_K_pair_index[k]), sc);
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(q, yk), scales));
    }
    return acc;
}

/* ggml's eight lanes (both halves' lanes added, exact), the offset of each taken off: the
 * AVX2 kernel's q6_K_lanes6 to the bit. */
static inline __attribute__((always_inline)) __m256i q6_K_lanes6(const block_q6_K *x,
                                                                 const block_q8_K *y) {
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
    const __m256i offset = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y->bsums));
    const __m512i acc = q6_K_lanes2(x, y, sc16);
    const __m256i lanes =
        _mm256_add_epi32(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64(acc, 1));
    return _mm256_sub_epi32(lanes, _mm256_slli_epi32(offset, 5));
}

Q6_K_DOT(q6_K_lanes6)

/* Q4_K / Q5_K: k45_lanes (quant-dot-avx2.c) two 32-byte groups of nibbles at a time, group 2G
 * in the low 256 bits and 2G + 1 in the high: the low nibbles of step G belong to sub-blocks
 * 4G and 4G + 2, the high ones to 4G + 1 and 4G + 3 (k45_pair_index[2G], [2G + 1]); Q5_K's
 * fifth bit of sub-block j is bit j of qh's bytes.  The same integer sums, folded to eight
 * lanes for quant-dot-x86.h's K45_DOTS. */
#define QD_R16(v) QD_R8(v), QD_R8(v)
#define K45_PAIR(a, b) \
    { QD_R16(a), QD_R16(b) }
static const int16_t k45_pair_index[4][32]
    __attribute__((aligned(64))) = {K45_PAIR(0, 2), K45_PAIR(1, 3), K45_PAIR(4, 6), K45_PAIR(5, 7)};

/* The 16-bit words of a: shifted right by lo in the low 256 bits, by hi in the high. */
static inline __m512i srl_halves(__m512i a, int lo, int hi) {
    return _mm512_srlv_epi16(
        a, _mm512_inserti64x4(_mm512_set1_epi16((short)lo), _mm256_set1_epi16((short)hi), 1));
}

static inline __attribute__((always_inline)) __m256i k45_lanes512(const uint8_t *qs,
                                                                  const uint8_t *qh, __m128i sm,
                                                                  const int8_t *q8) {
    const __m512i m4 = _mm512_set1_epi8(0x0f), one = _mm512_set1_epi8(1);
    const __m512i scales = _mm512_castsi128_si512(_mm_cvtepu8_epi16(sm)); /* sc_0..7 as int16 */
    const __m512i hbits = qh ? _mm512_broadcast_i64x4(qd_load32(qh)) : _mm512_setzero_si512();
    __m512i acc = _mm512_setzero_si512();
    QD_UNROLL_ALL
    for (int g = 0; g < 2; g++) {
        const __m512i q = _mm512_loadu_si512(qs + 64 * g);
        __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
        if (qh) {
            lo = _mm512_or_si512(
                lo,
                _mm512_slli_epi16(_mm512_and_si512(srl_halves(hbits, 4 * g, 4 * g + 2), one), 4));
            hi = _mm512_or_si512(
                hi, _mm512_slli_epi16(
                        _mm512_and_si512(srl_halves(hbits, 4 * g + 1, 4 * g + 3), one), 4));
        }
        const __m512i ylo = join(qd_load32(q8 + 128 * g), qd_load32(q8 + 128 * g + 64));
        const __m512i yhi = join(qd_load32(q8 + 128 * g + 32), qd_load32(q8 + 128 * g + 96));
        const __m512i slo =
            _mm512_permutexvar_epi16(_mm512_load_si512(k45_pair_index[2 * g]), scales);
        const __m512i shi =
            _mm512_permutexvar_epi16(_mm512_load_si512(k45_pair_index[2 * g + 1]), scales);
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(lo, ylo), slo));
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(hi, yhi), shi));
    }
    return _mm256_add_epi32(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64(acc, 1));
}

K45_DOTS(k45_lanes512)

/* Q3_K: quant-dot-avx2.c's dot_q3_K two 32-value groups at a time, group k in the low 256 bits
 * and k + 1 in the high (word lane 8 q + r takes scale 4 m + q in step m).  Where a value's
 * hmask bit is clear its level low2 - 4 is negative: the bit test's mask both forms
 * |level| = 4 - low2 and negates the activation (psignb's product, psignb's wrap of -128):
 * five operations for 64 values where the decoding, abs and sign took nine for 32.  The same
 * maddubs pairs and madd lanes, the halves added: the same integer sums, so the same bits. */
#define Q3_K_STEP(m) \
    { QD_R8(4 * (m)), QD_R8(4 * (m) + 1), QD_R8(4 * (m) + 2), QD_R8(4 * (m) + 3) }
static const int16_t q3_K_step_index[4][32]
    __attribute__((aligned(64))) = {Q3_K_STEP(0), Q3_K_STEP(1), Q3_K_STEP(2), Q3_K_STEP(3)};

static void dot_q3_K(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy,
                     size_t by, int nrc) {
    const block_q3_K *x = vx;
    const block_q8_K *y = vy;
    const __m512i m3 = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4),
                  zero = _mm512_setzero_si512();
    __m256 accf = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_K; i++) {
        const __m512i sc = _mm512_castsi256_si512(q3_K_scales16(x[i].scales));
        const __m512i hm = _mm512_broadcast_i64x4(qd_load32(x[i].hmask));
        __m512i acc = _mm512_setzero_si512();
        QD_UNROLL_ALL
        for (int h = 0; h < 2; h++) {
            const __m512i q = _mm512_broadcast_i64x4(qd_load32(x[i].qs + 32 * h));
            QD_UNROLL_ALL
            for (int k = 0; k < 4; k += 2) {
                const __m512i low2 = _mm512_and_si512(srl_halves(q, 2 * k, 2 * k + 2), m3);
                const __m512i bit =
                    _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << (4 * h + k))),
                                       _mm256_set1_epi8((char)(1 << (4 * h + k + 1))), 1);
                const __mmask64 neg = _mm512_testn_epi8_mask(hm, bit);
                const __m512i mag = _mm512_mask_sub_epi8(low2, neg, four, low2);
                const __m512i yk = _mm512_loadu_si512(y[i].qs + 128 * h + 32 * k);
                const __m512i p =
                    _mm512_maddubs_epi16(mag, _mm512_mask_sub_epi8(yk, neg, zero, yk));
                const __m512i scales =
                    _mm512_permutexvar_epi16(_mm512_load_si512(q3_K_step_index[2 * h + k / 2]), sc);
                acc = _mm512_add_epi32(acc, _mm512_madd_epi16(p, scales));
            }
        }
        const __m256i lanes =
            _mm256_add_epi32(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64(acc, 1));
        accf = _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * qd_h2f(x[i].d)), _mm256_cvtepi32_ps(lanes),
                               accf);
    }
    *s = qd_hsum_ps(accf);
}

QD_WROWS(dot_q4_K)
QD_WROWS(dot_q5_K)
QD_WROWS(dot_q6_K)
QD_WROWS(dot_q3_K)

void cpu_quant_wrows_fill_avx512vnni(cpu_vec_dot_wrows_table t) {
    t[GGML_TYPE_Q3_K] = wrows_dot_q3_K;
    t[GGML_TYPE_Q4_K] = wrows_dot_q4_K;
    t[GGML_TYPE_Q5_K] = wrows_dot_q5_K;
    t[GGML_TYPE_Q6_K] = wrows_dot_q6_K;
}

void cpu_quant_dot_fill_avx512vnni(cpu_vec_dot_table t) {
    t[GGML_TYPE_Q3_K] = dot_q3_K;
    t[GGML_TYPE_Q4_K] = dot_q4_K;
    t[GGML_TYPE_Q5_K] = dot_q5_K;
    t[GGML_TYPE_Q6_K] = dot_q6_K;
}

/* ------------------------------------------------ multi-row dot products
 *
 * Each step decodes four weight blocks into two registers of unsigned levels
 * u = level + offset (vpdpbusd wants its first operand unsigned); every activation row
 * then costs one vpdpbusd per register against its signed values, and the offset comes
 * back out through the rows' block sums: sum l y = sum u y - offset * sum y, the second
 * term scaled per block in float (four blocks per FMA).  Tails of fewer than four blocks
 * instead keep signed levels l and take y ^ 0x80 = y + 128 as the unsigned operand, each
 * sum starting from -128 * sum(l) (dot_signed256).  Q8_0 and Q4_0 sum in ggml's order:
 * their multi-row kernels are quant-match-avx2.c's. */

/* Four blocks' unsigned levels as [a, b] and [c, d] (32 bytes each, in Q8_0 value order).
 * Q5_0: nibble + 16 where the value's high bit is set, offset 16 (bit j of a block's qh
 * belongs to value j, so two blocks' qh are the byte mask). */
static inline void ulevels4_q5_0(const block_q5_0 *x, __m512i *ab, __m512i *cd) {
    uint32_t h[4];
    for (int k = 0; k < 4; k++) memcpy(&h[k], x[k].qh, 4);
    UNPACK4(x, ab, cd);
    const __m512i sixteen = _mm512_set1_epi8(16);
    *ab = _mm512_mask_add_epi8(*ab, (uint64_t)h[0] | (uint64_t)h[1] << 32, *ab, sixteen);
    *cd = _mm512_mask_add_epi8(*cd, (uint64_t)h[2] | (uint64_t)h[3] << 32, *cd, sixteen);
}

/* The four blocks' scales. */
#define DX4_F16(x, i)                                                                          \
    _mm_cvtph_ps(_mm_setr_epi16((short)(x)[i].d, (short)(x)[(i) + 1].d, (short)(x)[(i) + 2].d, \
                                (short)(x)[(i) + 3].d, 0, 0, 0, 0))

/* -128 * sum(l) per four bytes of signed levels l: the start of sum l * y by dot_flipped. */
static inline __m512i neg_bias_sum(__m512i l) {
    return _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8((char)0x80), l));
}

static inline __m512i dot_flipped(__m512i neg_bias_sum, __m512i y, __m512i l) {
    return _mm512_dpbusd_epi32(neg_bias_sum, _mm512_xor_si512(y, _mm512_set1_epi8((char)0x80)), l);
}

/* One block of signed levels l against y: sum l * y as 8 int32 partial sums. */
static inline __m256i dot_signed256(__m256i l, __m256i y) {
    const __m512i wide = _mm512_castsi256_si512(l);
    return _mm512_castsi512_si256(dot_flipped(neg_bias_sum(wide), _mm512_castsi256_si512(y), wide));
}

/* OFFSET: that of ULEVELS4's unsigned levels. */
#define ROWS_VNNI(name, xt, ULEVELS4, OFFSET, DX4, LEVELS1, DX1)                                 \
    static inline __attribute__((always_inline)) void name##_nr(                                 \
        int n, const void *vx, const struct cpu_q8_rows *y, float *s, size_t s_stride,           \
        const int nr) {                                                                          \
        const xt *x = vx;                                                                        \
        const int nb = n / QK8_0;                                                                \
        __m512 acc[CPU_QUANT_MAX_ROWS];                                                          \
        __m128 offset_sum[CPU_QUANT_MAX_ROWS]; /* sum over blocks of dx dy sum(y), four lanes */ \
        float tail[CPU_QUANT_MAX_ROWS];                                                          \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                            \
            acc[r] = _mm512_setzero_ps();                                                        \
            offset_sum[r] = _mm_setzero_ps();                                                    \
            tail[r] = 0;                                                                         \
        }                                                                                        \
        int i = 0;                                                                               \
        for (; i + 3 < nb; i += 4) {                                                             \
            _mm_prefetch((const char *)(x + i) + QD_PREFETCH, _MM_HINT_T0);                      \
            _mm_prefetch((const char *)(x + i) + QD_PREFETCH + 64, _MM_HINT_T0);                 \
            __m512i ab, cd;                                                                      \
            ULEVELS4(x + i, &ab, &cd);                                                           \
            const __m128 dx = DX4(x, i);                                                         \
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                        \
                const int8_t *qy = y->qs + r * y->qs_stride + (size_t)i * QK8_0;                 \
                const __m512i y0 = _mm512_loadu_si512(qy), y1 = _mm512_loadu_si512(qy + 64);     \
                const __m512i pab = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ab, y0);         \
                const __m512i pcd = _mm512_dpbusd_epi32(_mm512_setzero_si512(), cd, y1);         \
                const __m128 sc = _mm_mul_ps(dx, _mm_loadu_ps(y->d + r * y->d_stride + i));      \
                acc[r] = _mm512_fmadd_ps(lanes2(sc, 0), _mm512_cvtepi32_ps(pab), acc[r]);        \
                acc[r] = _mm512_fmadd_ps(lanes2(sc, 2), _mm512_cvtepi32_ps(pcd), acc[r]);        \
                const __m128i sums =                                                             \
                    _mm_loadu_si128((const __m128i *)(y->sums + r * y->d_stride + i));           \
                offset_sum[r] = _mm_fmadd_ps(sc, _mm_cvtepi32_ps(sums), offset_sum[r]);          \
            }                                                                                    \
        }                                                                                        \
        for (; i < nb; i++) {                                                                    \
            const __m256i l = LEVELS1(&x[i]);                                                    \
            const float dx = DX1(x, i);                                                          \
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                        \
                const __m256i p =                                                                \
                    dot_signed256(l, qd_load32(y->qs + r * y->qs_stride + (size_t)i * QK8_0));   \
                tail[r] += dx * y->d[r * y->d_stride + i] * (float)qd_hsum_epi32(p);             \
            }                                                                                    \
        }                                                                                        \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                            \
            __m128 o = _mm_add_ps(offset_sum[r], _mm_movehl_ps(offset_sum[r], offset_sum[r]));   \
            o = _mm_add_ss(o, _mm_movehdup_ps(o));                                               \
            s[r * s_stride] =                                                                    \
                _mm512_reduce_add_ps(acc[r]) - _mm_cvtss_f32(o) * (float)(OFFSET) + tail[r];     \
        }                                                                                        \
    }                                                                                            \
    QD_ROWS_DISPATCH(name)

ROWS_VNNI(rows_q5_0, block_q5_0, ulevels4_q5_0, 16, DX4_F16, qd_levels_q5_0, QD_DX_F16)

void cpu_quant_rows_fill_avx512vnni(cpu_vec_dot_rows_table t) { t[GGML_TYPE_Q5_0] = rows_q5_0; }

#else
void cpu_quant_dot_fill_avx512vnni(cpu_vec_dot_table t) { (void)t; }
void cpu_quant_wrows_fill_avx512vnni(cpu_vec_dot_wrows_table t) { (void)t; }
void cpu_quant_rows_fill_avx512vnni(cpu_vec_dot_rows_table t) { (void)t; }
#endif
