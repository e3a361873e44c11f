/*
 * quant-dot-rows-k-x86.h - the x86 multi-row dot products (quant-dot.h) of
 * the K-quants, IQ4_XS, Q4_1 and Q5_1, compiled twice: for AVX2
 * (quant-dot-rows-k-avx2.c) and for AVX-512 VNNI (quant-dot-rows-k-avx512.c).
 * Include after the file's target pragma and quant-dot-x86.h, with
 *   RK_ACC(acc, p, sc)  acc + the int16 pairs of p times those of sc, summed to int32
 *                       (madd + add, or one vpdpwssd);
 *   RK_DOT_U8(x, y)     the int32 sums of four products of unsigned x and signed y
 *                       (maddubs + madd, or one vpdpbusd);
 *   RK_FILL             the name of the fill function;
 *   RK_SINGLE_FILL      optionally, the path's vec_dot fill, whose single-row dots replace
 *                       the AVX2 ones for one row (they give the same bits);
 *   RK_Q3_512           optionally (AVX-512 BW), Q3_K's rows in 512-bit registers.
 *
 * A super-block (K-quants, IQ4_XS) is decoded once into eight registers of unsigned
 * levels (and signs), one per 32 values, and eight registers of int16 sub-block scales
 * lined up with the maddubs pairs; every activation row then costs eight maddubs + RK_ACC
 * and one madd for its type's bias term.  Each row keeps ggml's eight float lanes and does
 * what the single-row dot does (quant-dot-x86.h, quant-dot-avx2.c), operation for operation:
 * the integer lanes are exact, so a column's result does not depend on how many columns the
 * product has, and one row goes through the single-row dot itself.  (Q4_K and Q2_K weights
 * in CPU_REPACK are packed and take ggml's repacked orders: repack-x86.c.)
 */
#ifndef GGMLC_CPU_QUANT_DOT_ROWS_K_X86_H
#define GGMLC_CPU_QUANT_DOT_ROWS_K_X86_H

#define RK_INLINE static inline __attribute__((always_inline))

/* One decoded super-block. */
struct rk_block {
    __m256i lv[8];  /* unsigned levels (IQ4_XS: |level|) of values 32k .. 32k + 31 */
    __m256i sc[8];  /* int16 scale of each maddubs pair of lv[k] */
    __m256i sgn[8]; /* IQ4_XS: the signed levels, whose signs go onto the activations */
    __m256i bias16; /* int16 multipliers of the 16 bsums: Q2_K/Q4_K/Q5_K mins, Q6_K scales */
#ifdef RK_Q3_512
    __m512i mag[4];   /* Q3_K: |level| of values 64j .. 64j + 63 (groups 2j and 2j + 1) */
    __m512i sc512[4]; /* Q3_K: the int16 scale of each of their maddubs pairs */
    __mmask64 neg[4]; /* Q3_K: their values whose level is negative */
#endif
    float d, dmin;
};

RK_INLINE const block_q8_K *rk_row(const struct cpu_q8_rows *y, int r, int i) {
    return (const block_q8_K *)(const void *)(y->qs + r * y->qs_stride) + i;
}

/* sum_k lv[k] . y_k scaled by sc[k]: the super-block's integer sum against one row in
 * ggml's eight lanes (lane m: bytes 4m..4m + 3 of every 32 values), as its AVX2 vec_dot
 * keeps them. */
RK_INLINE __m256i rk_acc_lanes(const struct rk_block *b, const int8_t *q8) {
    __m256i acc = _mm256_setzero_si256();
    for (int k = 0; k < 8; k++)
        acc = RK_ACC(acc, _mm256_maddubs_epi16(b->lv[k], qd_load32(q8 + 32 * k)), b->sc[k]);
    return acc;
}

/* The same with signed levels: |l| . sign(y, l). */
RK_INLINE __m256i rk_acc_signed(const struct rk_block *b, const int8_t *q8) {
    __m256i acc = _mm256_setzero_si256();
    for (int k = 0; k < 8; k++) {
        const __m256i yk = _mm256_sign_epi8(qd_load32(q8 + 32 * k), b->sgn[k]);
        acc = RK_ACC(acc, _mm256_maddubs_epi16(b->lv[k], yk), b->sc[k]);
    }
    return acc;
}

/* sum_j bias16_j * bsums_j over the 16 bsums of a Q8_K block, in eight int32 lanes. */
RK_INLINE __m256i rk_bias_v(const struct rk_block *b, const block_q8_K *yb) {
    return _mm256_madd_epi16(b->bias16, _mm256_loadu_si256((const __m256i *)yb->bsums));
}

/* 16 int16 scales s16 (sub-blocks of 16 values) as the multipliers of lv[4h + k]: scale
 * 8h + 2k in the low 128-bit lane (values 0-15 of the 32), 8h + 2k + 1 in the high one. */
RK_INLINE void rk_scales16(__m256i s16, __m256i sc[8]) {
    QD_UNROLL_ALL
    for (int g = 0; g < 8; g++) sc[g] = qd_scale_pair(s16, 2 * g);
}

/* Q2_K: byte l of 32-byte group h holds values 128h + l + 32k in bits 2k, 2k + 1. */
RK_INLINE void rk_decode_q2_K(const block_q2_K *x, struct rk_block *b) {
    const __m256i m2 = _mm256_set1_epi8(3);
    const __m128i sc = _mm_loadu_si128((const __m128i *)x->scales);
    for (int h = 0; h < 2; h++) {
        const __m256i q = qd_load32(x->qs + 32 * h);
        for (int k = 0; k < 4; k++) b->lv[4 * h + k] = _mm256_and_si256(_mm256_srli_epi16(q, 2 * k), m2);
    }
    rk_scales16(_mm256_cvtepu8_epi16(_mm_and_si128(sc, _mm_set1_epi8(0x0f))), b->sc);
    b->bias16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), _mm_set1_epi8(0x0f)));
    b->d = qd_h2f(x->d);
    b->dmin = qd_h2f(x->dmin);
}

#ifdef RK_Q3_512
/* Word lane 8q + r of sc512[j]: scale 4j + q. */
#define RK_Q3_R8(v) v, v, v, v, v, v, v, v
#define RK_Q3_STEP(j) \
    { RK_Q3_R8(4 * (j)), RK_Q3_R8(4 * (j) + 1), RK_Q3_R8(4 * (j) + 2), RK_Q3_R8(4 * (j) + 3) }
static const int16_t rk_q3_index[4][32]
    __attribute__((aligned(64))) = {RK_Q3_STEP(0), RK_Q3_STEP(1), RK_Q3_STEP(2), RK_Q3_STEP(3)};

/* Q3_K, as quant-dot-avx512.c's single-row dot: groups 2j and 2j + 1 of 32 values in the low
 * and high halves of mag[j].  Where a value's hmask bit is clear its level low2 - 4 is
 * negative: one bit test's mask neg[j] gives |level| = 4 - low2 here and negates the
 * activations in rk_acc_q3_K (psignb's product, psignb's wrap of -128). */
RK_INLINE void rk_decode_q3_K(const block_q3_K *x, struct rk_block *b) {
    const __m512i m3 = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
    const __m512i hm = _mm512_broadcast_i64x4(qd_load32(x->hmask));
    const __m512i sc = _mm512_castsi256_si512(q3_K_scales16(x->scales));
    QD_UNROLL_ALL
    for (int j = 0; j < 4; j++) {
        const int h = j / 2, k = 2 * (j % 2);
        const __m512i q = _mm512_broadcast_i64x4(qd_load32(x->qs + 32 * h));
        const __m512i shift = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * k)),
                                                 _mm256_set1_epi16((short)(2 * k + 2)), 1);
        const __m512i low2 = _mm512_and_si512(_mm512_srlv_epi16(q, shift), m3);
        const __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << (4 * h + k))),
                                               _mm256_set1_epi8((char)(1 << (4 * h + k + 1))), 1);
        b->neg[j] = _mm512_testn_epi8_mask(hm, bit);
        b->mag[j] = _mm512_mask_sub_epi8(low2, b->neg[j], four, low2);
        b->sc512[j] = _mm512_permutexvar_epi16(_mm512_load_si512(rk_q3_index[j]), sc);
    }
    b->bias16 = _mm256_setzero_si256();
    b->d = qd_h2f(x->d);
}

/* rk_acc_signed's sums for Q3_K: the same maddubs pairs and int32 lanes, the halves' lanes
 * (even and odd groups) added at the end: the same exact integer sums. */
RK_INLINE __m256i rk_acc_q3_K(const struct rk_block *b, const int8_t *q8) {
    __m512i acc = _mm512_setzero_si512();
    for (int j = 0; j < 4; j++) {
        const __m512i yj = _mm512_loadu_si512(q8 + 64 * j);
        const __m512i p = _mm512_maddubs_epi16(
            b->mag[j], _mm512_mask_sub_epi8(yj, b->neg[j], _mm512_setzero_si512(), yj));
        acc = _mm512_dpwssd_epi32(acc, p, b->sc512[j]);
    }
    return _mm256_add_epi32(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64(acc, 1));
}
#else
/* Q3_K: signed levels low2 - 4 * (1 - high) in [-4, 3] (sgn), their magnitudes in lv. */
RK_INLINE void rk_decode_q3_K(const block_q3_K *x, struct rk_block *b) {
    const __m256i m2 = _mm256_set1_epi8(3);
    const __m256i hm = qd_load32(x->hmask);
    QD_UNROLL_ALL
    for (int h = 0; h < 2; h++) {
        const __m256i q = qd_load32(x->qs + 32 * h);
        QD_UNROLL_ALL
        for (int k = 0; k < 4; k++) {
            b->sgn[4 * h + k] = _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(q, 2 * k), m2),
                                                q3_K_clear4(hm, 4 * h + k));
            b->lv[4 * h + k] = _mm256_abs_epi8(b->sgn[4 * h + k]);
        }
    }
    rk_scales16(q3_K_scales16(x->scales), b->sc);
    b->bias16 = _mm256_setzero_si256();
    b->d = qd_h2f(x->d);
}
#define rk_acc_q3_K rk_acc_signed
#endif

/* Q4_K / Q5_K (qh NULL for Q4_K): 32-value sub-blocks, one scale for both lanes. */
RK_INLINE void rk_decode_k45(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, ggml_fp16_t d,
                                 ggml_fp16_t dmin, struct rk_block *b) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    const __m128i sm = qd_k4_scales_mins(scales);
    const __m128i mins = _mm_srli_si128(sm, 8); /* each twice: one per bsum of its 32 values */
    b->bias16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mins, mins));
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    const __m256i hbits = qh ? qd_load32(qh) : _mm256_setzero_si256();
    for (int g = 0; g < 4; g++) {
        const __m256i q = qd_load32(qs + 32 * g);
        b->lv[2 * g] = _mm256_and_si256(q, m4);
        b->lv[2 * g + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        if (qh) {
            const __m256i b0 = _mm256_and_si256(_mm256_srli_epi16(hbits, 2 * g), one);
            const __m256i b1 = _mm256_and_si256(_mm256_srli_epi16(hbits, 2 * g + 1), one);
            b->lv[2 * g] = _mm256_or_si256(b->lv[2 * g], _mm256_slli_epi16(b0, 4));
            b->lv[2 * g + 1] = _mm256_or_si256(b->lv[2 * g + 1], _mm256_slli_epi16(b1, 4));
        }
        b->sc[2 * g] = qd_word(sc16, 2 * g);
        b->sc[2 * g + 1] = qd_word(sc16, 2 * g + 1);
    }
    b->d = qd_h2f(d);
    b->dmin = qd_h2f(dmin);
}

RK_INLINE void rk_decode_q4_K(const block_q4_K *x, struct rk_block *b) {
    rk_decode_k45(x->scales, x->qs, NULL, x->d, x->dmin, b);
}
RK_INLINE void rk_decode_q5_K(const block_q5_K *x, struct rk_block *b) {
    rk_decode_k45(x->scales, x->qs, x->qh, x->d, x->dmin, b);
}

/* Q6_K: levels in [0, 63], the -32 back through the bsums times the 16 scales. */
RK_INLINE void rk_decode_q6_K(const block_q6_K *x, struct rk_block *b) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; h++) {
        const __m256i qh = qd_load32(x->qh + 32 * h), ql0 = qd_load32(x->ql + 64 * h), ql1 = qd_load32(x->ql + 64 * h + 32);
        const __m256i lows[4] = {_mm256_and_si256(ql0, m4), _mm256_and_si256(ql1, m4),
                                 _mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4)};
        for (int k = 0; k < 4; k++) {
            const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), m2);
            b->lv[4 * h + k] = _mm256_or_si256(lows[k], _mm256_slli_epi16(high, 4));
        }
    }
    b->bias16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
    rk_scales16(b->bias16, b->sc);
    b->d = qd_h2f(x->d);
}

/* IQ4_XS: IQ4_NL levels per 32 values, 6-bit sub-block scales stored + 32. */
RK_INLINE void rk_decode_iq4_xs(const block_iq4_xs *x, struct rk_block *b) {
    const __m128i table = _mm_loadu_si128((const __m128i *)ggmlc_kvalues_iq4nl);
    for (int ib = 0; ib < 8; ib++) {
        const int ls = ((x->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | ((x->scales_h >> (2 * ib)) & 3) << 4;
        b->sgn[ib] = qd_table_lookup(x->qs + 16 * ib, table);
        b->lv[ib] = _mm256_sign_epi8(b->sgn[ib], b->sgn[ib]);
        b->sc[ib] = _mm256_set1_epi16((short)(ls - 32));
    }
    b->bias16 = _mm256_setzero_si256();
    b->d = qd_h2f(x->d);
}

/* The single-row dots of the K-quants (quant-dot-avx2.c), which one row goes through. */
static ggml_vec_dot_t rk_single[GGML_TYPE_COUNT];

/* The K-quants and IQ4_XS in ggml's lane order (the single-row dots of quant-dot-x86.h and
 * quant-dot-avx2.c): every row keeps eight float lanes, FMA'd with y.d * d per super-block
 * (ACC: the integer lanes), and its mins or offsets by KIND: 0 none; 2 (Q2_K) the bsum-term
 * lanes FMA'd with -y.d * dmin into the same lanes first; 4 (Q4_K) four fused lanes, ggml's
 * lane k the bsum-term lanes 2k and 2k + 1; 5 (Q5_K) one fused scalar; 6 (Q6_K) 32 times the
 * bsum-term lanes taken off the lanes.  One row: the single-row dot. */
#define RK_LANES(name, type, xt, DECODE, ACC, KIND)                                               \
    static inline __attribute__((always_inline)) void name##_nr(                                  \
        int n, const void *vx, const struct cpu_q8_rows *y, float *s, size_t s_stride,            \
        const int nr) {                                                                           \
        const xt *x = vx;                                                                         \
        if (nr == 1) {                                                                            \
            rk_single[type](n, s, 0, vx, 0, y->qs, 0, 1);                                         \
            return;                                                                               \
        }                                                                                         \
        __m256 acc[8];                                                                            \
        __m128 accm[8];                                                                           \
        float summs[8];                                                                           \
        QD_UNROLL_ROWS for (int r = 0; r < 8; r++) {                                              \
            acc[r] = _mm256_setzero_ps();                                                         \
            accm[r] = _mm_setzero_ps();                                                           \
            summs[r] = 0;                                                                         \
        }                                                                                         \
        for (int i = 0; i < n / QK_K; i++) {                                                      \
            _mm_prefetch((const char *)(x + i) + QD_PREFETCH, _MM_HINT_T0);                       \
            struct rk_block b;                                                                    \
            DECODE(&x[i], &b);                                                                    \
            QD_UNROLL_ROWS for (int r = 0; r < 8; r++) {                                          \
                if (r >= nr) continue;                                                            \
                const block_q8_K *yb = rk_row(y, r, i);                                           \
                __m256i lanes = ACC(&b, yb->qs);                                                  \
                const __m256i bias = rk_bias_v(&b, yb);                                           \
                if (KIND == 6) lanes = _mm256_sub_epi32(lanes, _mm256_slli_epi32(bias, 5));       \
                if (KIND == 2)                                                                    \
                    acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(-yb->d * b.dmin),                     \
                                             _mm256_cvtepi32_ps(bias), acc[r]);                   \
                acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(yb->d * b.d), _mm256_cvtepi32_ps(lanes),  \
                                         acc[r]);                                                 \
                if (KIND == 4) {                                                                  \
                    const __m256i h = _mm256_hadd_epi32(bias, bias);                              \
                    const __m128i m4 = _mm_unpacklo_epi64(_mm256_castsi256_si128(h),              \
                                                          _mm256_extracti128_si256(h, 1));        \
                    accm[r] =                                                                     \
                        _mm_fmadd_ps(_mm_set1_ps(-yb->d * b.dmin), _mm_cvtepi32_ps(m4), accm[r]); \
                } else if (KIND == 5) {                                                           \
                    summs[r] = fmaf(-yb->d * b.dmin, (float)qd_hsum_epi32(bias), summs[r]);       \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                             \
            float v = qd_hsum_ps(acc[r]);                                                         \
            if (KIND == 4) v += qd_hsum4_ps(accm[r]);                                             \
            if (KIND == 5) v += summs[r];                                                         \
            s[r * s_stride] = v;                                                                  \
        }                                                                                         \
    }                                                                                             \
    QD_ROWS_DISPATCH(name)

RK_LANES(rk_q2_K, GGML_TYPE_Q2_K, block_q2_K, rk_decode_q2_K, rk_acc_lanes, 2)
RK_LANES(rk_q3_K, GGML_TYPE_Q3_K, block_q3_K, rk_decode_q3_K, rk_acc_q3_K, 0)
RK_LANES(rk_q4_K, GGML_TYPE_Q4_K, block_q4_K, rk_decode_q4_K, rk_acc_lanes, 4)
RK_LANES(rk_q5_K, GGML_TYPE_Q5_K, block_q5_K, rk_decode_q5_K, rk_acc_lanes, 5)
RK_LANES(rk_q6_K, GGML_TYPE_Q6_K, block_q6_K, rk_decode_q6_K, rk_acc_lanes, 6)
RK_LANES(rk_iq4_xs, GGML_TYPE_IQ4_XS, block_iq4_xs, rk_decode_iq4_xs, rk_acc_signed, 0)

/* ------------------------------------------ Q4_1 and Q5_1 against Q8_1 rows
 *
 * Four blocks per step as the AVX2 single-row dot takes them: per row two float
 * accumulators (blocks 0, 2 and 1, 3 of each step), the m * s terms summed four lanes
 * wide, blocks after the last full step one by one; the weights' levels, scales and
 * offsets decoded once per step for all rows. */

static inline __m256i rk_levels_q4_1(const block_q4_1 *x) { return qd_unpack_nibbles(x->qs); }
static inline __m256i rk_levels_q5_1(const block_q5_1 *x) { return qd_q5_levels(x->qs, x->qh); }

/* The f16 fields at byte offset `at` of blocks i .. i + 3 (36 bytes apart for Q8_1). */
#define RK_HALVES4(p, i, field) \
    _mm_setr_epi16((short)(p)[i].field, (short)(p)[(i) + 1].field, (short)(p)[(i) + 2].field, (short)(p)[(i) + 3].field, 0, 0, 0, 0)

#define RK_MIN32(name, xt, LEVELS)                                                                              \
    static inline __attribute__((always_inline)) void name##_nr(int n, const void *vx, const struct cpu_q8_rows *y, \
                                                                float *s, size_t s_stride, const int nr) {     \
        const xt *x = vx;                                                                                      \
        const int nb = n / 32;                                                                                 \
        __m256 acc0[CPU_QUANT_MAX_ROWS], acc1[CPU_QUANT_MAX_ROWS];                                             \
        __m128 mins[CPU_QUANT_MAX_ROWS];                                                                       \
        float tail[CPU_QUANT_MAX_ROWS];                                                                        \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                                          \
            acc0[r] = acc1[r] = _mm256_setzero_ps();                                                           \
            mins[r] = _mm_setzero_ps();                                                                        \
            tail[r] = 0;                                                                                       \
        }                                                                                                      \
        int i = 0;                                                                                             \
        for (; i + 3 < nb; i += 4) {                                                                           \
            _mm_prefetch((const char *)(x + i) + QD_PREFETCH, _MM_HINT_T0);                                    \
            _mm_prefetch((const char *)(x + i) + QD_PREFETCH + 64, _MM_HINT_T0);                               \
            const __m128 dx = _mm_cvtph_ps(RK_HALVES4(x, i, d)), mx = _mm_cvtph_ps(RK_HALVES4(x, i, m));       \
            const __m256i l[4] = {LEVELS(&x[i]), LEVELS(&x[i + 1]), LEVELS(&x[i + 2]), LEVELS(&x[i + 3])};     \
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                                      \
                const block_q8_1 *yb = (const block_q8_1 *)(const void *)(y->qs + r * y->qs_stride) + i;       \
                const __m128 sc = _mm_mul_ps(dx, _mm_cvtph_ps(RK_HALVES4(yb, 0, d)));                          \
                mins[r] = _mm_add_ps(mins[r], _mm_mul_ps(mx, _mm_cvtph_ps(RK_HALVES4(yb, 0, s))));             \
                acc0[r] = _mm256_fmadd_ps(qd_lane(sc, 0), _mm256_cvtepi32_ps(RK_DOT_U8(l[0], qd_load32(yb[0].qs))), acc0[r]); \
                acc1[r] = _mm256_fmadd_ps(qd_lane(sc, 1), _mm256_cvtepi32_ps(RK_DOT_U8(l[1], qd_load32(yb[1].qs))), acc1[r]); \
                acc0[r] = _mm256_fmadd_ps(qd_lane(sc, 2), _mm256_cvtepi32_ps(RK_DOT_U8(l[2], qd_load32(yb[2].qs))), acc0[r]); \
                acc1[r] = _mm256_fmadd_ps(qd_lane(sc, 3), _mm256_cvtepi32_ps(RK_DOT_U8(l[3], qd_load32(yb[3].qs))), acc1[r]); \
            }                                                                                                  \
        }                                                                                                      \
        for (; i < nb; i++) {                                                                                  \
            const __m256i l = LEVELS(&x[i]);                                                                   \
            const float dx = qd_h2f(x[i].d), mx = qd_h2f(x[i].m);                                              \
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                                      \
                const block_q8_1 *yb = (const block_q8_1 *)(const void *)(y->qs + r * y->qs_stride) + i;       \
                const __m256 p = _mm256_cvtepi32_ps(RK_DOT_U8(l, qd_load32(yb->qs)));                          \
                acc0[r] = _mm256_fmadd_ps(_mm256_set1_ps(dx * qd_h2f(yb->d)), p, acc0[r]);                     \
                tail[r] += mx * qd_h2f(yb->s);                                                                 \
            }                                                                                                  \
        }                                                                                                      \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                                          \
            __m128 m = _mm_add_ps(mins[r], _mm_movehl_ps(mins[r], mins[r]));                                   \
            m = _mm_add_ss(m, _mm_movehdup_ps(m));                                                             \
            s[r * s_stride] = qd_hsum_ps(_mm256_add_ps(acc0[r], acc1[r])) + _mm_cvtss_f32(m) + tail[r];        \
        }                                                                                                      \
    }                                                                                                          \
    QD_ROWS_DISPATCH(name)

RK_MIN32(rk_q4_1, block_q4_1, rk_levels_q4_1)
RK_MIN32(rk_q5_1, block_q5_1, rk_levels_q5_1)

void RK_FILL(cpu_vec_dot_rows_table t) {
    cpu_vec_dot_table single = {0};
    cpu_quant_dot_fill_avx2(single);
#ifdef RK_SINGLE_FILL
    RK_SINGLE_FILL(
        single); /* the path's own single-row dots where it has them (Q4_K, Q5_K, Q6_K) */
#endif
    memcpy(rk_single, single, sizeof rk_single);
    t[GGML_TYPE_Q2_K] = rk_q2_K;
    t[GGML_TYPE_Q3_K] = rk_q3_K;
    t[GGML_TYPE_Q4_K] = rk_q4_K;
    t[GGML_TYPE_Q5_K] = rk_q5_K;
    t[GGML_TYPE_Q6_K] = rk_q6_K;
    t[GGML_TYPE_IQ4_XS] = rk_iq4_xs;
    t[GGML_TYPE_Q4_1] = rk_q4_1;
    t[GGML_TYPE_Q5_1] = rk_q5_1;
}

#endif /* GGMLC_CPU_QUANT_DOT_ROWS_K_X86_H */
