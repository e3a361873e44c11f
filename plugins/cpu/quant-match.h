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
 *  - block-serial (its repacked Q4_0 "8x8" GEMV and GEMM, which llama.cpp
 *    uses for 2-D Q4_0 weights whose row count is a multiple of 8):
 *    acc = fma(d_b, isum_b, acc) over the blocks, isum_b the integer sum of
 *    the whole block.
 *
 * The activations are Q8_0 rows as ggml's x86 quantize_row_q8_0 makes them
 * (type-traits.c), given as the planes of struct cpu_q8_rows (quant-dot.h).
 */
#ifndef GGMLC_CPU_QUANT_MATCH_H
#define GGMLC_CPU_QUANT_MATCH_H

#include "quant-dot.h"

/* Whether products of this weight type follow ggml's order here (Q8_0 and Q4_0). */
CPU_HIDDEN bool cpu_qmatch_type(enum ggml_type type);

/* Whether a product with weights w takes the block-serial order: Q4_0 whose row count is
 * a multiple of 8, a 2-D matrix of MUL_MAT or (experts) a 3-D stack of MUL_MAT_ID, as ggml
 * repacks them; else the eight-lane order. */
CPU_HIDDEN bool cpu_qmatch_block_serial(const struct ggml_tensor *w, bool experts);

/* The eight-lane kernels of a path: single dot products with ggml's vec_dot signature
 * (x a row of Q8_0 or Q4_0 blocks, y of Q8_0 blocks) and multi-row kernels (one weight
 * row against up to CPU_QUANT_MAX_ROWS activation rows).  type-traits.c installs them as
 * the vec_dot and multi-row kernels of Q8_0 and Q4_0 on every path. */
CPU_HIDDEN void cpu_qmatch_fill_generic(cpu_vec_dot_table dots, cpu_vec_dot_rows_table rows);
CPU_HIDDEN void cpu_qmatch_fill_avx2(cpu_vec_dot_table dots, cpu_vec_dot_rows_table rows);
CPU_HIDDEN void cpu_qmatch_fill_avx512vnni(cpu_vec_dot_table dots, cpu_vec_dot_rows_table rows);

/* The block-serial multi-row kernel of Q4_0 on a path (the AVX-512 VNNI tile kernel of
 * quant-dot.h sums in this order too, 16 weight rows at once), and on this CPU's path.
 * The AVX2 and VNNI kernels read the activations' block sums (y->sums). */
CPU_HIDDEN cpu_vec_dot_rows_t cpu_qmatch_serial_q4_0_on_path(enum cpu_quant_path path);
CPU_HIDDEN cpu_vec_dot_rows_t cpu_qmatch_serial_q4_0(void);

/* The AVX2 and AVX-512 VNNI kernels (quant-match-avx2.c, -vnni.c); NULL where the build has none. */
CPU_HIDDEN cpu_vec_dot_rows_t cpu_qmatch_serial_q4_0_avx2(void);
CPU_HIDDEN cpu_vec_dot_rows_t cpu_qmatch_serial_q4_0_vnni(void);

#endif /* GGMLC_CPU_QUANT_MATCH_H */
