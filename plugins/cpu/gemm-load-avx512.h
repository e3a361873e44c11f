/*
 * gemm-load-avx512.h - loads of F32, F16 and BF16 values as 16 f32 lanes,
 * shared by the AVX-512 kernel files (gemm-avx512.c, matvec-avx512.c; each
 * includes it under its own target pragma).
 */
#ifndef GGMLC_CPU_GEMM_LOAD_AVX512_H
#define GGMLC_CPU_GEMM_LOAD_AVX512_H

#include <immintrin.h>

#include "ggml.h"

/* Up to 16 values (mask selects them) of type at p, as f32; missing lanes are 0. */
static inline __m512 load16(enum ggml_type type, const char *p, __mmask16 mask) {
    switch (type) {
    case GGML_TYPE_F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p));
    case GGML_TYPE_BF16: {
        const __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, p));
        return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
    }
    default: return _mm512_maskz_loadu_ps(mask, p);
    }
}

/* The lanes of the first `left` values (all 16 from 16 on). */
static inline __mmask16 tail_mask(int64_t left) {
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

#endif /* GGMLC_CPU_GEMM_LOAD_AVX512_H */
