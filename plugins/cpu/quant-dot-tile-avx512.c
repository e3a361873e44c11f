/*
 * quant-dot-tile-avx512.c - AVX-512 VNNI tile kernels (see quant-dot.h): 16
 * weight rows against up to 8 activation rows.  Lane j of every register
 * belongs to weight row j: a gather brings four bytes of each row's block
 * into the 16 lanes, and vpdpbusd against four activation values broadcast
 * to all lanes adds four products per row.  A block of 16 rows and one
 * activation row then costs eight vpdpbusd, one conversion and one FMA,
 * with no horizontal sums; the weight gathers are shared by all rows.
 *
 * The four bytes per row come from plain loads of each row's block and a
 * transpose in registers (gathers cost far more on this class of CPU); the
 * 16 f16 block scales take one gather.
 *
 * vpdpbusd multiplies unsigned by signed bytes, so the weights enter as
 * unsigned levels q = level + offset (Q4_0: the stored nibble, offset 8;
 * Q8_0: level ^ 0x80, offset 128) and every block's sum starts at
 * -offset * sum(y), from the activations' block sums.  All of it is exact
 * int32 arithmetic before the float scaling.
 */
#include "quant-dot.h"

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#include <immintrin.h>

#include "quant-dot-x86.h"

/* Four bytes at base + offsets[j] in lane j (one gather per block: the scales). */
static inline __m512i gather16(const char *base, __m512i offsets) { return _mm512_i32gather_epi32(offsets, base, 1); }

/* The f16 scale at the start of the block in each of the 16 rows, as floats. */
static inline __m512 scales16(const char *block, __m512i offsets) {
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(gather16(block, offsets)));
}

/* 16 bytes at p0 .. p3 as the four 128-bit lanes of one register. */
static inline __m512i load4x16(const char *p0, const char *p1, const char *p2, const char *p3) {
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)p0));
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)p1), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)p2), 2);
    return _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)p3), 3);
}

/* Group g of a block's unsigned levels: values 4g..4g+3 of every row (lane j = row j), the
 * ones that meet activation values 4g..4g+3.  Q4_0: dword k of row j's 16 nibble bytes
 * holds values 4k.. (low nibbles) and 16 + 4k.. (high nibbles). */
static inline void weights_q4_0(const char *block, size_t stride, __m512i w[8]) {
    const char *q = block + offsetof(block_q4_0, qs);
    __m512i a[4]; /* rows 4i..4i+3, dword 4 * (j % 4) + k */
    for (int i = 0; i < 4; i++)
        a[i] = load4x16(q + (4 * i) * stride, q + (4 * i + 1) * stride, q + (4 * i + 2) * stride, q + (4 * i + 3) * stride);
    /* dword k of rows 0..7 in lanes 0..7 and dword k + 1 in lanes 8..15 (k = 0, 2), then rows 8..15 */
    const __m512i k0 = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
    const __m512i k2 = _mm512_add_epi32(k0, _mm512_set1_epi32(2));
    const __m512i lo01 = _mm512_permutex2var_epi32(a[0], k0, a[1]), lo23 = _mm512_permutex2var_epi32(a[2], k0, a[3]);
    const __m512i hi01 = _mm512_permutex2var_epi32(a[0], k2, a[1]), hi23 = _mm512_permutex2var_epi32(a[2], k2, a[3]);
    const __m512i t[4] = {_mm512_shuffle_i64x2(lo01, lo23, 0x44), _mm512_shuffle_i64x2(lo01, lo23, 0xee),
                          _mm512_shuffle_i64x2(hi01, hi23, 0x44), _mm512_shuffle_i64x2(hi01, hi23, 0xee)};
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    for (int k = 0; k < 4; k++) {
        w[k] = _mm512_and_si512(t[k], m4);
        w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(t[k], 4), m4);
    }
}

/* Q8_0: dword g of row j's 32 values, as unsigned levels + 128. */
static inline void weights_q8_0(const char *block, size_t stride, __m512i w[8]) {
    const char *q = block + offsetof(block_q8_0, qs);
    __m512i b[8]; /* rows 2m, 2m + 1: dword 8 * (j % 2) + g */
    for (int m = 0; m < 8; m++)
        b[m] = _mm512_inserti64x4(_mm512_castsi256_si512(qd_load32(q + (2 * m) * stride)), qd_load32(q + (2 * m + 1) * stride), 1);
    /* e[q][h]: rows 4q..4q+3, dwords 4h..4h+3, lane 4 * (g - 4h) + (j % 4) */
    const __m512i e0 = _mm512_setr_epi32(0, 8, 16, 24, 1, 9, 17, 25, 2, 10, 18, 26, 3, 11, 19, 27);
    const __m512i e1 = _mm512_add_epi32(e0, _mm512_set1_epi32(4));
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int h = 0; h < 2; h++) {
        const __m512i idx = h ? e1 : e0;
        const __m512i e[4] = {_mm512_permutex2var_epi32(b[0], idx, b[1]), _mm512_permutex2var_epi32(b[2], idx, b[3]),
                              _mm512_permutex2var_epi32(b[4], idx, b[5]), _mm512_permutex2var_epi32(b[6], idx, b[7])};
        /* dword g = 4h + c of all 16 rows: 128-bit lane c of e[0..3] */
        const __m512i f01 = _mm512_shuffle_i64x2(e[0], e[1], 0x44), f23 = _mm512_shuffle_i64x2(e[2], e[3], 0x44);
        const __m512i g01 = _mm512_shuffle_i64x2(e[0], e[1], 0xee), g23 = _mm512_shuffle_i64x2(e[2], e[3], 0xee);
        w[4 * h + 0] = _mm512_xor_si512(_mm512_shuffle_i64x2(f01, f23, 0x88), flip);
        w[4 * h + 1] = _mm512_xor_si512(_mm512_shuffle_i64x2(f01, f23, 0xdd), flip);
        w[4 * h + 2] = _mm512_xor_si512(_mm512_shuffle_i64x2(g01, g23, 0x88), flip);
        w[4 * h + 3] = _mm512_xor_si512(_mm512_shuffle_i64x2(g01, g23, 0xdd), flip);
    }
}

/* The 16 rows' bytes at p (p + j * stride for row j) on their way to the cache: the rows are
 * 16 streams, more than the hardware prefetchers follow. */
static inline void tile_prefetch(const char *p, size_t stride) {
    for (int j = 0; j < CPU_QUANT_TILE; j++) _mm_prefetch(p + j * stride, _MM_HINT_T0);
}

static inline __m512i broadcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

#define TILE_VNNI(name, xt, WEIGHTS, OFFSET)                                                                          \
    static inline __attribute__((always_inline)) void name##_nr(int n, const void *vx, size_t x_stride,               \
                                                                const struct cpu_q8_rows *y, float *s, size_t s_stride, \
                                                                const int nr) {                                       \
        const __m512i offsets = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), \
                                                   _mm512_set1_epi32((int)x_stride));                                 \
        __m512 acc[CPU_QUANT_MAX_ROWS];                                                                               \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) acc[r] = _mm512_setzero_ps();                                     \
        for (int b = 0; b < n / QK8_0; b++) {                                                                         \
            const char *block = (const char *)vx + (size_t)b * sizeof(xt);                                            \
            if (b % 4 == 0) tile_prefetch(block + QD_PREFETCH, x_stride);                                             \
            __m512i w[8];                                                                                             \
            WEIGHTS(block, x_stride, w);                                                                               \
            const __m512 dx = scales16(block, offsets);                                                               \
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                                             \
                const int8_t *qy = y->qs + r * y->qs_stride + (size_t)b * QK8_0;                                      \
                __m512i p0 = _mm512_set1_epi32(-(OFFSET) * y->sums[r * y->d_stride + b]), p1 = _mm512_setzero_si512(); \
                for (int g = 0; g < 8; g += 2) {                                                                      \
                    p0 = _mm512_dpbusd_epi32(p0, w[g], broadcast4(qy + 4 * g));                                       \
                    p1 = _mm512_dpbusd_epi32(p1, w[g + 1], broadcast4(qy + 4 * g + 4));                               \
                }                                                                                                     \
                const __m512 scale = _mm512_mul_ps(dx, _mm512_set1_ps(y->d[r * y->d_stride + b]));                    \
                acc[r] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(_mm512_add_epi32(p0, p1)), acc[r]);                \
            }                                                                                                         \
        }                                                                                                             \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) _mm512_storeu_ps(s + r * s_stride, acc[r]);                       \
    }                                                                                                                 \
    static void name(int n, const void *x, size_t x_stride, const struct cpu_q8_rows *y, float *s, size_t s_stride) { \
        switch (y->nrows) {                                                                                           \
        case 1: name##_nr(n, x, x_stride, y, s, s_stride, 1); break;                                                  \
        case 2: name##_nr(n, x, x_stride, y, s, s_stride, 2); break;                                                  \
        case 3: name##_nr(n, x, x_stride, y, s, s_stride, 3); break;                                                  \
        case 4: name##_nr(n, x, x_stride, y, s, s_stride, 4); break;                                                  \
        case 5: name##_nr(n, x, x_stride, y, s, s_stride, 5); break;                                                  \
        case 6: name##_nr(n, x, x_stride, y, s, s_stride, 6); break;                                                  \
        case 7: name##_nr(n, x, x_stride, y, s, s_stride, 7); break;                                                  \
        default: name##_nr(n, x, x_stride, y, s, s_stride, 8); break;                                                 \
        }                                                                                                             \
    }

TILE_VNNI(tile_q4_0, block_q4_0, weights_q4_0, 8)
TILE_VNNI(tile_q8_0, block_q8_0, weights_q8_0, 128)

void cpu_quant_tile_fill_avx512vnni(cpu_vec_dot_tile_table t) {
    t[GGML_TYPE_Q4_0] = tile_q4_0;
    t[GGML_TYPE_Q8_0] = tile_q8_0;
}

#else
void cpu_quant_tile_fill_avx512vnni(cpu_vec_dot_tile_table t) { (void)t; }
#endif
