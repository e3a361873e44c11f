/*
 * quant-match.h - Q8_0 and Q4_0 products summed in the order ggml's x86 CPU
 * backend (AVX2 or better) sums them, so that a quantized model's logits are
 * bit-identical to ggml's on every path (one activation row, several, many).
 *
 * Every block b contributes an exact integer sum times the float product of
 * the two block scales, d_b = dx_b * dy_b; what differs is how those terms
 * are added up.  ggml uses two orders:
 *
 *  - eight lanes (its vec_dot and the llamafile tinyBLAS GEMM, for Q8_0 and
 *    for Q4_0 it did not repack): lane k (0..7) holds the integer sum of the
 *    block's values 4k..4k+3; acc_k = fma(d_b, lane_k, acc_k) over the
 *    blocks; the result is ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5)
 *    + (acc3 + acc7)).
 *  - block-serial (its repacked Q4_0 "8x8" GEMV and GEMM, for Q4_0 weights
 *    in its CPU_REPACK buffer): acc = fma(d_b, isum_b, acc) over the blocks,
 *    isum_b the integer sum of the whole block.
 *
 * Which order ggml takes depends on the weights' buffer, not their shape:
 * llama.cpp repacks 2-D Q4_0 matrices of 8k rows only where it picks the
 * CPU_REPACK buffer (not, for one, when a GPU is present and the weights stay
 * in mapped host memory).  ggmlc's CPU_REPACK buffer (repack.c) packs the same
 * matrices and stacks of experts (MUL_MAT_ID) and sums them block by block;
 * every matrix and stack elsewhere is summed in eight lanes, as ggml sums it
 * there.
 *
 * The activations are Q8_0 rows as ggml's x86 quantize_row_q8_0 makes them
 * (type-traits.c), given as the planes of struct cpu_q8_rows (quant-dot.h).
 *
 * The K-quants and IQ4_XS follow ggml's x86 order too (cpu_qmatch_k_type): their dots keep
 * its eight float lanes per row (the portable model in quant-dot.c, the SIMD kernels in
 * quant-dot-x86.h and quant-dot-rows-k-x86.h); Q4_K, Q2_K, IQ4_NL and MXFP4 weights of 8k
 * rows in a CPU_REPACK buffer are packed and summed block by block as ggml sums those it
 * repacks (repack.h; the block models here: cpu_qmatch_serial_block32,
 * cpu_qmatch_serial_superblock); those in a plain buffer sum as ggml's vec_dot and tinyBLAS
 * (cpu_qmatch_vec2_rows).
 */
#ifndef GGMLC_CPU_QUANT_MATCH_H
#define GGMLC_CPU_QUANT_MATCH_H

#include "quant-dot.h"

/* Whether products of this weight type follow ggml's order here (Q8_0 and Q4_0). */
CPU_HIDDEN bool cpu_qmatch_type(enum ggml_type type);

/* Whether a K-quant's products follow ggml's order here (Q2_K to Q6_K and IQ4_XS: its AVX2
 * vec_dot's eight lanes, quant-dot.c, on every path and at every size: never dequantized
 * into the GEMM, as ggml never does on x86). */
CPU_HIDDEN bool cpu_qmatch_k_type(enum ggml_type type);

/* The eight-lane kernels of a path: single dot products with ggml's vec_dot signature
 * (x a row of Q8_0 or Q4_0 blocks, y of Q8_0 blocks) and multi-row kernels (one weight
 * row against up to CPU_QUANT_MAX_ROWS activation rows).  type-traits.c installs them as
 * the vec_dot and multi-row kernels of Q8_0 and Q4_0 on every path; these fills also set
 * IQ4_NL's and MXFP4's in ggml's plain orders (below). */
CPU_HIDDEN void cpu_qmatch_fill_generic(cpu_vec_dot_table dots, cpu_vec_dot_rows_table rows);
CPU_HIDDEN void cpu_qmatch_fill_avx2(cpu_vec_dot_table dots, cpu_vec_dot_rows_table rows);
CPU_HIDDEN void cpu_qmatch_fill_avx512vnni(cpu_vec_dot_table dots, cpu_vec_dot_rows_table rows);

/* How many of a plane's ne11 activation rows ggml's repacked Q4_K and Q2_K take through their
 * GEMM (steps of 64 and 128 values; the rest through the GEMV). */
static inline int64_t cpu_qmatch_serial_gemm_rows(int64_t ne11) { return ne11 - ne11 % 4; }
/* ggml's x86 order for IQ4_NL and MXFP4 in a plain buffer.  Its vec_dot (every MXFP4
 * product, IQ4_NL's of one column and its MUL_MAT_ID) sums block pairs: the even blocks into
 * one accumulator of eight lanes, acc_k = fma(dx * dy, lane_k, acc_k), the odd ones into a
 * second, the lanes of their sum added as in the eight-lane order, and an odd last block
 * with one scalar fma(dx * dy, isum, sum).  IQ4_NL's mul_mat of two or more columns goes
 * through llamafile's tinyBLAS: the eight-lane order with the table's levels.  The vec_dot
 * order's multi-row kernel on a path (AVX2 and VNNI: quant-match-avx2.c), and on this CPU's;
 * type-traits.c installs it as MXFP4's multi-row kernel and both types' vec_dot. */
CPU_HIDDEN cpu_vec_dot_rows_t cpu_qmatch_vec2_rows_on_path(enum ggml_type type,
                                                           enum cpu_quant_path path);
CPU_HIDDEN cpu_vec_dot_rows_t cpu_qmatch_vec2_rows(enum ggml_type type);
CPU_HIDDEN cpu_vec_dot_rows_t cpu_qmatch_vec2_rows_avx2(enum ggml_type type);
CPU_HIDDEN cpu_vec_dot_rows_t cpu_qmatch_vec2_rows_vnni(enum ggml_type type);

/* The portable model of one block of the block-serial orders, for kernels that read blocks
 * elsewhere (repack.c): a 32-value block x of Q4_0, IQ4_NL or MXFP4 against the Q8_0 values qy
 * of scale dy gives fma(isum, dx * dy, acc); a Q4_K or Q2_K super-block x against yb adds its
 * steps of `step` values into *acc and *accm (the row's result: acc - accm). */
CPU_HIDDEN float cpu_qmatch_serial_block32(enum ggml_type type, const void *x, const int8_t *qy,
                                           float dy, float acc);
CPU_HIDDEN void cpu_qmatch_serial_superblock(enum ggml_type type, const void *x,
                                             const block_q8_K *yb, int step, float *acc,
                                             float *accm);

/* Whether ggml sums a type block-serially where it repacks it (Q4_0, Q4_K, IQ4_NL, MXFP4;
 * Q2_K where the CPU has AVX-512, as a native ggml build repacks it only there): the types
 * CPU_REPACK packs (repack.h). */
CPU_HIDDEN bool cpu_qmatch_serial_type(enum ggml_type type);

/* The eight-lane cpu_vec_dot_wrows_t kernel (quant-dot.h) of a weight type on a path, and
 * on this CPU's path; NULL where the path has none (the portable path; types other than
 * Q8_0 and Q4_0). */
CPU_HIDDEN cpu_vec_dot_wrows_t cpu_qmatch_wrows_on_path(enum ggml_type type,
                                                        enum cpu_quant_path path);
CPU_HIDDEN cpu_vec_dot_wrows_t cpu_qmatch_wrows(enum ggml_type type);
CPU_HIDDEN cpu_vec_dot_wrows_t cpu_qmatch_wrows_avx2(enum ggml_type type);
CPU_HIDDEN cpu_vec_dot_wrows_t cpu_qmatch_wrows_vnni(enum ggml_type type);

/* ------------------------------------------------------- column kernels
 *
 * A group of activation rows interleaved so that one 32-bit lane of a vector register
 * holds one row ("column" of the product): four values of every row at once, their scales
 * and lane sums likewise.  A group is CPU_QUANT_MAX_ROWS (8) rows wide, a 256-bit register, or
 * CPU_QMATCH_WIDE (16), a 512-bit one.  A weight block's four values broadcast to all
 * lanes then meet the group's values in one vpdpbusd, and each block's float scaling is
 * one vector multiply and one FMA for all its rows, without horizontal sums; every row
 * keeps its own accumulators, so its order of additions is the one-row order.  Rows of a
 * group past its last row are zero. */
#define CPU_QMATCH_WIDE 16
struct cpu_q8_cols {
    int width;           /* rows in the group's layout: CPU_QUANT_MAX_ROWS or CPU_QMATCH_WIDE */
    int8_t *qs;          /* value 4k + j (j < 4) of block b of row c at qs[(8 * b + k) * 4 * width + 4 * c + j] */
    int32_t *lane_corr;  /* -128 * the sum of those four values at lane_corr[(8 * b + k) * width + c] */
    float *d;            /* the scale of block b of row c at d[width * b + c] */
};

/* Bytes of one group's interleaved rows of nblocks blocks each, width rows wide. */
CPU_HIDDEN size_t cpu_q8_cols_size(int64_t nblocks, int width);
/* The group laid out in the area at mem (cpu_q8_cols_size bytes, 64-aligned). */
CPU_HIDDEN struct cpu_q8_cols cpu_q8_cols_at(void *mem, int64_t nblocks, int width);
/* Row c of a group from nblocks Q8_0 blocks, or zeros where blocks is NULL. */
CPU_HIDDEN void cpu_q8_0_to_cols(const block_q8_0 *blocks, int64_t nblocks, int c, const struct cpu_q8_cols *cols);

/* A column kernel: nw (1 .. CPU_QMATCH_COLS_WROWS, wide: CPU_QMATCH_WIDE_WROWS) weight rows, row j at x + j * x_stride
 * bytes, against the group y->cols (y->nrows rows of it; y->d and y->sums unused, and y->qs
 * too but by the AVX2 eight-lane kernels, which read the rows' values from there):
 * s[r * s_stride + j] = x_j . y_r.  Each result has the bits of the multi-row kernels.
 * The kernels of cpu_qmatch_cols read groups CPU_QUANT_MAX_ROWS wide, those of
 * cpu_qmatch_cols_wide groups CPU_QMATCH_WIDE wide. */
#define CPU_QMATCH_COLS_WROWS 2 /* 4 was twice as slow, streaming 4 rows */
#define CPU_QMATCH_WIDE_WROWS 2 /* the same for the wide kernels */
typedef void (*cpu_vec_dot_cols_t)(int n, const void *x, size_t x_stride, int nw, const struct cpu_q8_rows *y, float *s,
                                   size_t s_stride);

/* The column kernel of this CPU (or of a path) for Q8_0 or Q4_0 (eight-lane order); NULL
 * where there is none (AVX-512 VNNI and AVX2 paths only) or for other types. */
CPU_HIDDEN cpu_vec_dot_cols_t cpu_qmatch_cols(enum ggml_type type);
CPU_HIDDEN cpu_vec_dot_cols_t cpu_qmatch_cols_on_path(enum ggml_type type, enum cpu_quant_path path);
/* The same for groups CPU_QMATCH_WIDE wide (many activation rows): Q8_0 only. */
CPU_HIDDEN cpu_vec_dot_cols_t cpu_qmatch_cols_wide(enum ggml_type type);
CPU_HIDDEN cpu_vec_dot_cols_t cpu_qmatch_cols_wide_on_path(enum ggml_type type, enum cpu_quant_path path);
/* The AVX-512 VNNI kernels (quant-match-cols.c) and the AVX2 ones (quant-match-cols-avx2.c,
 * no wide kernels); NULL where the build has none. */
CPU_HIDDEN cpu_vec_dot_cols_t cpu_qmatch_cols_vnni(enum ggml_type type);
CPU_HIDDEN cpu_vec_dot_cols_t cpu_qmatch_cols_avx2(enum ggml_type type);
CPU_HIDDEN cpu_vec_dot_cols_t cpu_qmatch_cols_wide_vnni(enum ggml_type type);

#endif /* GGMLC_CPU_QUANT_MATCH_H */
