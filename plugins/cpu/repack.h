/*
 * repack.h - the CPU_REPACK buffer type: Q4_0 weights stored with eight rows
 * interleaved, so that a product's kernel holds eight weight rows in the
 * eight 32-bit lanes of a register and needs no horizontal sums (ggml's CPU
 * "extra" buffer type of the same name does this for Q4_0 on AVX2 CPUs).
 *
 * Which tensors are packed: contiguous Q4_0 tensors (not views) whose row count
 * ne[1] is a multiple of 8 and ne[2] = ne[3] = 1, the weights ggml repacks and sums
 * block by block (cpu_qmatch_block_serial).  Other tensors in such a buffer keep
 * ggml's layout.  Group g of rows 8g..8g+7, block b (of nb = ne[0] / 32 per row),
 * takes the 144 bytes at (g * nb + b) * 144:
 *   bytes 0..15    the eight rows' f16 scales, row r at 2r;
 *   bytes 16..143  the nibbles: byte 16 + 32i + 4r + j is byte 4i + j of row r's
 *                  block (i, j < 4), whose low nibbles are values 4i..4i+3 and high
 *                  nibbles values 16 + 4i..16 + 4i + 3;
 * the same size as ggml's layout.  The buffer's get_tensor gives ggml's layout back,
 * set_tensor, memset_tensor and cpy_tensor take any byte range of it.
 *
 * Q4_K, IQ4_NL, MXFP4 (and with AVX-512, Q2_K) matrices of 8k rows (2-D, contiguous) keep ggml's layout in such a
 * buffer; what the buffer gives them is ggml's order for the matrices it repacks: block-serial
 * sums (cpu_qmatch_serial, quant-match.h) instead of the lanes of plain ones.
 *
 * Only MUL_MAT with a packed (or serial Q4_K) weight as src[0] and host F32 activations runs
 * on such a tensor; every other node that reads a tensor of this buffer type is unsupported
 * (cpu_repack_node_supported), so llama.cpp keeps such weights in the plain buffer.
 */
#ifndef GGMLC_CPU_REPACK_H
#define GGMLC_CPU_REPACK_H

#include "quant-dot.h"

#define CPU_REPACK_ROWS 8        /* weight rows interleaved */
#define CPU_REPACK_GROUP_BLOCK 144 /* bytes of one block of a group: 8 * sizeof(block_q4_0) */

/* Create the buffer type of device dev (at plugin init); NULL with an error on failure. */
CPU_HIDDEN ggml_backend_buffer_type_t cpu_repack_buft_create(ggml_backend_dev_t dev);
/* The buffer type, or NULL before cpu_repack_buft_create. */
CPU_HIDDEN ggml_backend_buffer_type_t cpu_repack_buft(void);
/* The NULL-terminated list llama.cpp gets from "ggml_backend_dev_get_extra_bufts". */
CPU_HIDDEN ggml_backend_buffer_type_t *cpu_repack_extra_bufts(ggml_backend_dev_t dev);

/* Whether t (a tensor or a view) lives in a CPU_REPACK buffer. */
CPU_HIDDEN bool cpu_repack_in_buffer(const struct ggml_tensor *t);
/* Whether t's bytes are in the packed layout (in such a buffer, not a view, packable). */
CPU_HIDDEN bool cpu_repack_is_packed(const struct ggml_tensor *t);
/* Whether t is a Q4_K, IQ4_NL, MXFP4 or (AVX-512) Q2_K matrix of 8k rows in such a buffer
 * (ggml's layout, block-serial sums). */
CPU_HIDDEN bool cpu_repack_is_serial(const struct ggml_tensor *t);
/* Whether the CPU backend runs node as far as CPU_REPACK is concerned: true when no source
 * is in such a buffer, or node is a MUL_MAT of a packed or serial src[0] and host F32 src[1]. */
CPU_HIDDEN bool cpu_repack_node_supported(const struct ggml_tensor *node);

/* The kernel of a group: s[r * s_stride + j] = (weight row j of the group) . y_r for
 * j < 8 and r < y->nrows, over n values, summed block by block as ggml's repacked Q4_0
 * GEMV and GEMM do: acc = fma(float(isum_b), dx_b * dy_b, acc).  y: Q8_0 planes with
 * their block sums. */
typedef void (*cpu_repack_kernel_t)(int n, const void *group, const struct cpu_q8_rows *y, float *s, size_t s_stride);
/* The kernel of a path (lower paths filling in), and of this CPU's path. */
CPU_HIDDEN cpu_repack_kernel_t cpu_repack_kernel_on_path(enum cpu_quant_path path);
CPU_HIDDEN cpu_repack_kernel_t cpu_repack_kernel(void);
/* The AVX2 and AVX-512 VNNI kernels (repack-x86.c, repack-vnni.c); NULL where the build has none. */
CPU_HIDDEN cpu_repack_kernel_t cpu_repack_kernel_avx2(void);
CPU_HIDDEN cpu_repack_kernel_t cpu_repack_kernel_vnni(void);

#endif /* GGMLC_CPU_REPACK_H */
