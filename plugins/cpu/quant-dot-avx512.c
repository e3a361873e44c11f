/*
 * quant-dot-avx512.c - AVX-512 VNNI dot products (see quant-dot.h) for the
 * formats that dominate matrix-vector time: Q4_0, Q8_0 and IQ4_NL (the
 * K-quants use the AVX2 kernels, whose madd applies the sub-block scales).
 * vpdpbusd multiplies unsigned by signed bytes and adds groups of
 * four straight into int32 lanes, replacing AVX2's maddubs + madd pair.
 * Used only when type-traits.c found AVX-512 BW/VL and VNNI.
 */
#include "quant-dot.h"

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#include <immintrin.h>

#include "quant-dot-x86.h"

/* Signed bytes: |x| (unsigned) times y with x's sign. */
static inline __m256i dot_i8(__m256i x, __m256i y) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(x), _mm256_sign_epi8(y, x));
}

/* Q4_0: sum (q - 8) y = sum q y - 8 sum y, both by vpdpbusd on the unsigned nibbles. */
static inline __m256i q4_0_block(const block_q4_0 *x, const block_q8_0 *y) {
    const __m256i q = qd_unpack_nibbles(x->qs), qy = qd_load32(y->qs);
    const __m256i qsum = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q, qy);
    return _mm256_sub_epi32(qsum, _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8), qy));
}

/* Two blocks' eight int32 sums side by side in one 512-bit register. */
static inline __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

/* Scales s[k] and s[k + 1] of qd_scales4 in the low and high eight lanes. */
static inline __m512 lanes2(__m128 s, int k) {
    const __m512i idx = _mm512_set_epi32(k + 1, k + 1, k + 1, k + 1, k + 1, k + 1, k + 1, k + 1, k, k, k, k, k, k, k, k);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(s));
}

/* The nibbles of four Q4_0 blocks as two registers [low a, high a, low b, high b] and
 * [low c, high c, low d, high d] (16 bytes each), matching two Q8_0 blocks' 32 values each. */
static inline void q4_0_unpack4(const block_q4_0 *x, __m512i *ab, __m512i *cd) {
    __m512i q = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)x[0].qs));
    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)x[1].qs), 1);
    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)x[2].qs), 2);
    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)x[3].qs), 3);
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
    *ab = _mm512_permutex2var_epi64(lo, _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), hi);
    *cd = _mm512_permutex2var_epi64(lo, _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4), hi);
}

static inline __m512i load_q8_0_pair(const block_q8_0 *y) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(qd_load32(y[0].qs)), qd_load32(y[1].qs), 1);
}

/* sum (q - 8) y for two blocks at once: vpdpbusd of the unsigned nibbles minus that of 8s. */
static inline __m512i q4_0_pair(__m512i q, __m512i y) {
    const __m512i qy = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, y);
    return _mm512_sub_epi32(qy, _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(8), y));
}

/* Four blocks per step in 512-bit registers: scales converted at once, row prefetched ahead. */
static void dot_q4_0(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    const int nb = n / QK8_0;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 3 < nb; i += 4) {
        _mm_prefetch((const char *)(x + i) + QD_PREFETCH, _MM_HINT_T0);
        const __m128 sc = QD_SCALES4(x, y, i);
        __m512i qab, qcd;
        q4_0_unpack4(x + i, &qab, &qcd);
        const __m512i pab = q4_0_pair(qab, load_q8_0_pair(y + i)), pcd = q4_0_pair(qcd, load_q8_0_pair(y + i + 2));
        acc0 = _mm512_fmadd_ps(lanes2(sc, 0), _mm512_cvtepi32_ps(pab), acc0);
        acc1 = _mm512_fmadd_ps(lanes2(sc, 2), _mm512_cvtepi32_ps(pcd), acc1);
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    for (; i < nb; i++) sum += qd_h2f(x[i].d) * qd_h2f(y[i].d) * (float)qd_hsum_epi32(q4_0_block(&x[i], &y[i]));
    *s = sum;
}

static void dot_q8_0(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc) {
    const block_q8_0 *x = vx, *y = vy;
    const int nb = n / QK8_0;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 3 < nb; i += 4) {
        _mm_prefetch((const char *)(x + i) + QD_PREFETCH, _MM_HINT_T0);
        _mm_prefetch((const char *)(x + i) + QD_PREFETCH + 64, _MM_HINT_T0);
        const __m128 sc = QD_SCALES4(x, y, i);
        const __m512i p01 = join(dot_i8(qd_load32(x[i].qs), qd_load32(y[i].qs)), dot_i8(qd_load32(x[i + 1].qs), qd_load32(y[i + 1].qs)));
        const __m512i p23 = join(dot_i8(qd_load32(x[i + 2].qs), qd_load32(y[i + 2].qs)),
                                 dot_i8(qd_load32(x[i + 3].qs), qd_load32(y[i + 3].qs)));
        acc0 = _mm512_fmadd_ps(lanes2(sc, 0), _mm512_cvtepi32_ps(p01), acc0);
        acc1 = _mm512_fmadd_ps(lanes2(sc, 2), _mm512_cvtepi32_ps(p23), acc1);
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    for (; i < nb; i++)
        sum += qd_h2f(x[i].d) * qd_h2f(y[i].d) * (float)qd_hsum_epi32(dot_i8(qd_load32(x[i].qs), qd_load32(y[i].qs)));
    *s = sum;
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
        acc = _mm256_fmadd_ps(_mm256_set1_ps(qd_h2f(x[i].d) * qd_h2f(y[i].d)), _mm256_cvtepi32_ps(dot_i8(q, qd_load32(y[i].qs))), acc);
    }
    *s = qd_hsum_ps(acc);
}

void cpu_quant_dot_fill_avx512vnni(cpu_vec_dot_table t) {
    t[GGML_TYPE_Q4_0] = dot_q4_0;
    t[GGML_TYPE_Q8_0] = dot_q8_0;
    t[GGML_TYPE_IQ4_NL] = dot_iq4_nl;
}

#else
void cpu_quant_dot_fill_avx512vnni(cpu_vec_dot_table t) { (void)t; }
#endif
