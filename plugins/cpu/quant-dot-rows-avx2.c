/*
 * quant-dot-rows-avx2.c - AVX2 multi-row dot products (see quant-dot.h): a
 * weight block is decoded once into 32 signed levels, its |levels| taken
 * once, and each activation row costs one sign + maddubs + madd + FMA.
 * Q4_K, Q5_K and Q6_K super-blocks likewise decode levels and scales once for all
 * rows (the AVX-512 VNNI path uses these too).
 * Compiled for AVX2/FMA/F16C by the target pragma; used only when
 * type-traits.c found those on the CPU.
 */
#include "quant-dot.h"

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c")
#include <immintrin.h>

#include "quant-dot-x86.h"

/* The kernel body for a constant number of rows nr, so the accumulators stay in registers.
 * maddubs(|l|, sign(y, l)) sums pairs into int16 without saturating: |l| <= 128, |y| <= 127. */
#define ROWS_AVX2(name, xt, LEVELS, DX)                                                                         \
    static inline __attribute__((always_inline)) void name##_nr(int n, const void *vx, const struct cpu_q8_rows *y, \
                                                                float *s, size_t s_stride, const int nr) {     \
        const xt *x = vx;                                                                                      \
        const __m256i ones = _mm256_set1_epi16(1);                                                             \
        __m256 acc[CPU_QUANT_MAX_ROWS];                                                                        \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps();                                             \
        for (int i = 0; i < n / QK8_0; i++) {                                                                  \
            _mm_prefetch((const char *)(x + i) + QD_PREFETCH, _MM_HINT_T0);                                    \
            const __m256i l = LEVELS(&x[i]), abs_l = _mm256_sign_epi8(l, l);                                   \
            const float dx = DX(x, i);                                                                         \
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                                                     \
                const __m256i qy = qd_load32(y->qs + r * y->qs_stride + (size_t)i * QK8_0);                    \
                const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(abs_l, _mm256_sign_epi8(qy, l)), ones); \
                const __m256 scale = _mm256_set1_ps(dx * y->d[r * y->d_stride + i]);                           \
                acc[r] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(p), acc[r]);                                \
            }                                                                                                  \
        }                                                                                                      \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) s[r * s_stride] = qd_hsum_ps(acc[r]);                                     \
    }                                                                                                          \
    QD_ROWS_DISPATCH(name)

ROWS_AVX2(rows_q4_0, block_q4_0, qd_levels_q4_0, QD_DX_F16)
ROWS_AVX2(rows_q5_0, block_q5_0, qd_levels_q5_0, QD_DX_F16)
ROWS_AVX2(rows_q8_0, block_q8_0, qd_levels_q8_0, QD_DX_F16)
ROWS_AVX2(rows_iq4_nl, block_iq4_nl, qd_levels_iq4_nl, QD_DX_F16)
ROWS_AVX2(rows_mxfp4, block_mxfp4, qd_levels_mxfp4, QD_DX_E8M0)

/* ----------------------------------------------- K-quants against Q8_K rows */

/* Q4_K / Q5_K: a super-block's eight registers of levels (nibbles, Q5_K's fifth bits from
 * qh) and their eight sub-block scale vectors built once; each row costs eight maddubs +
 * madd pairs and its min term.  QH(x, i) is NULL for Q4_K. */
#define ROWS_K45(name, xt, QH)                                                                                       \
    static inline __attribute__((always_inline)) void name##_nr(int n, const void *vx, const struct cpu_q8_rows *y, \
                                                                float *s, size_t s_stride, const int nr) {        \
        const xt *x = vx;                                                                                         \
        const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);                                     \
        float sums[CPU_QUANT_MAX_ROWS] = {0};                                                                     \
        for (int i = 0; i < n / QK_K; i++) {                                                                      \
            _mm_prefetch((const char *)(x + i) + QD_PREFETCH, _MM_HINT_T0);                                       \
            const uint8_t *qh = QH(x, i);                                                                         \
            const __m128i sm = qd_k4_scales_mins(x[i].scales);                                                    \
            const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));                            \
            const __m256i hbits = qh ? qd_load32(qh) : _mm256_setzero_si256();                                    \
            __m256i levels[8], sc[8];                                                                             \
            for (int g = 0; g < 4; g++) {                                                                         \
                const __m256i q = qd_load32(x[i].qs + 32 * g);                                                    \
                levels[2 * g] = _mm256_and_si256(q, m4);                          /* values 64g .. 64g + 31 */    \
                levels[2 * g + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4); /* values 64g + 32 .. */       \
                if (qh) {                                                                                         \
                    const __m256i b0 = _mm256_and_si256(_mm256_srli_epi16(hbits, 2 * g), one);                    \
                    const __m256i b1 = _mm256_and_si256(_mm256_srli_epi16(hbits, 2 * g + 1), one);                \
                    levels[2 * g] = _mm256_or_si256(levels[2 * g], _mm256_slli_epi16(b0, 4));                     \
                    levels[2 * g + 1] = _mm256_or_si256(levels[2 * g + 1], _mm256_slli_epi16(b1, 4));             \
                }                                                                                                 \
                sc[2 * g] = qd_word(scales, 2 * g);                                                               \
                sc[2 * g + 1] = qd_word(scales, 2 * g + 1);                                                       \
            }                                                                                                     \
            const float d = qd_h2f(x[i].d), dmin = qd_h2f(x[i].dmin);                                             \
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                                         \
                const block_q8_K *yb = (const block_q8_K *)(const void *)(y->qs + r * y->qs_stride) + i;          \
                __m256i acc = _mm256_setzero_si256();                                                             \
                for (int k = 0; k < 8; k++)                                                                       \
                    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(levels[k], qd_load32(yb->qs + 32 * k)), sc[k])); \
                sums[r] += yb->d * d * (float)qd_hsum_epi32(acc) - yb->d * dmin * (float)qd_k4_min_sum(sm, yb->bsums); \
            }                                                                                                     \
        }                                                                                                         \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) s[r * s_stride] = sums[r];                                    \
    }                                                                                                             \
    QD_ROWS_DISPATCH(name)

#define QH_NONE(x, i) ((const uint8_t *)NULL)
#define QH_Q5_K(x, i) ((x)[i].qh)
ROWS_K45(rows_q4_K, block_q4_K, QH_NONE)
ROWS_K45(rows_q5_K_many, block_q5_K, QH_Q5_K)

static void rows_q5_K(int n, const void *x, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    if (y->nrows == 1) cpu_dot_q5_K_avx2(n, s, 0, x, 0, y->qs, 0, 1);
    else rows_q5_K_many(n, x, y, s, s_stride);
}

/* Q6_K: levels q in [0, 63] and the 16 sub-block scales built once per super-block;
 * sum_j sc_j ((q - 32) . y)_j = sum_j sc_j (q . y)_j - 32 sum_j sc_j bsum_j per row. */
static inline __attribute__((always_inline)) void rows_q6_K_many_nr(int n, const void *vx, const struct cpu_q8_rows *y, float *s,
                                                               size_t s_stride, const int nr) {
    const block_q6_K *x = vx;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3);
    float sums[CPU_QUANT_MAX_ROWS] = {0};
    for (int i = 0; i < n / QK_K; i++) {
        _mm_prefetch((const char *)(x + i) + QD_PREFETCH, _MM_HINT_T0);
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        /* scales 8h .. 8h + 7 in both lanes; the low lane uses scale j, the high lane j + 1 */
        const __m256i halves[2] = {_mm256_permute2x128_si256(sc16, sc16, 0x00), _mm256_permute2x128_si256(sc16, sc16, 0x11)};
        __m256i levels[8], sc[8];
        for (int h = 0; h < 2; h++) {
            const __m256i half = halves[h];
            const __m256i qh = qd_load32(x[i].qh + 32 * h), ql0 = qd_load32(x[i].ql + 64 * h), ql1 = qd_load32(x[i].ql + 64 * h + 32);
            const __m256i lows[4] = {_mm256_and_si256(ql0, m4), _mm256_and_si256(ql1, m4),
                                     _mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4)};
            for (int k = 0; k < 4; k++) {
                const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), m2);
                levels[4 * h + k] = _mm256_or_si256(lows[k], _mm256_slli_epi16(high, 4)); /* values 128h + 32k .. */
                sc[4 * h + k] = _mm256_blend_epi32(qd_word(half, 2 * k), qd_word(half, 2 * k + 1), 0xf0);
            }
        }
        const float d = qd_h2f(x[i].d);
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {
            const block_q8_K *yb = (const block_q8_K *)(const void *)(y->qs + r * y->qs_stride) + i;
            const int offset = qd_hsum_epi32(_mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)yb->bsums)));
            __m256i acc = _mm256_setzero_si256();
            for (int k = 0; k < 8; k++)
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(levels[k], qd_load32(yb->qs + 32 * k)), sc[k]));
            sums[r] += yb->d * d * (float)(qd_hsum_epi32(acc) - 32 * offset);
        }
    }
    QD_UNROLL_ROWS for (int r = 0; r < nr; r++) s[r * s_stride] = sums[r];
}
QD_ROWS_DISPATCH(rows_q6_K_many)

static void rows_q6_K(int n, const void *x, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    if (y->nrows == 1) cpu_dot_q6_K_avx2(n, s, 0, x, 0, y->qs, 0, 1);
    else rows_q6_K_many(n, x, y, s, s_stride);
}

void cpu_quant_rows_fill_avx2(cpu_vec_dot_rows_table t) {
    CPU_QUANT_ROWS_FILL(t);
    t[GGML_TYPE_Q4_K] = rows_q4_K;
    t[GGML_TYPE_Q5_K] = rows_q5_K;
    t[GGML_TYPE_Q6_K] = rows_q6_K;
}

#else
void cpu_quant_rows_fill_avx2(cpu_vec_dot_rows_table t) { (void)t; }
#endif
