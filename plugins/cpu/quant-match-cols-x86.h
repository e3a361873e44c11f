/*
 * quant-match-cols-x86.h - helpers shared by the column kernels of
 * quant-match.h (quant-match-cols.c for AVX-512 VNNI, quant-match-cols-avx2.c
 * for AVX2).  Include after the file's target pragma (AVX2 + FMA + F16C at least).
 */
#ifndef GGMLC_CPU_QUANT_MATCH_COLS_X86_H
#define GGMLC_CPU_QUANT_MATCH_COLS_X86_H

#include <immintrin.h>

/* How far ahead the weight rows are prefetched: farther than the one-row kernels (the two
 * rows are two streams, and each block takes longer here).  Measured (7168 x 4096 weights
 * streamed, 8 rows, one thread, CPU time, loaded machine): 1024 bytes 3.7 / 6.0 ms (Q4_0 /
 * Q8_0), 2048 3.1-3.3 / 6.0-6.6, 4096 2.7-3.2 / 5.0-5.9, 8192 and 16384 no better. */
#define COLS_PREFETCH 4096

/* Lanes 0 .. nr - 1 of v to s[c * s_stride]. */
static inline void cols_store_rows(__m256 v, float *s, size_t s_stride, int nr) {
    float out[8];
    _mm256_storeu_ps(out, v);
    for (int c = 0; c < nr; c++) s[c * s_stride] = out[c];
}

#endif /* GGMLC_CPU_QUANT_MATCH_COLS_X86_H */
