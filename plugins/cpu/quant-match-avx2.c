/*
 * quant-match-avx2.c - AVX2 + FMA Q8_0 and Q4_0 kernels in ggml's x86 orders
 * (quant-match.h).  The eight lanes of a 256-bit register are ggml's eight
 * lanes: maddubs + madd (exact for levels within +-127, as ggml's sign trick
 * needs too) give each lane the integer sum of four products; compiled again
 * with QMATCH_VNNI (quant-match-vnni.c), one vpdpbusd does.
 */
#include "quant-match.h"

#if defined(__x86_64__)
#ifdef QMATCH_VNNI /* quant-match-vnni.c: the same kernels with vpdpbusd */
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#define QMATCH_FILL cpu_qmatch_fill_avx512vnni
#define QMATCH_SERIAL cpu_qmatch_serial_q4_0_vnni
#define QMATCH_GROUP_KERNEL cpu_qmatch_group_vnni
#else
#pragma GCC target("avx2,fma,f16c")
#define QMATCH_FILL cpu_qmatch_fill_avx2
#define QMATCH_SERIAL cpu_qmatch_serial_q4_0_avx2
#define QMATCH_GROUP_KERNEL cpu_qmatch_group_avx2
#endif
#include <immintrin.h>

#include "quant-dot-x86.h"

/* Weight block b of a row as 32 signed levels. */
static inline __m256i levels_q8_0(const void *row, int b) { return qd_load32(((const block_q8_0 *)row)[b].qs); }
static inline __m256i levels_q4_0(const void *row, int b) {
    return _mm256_sub_epi8(qd_unpack_nibbles(((const block_q4_0 *)row)[b].qs), _mm256_set1_epi8(8));
}
static inline float scale_q8_0(const void *row, int b) { return qd_h2f(((const block_q8_0 *)row)[b].d); }
static inline float scale_q4_0(const void *row, int b) { return qd_h2f(((const block_q4_0 *)row)[b].d); }

/* Lane k: the sum of w[4k..4k+3] * y[4k..4k+3], with |w| taken unsigned and its sign moved to y. */
static inline __m256i lane_sums(__m256i w_abs, __m256i w, __m256i y) {
#ifdef QMATCH_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w_abs, _mm256_sign_epi8(y, w));
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs, _mm256_sign_epi8(y, w)), _mm256_set1_epi16(1));
#endif
}

#define QMATCH_AVX2(type, LEVELS, SCALE)                                                                          \
    static inline __attribute__((always_inline)) void lanes_rows_##type##_nr(                                   \
        int n, const void *vx, const struct cpu_q8_rows *y, float *s, size_t s_stride, const int nr) {        \
        __m256 acc[CPU_QUANT_MAX_ROWS];                                                                           \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps();                                \
        for (int b = 0; b < n / QK8_0; b++) {                                                                     \
            const __m256i w = LEVELS(vx, b), w_abs = _mm256_sign_epi8(w, w);                                      \
            const float dx = SCALE(vx, b);                                                                        \
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                                         \
                const __m256i q = qd_load32(y->qs + r * y->qs_stride + (size_t)b * QK8_0);                        \
                const __m256 d = _mm256_set1_ps(dx * y->d[r * y->d_stride + b]);                                  \
                acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lane_sums(w_abs, w, q)), acc[r]);                  \
            }                                                                                                     \
        }                                                                                                         \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) s[r * s_stride] = qd_hsum_ps(acc[r]);                        \
    }                                                                                                             \
    static void lanes_rows_##type(int n, const void *x, const struct cpu_q8_rows *y, float *s, size_t s_stride) { \
        switch (y->nrows) {                                                                                       \
        case 1: lanes_rows_##type##_nr(n, x, y, s, s_stride, 1); break;                                           \
        case 2: lanes_rows_##type##_nr(n, x, y, s, s_stride, 2); break;                                           \
        case 3: lanes_rows_##type##_nr(n, x, y, s, s_stride, 3); break;                                           \
        case 4: lanes_rows_##type##_nr(n, x, y, s, s_stride, 4); break;                                           \
        case 5: lanes_rows_##type##_nr(n, x, y, s, s_stride, 5); break;                                           \
        case 6: lanes_rows_##type##_nr(n, x, y, s, s_stride, 6); break;                                           \
        case 7: lanes_rows_##type##_nr(n, x, y, s, s_stride, 7); break;                                           \
        default: lanes_rows_##type##_nr(n, x, y, s, s_stride, 8); break;                                          \
        }                                                                                                         \
    }                                                                                                             \
    static void lanes_dot_##type(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy,          \
                                 size_t by, int nrc) {                                                            \
        const block_q8_0 *y = vy;                                                                                 \
        __m256 acc = _mm256_setzero_ps();                                                                         \
        for (int b = 0; b < n / QK8_0; b++) {                                                                     \
            const __m256i w = LEVELS(vx, b);                                                                      \
            const __m256 d = _mm256_set1_ps(SCALE(vx, b) * qd_h2f(y[b].d));                                       \
            acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lane_sums(_mm256_sign_epi8(w, w), w, qd_load32(y[b].qs))), \
                                  acc);                                                                           \
        }                                                                                                         \
        *s = qd_hsum_ps(acc);                                                                                     \
    }

QMATCH_AVX2(q8_0, levels_q8_0, scale_q8_0)
QMATCH_AVX2(q4_0, levels_q4_0, scale_q4_0)

void QMATCH_FILL(cpu_vec_dot_table dots, cpu_vec_dot_rows_table rows) {
    dots[GGML_TYPE_Q8_0] = lanes_dot_q8_0;
    dots[GGML_TYPE_Q4_0] = lanes_dot_q4_0;
    rows[GGML_TYPE_Q8_0] = lanes_rows_q8_0;
    rows[GGML_TYPE_Q4_0] = lanes_rows_q4_0;
}

/* Block-serial Q4_0 (the rows the 16-row tile kernel leaves, or every row without
 * AVX-512): each block's integer sum reduced to a scalar, then one fused multiply-add. */
/* One activation row (decoding): the accumulator stays in a register. */
static void serial_row_q4_0(int n, const void *vx, const int8_t *qy, const float *dy, float *s) {
    __m128 acc = _mm_setzero_ps();
    for (int b = 0; b < n / QK8_0; b++) {
        const __m256i w = levels_q4_0(vx, b);
        const int isum = qd_hsum_epi32(lane_sums(_mm256_sign_epi8(w, w), w, qd_load32(qy + (size_t)b * QK8_0)));
        acc = _mm_fmadd_ss(_mm_set_ss(scale_q4_0(vx, b) * dy[b]), _mm_cvtsi32_ss(_mm_setzero_ps(), isum), acc);
    }
    *s = _mm_cvtss_f32(acc);
}

static void serial_rows_q4_0(int n, const void *vx, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    if (y->nrows == 1) {
        serial_row_q4_0(n, vx, y->qs, y->d, s);
        return;
    }
    float acc[CPU_QUANT_MAX_ROWS] = {0};
    for (int b = 0; b < n / QK8_0; b++) {
        const __m256i w = levels_q4_0(vx, b), w_abs = _mm256_sign_epi8(w, w);
        const float dx = scale_q4_0(vx, b);
        for (int r = 0; r < y->nrows; r++) {
            const __m256i q = qd_load32(y->qs + r * y->qs_stride + (size_t)b * QK8_0);
            const int isum = qd_hsum_epi32(lane_sums(w_abs, w, q));
            acc[r] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(dx * y->d[r * y->d_stride + b]), _mm_set_ss((float)isum),
                                                _mm_set_ss(acc[r])));
        }
    }
    for (int r = 0; r < y->nrows; r++) s[r * s_stride] = acc[r];
}

cpu_vec_dot_rows_t QMATCH_SERIAL(void) { return serial_rows_q4_0; }

/* ------------------------------------------- groups of CPU_QMATCH_GROUP weight rows */

/* Eight-lane order, four weight rows against one or two activation rows: eight independent
 * accumulator chains where a single row has one (one FMA per block, latency-bound at one
 * activation row).  Each row's chain and final sum are those of lanes_rows_<type>. */
#define QMATCH_LANES_GROUP(type, LEVELS, SCALE)                                                                        \
    static inline __attribute__((always_inline)) void lanes_4x_##type##_nr(                                            \
        int n, const char *x, size_t x_stride, const struct cpu_q8_rows *y, int r0, float *s, size_t s_stride,        \
        const int nr) {                                                                                                \
        __m256 acc[4][2];                                                                                              \
        QD_UNROLL_ROWS for (int j = 0; j < 4; j++) acc[j][0] = acc[j][1] = _mm256_setzero_ps();                        \
        for (int b = 0; b < n / QK8_0; b++) {                                                                          \
            __m256i q[2];                                                                                              \
            float dy[2];                                                                                               \
            QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {                                                              \
                q[r] = qd_load32(y->qs + (r0 + r) * y->qs_stride + (size_t)b * QK8_0);                                 \
                dy[r] = y->d[(r0 + r) * y->d_stride + b];                                                              \
            }                                                                                                          \
            QD_UNROLL_ROWS for (int j = 0; j < 4; j++) {                                                               \
                const __m256i w = LEVELS(x + j * x_stride, b), w_abs = _mm256_sign_epi8(w, w);                        \
                const float dx = SCALE(x + j * x_stride, b);                                                           \
                QD_UNROLL_ROWS for (int r = 0; r < nr; r++) acc[j][r] = _mm256_fmadd_ps(                               \
                    _mm256_set1_ps(dx * dy[r]), _mm256_cvtepi32_ps(lane_sums(w_abs, w, q[r])), acc[j][r]);             \
            }                                                                                                          \
        }                                                                                                              \
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) QD_UNROLL_ROWS for (int j = 0; j < 4; j++)                         \
            s[(r0 + r) * s_stride + j] = qd_hsum_ps(acc[j][r]);                                                        \
    }                                                                                                                  \
    static void lanes_group_##type(int n, const void *x, size_t x_stride, const struct cpu_q8_rows *y, float *s,      \
                                   size_t s_stride) {                                                                  \
        for (int j = 0; j < CPU_QMATCH_GROUP; j += 4)                                                                  \
            for (int r = 0; r < y->nrows; r += 2) {                                                                    \
                const char *xj = (const char *)x + j * x_stride;                                                       \
                if (y->nrows - r >= 2) lanes_4x_##type##_nr(n, xj, x_stride, y, r, s + j, s_stride, 2);                \
                else lanes_4x_##type##_nr(n, xj, x_stride, y, r, s + j, s_stride, 1);                                  \
            }                                                                                                          \
    }

QMATCH_LANES_GROUP(q8_0, levels_q8_0, scale_q8_0)
QMATCH_LANES_GROUP(q4_0, levels_q4_0, scale_q4_0)

/* Block-serial Q4_0, eight weight rows at once, row j in 32-bit lane j of every float
 * register: the eight rows' block sums are reduced into one vector of eight integers, then
 * one conversion, one multiply and one FMA serve eight rows (as in ggml's repacked GEMV).
 * The nibbles enter unsigned (0..15) and each block sum is corrected by -8 * sum(y): exact
 * integers, so row j's result is serial_rows_q4_0's to the bit. */
static inline __m256i lane_sums_unsigned(__m256i u, __m256i y) {
#ifdef QMATCH_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, y);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), _mm256_set1_epi16(1)); /* |15 * 127 * 2| fits int16 */
#endif
}

/* Lane j: the sum of the eight lanes of p[j]. */
static inline __m256i row_sums8(const __m256i p[8]) {
    const __m256i h0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    const __m256i h4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20), _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

static inline __attribute__((always_inline)) void serial_8x_q4_0_nr(int n, const void *vx, size_t x_stride,
                                                                    const struct cpu_q8_rows *y, float *s,
                                                                    size_t s_stride, const int nr) {
    __m256 acc[CPU_QUANT_MAX_ROWS];
    QD_UNROLL_ROWS for (int r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps();
    for (int b = 0; b < n / QK8_0; b++) {
        __m256i w[CPU_QMATCH_GROUP];
        uint16_t h[CPU_QMATCH_GROUP];
        QD_UNROLL_ROWS for (int j = 0; j < CPU_QMATCH_GROUP; j++) {
            const block_q4_0 *blk = (const block_q4_0 *)((const char *)vx + j * x_stride) + b;
            w[j] = qd_unpack_nibbles(blk->qs);
            memcpy(&h[j], &blk->d, sizeof h[j]);
        }
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
        QD_UNROLL_ROWS for (int r = 0; r < nr; r++) {
            const __m256i q = qd_load32(y->qs + r * y->qs_stride + (size_t)b * QK8_0);
            __m256i p[CPU_QMATCH_GROUP];
            QD_UNROLL_ROWS for (int j = 0; j < CPU_QMATCH_GROUP; j++) p[j] = lane_sums_unsigned(w[j], q);
            const __m256i isum = _mm256_sub_epi32(row_sums8(p), _mm256_set1_epi32(8 * y->sums[r * y->d_stride + b]));
            const __m256 d = _mm256_mul_ps(dx, _mm256_set1_ps(y->d[r * y->d_stride + b]));
            acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc[r]);
        }
    }
    QD_UNROLL_ROWS for (int r = 0; r < nr; r++) _mm256_storeu_ps(s + r * s_stride, acc[r]);
}

static void serial_group_q4_0(int n, const void *x, size_t x_stride, const struct cpu_q8_rows *y, float *s, size_t s_stride) {
    switch (y->nrows) {
    case 1: serial_8x_q4_0_nr(n, x, x_stride, y, s, s_stride, 1); break;
    case 2: serial_8x_q4_0_nr(n, x, x_stride, y, s, s_stride, 2); break;
    case 3: serial_8x_q4_0_nr(n, x, x_stride, y, s, s_stride, 3); break;
    case 4: serial_8x_q4_0_nr(n, x, x_stride, y, s, s_stride, 4); break;
    case 5: serial_8x_q4_0_nr(n, x, x_stride, y, s, s_stride, 5); break;
    case 6: serial_8x_q4_0_nr(n, x, x_stride, y, s, s_stride, 6); break;
    case 7: serial_8x_q4_0_nr(n, x, x_stride, y, s, s_stride, 7); break;
    default: serial_8x_q4_0_nr(n, x, x_stride, y, s, s_stride, 8); break;
    }
}

cpu_vec_dot_tile_t QMATCH_GROUP_KERNEL(enum ggml_type type, bool serial) {
    if (serial) return type == GGML_TYPE_Q4_0 ? serial_group_q4_0 : NULL;
    return type == GGML_TYPE_Q8_0 ? lanes_group_q8_0 : type == GGML_TYPE_Q4_0 ? lanes_group_q4_0 : NULL;
}

#elif defined(QMATCH_VNNI)
void cpu_qmatch_fill_avx512vnni(cpu_vec_dot_table dots, cpu_vec_dot_rows_table rows) { (void)dots, (void)rows; }
cpu_vec_dot_rows_t cpu_qmatch_serial_q4_0_vnni(void) { return NULL; }
cpu_vec_dot_tile_t cpu_qmatch_group_vnni(enum ggml_type type, bool serial) { return (void)type, (void)serial, NULL; }
#else
void cpu_qmatch_fill_avx2(cpu_vec_dot_table dots, cpu_vec_dot_rows_table rows) { (void)dots, (void)rows; }
cpu_vec_dot_rows_t cpu_qmatch_serial_q4_0_avx2(void) { return NULL; }
cpu_vec_dot_tile_t cpu_qmatch_group_avx2(enum ggml_type type, bool serial) { return (void)type, (void)serial, NULL; }
#endif
