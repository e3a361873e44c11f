/*
 * repack-x86.c - the AVX2 + FMA kernel of packed Q4_0 groups (repack.h);
 * compiled again with REPACK_VNNI (repack-vnni.c) for AVX-512 VNNI.  Lane j
 * of every register is weight row j of the group: a 32-byte load holds four
 * values of each of the eight rows (low nibbles) and four more (high
 * nibbles), and four activation values broadcast to all lanes meet them in
 * one vpdpbusd (or maddubs, the block's eight added as int16 before one madd).  The nibbles enter unsigned, so each
 * block's sum is corrected by -8 * (the activations' block sum): exact
 * integers, as ggml's signed sums.  Then, per block, one FMA for the eight
 * rows: acc = fma(float(isum), dx * dy, acc), ggml's repacked order.
 */
#include "repack.h"

#if defined(__x86_64__)
#ifdef REPACK_VNNI
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#define REPACK_KERNEL cpu_repack_kernel_vnni
#else
#pragma GCC target("avx2,fma,f16c")
#define REPACK_KERNEL cpu_repack_kernel_avx2
#endif
#include <immintrin.h>
#include <string.h>

#include "quant-dot-x86.h"

/* Four activation values in every lane. */
static inline __m256i broadcast4(const int8_t *q) {
    int32_t v;
    memcpy(&v, q, sizeof v);
    return _mm256_set1_epi32(v);
}

/* In each lane (weight row) the integer sum of its block's 32 products: unsigned nibbles lo
 * (values 4i..4i+3) and hi (16+4i..16+4i+3) with the activations q.  Without VNNI the eight
 * maddubs results add as int16 and widen once: a lane's pair is at most 2 * 15 * 128 = 3840
 * in magnitude, eight of them 30720, so nothing saturates or wraps and the sum is the exact
 * one of widening each (a third fewer instructions per block). */
static inline __m256i block_dots(const __m256i lo[4], const __m256i hi[4], const int8_t *q) {
#ifdef REPACK_VNNI
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256(); /* two chains of dependent adds */
    QD_UNROLL_ROWS for (int i = 0; i < 4; i++) {
        s0 = _mm256_dpbusd_epi32(s0, lo[i], broadcast4(q + 4 * i));
        s1 = _mm256_dpbusd_epi32(s1, hi[i], broadcast4(q + 16 + 4 * i));
    }
    return _mm256_add_epi32(s0, s1);
#else
    __m256i s0 = _mm256_maddubs_epi16(lo[0], broadcast4(q)), s1 = _mm256_maddubs_epi16(hi[0], broadcast4(q + 16));
    QD_UNROLL_ROWS for (int i = 1; i < 4; i++) {
        s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(lo[i], broadcast4(q + 4 * i)));
        s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(hi[i], broadcast4(q + 16 + 4 * i)));
    }
    return _mm256_madd_epi16(_mm256_add_epi16(s0, s1), _mm256_set1_epi16(1));
#endif
}

static inline __attribute__((always_inline)) void group_rows_nr(int n, const void *group, const struct cpu_q8_rows *y,
                                                                float *s, size_t s_stride, const int nr) {
    const uint8_t *g = group;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc[CPU_QUANT_MAX_ROWS];
    QD_UNROLL_ROWS for (int r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps();
    for (int b = 0; b < n / QK4_0; b++) {
        const uint8_t *blk = g + (size_t)b * CPU_REPACK_GROUP_BLOCK;
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)blk));
        __m256i lo[4], hi[4]; /* values 4i..4i+3 and 16+4i..16+4i+3 of every row */
        QD_UNROLL_ROWS for (int i = 0; i < 4; i++) {
            const __m256i raw = _mm256_loadu_si256((const __m256i *)(blk + 2 * CPU_REPACK_ROWS + 32 * i));
            lo[i] = _mm256_and_si256(raw, m4);
            hi[i] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
        }
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {
            const int8_t *q = y->qs + r * y->qs_stride + (size_t)b * QK8_0;
            const __m256i isum = _mm256_sub_epi32(block_dots(lo, hi, q), _mm256_set1_epi32(8 * y->sums[r * y->d_stride + b]));
            const __m256 d = _mm256_mul_ps(dx, _mm256_set1_ps(y->d[r * y->d_stride + b]));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc[r]);
        }
    }
    QD_UNROLL_ROWS for (int r = 0; r < nr; r++) _mm256_storeu_ps(s + r * s_stride, acc[r]);
}
QD_ROWS_DISPATCH(group_rows)

cpu_repack_kernel_t REPACK_KERNEL(void) { return group_rows; }

#elif defined(REPACK_VNNI)
cpu_repack_kernel_t cpu_repack_kernel_vnni(void) { return NULL; }
#else
cpu_repack_kernel_t cpu_repack_kernel_avx2(void) { return NULL; }
#endif
