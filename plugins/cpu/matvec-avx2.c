/*
 * matvec-avx2.c - the AVX2 + FMA + F16C streaming mat-vec kernel (see
 * matvec.h and the loops in matvec-x86.h): register blocks of 3 weight rows
 * by up to 4 columns of 8 lanes, which fill the 16 registers: 7 loads per 12
 * multiply-adds (4 x 2: 6 per 8), and one pass over the weights up to 4
 * columns.  Against 4 x 2 (4096 x 14336 weights, 2 threads, dev VM, medians
 * of 3 alternating runs, ms): f32 8 columns 19.7 -> 16.4, 16 columns 33.3 ->
 * 30.8; f16 4 columns 13.9 -> 10.8, 8 columns 27.0 -> 19.9 (with the f16
 * rows converted once per chunk, matvec-x86.h); one column unchanged.
 * Compiled for those extensions by the target pragma below; called only
 * when simd.c found them on the CPU.
 */
#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c")
#include <immintrin.h>
#include <string.h>

#include "gemm-pack-x86.h"

/* Up to 8 values of type at p as f32 (a tail of `left` values: the other lanes are zero). */
static inline __attribute__((always_inline)) __m256 load8_part(const enum ggml_type type, const char *p, int64_t left) {
    if (left >= 8) return pack_load8(type, p);
    _Alignas(32) char buf[32] = {0};
    memcpy(buf, p, (size_t)left * ggml_type_size(type));
    return pack_load8(type, buf);
}

static float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

typedef __m256 mv_vec;
#define LANES 8
#define ROWS 3 /* 12 accumulators + 3 weight vectors + 1 column vector: the 16 registers */
#define COLS 4
#define mv_zero() _mm256_setzero_ps()
#define mv_add(a, b) _mm256_add_ps(a, b)
#define mv_fmadd(a, b, c) _mm256_fmadd_ps(a, b, c)
#define mv_hsum(v) hsum8(v)
#define mv_load_w(type, p, left) load8_part(type, p, left)
#define mv_load_x(p, left) load8_part(GGML_TYPE_F32, (const char *)(p), left)
#define mv_store(p, v) _mm256_store_ps(p, v)
#define MATVEC_NAME cpu_matvec_avx2

#include "matvec-x86.h"
#endif /* __x86_64__ */
