/*
 * gemm-avx2.c - AVX2 + FMA + F16C kernels of the dense product (see gemm.h).
 * Compiled for those extensions by the target pragma below; called only when
 * simd.c found them on the CPU.
 */
#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c")
#include <immintrin.h>

#include "gemm-pack-x86.h"
#include "matvec.h"

#define NR 16 /* two 8-lane vectors along n */
#define MR 6

/* c (+)= the MR x NR tile held in c0 (lanes 0..7) and c1 (lanes 8..15). */
static inline __attribute__((always_inline)) void store_tile(__m256 c0[MR], __m256 c1[MR], float *c, int64_t ldc,
                                                             bool accumulate) {
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
        float *ci = c + i * ldc;
        if (accumulate) {
            c0[i] = _mm256_add_ps(c0[i], _mm256_loadu_ps(ci));
            c1[i] = _mm256_add_ps(c1[i], _mm256_loadu_ps(ci + 8));
        }
        _mm256_storeu_ps(ci, c0[i]);
        _mm256_storeu_ps(ci + 8, c1[i]);
    }
}

static void micro_avx2(int64_t kc, const float *wp, const float *xp, float *c, int64_t ldc, bool accumulate) {
    __m256 c0[MR], c1[MR];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) c0[i] = c1[i] = _mm256_setzero_ps();
    for (int64_t k = 0; k < kc; k++, wp += NR, xp += MR) {
        const __m256 w0 = _mm256_load_ps(wp), w1 = _mm256_load_ps(wp + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            const __m256 xb = _mm256_broadcast_ss(xp + i);
            c0[i] = _mm256_fmadd_ps(w0, xb, c0[i]);
            c1[i] = _mm256_fmadd_ps(w1, xb, c1[i]);
        }
    }
    store_tile(c0, c1, c, ldc, accumulate);
}

/* micro_avx2 reading w panels w_ks floats apart per k and x rows through pointers (gemm.h). */
static void micro_strided_avx2(int64_t kc, const float *wp, int64_t w_ks, const float *const *x, int64_t x_ks,
                               float *c, int64_t ldc, bool accumulate) {
    __m256 c0[MR], c1[MR];
    const float *xr[MR];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) c0[i] = c1[i] = _mm256_setzero_ps(), xr[i] = x[i];
    for (int64_t k = 0, xo = 0; k < kc; k++, wp += w_ks, xo += x_ks) {
        const __m256 w0 = _mm256_loadu_ps(wp), w1 = _mm256_loadu_ps(wp + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            const __m256 xb = _mm256_broadcast_ss(xr[i] + xo);
            c0[i] = _mm256_fmadd_ps(w0, xb, c0[i]);
            c1[i] = _mm256_fmadd_ps(w1, xb, c1[i]);
        }
    }
    store_tile(c0, c1, c, ldc, accumulate);
}

static void to_f32_avx2(enum ggml_type type, const void *src, float *dst, int64_t n) {
    const size_t es = ggml_type_size(type);
    const char *s = src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, pack_load8(type, s + i * es));
    for (; i < n; i++) dst[i] = pack_load1(type, s + i * es);
}

const struct cpu_gemm_kernel cpu_gemm_kernel_avx2 = {
    .name = "avx2",
    .nr = NR,
    .mr = MR,
    .kc = 256,
    .mc = 384,
    .nc = 1536,
    .micro = micro_avx2,
    .micro_strided = micro_strided_avx2,
    .to_f32 = to_f32_avx2,
    .matvec = cpu_matvec_avx2,
    .pack_rows = pack_rows_transposed,
    .pack_cols = pack_cols_direct,
};
#endif /* __x86_64__ */
