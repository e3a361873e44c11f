/*
 * quant-dot-rows-avx2.c - AVX2 multi-row dot products (see quant-dot.h): a
 * weight block is decoded once into 32 signed levels, its |levels| taken
 * once, and each activation row costs one sign + maddubs + madd + FMA.
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

ROWS_AVX2(rows_q5_0, block_q5_0, qd_levels_q5_0, QD_DX_F16)

/* Q8_0 and Q4_0: quant-match-avx2.c; the K-quants: quant-dot-rows-k-avx2.c */
void cpu_quant_rows_fill_avx2(cpu_vec_dot_rows_table t) { t[GGML_TYPE_Q5_0] = rows_q5_0; }

#else
void cpu_quant_rows_fill_avx2(cpu_vec_dot_rows_table t) { (void)t; }
#endif
