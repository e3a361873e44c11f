/*
 * gemm-avx512.c - AVX-512 (F, BW, DQ, VL) kernels of the dense product (see
 * gemm.h).  Compiled for those extensions by the target pragma below; called
 * only when simd.c found them on the CPU and the OS saves their state.
 */
#if defined(__x86_64__)
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")
#include <immintrin.h>

#include "gemm-load-avx512.h"
#include "gemm-pack-x86.h"
#include "matvec.h"
#include "ggmlc-blocks.h"

#define NR 48 /* three 16-lane vectors along n */
#define MR 8  /* 24 accumulators + 3 w vectors + 1 broadcast of the 32 registers */

static void micro_avx512(int64_t kc, const float *wp, const float *xp, float *c, int64_t ldc, bool accumulate) {
    __m512 c0[MR], c1[MR], c2[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        c0[i] = c1[i] = c2[i] = _mm512_setzero_ps();
        /* the tile of c is read or written only at the end: fetch it meanwhile */
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + 32), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + 47), _MM_HINT_T0);
    }
    for (int64_t k = 0; k < kc; k++, wp += NR, xp += MR) {
        const __m512 w0 = _mm512_load_ps(wp), w1 = _mm512_load_ps(wp + 16), w2 = _mm512_load_ps(wp + 32);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            const __m512 xb = _mm512_set1_ps(xp[i]);
            c0[i] = _mm512_fmadd_ps(w0, xb, c0[i]);
            c1[i] = _mm512_fmadd_ps(w1, xb, c1[i]);
            c2[i] = _mm512_fmadd_ps(w2, xb, c2[i]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        float *ci = c + i * ldc;
        if (accumulate) {
            c0[i] = _mm512_add_ps(c0[i], _mm512_loadu_ps(ci));
            c1[i] = _mm512_add_ps(c1[i], _mm512_loadu_ps(ci + 16));
            c2[i] = _mm512_add_ps(c2[i], _mm512_loadu_ps(ci + 32));
        }
        _mm512_storeu_ps(ci, c0[i]);
        _mm512_storeu_ps(ci + 16, c1[i]);
        _mm512_storeu_ps(ci + 32, c2[i]);
    }
}

/* micro_avx512 for the last panel of w when it is narrower than NR (784 = 16 x 48 + 16,
 * 256 = 5 x 48 + 16): only the nv (1 or 2, a constant once inlined) vectors that hold its
 * columns are multiplied; the full kernel spent 3 vectors' FMAs on 1 or 2 vectors of
 * columns, 11% of a product 256 wide. */
static inline __attribute__((always_inline)) void micro_vectors(int64_t kc, const float *wp, const float *xp, float *c,
                                                                int64_t ldc, bool accumulate, int nv) {
    __m512 acc[MR][2];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) acc[i][v] = _mm512_setzero_ps();
    for (int64_t k = 0; k < kc; k++, wp += NR, xp += MR) {
        __m512 w[2];
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) w[v] = _mm512_load_ps(wp + 16 * v);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            const __m512 xb = _mm512_set1_ps(xp[i]);
#pragma GCC unroll 2
            for (int v = 0; v < nv; v++) acc[i][v] = _mm512_fmadd_ps(w[v], xb, acc[i][v]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) {
            float *ci = c + i * ldc + 16 * v;
            _mm512_storeu_ps(ci, accumulate ? _mm512_add_ps(acc[i][v], _mm512_loadu_ps(ci)) : acc[i][v]);
        }
}

static void micro_narrow_avx512(int64_t kc, const float *wp, const float *xp, float *c, int64_t ldc, bool accumulate,
                                int cols) {
    if (cols <= 16)
        micro_vectors(kc, wp, xp, c, ldc, accumulate, 1);
    else if (cols <= 32)
        micro_vectors(kc, wp, xp, c, ldc, accumulate, 2);
    else
        micro_avx512(kc, wp, xp, c, ldc, accumulate);
}

static void to_f32_avx512(enum ggml_type type, const void *src, float *dst, int64_t n) {
    const size_t es = ggml_type_size(type);
    const char *s = src;
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(dst + i, m, load16(type, s + i * es, m));
    }
}

/* Q8_0 rows to f32: d * q, the same float products as core's reference. */
static void dequant_q8_0_avx512(const void *vx, float *y, int64_t k) {
    const block_q8_0 *x = vx;
    for (int64_t i = 0; i < k / QK8_0; i++, y += QK8_0) {
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(x[i].d));
        const __m128i q0 = _mm_loadu_si128((const __m128i *)x[i].qs), q1 = _mm_loadu_si128((const __m128i *)(x[i].qs + 16));
        _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q0)), d));
        _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q1)), d));
    }
}

/* Q4_0 rows to f32: d * (q - 8), low nibbles first, as core's reference. */
static void dequant_q4_0_avx512(const void *vx, float *y, int64_t k) {
    const block_q4_0 *x = vx;
    const __m128i low4 = _mm_set1_epi8(0x0f);
    const __m512i eight = _mm512_set1_epi32(8);
    for (int64_t i = 0; i < k / QK4_0; i++, y += QK4_0) {
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(x[i].d));
        const __m128i q = _mm_loadu_si128((const __m128i *)x[i].qs);
        const __m512i lo = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_and_si128(q, low4)), eight);
        const __m512i hi = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(q, 4), low4)), eight);
        _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(lo), d));
        _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(hi), d));
    }
}

static ggml_to_float_t fast_dequant_avx512(enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_Q8_0: return dequant_q8_0_avx512;
    case GGML_TYPE_Q4_0: return dequant_q4_0_avx512;
    default: return NULL;
    }
}

const struct cpu_gemm_kernel cpu_gemm_kernel_avx512 = {
    .name = "avx512",
    .nr = NR,
    .mr = MR,
    .kc = 256,
    .mc = 384,
    .nc = 2048,
    .micro = micro_avx512,
    .micro_narrow = micro_narrow_avx512,
    .to_f32 = to_f32_avx512,
    .matvec = cpu_matvec_avx512,
    .pack_rows = pack_rows_transposed,
    .pack_cols = pack_cols_direct,
    .fast_dequant = fast_dequant_avx512,
};
#endif /* __x86_64__ */
