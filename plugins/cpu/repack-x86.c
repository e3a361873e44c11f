/*
 * repack-x86.c - the AVX2 + FMA kernels of packed groups (repack.h); compiled
 * again with REPACK_VNNI (repack-vnni.c) for AVX-512 VNNI.  Lane j of every
 * register is weight row j of the group: a 32-byte load holds one 4-byte word
 * of each of the eight rows, whose low nibbles are four values of each row and
 * whose high nibbles four more, and four activation values broadcast to all
 * lanes meet them in one vpdpbusd (or maddubs).  The integer sums are exact,
 * whatever their grouping, so every lane's float steps are those of ggml's
 * repacked GEMV and GEMM (quant-match.h), eight rows in one FMA each.
 */
#include "repack.h"

#if defined(__x86_64__)
#ifdef REPACK_VNNI
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#define REPACK_KERNEL cpu_repack_kernel_vnni
#else
#pragma GCC target("avx2,fma,f16c")
#define REPACK_KERNEL cpu_repack_kernel_avx2
#endif
#include <immintrin.h>
#include <string.h>

#include "ggmlc-blocks.h"
#include "quant-dot-x86.h"

/* Four activation values in every lane. */
static inline __m256i broadcast4(const int8_t *q) {
    int32_t v;
    memcpy(&v, q, sizeof v);
    return _mm256_set1_epi32(v);
}

/* ------------------------------------------------ Q4_0, IQ4_NL, MXFP4: 32-value blocks
 *
 * A group's block: the eight scales (head bytes), then four words a row: word i holds the
 * row's values 4i..4i+3 (low nibbles) and 16 + 4i..16 + 4i + 3 (high nibbles).  Each block
 * ends in one FMA for the eight rows: acc = fma(float(isum), dx * dy, acc). */

#ifdef REPACK_VNNI
/* The lanes' sums of unsigned levels lo, hi (the level plus `bias`) with the activations q,
 * less bias times the activations' block sum: the exact signed sums. */
static inline __m256i block_dots_biased(const __m256i lo[4], const __m256i hi[4], const int8_t *q,
                                        int32_t bias_sum) {
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256(); /* two chains of dependent adds */
    QD_UNROLL_ROWS for (int i = 0; i < 4; i++) {
        s0 = _mm256_dpbusd_epi32(s0, lo[i], broadcast4(q + 4 * i));
        s1 = _mm256_dpbusd_epi32(s1, hi[i], broadcast4(q + 16 + 4 * i));
    }
    return _mm256_sub_epi32(_mm256_add_epi32(s0, s1), _mm256_set1_epi32(bias_sum));
}
#define DOTS_Q4_0(lo, hi, q, sum)  block_dots_biased(lo, hi, q, 8 * (sum))
#define DOTS_TABLE(lo, hi, q, sum) block_dots_biased(lo, hi, q, 128 * (sum))
/* Table levels plus 128, as unsigned bytes. */
static inline __m128i table_biased(const int8_t *table) {
    return _mm_xor_si128(_mm_loadu_si128((const __m128i *)table), _mm_set1_epi8((char)0x80));
}
#else
/* Q4_0's unsigned nibbles: the eight maddubs results add as int16 and widen once (a lane's
 * pair is at most 2 * 15 * 128 = 3840 in magnitude, eight of them 30720: nothing saturates),
 * less 8 times the activations' block sum. */
static inline __m256i block_dots_q4_0(const __m256i lo[4], const __m256i hi[4], const int8_t *q,
                                      int32_t sum) {
    __m256i s0 = _mm256_maddubs_epi16(lo[0], broadcast4(q)), s1 = _mm256_maddubs_epi16(hi[0], broadcast4(q + 16));
    QD_UNROLL_ROWS for (int i = 1; i < 4; i++) {
        s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(lo[i], broadcast4(q + 4 * i)));
        s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(hi[i], broadcast4(q + 16 + 4 * i)));
    }
    return _mm256_sub_epi32(_mm256_madd_epi16(_mm256_add_epi16(s0, s1), _mm256_set1_epi16(1)),
                            _mm256_set1_epi32(8 * sum));
}

/* Signed table levels: |level| unsigned against the activations carrying its sign (a pair
 * is at most 2 * 127 * 127 in magnitude, so each maddubs widens on its own). */
static inline __m256i signed_dot4(__m256i l, const int8_t *q) {
    const __m256i p =
        _mm256_maddubs_epi16(_mm256_sign_epi8(l, l), _mm256_sign_epi8(broadcast4(q), l));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}
static inline __m256i block_dots_signed(const __m256i lo[4], const __m256i hi[4], const int8_t *q) {
    __m256i s0 = signed_dot4(lo[0], q), s1 = signed_dot4(hi[0], q + 16);
    QD_UNROLL_ROWS for (int i = 1; i < 4; i++) {
        s0 = _mm256_add_epi32(s0, signed_dot4(lo[i], q + 4 * i));
        s1 = _mm256_add_epi32(s1, signed_dot4(hi[i], q + 16 + 4 * i));
    }
    return _mm256_add_epi32(s0, s1);
}
#define DOTS_Q4_0(lo, hi, q, sum)  block_dots_q4_0(lo, hi, q, sum)
#define DOTS_TABLE(lo, hi, q, sum) block_dots_signed(lo, hi, q)
static inline __m128i table_biased(const int8_t *table) {
    return _mm_loadu_si128((const __m128i *)table);
}
#endif

/* The eight rows' scales of a group's block. */
static inline __m256 dx_f16(const uint8_t *blk) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)blk));
}
static inline __m256 dx_e8m0(const uint8_t *blk) { /* ggmlc_e8m0_to_fp32_half, eight at once */
    const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)blk));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    return _mm256_castsi256_ps(
        _mm256_blendv_epi8(normal, subnormal, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
}

/* Nibbles to the levels the dots take: Q4_0's as they are, the tables' looked up. */
#define LEVELS_NIBBLE(nib, table) (nib)
#define LEVELS_TABLE(nib, table)  _mm256_shuffle_epi8(table, nib)

#define BLOCK32_KERNEL(name, block_t, HEAD, DX, LEVELS, DOTS, TABLE)                              \
    static inline __attribute__((always_inline)) void name##_nr(                                  \
        int n, const void *group, const struct cpu_q8_rows *y, float *s, size_t s_stride,         \
        const int nr) {                                                                           \
        const uint8_t *g = group;                                                                 \
        const __m256i m4 = _mm256_set1_epi8(0x0f), table = _mm256_broadcastsi128_si256(TABLE);    \
        (void)table;                                                                              \
        __m256 acc[CPU_QUANT_MAX_ROWS];                                                           \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps();                 \
        for (int b = 0; b < n / QK8_0; b++) {                                                     \
            const uint8_t *blk = g + (size_t)b * CPU_REPACK_ROWS * sizeof(block_t);               \
            const __m256 dx = DX(blk);                                                            \
            __m256i lo[4], hi[4]; /* values 4i..4i+3 and 16+4i..16+4i+3 of every row */           \
            QD_UNROLL_ROWS for (int i = 0; i < 4; i++) {                                          \
                const __m256i raw = _mm256_loadu_si256((const __m256i *)(blk + (HEAD) + 32 * i)); \
                lo[i] = LEVELS(_mm256_and_si256(raw, m4), table);                                 \
                hi[i] = LEVELS(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4), table);           \
            }                                                                                     \
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                         \
                const int8_t *q = y->qs + r * y->qs_stride + (size_t)b * QK8_0;                   \
                const __m256i isum = DOTS(lo, hi, q, y->sums[r * y->d_stride + b]);               \
                const __m256 d = _mm256_mul_ps(dx, _mm256_set1_ps(y->d[r * y->d_stride + b]));    \
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc[r]);                    \
            }                                                                                     \
        }                                                                                         \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) _mm256_storeu_ps(s + r * s_stride, acc[r]);   \
    }                                                                                             \
    QD_ROWS_DISPATCH(name)

BLOCK32_KERNEL(group_q4_0, block_q4_0, 16, dx_f16, LEVELS_NIBBLE, DOTS_Q4_0, _mm_setzero_si128())
BLOCK32_KERNEL(group_iq4_nl, block_iq4_nl, 16, dx_f16, LEVELS_TABLE, DOTS_TABLE,
               table_biased(ggmlc_kvalues_iq4nl))
BLOCK32_KERNEL(group_mxfp4, block_mxfp4, 8, dx_e8m0, LEVELS_TABLE, DOTS_TABLE,
               table_biased(ggmlc_kvalues_mxfp4))

/* ------------------------------------------------------------------------------- Q4_K
 *
 * A group's block (repack.h): d of the eight rows at 0, dmin at 16 (f16), the three words of
 * their 6-bit scales and mins at 32, 64, 96, and the 32 words of their quants from 128: word
 * 8g + c holds values 64g + 4c..64g + 4c + 3 (low nibbles, sub-block 2g) and 64g + 32 + 4c..
 * (high nibbles, sub-block 2g + 1).  Per 64 values g and row: isum = sc_2g (q . y)_2g +
 * sc_2g+1 (q . y)_2g+1 and msum = m_2g bsum_2g + m_2g+1 bsum_2g+1, exact integers. */
enum { K4_BLOCK = CPU_REPACK_ROWS * sizeof(block_q4_K), K4_SCALES = 32, K4_QS = 128 };

/* The scales and mins of sub-blocks 0-3 and 4-7, a byte each, lane by lane: sm[0] scales
 * 0-3, sm[1] scales 4-7, sm[2] mins 0-3, sm[3] mins 4-7 (ggml's 12-byte packing). */
static inline void k4_scales_mins(const uint8_t *blk, __m256i sm[4]) {
    const __m256i w0 = _mm256_loadu_si256((const __m256i *)(blk + K4_SCALES));
    const __m256i w1 = _mm256_loadu_si256((const __m256i *)(blk + K4_SCALES + 32));
    const __m256i w2 = _mm256_loadu_si256((const __m256i *)(blk + K4_SCALES + 64));
    const __m256i m6 = _mm256_set1_epi8(0x3f), m4 = _mm256_set1_epi8(0x0f),
                  top2 = _mm256_set1_epi8(0x30);
    sm[0] = _mm256_and_si256(w0, m6);
    sm[2] = _mm256_and_si256(w1, m6);
    sm[1] =
        _mm256_or_si256(_mm256_and_si256(w2, m4), _mm256_and_si256(_mm256_srli_epi32(w0, 2), top2));
    sm[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, 4), m4),
                            _mm256_and_si256(_mm256_srli_epi32(w1, 2), top2));
}

/* Byte k of every lane of four, as int32. */
static inline __m256i k4_byte(__m256i four, int k) {
    return _mm256_and_si256(_mm256_srli_epi32(four, 8 * k), _mm256_set1_epi32(0xff));
}

/* The scaled sum of 32 values (one sub-block) in each lane: the unsigned levels w[c]
 * (values 4c..4c+3) against the activations q, times the lanes' scale (int32). */
static inline __m256i k4_sub_dot(const __m256i w[8], const int8_t *q, __m256i scale) {
#ifdef REPACK_VNNI
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
    QD_UNROLL_ALL for (int c = 0; c < 8; c += 2) {
        s0 = _mm256_dpbusd_epi32(s0, w[c], broadcast4(q + 4 * c));
        s1 = _mm256_dpbusd_epi32(s1, w[c + 1], broadcast4(q + 4 * c + 4));
    }
    return _mm256_mullo_epi32(_mm256_add_epi32(s0, s1), scale);
#else
    /* int16 sums of eight maddubs: at most 8 * 2 * 15 * 128 = 30720 in magnitude */
    __m256i s0 = _mm256_maddubs_epi16(w[0], broadcast4(q)),
            s1 = _mm256_maddubs_epi16(w[1], broadcast4(q + 4));
    QD_UNROLL_ALL for (int c = 2; c < 8; c += 2) {
        s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(w[c], broadcast4(q + 4 * c)));
        s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(w[c + 1], broadcast4(q + 4 * c + 4)));
    }
    return _mm256_madd_epi16(_mm256_add_epi16(s0, s1),
                             _mm256_or_si256(scale, _mm256_slli_epi32(scale, 16)));
#endif
}

/* The activations' bsum pairs of one Q8_K block: pair g (int16 halves) the sums of values
 * 64g..64g + 31 and 64g + 32..64g + 63 (each at most 32 * 128 in magnitude). */
static inline void k4_bsum_pairs(const block_q8_K *yb, int32_t pairs[4]) {
    for (int g = 0; g < 4; g++) {
        const uint16_t lo = (uint16_t)(yb->bsums[4 * g] + yb->bsums[4 * g + 1]);
        const uint16_t hi = (uint16_t)(yb->bsums[4 * g + 2] + yb->bsums[4 * g + 3]);
        pairs[g] = (int32_t)((uint32_t)lo | (uint32_t)hi << 16);
    }
}

static inline const block_q8_K *k4_row(const struct cpu_q8_rows *y, int r, int i) {
    return (const block_q8_K *)(const void *)(y->qs + r * y->qs_stride) + i;
}

/* One float step of ggml's repacked K-quant orders for the eight rows against one activation
 * row of scale yd: acc = fma(isum, d * yd, acc), accm = fma(msum, dmin * yd, accm). */
static inline __attribute__((always_inline)) void kq_step(__m256 *acc, __m256 *accm, __m256i isum,
                                                          __m256i msum, __m256 d, __m256 dmin,
                                                          float yd) {
    const __m256 y = _mm256_set1_ps(yd);
    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, y), *acc);
    *accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(dmin, y), *accm);
}

/* A step's exact sums of one activation row: in ggml's GEMM a float step at once, in its
 * GEMV added to the super-block's sums (*isum_all, *msum_all) for one step at its end. */
static inline __attribute__((always_inline)) void kq_take(bool gemm, __m256 *acc, __m256 *accm,
                                                          __m256i *isum_all, __m256i *msum_all,
                                                          __m256i isum, __m256i msum, __m256 d,
                                                          __m256 dmin, float yd) {
    if (gemm) {
        kq_step(acc, accm, isum, msum, d, dmin, yd);
    } else {
        *isum_all = _mm256_add_epi32(*isum_all, isum);
        *msum_all = _mm256_add_epi32(*msum_all, msum);
    }
}

/* The GEMM (name_gemm) and GEMV (name_gemv) kernels of name_group_nr(..., gemm). */
#define KQ_ORDERS(name)                                                                   \
    static inline __attribute__((always_inline)) void name##_gemm_nr(                     \
        int n, const void *group, const struct cpu_q8_rows *y, float *s, size_t s_stride, \
        const int nr) {                                                                   \
        name##_group_nr(n, group, y, s, s_stride, nr, true);                              \
    }                                                                                     \
    static inline __attribute__((always_inline)) void name##_gemv_nr(                     \
        int n, const void *group, const struct cpu_q8_rows *y, float *s, size_t s_stride, \
        const int nr) {                                                                   \
        name##_group_nr(n, group, y, s, s_stride, nr, false);                             \
    }                                                                                     \
    QD_ROWS_DISPATCH(name##_gemm)                                                         \
    QD_ROWS_DISPATCH(name##_gemv)

static inline __attribute__((always_inline)) void k4_group_nr(int n, const void *group,
                                                              const struct cpu_q8_rows *y, float *s,
                                                              size_t s_stride, const int nr,
                                                              const bool gemm) {
    const uint8_t *grp = group;
    const __m256i m4 = _mm256_set1_epi8(0x0f), low_byte = _mm256_set1_epi32(0xff),
                  third_byte = _mm256_set1_epi32(0xff0000);
    __m256 acc[CPU_QUANT_MAX_ROWS], accm[CPU_QUANT_MAX_ROWS];
    QD_UNROLL_ROWS for (int r = 0; r < nr; r++) acc[r] = accm[r] = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_K; i++) {
        const uint8_t *blk = grp + (size_t)i * K4_BLOCK;
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)blk));
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(blk + 16)));
        __m256i sm[4];
        k4_scales_mins(blk, sm);
        int32_t pairs[CPU_QUANT_MAX_ROWS][4];
        __m256i isum_all[CPU_QUANT_MAX_ROWS], msum_all[CPU_QUANT_MAX_ROWS];
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {
            k4_bsum_pairs(k4_row(y, r, i), pairs[r]);
            isum_all[r] = msum_all[r] = _mm256_setzero_si256();
        }
        _Pragma("GCC unroll 1") for (int g = 0; g < 4; g++) {
            /* sub-blocks 2g and 2g + 1: their scales, and their mins as int16 halves of a lane */
            const __m256i sc0 = k4_byte(sm[g / 2], 2 * (g % 2)),
                          sc1 = k4_byte(sm[g / 2], 2 * (g % 2) + 1);
            const __m256i mins = _mm256_srli_epi32(sm[2 + g / 2], 16 * (g % 2));
            const __m256i mpair =
                _mm256_or_si256(_mm256_and_si256(mins, low_byte),
                                _mm256_and_si256(_mm256_slli_epi32(mins, 8), third_byte));
            const uint8_t *qs = blk + K4_QS + 32 * 8 * g;
            __m256i lo[8], hi[8];
            QD_UNROLL_ALL for (int c = 0; c < 8; c++) {
                const __m256i raw = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
                lo[c] = _mm256_and_si256(raw, m4);
                hi[c] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
            }
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {
                const block_q8_K *yb = k4_row(y, r, i);
                const __m256i isum = _mm256_add_epi32(k4_sub_dot(lo, yb->qs + 64 * g, sc0),
                                                      k4_sub_dot(hi, yb->qs + 64 * g + 32, sc1));
                const __m256i msum = _mm256_madd_epi16(mpair, _mm256_set1_epi32(pairs[r][g]));
                kq_take(gemm, &acc[r], &accm[r], &isum_all[r], &msum_all[r], isum, msum, d, dmin,
                        yb->d); /* GEMM: a step per 64 values */
            }
        }
        if (!gemm) /* ggml's GEMV: a float step per super-block */
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++)
                kq_step(&acc[r], &accm[r], isum_all[r], msum_all[r], d, dmin, k4_row(y, r, i)->d);
    }
    QD_UNROLL_ROWS for (int r = 0; r < nr; r++)
        _mm256_storeu_ps(s + r * s_stride, _mm256_sub_ps(acc[r], accm[r]));
}

KQ_ORDERS(k4)

/* ------------------------------------------------------------------------------- Q2_K
 *
 * A group's block (repack.h): the four words of the eight rows' scale bytes at 0 (byte s of
 * a row: sub-block s's 4-bit scale, its min above), the 16 words of their quants from 128,
 * d at 640 and dmin at 656 (f16).  Quant word 8h + c holds in bits 2k, 2k + 1 of its bytes
 * values 128h + 32k + 4c..128h + 32k + 4c + 3, of sub-block 8h + 2k + c / 4.  ggml's GEMM
 * steps by 128 values (h), its GEMV by super-blocks. */
enum { K2_BLOCK = CPU_REPACK_ROWS * sizeof(block_q2_K), K2_QS = 128, K2_D = 640, K2_DMIN = 656 };

/* The lanes' scale (low nibble) of sub-blocks s (*sc0) and s + 1 (*sc1), s even. */
static inline void k2_scales(const __m256i words[4], int s, __m256i *sc0, __m256i *sc1) {
    const __m256i b = _mm256_srli_epi32(words[s / 4], 8 * (s % 4)), m4 = _mm256_set1_epi32(0x0f);
    *sc0 = _mm256_and_si256(b, m4);
    *sc1 = _mm256_and_si256(_mm256_srli_epi32(b, 8), m4);
}

/* The lanes' mins (high nibbles) of sub-blocks 2t and 2t + 1 as the int16 halves of a lane. */
static inline __m256i k2_min_pair(const __m256i words[4], int t) {
    const __m256i b = _mm256_srli_epi32(words[t / 2], 16 * (t % 2));
    return _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(b, 4), _mm256_set1_epi32(0x0f)),
                           _mm256_and_si256(_mm256_slli_epi32(b, 4), _mm256_set1_epi32(0xf0000)));
}

/* The scaled sum of 32 values, sub-blocks s0 (w[0..3]) and s1 (w[4..7]), in each lane. */
static inline __m256i k2_dot32(const __m256i w[8], const int8_t *q, __m256i sc0, __m256i sc1) {
#ifdef REPACK_VNNI
    __m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();
    QD_UNROLL_ALL for (int c = 0; c < 4; c++) {
        a = _mm256_dpbusd_epi32(a, w[c], broadcast4(q + 4 * c));
        b = _mm256_dpbusd_epi32(b, w[c + 4], broadcast4(q + 16 + 4 * c));
    }
    return _mm256_add_epi32(_mm256_mullo_epi32(a, sc0), _mm256_mullo_epi32(b, sc1));
#else
    /* int16 sums of four maddubs: at most 4 * 2 * 3 * 128 = 3072 in magnitude */
    __m256i a = _mm256_maddubs_epi16(w[0], broadcast4(q)),
            b = _mm256_maddubs_epi16(w[4], broadcast4(q + 16));
    QD_UNROLL_ALL for (int c = 1; c < 4; c++) {
        a = _mm256_add_epi16(a, _mm256_maddubs_epi16(w[c], broadcast4(q + 4 * c)));
        b = _mm256_add_epi16(b, _mm256_maddubs_epi16(w[c + 4], broadcast4(q + 16 + 4 * c)));
    }
    return _mm256_add_epi32(_mm256_madd_epi16(a, _mm256_or_si256(sc0, _mm256_slli_epi32(sc0, 16))),
                            _mm256_madd_epi16(b, _mm256_or_si256(sc1, _mm256_slli_epi32(sc1, 16))));
#endif
}

static inline __attribute__((always_inline)) void k2_group_nr(int n, const void *group,
                                                              const struct cpu_q8_rows *y, float *s,
                                                              size_t s_stride, const int nr,
                                                              const bool gemm) {
    const uint8_t *grp = group;
    const __m256i m2 = _mm256_set1_epi8(3);
    __m256 acc[CPU_QUANT_MAX_ROWS], accm[CPU_QUANT_MAX_ROWS];
    QD_UNROLL_ROWS for (int r = 0; r < nr; r++) acc[r] = accm[r] = _mm256_setzero_ps();
    for (int i = 0; i < n / QK_K; i++) {
        const uint8_t *blk = grp + (size_t)i * K2_BLOCK;
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(blk + K2_D)));
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(blk + K2_DMIN)));
        __m256i words[4], isum_all[CPU_QUANT_MAX_ROWS], msum_all[CPU_QUANT_MAX_ROWS];
        QD_UNROLL_ALL for (int w = 0; w < 4; w++) words[w] =
            _mm256_loadu_si256((const __m256i *)(blk + 32 * w));
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) isum_all[r] = msum_all[r] =
            _mm256_setzero_si256();
        _Pragma("GCC unroll 1") for (int h = 0; h < 2; h++) {
            const uint8_t *qs = blk + K2_QS + 32 * 8 * h;
            __m256i isum[CPU_QUANT_MAX_ROWS];
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) isum[r] = _mm256_setzero_si256();
            _Pragma("GCC unroll 1") for (int k = 0; k < 4; k++) {
                __m256i sc0, sc1, w[8];
                k2_scales(words, 8 * h + 2 * k, &sc0, &sc1);
                QD_UNROLL_ALL for (int c = 0; c < 8; c++) w[c] = _mm256_and_si256(
                    _mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)(qs + 32 * c)), 2 * k),
                    m2);
                QD_UNROLL_ROWS for (int r = 0; r < nr; r++) isum[r] = _mm256_add_epi32(
                    isum[r], k2_dot32(w, k4_row(y, r, i)->qs + 128 * h + 32 * k, sc0, sc1));
            }
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {
                const block_q8_K *yb = k4_row(y, r, i);
                __m256i msum = _mm256_setzero_si256();
                QD_UNROLL_ALL for (int t = 4 * h; t < 4 * h + 4; t++) {
                    int32_t pair;
                    memcpy(&pair, yb->bsums + 2 * t,
                           sizeof pair); /* bsums 2t, 2t + 1 as int16 halves */
                    msum = _mm256_add_epi32(
                        msum, _mm256_madd_epi16(k2_min_pair(words, t), _mm256_set1_epi32(pair)));
                }
                kq_take(gemm, &acc[r], &accm[r], &isum_all[r], &msum_all[r], isum[r], msum, d, dmin,
                        yb->d); /* GEMM: a step per 128 values */
            }
        }
        if (!gemm) /* ggml's GEMV: a float step per super-block */
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++)
                kq_step(&acc[r], &accm[r], isum_all[r], msum_all[r], d, dmin, k4_row(y, r, i)->d);
    }
    QD_UNROLL_ROWS for (int r = 0; r < nr; r++)
        _mm256_storeu_ps(s + r * s_stride, _mm256_sub_ps(acc[r], accm[r]));
}

KQ_ORDERS(k2)

cpu_repack_kernel_t REPACK_KERNEL(enum ggml_type type, bool gemm) {
    switch (type) {
    case GGML_TYPE_Q4_0: return group_q4_0;
    case GGML_TYPE_IQ4_NL: return group_iq4_nl;
    case GGML_TYPE_MXFP4: return group_mxfp4;
    case GGML_TYPE_Q4_K: return gemm ? k4_gemm : k4_gemv;
    case GGML_TYPE_Q2_K: return gemm ? k2_gemm : k2_gemv;
    default: return NULL;
    }
}

#elif defined(REPACK_VNNI)
cpu_repack_kernel_t cpu_repack_kernel_vnni(enum ggml_type type, bool gemm) { return NULL; }
#else
cpu_repack_kernel_t cpu_repack_kernel_avx2(enum ggml_type type, bool gemm) { return NULL; }
#endif
