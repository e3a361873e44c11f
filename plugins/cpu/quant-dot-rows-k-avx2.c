/*
 * quant-dot-rows-k-avx2.c - AVX2 multi-row dot products of the K-quants,
 * IQ4_XS, Q4_1 and Q5_1 (quant-dot-rows-k-x86.h): maddubs + madd.
 * Used only when type-traits.c found AVX2, FMA and F16C on the CPU.
 */
#include "quant-dot.h"
#include "quant-match.h"

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c")
#include <immintrin.h>

#include "quant-dot-x86.h"

#define RK_ACC(acc, p, sc) _mm256_add_epi32((acc), _mm256_madd_epi16((p), (sc)))
#define RK_DOT_U8(x, y)    _mm256_madd_epi16(_mm256_maddubs_epi16((x), (y)), _mm256_set1_epi16(1))
#define RK_FILL            cpu_quant_rows_k_fill_avx2
#include "quant-dot-rows-k-x86.h"

#else
void cpu_quant_rows_k_fill_avx2(cpu_vec_dot_rows_table t) { (void)t; }
#endif
