/*
 * ops-attn-match-x86.c - the f16 loops of ops-attn-match.c with AVX2 + FMA +
 * F16C intrinsics; compiled again with ATTN_AVX512 (ops-attn-match-avx512.c)
 * for AVX-512.  The same bits as the portable loops: f16 values convert
 * exactly, vcvtps2ph rounds to nearest even as the portable f2h does, every
 * multiply-add is one fused instruction per value, and the dot product keeps
 * ggml's four 16-lane accumulators (on AVX2 each is two 8-lane halves) and
 * adds them in its order.  On a CPU without AVX-512 the AVX2 file's loops
 * take ggml's AVX2 dot order instead (dot_avx2_order), as ggml built for
 * that CPU does.
 */
#include "ops-nn.h"
#include "simd.h"

#if defined(__x86_64__)
#ifdef ATTN_AVX512
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")
#define ATTN_LOOPS cpu_attn_f16_loops_avx512
#else
#pragma GCC target("avx2,fma,f16c")
#define ATTN_LOOPS cpu_attn_f16_loops_avx2
#endif
#include <immintrin.h>

#define F16_RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define ATTN_UNROLL4 _Pragma("GCC unroll 4") /* the four accumulators stay registers */

static inline __m256 load8(const ggml_fp16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
static inline void store8(ggml_fp16_t *p, __m256 v) { _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(v, F16_RNE)); }

/* The last four steps of _mm512_reduce_add_ps: a8 = hi + lo halves, then a4 likewise, then
 * (a4[0] + a4[2]) + (a4[1] + a4[3]). */
static inline float reduce8(__m256 a8) {
    const __m128 a4 = _mm_add_ps(_mm256_extractf128_ps(a8, 1), _mm256_castps256_ps128(a8));
    const __m128 t = _mm_add_ps(a4, _mm_movehl_ps(a4, a4)); /* a4[0] + a4[2], a4[1] + a4[3] */
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

/* The part past the last full step (64 values, AVX2 order: 32), in double as ggml adds it. */
static inline float dot_tail(const ggml_fp16_t *x, const ggml_fp16_t *y, int64_t np, int64_t n, float head) {
    double total = head;
    for (int64_t i = np; i < n; i++) total += (double)(_cvtsh_ss(x[i]) * _cvtsh_ss(y[i]));
    return (float)total;
}

#ifdef ATTN_AVX512
static float dot(const ggml_fp16_t *x, const ggml_fp16_t *y, int64_t n) {
    __m512 sum[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    const int64_t np = n & ~(int64_t)63;
    for (int64_t i = 0; i < np; i += 64)
        ATTN_UNROLL4 for (int j = 0; j < 4; j++)
            sum[j] = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + i + 16 * j))),
                                     _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(y + i + 16 * j))), sum[j]);
    const __m512 s = _mm512_add_ps(_mm512_add_ps(sum[0], sum[2]), _mm512_add_ps(sum[1], sum[3]));
    const float head = reduce8(_mm256_add_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)), _mm512_castps512_ps256(s)));
    return dot_tail(x, y, np, n, head);
}

/* The n % 16 values past the last full 16 (mask m), loaded as zeros past the end. */
static inline __m512 load_part(const ggml_fp16_t *p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
static inline void store_part(ggml_fp16_t *p, __mmask16 m, __m512 v) { _mm256_mask_storeu_epi16(p, m, _mm512_cvtps_ph(v, F16_RNE)); }

static void scale(ggml_fp16_t *acc, float s, int64_t n) {
    const __m512 vs = _mm512_set1_ps(s);
    for (int64_t d = 0; d < n; d += 16) {
        const __mmask16 m = n - d >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - d)) - 1);
        store_part(acc + d, m, _mm512_mul_ps(load_part(acc + d, m), vs));
    }
}

static void mad(ggml_fp16_t *acc, const ggml_fp16_t *v, float s, int64_t n) {
    const __m512 vs = _mm512_set1_ps(s);
    for (int64_t d = 0; d < n; d += 16) {
        const __mmask16 m = n - d >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - d)) - 1);
        store_part(acc + d, m, _mm512_fmadd_ps(load_part(v + d, m), vs, load_part(acc + d, m)));
    }
}
#else
static float dot(const ggml_fp16_t *x, const ggml_fp16_t *y, int64_t n) {
    __m256 lo[4], hi[4]; /* lanes 0..7 and 8..15 of ggml's four accumulators */
    ATTN_UNROLL4 for (int j = 0; j < 4; j++) lo[j] = hi[j] = _mm256_setzero_ps();
    const int64_t np = n & ~(int64_t)63;
    for (int64_t i = 0; i < np; i += 64)
        ATTN_UNROLL4 for (int j = 0; j < 4; j++) {
            lo[j] = _mm256_fmadd_ps(load8(x + i + 16 * j), load8(y + i + 16 * j), lo[j]);
            hi[j] = _mm256_fmadd_ps(load8(x + i + 16 * j + 8), load8(y + i + 16 * j + 8), hi[j]);
        }
    const __m256 slo = _mm256_add_ps(_mm256_add_ps(lo[0], lo[2]), _mm256_add_ps(lo[1], lo[3]));
    const __m256 shi = _mm256_add_ps(_mm256_add_ps(hi[0], hi[2]), _mm256_add_ps(hi[1], hi[3]));
    return dot_tail(x, y, np, n, reduce8(_mm256_add_ps(shi, slo)));
}

/* ggml's vec_dot_f16 as its AVX2 build runs it: four 8-lane fused accumulators over steps of
 * 32 values, added (0+2)+(1+3); the 8 lanes reduced as its two horizontal adds reduce them:
 * t = low half + high half, then (t[0] + t[1]) + (t[2] + t[3]); the tail in double. */
static float dot_avx2_order(const ggml_fp16_t *x, const ggml_fp16_t *y, int64_t n) {
    __m256 sum[4];
    ATTN_UNROLL4 for (int j = 0; j < 4; j++) sum[j] = _mm256_setzero_ps();
    const int64_t np = n & ~(int64_t)31;
    for (int64_t i = 0; i < np; i += 32)
        ATTN_UNROLL4 for (int j = 0; j < 4; j++) sum[j] = _mm256_fmadd_ps(load8(x + i + 8 * j), load8(y + i + 8 * j), sum[j]);
    const __m256 s = _mm256_add_ps(_mm256_add_ps(sum[0], sum[2]), _mm256_add_ps(sum[1], sum[3]));
    const __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    const __m128 pairs = _mm_hadd_ps(t, t); /* t[0] + t[1], t[2] + t[3], ... */
    return dot_tail(x, y, np, n, _mm_cvtss_f32(_mm_hadd_ps(pairs, pairs)));
}

static void scale(ggml_fp16_t *acc, float s, int64_t n) {
    const __m256 vs = _mm256_set1_ps(s);
    int64_t d = 0;
    for (; d + 8 <= n; d += 8) store8(acc + d, _mm256_mul_ps(load8(acc + d), vs));
    for (; d < n; d++) acc[d] = _cvtss_sh(_cvtsh_ss(acc[d]) * s, F16_RNE);
}

static void mad(ggml_fp16_t *acc, const ggml_fp16_t *v, float s, int64_t n) {
    const __m256 vs = _mm256_set1_ps(s);
    int64_t d = 0;
    for (; d + 8 <= n; d += 8) store8(acc + d, _mm256_fmadd_ps(load8(v + d), vs, load8(acc + d)));
    for (; d < n; d++) acc[d] = _cvtss_sh(_mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(_cvtsh_ss(v[d])), _mm_set_ss(s),
                                                                     _mm_set_ss(_cvtsh_ss(acc[d])))), F16_RNE);
}
#endif

const struct cpu_attn_f16_loops *ATTN_LOOPS(void) {
    static const struct cpu_attn_f16_loops loops = {dot, scale, mad};
#ifndef ATTN_AVX512
    static const struct cpu_attn_f16_loops avx2_order = {dot_avx2_order, scale, mad};
    if (cpu_simd_best_level() < CPU_SIMD_AVX512) return &avx2_order;
#endif
    return &loops;
}

#elif defined(ATTN_AVX512)
const struct cpu_attn_f16_loops *cpu_attn_f16_loops_avx512(void) { return NULL; }
#else
const struct cpu_attn_f16_loops *cpu_attn_f16_loops_avx2(void) { return NULL; }
#endif
