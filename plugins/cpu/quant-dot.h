/*
 * quant-dot.h - dot products of quantized weight rows with activation rows
 * quantized on the fly (Q8_0, Q8_1 or Q8_K, as in ggml), in portable C
 * (quant-dot.c), AVX2 (quant-dot-avx2.c) and AVX-512 VNNI
 * (quant-dot-avx512.c).  type-traits.c picks a path at run time.
 *
 * Every kernel has ggml's vec_dot signature and computes one dot product
 * (nrc == 1; the strides bs, bx, by are unused): *s = sum_i x_i * y_i over
 * n values, x of the weight type, y of its vec_dot_type.
 */
#ifndef GGMLC_CPU_QUANT_DOT_H
#define GGMLC_CPU_QUANT_DOT_H

#include "cpu-impl.h"
#include "ggmlc-blocks.h"

/* Sub-block j (0..7) scale and min of a Q4_K/Q5_K 12-byte scale field. */
static inline void cpu_k4_scale_min(const uint8_t *q, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xf) | (q[j - 4] >> 6) << 4;
        *m = (q[j + 4] >> 4) | (q[j] >> 6) << 4;
    }
}

/* Value e (0..255) of a Q6_K super-block as its signed level (-32..31). */
static inline int cpu_q6_K_level(const block_q6_K *x, int e) {
    const int half = e / 128, r = e % 128, li = r % 32, quarter = r / 32;
    const uint8_t b = x->ql[64 * half + li + 32 * (quarter & 1)];
    const int low = quarter < 2 ? b & 0xf : b >> 4;
    const int high = (x->qh[32 * half + li] >> (2 * quarter)) & 3;
    return (low | high << 4) - 32;
}

/* The sum of eight float lanes in the order of ggml's 256-bit horizontal sum (its x86
 * hsum_float_8): ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)). */
static inline float cpu_sum_lanes8(const float a[8]) {
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

/* The two low bits of value e (0..255) of a Q2_K or Q3_K super-block's packed quants qs: byte
 * (e / 128) * 32 + e % 32, bits 2 * ((e % 128) / 32). */
static inline int cpu_k_low2(const uint8_t *qs, int e) { return (qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

/* The code paths, from the most portable up. */
enum cpu_quant_path {
    CPU_QUANT_GENERIC = 0,
    CPU_QUANT_AVX2,        /* AVX2 + FMA: maddubs/madd integer dots */
    CPU_QUANT_AVX512VNNI,  /* AVX-512 BW/VL + VNNI: vpdpbusd integer dots */
    CPU_QUANT_PATHS
};

/* One kernel per weight type; a path leaves NULL where it has no kernel of its own. */
typedef ggml_vec_dot_t cpu_vec_dot_table[GGML_TYPE_COUNT];

/* The paths' own kernels; Q8_0's, Q4_0's, IQ4_NL's and MXFP4's, in ggml's orders, are
 * installed after these by cpu_qmatch_fill_* (quant-match.h). */
CPU_HIDDEN void cpu_quant_dot_fill_generic(cpu_vec_dot_table table);
CPU_HIDDEN void cpu_quant_dot_fill_avx2(cpu_vec_dot_table table);
CPU_HIDDEN void cpu_quant_dot_fill_avx512vnni(cpu_vec_dot_table table);
/* Q1_0, Q2_0 and NVFP4 against Q8_0 in ggml's x86 order, one kernel for every path
 * (quant-dot-lowbit.c); cpu_quant_lowbit_type tells those types. */
CPU_HIDDEN void cpu_quant_dot_fill_lowbit(cpu_vec_dot_table table);
CPU_HIDDEN bool cpu_quant_lowbit_type(enum ggml_type type);

/* Whether this CPU can run a path, and the traits of a type on that path (a path
 * falls back to the next lower one for types it has no kernel for). */
CPU_HIDDEN bool cpu_quant_path_available(enum cpu_quant_path path);
CPU_HIDDEN const struct cpu_type_traits *cpu_type_traits_on_path(enum ggml_type type, enum cpu_quant_path path);
/* The path this CPU runs, capped by cpu_simd_level() (GGMLC_CPU_PATH). */
CPU_HIDDEN enum cpu_quant_path cpu_current_quant_path(void);

/* ------------------------------------------------ multi-row dot products
 *
 * One weight row against up to CPU_QUANT_MAX_ROWS activation rows at once, so each weight
 * block is loaded and unpacked once per group of rows instead of once per row
 * (quant-dot-rows*.c).  For the weight types whose vec_dot_type is Q8_0 (Q4_0, Q5_0,
 * Q8_0, IQ4_NL, MXFP4) the activations are Q8_0 rows split into planes: the int8
 * values of every row contiguous and the block scales as floats, so a kernel reads a
 * row's values with wide loads and its scales without f16 conversions.  The other types
 * (vec_dot_type Q8_K, or Q8_1 for Q4_1 and Q5_1) read plain rows of their vec_dot_type: qs
 * points at row 0's block array and qs_stride is the row stride in bytes; d and sums are
 * unused. */

#define CPU_QUANT_MAX_ROWS 8

struct cpu_q8_cols;

struct cpu_q8_rows {
    const int8_t *qs; /* row r's values at qs + r * qs_stride */
    size_t qs_stride; /* bytes */
    const float *d;   /* row r's block scales at d + r * d_stride */
    size_t d_stride;  /* floats */
    const int32_t *sums; /* row r's block sums of values at sums + r * d_stride (block-serial Q4_0: experts, CPU_REPACK) */
    int nrows;        /* 1 .. CPU_QUANT_MAX_ROWS */
    const struct cpu_q8_cols *cols; /* the same rows interleaved for the column kernels (quant-match.h), or NULL */
};

/* s[r * s_stride] = x . y_r for r < y->nrows, over n values (a multiple of 32). */
typedef void (*cpu_vec_dot_rows_t)(int n, const void *x, const struct cpu_q8_rows *y, float *s, size_t s_stride);
typedef cpu_vec_dot_rows_t cpu_vec_dot_rows_table[GGML_TYPE_COUNT];

/* Multi-row kernels of Q5_0 on every path, and on the portable path of the K-quants and
 * IQ4_XS (the other types: cpu_quant_rows_k_fill_*).  Q8_0's and Q4_0's, in ggml's order,
 * are installed after these by cpu_qmatch_fill_* (quant-match.h). */
CPU_HIDDEN void cpu_quant_rows_fill_generic(cpu_vec_dot_rows_table table);
CPU_HIDDEN void cpu_quant_rows_fill_avx2(cpu_vec_dot_rows_table table);
CPU_HIDDEN void cpu_quant_rows_fill_avx512vnni(cpu_vec_dot_rows_table table);
/* Multi-row kernels of Q4_1 and Q5_1 (activations: plain Q8_1 rows, as Q8_K rows are
 * passed), Q2_K, Q3_K and IQ4_XS on every path, and on x86 of all the K-quants (replacing
 * the fills above there): quant-dot-rows-k*.c.  Each row's result is the path's single-row
 * vec_dot to the bit. */
CPU_HIDDEN void cpu_quant_rows_k_fill_generic(cpu_vec_dot_rows_table table);
CPU_HIDDEN void cpu_quant_rows_k_fill_avx2(cpu_vec_dot_rows_table table);
CPU_HIDDEN void cpu_quant_rows_k_fill_avx512vnni(cpu_vec_dot_rows_table table);

/* The multi-row kernel of a weight type on a path (lower paths filling in), or on the
 * path this CPU runs (as cpu_get_type_traits picks it); NULL where the type has none. */
CPU_HIDDEN cpu_vec_dot_rows_t cpu_vec_dot_rows_on_path(enum ggml_type type, enum cpu_quant_path path);
CPU_HIDDEN cpu_vec_dot_rows_t cpu_get_vec_dot_rows(enum ggml_type type);

/* The products of nw weight rows (row w at x + w * bx) with the single activation row of y
 * (y->nrows == 1): s[w], the bits of the multi-row kernel called row by row, in less time
 * (the call is paid once, and the rows' chains of latency overlap or their horizontal sums
 * are shared: the matrix-vector product of a decode step). */
typedef void (*cpu_vec_dot_wrows_t)(int n, const void *x, size_t bx, int nw,
                                    const struct cpu_q8_rows *y, float *s);

/* That kernel of a weight type on this CPU's path, NULL where it has none (then the
 * multi-row kernel, row by row): Q8_0 and Q4_0 (quant-match.h); the K-quants and IQ4_XS on
 * the x86 paths (their single-row dots row after row, called directly). */
CPU_HIDDEN cpu_vec_dot_wrows_t cpu_get_vec_dot_wrows(enum ggml_type type);
typedef cpu_vec_dot_wrows_t cpu_vec_dot_wrows_table[GGML_TYPE_COUNT];
CPU_HIDDEN void cpu_quant_wrows_fill_avx2(cpu_vec_dot_wrows_table table);
CPU_HIDDEN void cpu_quant_wrows_fill_avx512vnni(cpu_vec_dot_wrows_table table);

/* nblocks Q8_0 blocks split into the planes of struct cpu_q8_rows: values to qs, scales
 * to d, the sum of each block's values to sums. */
CPU_HIDDEN void cpu_q8_0_to_planes(const block_q8_0 *blocks, int64_t nblocks, int8_t *qs, float *d, int32_t *sums);

#endif /* GGMLC_CPU_QUANT_DOT_H */
