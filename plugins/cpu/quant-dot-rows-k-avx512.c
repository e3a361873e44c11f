/*
 * quant-dot-rows-k-avx512.c - AVX-512 VNNI multi-row dot products of the
 * K-quants, IQ4_XS, Q4_1 and Q5_1 (quant-dot-rows-k-x86.h): vpdpwssd fuses
 * the sub-block scaling with the accumulation (a third fewer instructions per
 * row than maddubs + madd + add), vpdpbusd replaces maddubs + madd.  The
 * integer sums, and so the results, are the AVX2 kernels' to the bit.
 * Used only when type-traits.c found AVX-512 BW/VL and VNNI.
 */
#include "quant-dot.h"
#include "quant-match.h"

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#include <immintrin.h>

#include "quant-dot-x86.h"

#define RK_ACC(acc, p, sc) _mm256_dpwssd_epi32((acc), (p), (sc))
#define RK_DOT_U8(x, y)    _mm256_dpbusd_epi32(_mm256_setzero_si256(), (x), (y))
#define RK_FILL            cpu_quant_rows_k_fill_avx512vnni
#define RK_SINGLE_FILL     cpu_quant_dot_fill_avx512vnni
#define RK_Q3_512
#include "quant-dot-rows-k-x86.h"

#else
void cpu_quant_rows_k_fill_avx512vnni(cpu_vec_dot_rows_table t) { (void)t; }
#endif
