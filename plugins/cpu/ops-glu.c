/*
 * ops-glu.c - gated linear units: dst = act(x) * g, where x and g are the
 * two halves of each row of src[0] (swapped: g first) or, in the split
 * form, the rows of src[0] and src[1].  SWIGLU rounds as ggml's x86 CPU
 * backend built for this CPU does (AVX-512 or AVX2), so that a llama model's
 * FFN keeps ggml's bits.
 */
#include <math.h>

#include "ops-ew.h"
#include "simd.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define SQRT_2_OVER_PI 0.7978845608028654f
#define SQRT_1_2       0.7071067811865476f

/* z = act(x) * g; p = the op's values (swiglu_oai: p[0] = alpha, p[1] = limit). */
typedef void (*glu_row_fn)(int64_t n, float *z, const float *x, const float *g, const float *p);

EW_CLONES static void glu_reglu(int64_t n, float *z, const float *x, const float *g, const float *p) {
    for (int64_t i = 0; i < n; i++) z[i] = (x[i] > 0.0f ? x[i] : 0.0f) * g[i];
}
EW_CLONES static void glu_geglu(int64_t n, float *z, const float *x, const float *g, const float *p) {
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        z[i] = 0.5f * v * (1.0f + ew_tanhf(SQRT_2_OVER_PI * v * (1.0f + 0.044715f * v * v))) * g[i];
    }
}
/* ---------------------------------------------------- SWIGLU in ggml's bits
 *
 * ggml's ggml_vec_swiglu_f32 (AVX-512 build) takes a row 16 values at a time through
 * ggml_v_silu: x / (1 + e), e its ggml_v_expf(0 - x) (ARM's optimized-routines exp: a
 * degree-5 polynomial in fused multiply-adds, scaled by 2^n with vscalefps; |n| > 192 gives
 * 0 or infinity), times g; the last n % 16 values of a row take libm's expf.  EW_CHUNK is a
 * multiple of 16, so a chunk's tail is the row's tail.  The portable model below spells the
 * FMAs fmaf and the scaling ldexpf (both round once, as the instructions do). */
#define GLU_LANES 16

static inline float ggml_v_expf_model(float x) {
    const float r = 0x1.8p23f;
    const float n = fmaf(x, 0x1.715476p+0f, r) - r;
    if (isnan(n)) return n;
    if (fabsf(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                         fmaf(0x1.ffffecp-1f, b, 1.0f));
    return ldexpf(j, (int)n);
}

/* ---- ggml's AVX2 build (a CPU without AVX-512): 8 values at a time, and a different expf:
 * the same n and b, but the polynomial without its constant 1 (j = P(b) * u + c1 * b), the
 * result fma(j, 2^n, 2^n) with 2^n built in the exponent bits of z = fma(x, log2 e, 0x1.8p23)
 * shifted left 23; where |n| > 126 two factors s1 * (s2 + s2 j) avoid overflow (s1 = 2^127 or,
 * for n <= 0, 2^-125 as bits 0x7f000000 + 0x82000000), and |n| > 192 gives s1 * s1. */
#define GLU_LANES_AVX2 8

static inline float float_of_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float ggml_v_expf_avx2_model(float x) {
    const float r = 0x1.8p23f, z = fmaf(x, 0x1.715476p+0f, r), n = z - r;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    uint32_t zbits;
    memcpy(&zbits, &z, sizeof zbits);
    const uint32_t e = zbits << 23;
    const float k = float_of_bits(e + 0x3f800000u); /* 2^n for |n| <= 126 */
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                         0x1.ffffecp-1f * b);
    if (!(fabsf(n) > 126.0f)) return fmaf(j, k, k);
    const uint32_t g = n <= 0.0f ? 0x82000000u : 0u;
    const float s1 = float_of_bits(g + 0x7f000000u), s2 = float_of_bits(e - g);
    if (fabsf(n) > 192.0f) return s1 * s1;
    return fmaf(s2, j, s2) * s1;
}

/* The row's last n % lanes values, as ggml_silu_f32 (libm expf). */
static void swiglu_tail(int64_t i, int64_t n, float *z, const float *x, const float *g) {
    for (; i < n; i++) {
        const float silu = x[i] / (1.0f + expf(-x[i]));
        z[i] = g ? silu * g[i] : silu;
    }
}

EW_CLONES static void swiglu_portable(int64_t n, float *z, const float *x, const float *g) {
    const int64_t nv = n - n % GLU_LANES;
    for (int64_t i = 0; i < nv; i++) {
        const float silu = x[i] / (1.0f + ggml_v_expf_model(0.0f - x[i]));
        z[i] = g ? silu * g[i] : silu;
    }
    swiglu_tail(nv, n, z, x, g);
}

EW_CLONES static void swiglu_portable_avx2_order(int64_t n, float *z, const float *x, const float *g) {
    const int64_t nv = n - n % GLU_LANES_AVX2;
    for (int64_t i = 0; i < nv; i++) {
        const float silu = x[i] / (1.0f + ggml_v_expf_avx2_model(0.0f - x[i]));
        z[i] = g ? silu * g[i] : silu;
    }
    swiglu_tail(nv, n, z, x, g);
}

#if defined(__x86_64__)
/* ggml_v_expf of v for 16 values in ggml's AVX-512 instructions (ggml_v_expf_model). */
__attribute__((target("avx512f,avx512dq,fma"))) static inline __m512 expf_avx512(__m512 v) {
    const __m512 r = _mm512_set1_ps(0x1.8p23f), zero = _mm512_setzero_ps();
    const __m512 nn = _mm512_sub_ps(_mm512_fmadd_ps(v, _mm512_set1_ps(0x1.715476p+0f), r), r);
    const __m512 b = _mm512_fnmadd_ps(nn, _mm512_set1_ps(0x1.7f7d1cp-20f), _mm512_fnmadd_ps(nn, _mm512_set1_ps(0x1.62e4p-1f), v));
    const __mmask16 big = _mm512_cmp_ps_mask(_mm512_abs_ps(nn), _mm512_set1_ps(192), _CMP_GT_OQ);
    const __m512 u = _mm512_mul_ps(b, b);
    const __m512 j = _mm512_fmadd_ps(
        _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f)), u,
                        _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f))),
        u, _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f)));
    const __m512 e = _mm512_scalef_ps(j, nn);
    if (_mm512_kortestz(big, big)) return e;
    const __m512 alt = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(nn, zero, _CMP_LE_OQ), _mm512_set1_ps(INFINITY), zero);
    return _mm512_mask_blend_ps(big, e, alt);
}

/* ggml_v_silu of ggml's vec.h (x / (1 + expf(0 - x))), times g where g is given. */
__attribute__((target("avx512f,avx512dq,fma"))) static void swiglu_avx512(int64_t n, float *z, const float *x, const float *g) {
    const __m512 one = _mm512_set1_ps(1.0f);
    int64_t i = 0;
    for (; i + GLU_LANES <= n; i += GLU_LANES) {
        const __m512 xv = _mm512_loadu_ps(x + i);
        const __m512 silu = _mm512_div_ps(xv, _mm512_add_ps(one, expf_avx512(_mm512_sub_ps(_mm512_setzero_ps(), xv))));
        _mm512_storeu_ps(z + i, g ? _mm512_mul_ps(silu, _mm512_loadu_ps(g + i)) : silu);
    }
    swiglu_tail(i, n, z, x, g);
}

/* ggml_v_expf of v for 8 values in ggml's AVX2 instructions (ggml_v_expf_avx2_model). */
__attribute__((target("avx2,fma"))) static inline __m256 expf_avx2(__m256 v) {
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 zv = _mm256_fmadd_ps(v, _mm256_set1_ps(0x1.715476p+0f), r), nn = _mm256_sub_ps(zv, r);
    const __m256 b = _mm256_fnmadd_ps(nn, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(nn, _mm256_set1_ps(0x1.62e4p-1f), v));
    const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(zv), 23);
    const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_set1_epi32(0x3f800000)));
    const __m256 abs_n = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), nn);
    const __m256 over = _mm256_cmp_ps(abs_n, _mm256_set1_ps(126.0f), _CMP_GT_OQ);
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
    const __m256 near = _mm256_fmadd_ps(j, k, k);
    if (!_mm256_movemask_ps(over)) return near;
    const __m256i gbits = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(nn, _mm256_setzero_ps(), _CMP_LE_OQ)),
                                           _mm256_set1_epi32((int)0x82000000u));
    const __m256 s1 = _mm256_castsi256_ps(_mm256_add_epi32(gbits, _mm256_set1_epi32(0x7f000000)));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_sub_epi32(e, gbits));
    const __m256 far = _mm256_cmp_ps(abs_n, _mm256_set1_ps(192.0f), _CMP_GT_OQ);
    const __m256 scaled = _mm256_blendv_ps(near, _mm256_mul_ps(_mm256_fmadd_ps(s2, j, s2), s1), over);
    return _mm256_blendv_ps(scaled, _mm256_mul_ps(s1, s1), far);
}

__attribute__((target("avx2,fma"))) static void swiglu_avx2(int64_t n, float *z, const float *x, const float *g) {
    const __m256 one = _mm256_set1_ps(1.0f);
    int64_t i = 0;
    for (; i + GLU_LANES_AVX2 <= n; i += GLU_LANES_AVX2) {
        const __m256 xv = _mm256_loadu_ps(x + i);
        const __m256 silu = _mm256_div_ps(xv, _mm256_add_ps(one, expf_avx2(_mm256_sub_ps(_mm256_setzero_ps(), xv))));
        _mm256_storeu_ps(z + i, g ? _mm256_mul_ps(silu, _mm256_loadu_ps(g + i)) : silu);
    }
    swiglu_tail(i, n, z, x, g);
}
#endif

/* SWIGLU of a chunk (z = silu(x) * g; g NULL: SILU, z = silu(x), as ggml_vec_silu_f32) in the
 * order of ggml built for this CPU (AVX-512's where the CPU has it, else AVX2's), by the
 * instructions of the SIMD level in use or the portable model.  The last n % lanes values take
 * libm's expf: callers pass whole rows or pieces that start at a multiple of 16 and whose
 * length is one too except for the row's last. */
void cpu_silu_mul_row(int64_t n, float *z, const float *x, const float *g) {
    const bool avx512_order = cpu_simd_best_level() >= CPU_SIMD_AVX512;
#if defined(__x86_64__)
    const enum cpu_simd_level level = cpu_simd_level();
    if (avx512_order && level >= CPU_SIMD_AVX512) {
        swiglu_avx512(n, z, x, g);
        return;
    }
    if (!avx512_order && level >= CPU_SIMD_AVX2) {
        swiglu_avx2(n, z, x, g);
        return;
    }
#endif
    if (avx512_order)
        swiglu_portable(n, z, x, g);
    else
        swiglu_portable_avx2_order(n, z, x, g);
}

/* ------------------------------------------------ GELU (tanh form) in AVX2
 *
 * GELU's x (1 + tanh(u)) / 2, u = c (x + k x^3), as x sigmoid(2u) = x / (1 + E) with
 * E = e^-2u (ops-unary.c), and its derivative s + 2 c x (1 + 3 k x^2) E s^2, s = 1 / (1 + E)
 * (ops-backward.c), eight values at a time with the exponential above in fused multiply-adds:
 * the portable loops, vectorized by the compiler without fused multiply-adds and with a
 * selection per range of the exponential, took 1.3 and 1.75 ms for one of ggmlc-gpt's MLP
 * activations (512 x 2048 values, one thread).  The results differ from the portable ones in
 * the last bits (these round differently, no order is promised for GELU). */
#define GELU_K 0.044715f

#if defined(__x86_64__)
/* -2u = x (-2c - 2ck x^2) of x. */
__attribute__((target("avx2,fma"))) static inline __m256 gelu_minus_2u(__m256 x) {
    const __m256 inner =
        _mm256_fmadd_ps(_mm256_set1_ps(-2.0f * SQRT_2_OVER_PI * GELU_K), _mm256_mul_ps(x, x),
                        _mm256_set1_ps(-2.0f * SQRT_2_OVER_PI));
    return _mm256_mul_ps(x, inner);
}

__attribute__((target("avx2,fma"))) static int64_t gelu_avx2(int64_t n, float *y, const float *x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 xv = _mm256_loadu_ps(x + i);
        _mm256_storeu_ps(y + i,
                         _mm256_div_ps(xv, _mm256_add_ps(one, expf_avx2(gelu_minus_2u(xv)))));
    }
    return i;
}

/* Past -2u = 80 (x below about -9) the derivative is below 1e-30 and E s^2 would be inf x 0:
 * 0 there, as the portable loop. */
__attribute__((target("avx2,fma"))) static int64_t gelu_back_avx2(int64_t n, float *out,
                                                                  const float *x, const float *dy) {
    const __m256 one = _mm256_set1_ps(1.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 xv = _mm256_loadu_ps(x + i), m2u = gelu_minus_2u(xv), e = expf_avx2(m2u);
        const __m256 s = _mm256_div_ps(one, _mm256_add_ps(one, e));
        const __m256 slope = _mm256_mul_ps(
            _mm256_mul_ps(_mm256_set1_ps(2.0f * SQRT_2_OVER_PI), xv),
            _mm256_fmadd_ps(_mm256_set1_ps(3.0f * GELU_K), _mm256_mul_ps(xv, xv), one));
        const __m256 d = _mm256_fmadd_ps(slope, _mm256_mul_ps(_mm256_mul_ps(e, s), s), s);
        const __m256 far = _mm256_cmp_ps(m2u, _mm256_set1_ps(80.0f), _CMP_GT_OQ);
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(dy + i), _mm256_andnot_ps(far, d)));
    }
    return i;
}
#endif

int64_t cpu_gelu_row_simd(int64_t n, float *y, const float *x) {
#if defined(__x86_64__)
    if (cpu_simd_level() >= CPU_SIMD_AVX2) return gelu_avx2(n, y, x);
#endif
    (void)n, (void)y, (void)x;
    return 0;
}

int64_t cpu_gelu_back_row_simd(int64_t n, float *out, const float *x, const float *dy) {
#if defined(__x86_64__)
    if (cpu_simd_level() >= CPU_SIMD_AVX2) return gelu_back_avx2(n, out, x, dy);
#endif
    (void)n, (void)out, (void)x, (void)dy;
    return 0;
}

static void glu_swiglu(int64_t n, float *z, const float *x, const float *g, const float *p) {
    cpu_silu_mul_row(n, z, x, g);
}

/* ---------------------------------------------- SOFT_MAX's exponentials in ggml's bits
 *
 * ggml_vec_soft_max_f32: y = ggml_v_expf(x - max) a vector at a time (16 or 8 values, the
 * expf above of the build), each vector's lanes added in float and the result added to a
 * double sum; the last n % lanes values by libm expf, each added to the sum.  A vector's
 * lanes: halves folded (16 to 8 on AVX-512, 8 to 4), then (a0 + a2) + (a1 + a3), which is
 * what _mm512_reduce_add_ps (GCC) and ggml's AVX2 extract/movehl/movehdup sequence give. */
static inline float fold_lanes(float *v, int lanes) {
    for (int w = lanes / 2; w >= 4; w /= 2)
        for (int l = 0; l < w; l++) v[l] += v[l + w];
    return (v[0] + v[2]) + (v[1] + v[3]);
}

static double exp_sum_tail(int64_t i, int64_t n, float *y, const float *x, float max, double sum) {
    for (; i < n; i++) {
        y[i] = expf(x[i] - max);
        sum += (double)y[i];
    }
    return sum;
}

EW_CLONES static double exp_sum_portable(int64_t n, float *y, const float *x, float max, bool avx512_order) {
    const int lanes = avx512_order ? GLU_LANES : GLU_LANES_AVX2;
    const int64_t nv = n - n % lanes;
    double sum = 0.0;
    for (int64_t i = 0; i < nv; i += lanes) {
        float v[GLU_LANES];
        for (int l = 0; l < lanes; l++) {
            const float a = x[i + l] - max;
            v[l] = y[i + l] = avx512_order ? ggml_v_expf_model(a) : ggml_v_expf_avx2_model(a);
        }
        sum += (double)fold_lanes(v, lanes);
    }
    return exp_sum_tail(nv, n, y, x, max, sum);
}

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512dq,fma"))) static double exp_sum_avx512(int64_t n, float *y, const float *x, float max) {
    const __m512 vmax = _mm512_set1_ps(max);
    double sum = 0.0;
    int64_t i = 0;
    for (; i + GLU_LANES <= n; i += GLU_LANES) {
        const __m512 e = expf_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + i), vmax));
        _mm512_storeu_ps(y + i, e);
        sum += (double)_mm512_reduce_add_ps(e);
    }
    return exp_sum_tail(i, n, y, x, max, sum);
}

__attribute__((target("avx2,fma"))) static double exp_sum_avx2(int64_t n, float *y, const float *x, float max) {
    const __m256 vmax = _mm256_set1_ps(max);
    double sum = 0.0;
    int64_t i = 0;
    for (; i + GLU_LANES_AVX2 <= n; i += GLU_LANES_AVX2) {
        const __m256 e = expf_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmax));
        _mm256_storeu_ps(y + i, e);
        __m128 a = _mm_add_ps(_mm256_extractf128_ps(e, 1), _mm256_castps256_ps128(e));
        a = _mm_add_ps(a, _mm_movehl_ps(a, a));     /* a0 + a2, a1 + a3 */
        a = _mm_add_ss(a, _mm_movehdup_ps(a));
        sum += (double)_mm_cvtss_f32(a);
    }
    return exp_sum_tail(i, n, y, x, max, sum);
}
#endif

double cpu_softmax_exp_sum(int64_t n, float *y, const float *x, float max) {
    const bool avx512_order = cpu_simd_best_level() >= CPU_SIMD_AVX512;
#if defined(__x86_64__)
    const enum cpu_simd_level level = cpu_simd_level();
    if (avx512_order && level >= CPU_SIMD_AVX512) return exp_sum_avx512(n, y, x, max);
    if (!avx512_order && level >= CPU_SIMD_AVX2) return exp_sum_avx2(n, y, x, max);
#endif
    return exp_sum_portable(n, y, x, max, avx512_order);
}
EW_CLONES static void glu_swiglu_oai(int64_t n, float *z, const float *x, const float *g, const float *p) {
    const float alpha = p[0], limit = p[1];
    for (int64_t i = 0; i < n; i++) {
        const float v = fminf(x[i], limit), w = fminf(fmaxf(g[i], -limit), limit);
        z[i] = v / (1.0f + ew_expf(-alpha * v)) * (w + 1.0f);
    }
}
EW_CLONES static void glu_geglu_erf(int64_t n, float *z, const float *x, const float *g, const float *p) {
    for (int64_t i = 0; i < n; i++) z[i] = 0.5f * x[i] * (1.0f + erff(x[i] * SQRT_1_2)) * g[i];
}
EW_CLONES static void glu_geglu_quick(int64_t n, float *z, const float *x, const float *g, const float *p) {
    for (int64_t i = 0; i < n; i++) z[i] = x[i] / (1.0f + ew_expf(-1.702f * x[i])) * g[i];
}

static const glu_row_fn glu_fns[GGML_GLU_OP_COUNT] = {
    [GGML_GLU_OP_REGLU] = glu_reglu,           [GGML_GLU_OP_GEGLU] = glu_geglu,
    [GGML_GLU_OP_SWIGLU] = glu_swiglu,         [GGML_GLU_OP_SWIGLU_OAI] = glu_swiglu_oai,
    [GGML_GLU_OP_GEGLU_ERF] = glu_geglu_erf,   [GGML_GLU_OP_GEGLU_QUICK] = glu_geglu_quick,
};

static enum ggml_status compute_glu(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const glu_row_fn fn = glu_fns[ggml_get_glu_op(dst)];
    const struct ggmlc_glu_params params = ggmlc_glu_params_of(dst);
    const float p[2] = {params.alpha, params.limit};
    const bool swapped = !b && params.swapped != 0;
    const int64_t nc = dst->ne[0];
    const struct ggml_tensor *gt = b ? b : a; /* the tensor holding the gate half */
    int64_t r0, r1;
    ew_task_rows(dst, call->ith, call->nth, &r0, &r1);
    float xs[EW_CHUNK], gs[EW_CHUNK], zs[EW_CHUNK];
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ew_row_coords(ir, dst->ne, &i1, &i2, &i3);
        const char *arow = ew_row(a, i1, i2, i3), *grow = ew_row(gt, i1, i2, i3);
        /* split form: x = a row, g = b row; one tensor: halves of the a row */
        const char *x = b ? arow : arow + (swapped ? nc : 0) * a->nb[0];
        const char *g = b ? grow : arow + (swapped ? 0 : nc) * a->nb[0];
        char *z = ew_row(dst, i1, i2, i3);
        for (int64_t off = 0; off < nc; off += EW_CHUNK) {
            const int64_t n = nc - off < EW_CHUNK ? nc - off : EW_CHUNK;
            ew_load(xs, x + off * a->nb[0], a->type, a->nb[0], n);
            ew_load(gs, g + off * gt->nb[0], gt->type, gt->nb[0], n);
            fn(n, zs, xs, gs, p);
            ew_store(z + off * dst->nb[0], dst->type, dst->nb[0], zs, n);
        }
    }
    return GGML_STATUS_SUCCESS;
}

static bool supports_glu(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (!a || (unsigned)ggml_get_glu_op(node) >= GGML_GLU_OP_COUNT || !ew_is_float(a->type) || !ew_is_float(node->type)) return false;
    if (b) return ggml_are_same_shape(a, b) && ggml_are_same_shape(a, node) && ew_is_float(b->type);
    return a->ne[0] / 2 == node->ne[0] && a->ne[1] == node->ne[1] && a->ne[2] == node->ne[2] && a->ne[3] == node->ne[3];
}

void cpu_ops_glu_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_GLU] = compute_glu;
    t->supports[GGML_OP_GLU] = supports_glu;
    t->n_tasks[GGML_OP_GLU] = ew_tasks_costly;
}
