/*
 * quant-dot-avx512.c - AVX-512 VNNI dot products (see quant-dot.h) for the
 * formats that dominate matrix-vector time: Q4_0, Q8_0, IQ4_NL and Q4_K.
 * vpdpbusd multiplies unsigned by signed bytes and adds groups of
 * four straight into int32 lanes, replacing AVX2's maddubs + madd pair.
 * Used only when type-traits.c found AVX-512 BW/VL and VNNI.
 */
#include "quant-dot.h"

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#include <immintrin.h>

static inline float h2f(ggml_fp16_t h) { return _cvtsh_ss(h); }
static inline __m256i load32(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

static inline float hsum_ps(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

static inline int hsum_epi32(__m256i v) {
    __m128i r = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0x4e));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0xb1));
    return _mm_cvtsi128_si32(r);
}

static inline __m256i unpack_nibbles(const uint8_t *qs) {
    const __m128i b = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(0x0f);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

/* Signed bytes: |x| (unsigned) times y with x's sign. */
static inline __m256i dot_i8(__m256i x, __m256i y) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(x), _mm256_sign_epi8(y, x));
}

/* Q4_0: sum (q - 8) y = sum q y - 8 sum y, both by vpdpbusd on the unsigned nibbles. */
static inline __m256i q4_0_block(const block_q4_0 *x, const block_q8_0 *y) {
    const __m256i q = unpack_nibbles(x->qs), qy = load32(y->qs);
    const __m256i qsum = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q, qy);
    return _mm256_sub_epi32(qsum, _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8), qy));
}

static void dot_q4_0(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 1 < n / QK8_0; i += 2) {
        const __m256i p0 = q4_0_block(&x[i], &y[i]), p1 = q4_0_block(&x[i + 1], &y[i + 1]);
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i + 1].d) * h2f(y[i + 1].d)), _mm256_cvtepi32_ps(p1), acc1);
    }
    for (; i < n / QK8_0; i++)
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), _mm256_cvtepi32_ps(q4_0_block(&x[i], &y[i])), acc0);
    *s = hsum_ps(_mm256_add_ps(acc0, acc1));
}

static void dot_q8_0(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q8_0 *x = vx, *y = vy;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 1 < n / QK8_0; i += 2) {
        const __m256i p0 = dot_i8(load32(x[i].qs), load32(y[i].qs));
        const __m256i p1 = dot_i8(load32(x[i + 1].qs), load32(y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i + 1].d) * h2f(y[i + 1].d)), _mm256_cvtepi32_ps(p1), acc1);
    }
    for (; i < n / QK8_0; i++)
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)),
                               _mm256_cvtepi32_ps(dot_i8(load32(x[i].qs), load32(y[i].qs))), acc0);
    *s = hsum_ps(_mm256_add_ps(acc0, acc1));
}

static void dot_iq4_nl(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_iq4_nl *x = vx;
    const block_q8_0 *y = vy;
    const __m128i table = _mm_loadu_si128((const __m128i *)ggmlc_kvalues_iq4nl), m = _mm_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / QK8_0; i++) {
        const __m128i b = _mm_loadu_si128((const __m128i *)x[i].qs);
        const __m256i q = _mm256_set_m128i(_mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(b, 4), m)),
                                           _mm_shuffle_epi8(table, _mm_and_si128(b, m)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), _mm256_cvtepi32_ps(dot_i8(q, load32(y[i].qs))), acc);
    }
    *s = hsum_ps(acc);
}

/* Q4_K: per 32-value sub-block j, vpdpbusd gives (q . y)_j; scales multiply the int32 lanes. */
static void dot_q4_K(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    float sum = 0;
    for (int i = 0; i < n / QK_K; i++) {
        const uint8_t *q = x[i].scales;
        int sc[8], m[8];
        for (int j = 0; j < 8; j++) {
            sc[j] = j < 4 ? q[j] & 63 : (q[j + 4] & 0xf) | (q[j - 4] >> 6) << 4;
            m[j] = j < 4 ? q[j + 4] & 63 : (q[j + 4] >> 4) | (q[j] >> 6) << 4;
        }
        __m256i acc = _mm256_setzero_si256();
        int summs = 0;
        for (int g = 0; g < 4; g++) {
            const __m256i b = load32(x[i].qs + 32 * g);
            const __m256i plo = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_and_si256(b, m4), load32(y[i].qs + 64 * g));
            const __m256i phi = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_and_si256(_mm256_srli_epi16(b, 4), m4),
                                                    load32(y[i].qs + 64 * g + 32));
            acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(plo, _mm256_set1_epi32(sc[2 * g])));
            acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(phi, _mm256_set1_epi32(sc[2 * g + 1])));
            summs += m[2 * g] * (y[i].bsums[4 * g] + y[i].bsums[4 * g + 1]) +
                     m[2 * g + 1] * (y[i].bsums[4 * g + 2] + y[i].bsums[4 * g + 3]);
        }
        sum += y[i].d * h2f(x[i].d) * (float)hsum_epi32(acc) - y[i].d * h2f(x[i].dmin) * (float)summs;
    }
    *s = sum;
}

void cpu_quant_dot_fill_avx512vnni(cpu_vec_dot_table t) {
    t[GGML_TYPE_Q4_0] = dot_q4_0;
    t[GGML_TYPE_Q8_0] = dot_q8_0;
    t[GGML_TYPE_IQ4_NL] = dot_iq4_nl;
    t[GGML_TYPE_Q4_K] = dot_q4_K;
}

#else
void cpu_quant_dot_fill_avx512vnni(cpu_vec_dot_table t) { (void)t; }
#endif
