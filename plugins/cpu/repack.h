/*
 * repack.h - the CPU_REPACK buffer type: weights stored with eight rows
 * interleaved, so that a product's kernel holds eight weight rows in the
 * eight 32-bit lanes of a register and needs no horizontal sums (ggml's CPU
 * "extra" buffer type of the same name repacks the same types on x86 CPUs).
 *
 * Which tensors are packed: contiguous Q4_0, IQ4_NL, MXFP4, Q4_K and (on CPUs with
 * AVX-512, as ggml repacks it only in builds for them) Q2_K tensors (not views) whose
 * row count ne[1] is a multiple of 8 and ne[3] = 1 (matrices, and stacks of experts
 * along ne[2]), the weights ggml repacks and sums block by block (quant-match.h).  Other tensors in such a buffer keep
 * ggml's layout.  Group g of rows 8g..8g+7, block b (of nb per row), takes the
 * 8 * B bytes at (g * nb + b) * 8 * B, B the type's block size.  Each field of
 * ggml's block (at byte `at` of it) is stored for the eight rows together, in
 * units: byte k of unit u of row r's field lies at 8 * at + 8 * unit * u + unit * r
 * + k.  The units:
 *   Q4_0, IQ4_NL  d (f16, unit 2) at 0; qs (unit 4) at 2: bytes 0..15 the
 *                 scales, byte 16 + 32i + 4r + j byte 4i + j of row r's qs,
 *                 whose low nibbles are values 4i..4i+3 and high nibbles
 *                 16 + 4i..16 + 4i + 3;
 *   MXFP4         e (unit 1) at 0; qs (unit 4) at 1;
 *   Q4_K          d, dmin (unit 2) at 0, 2; scales (unit 4) at 4; qs (unit 4) at 16;
 *   Q2_K          scales (unit 4) at 0; qs (unit 4) at 16; d, dmin (unit 2) at 80, 82:
 *                 a register of 32 bytes holds one word of every row.
 * The same size as ggml's layout.  The buffer's get_tensor gives ggml's layout back,
 * set_tensor, memset_tensor and cpy_tensor take any byte range of it.
 *
 * Only MUL_MAT with a packed matrix as src[0] and MUL_MAT_ID with a packed stack of
 * experts, with host F32 activations, run on such a tensor; every other node that reads a tensor of this buffer type is
 * unsupported (cpu_repack_node_supported), so llama.cpp keeps such weights in the plain
 * buffer.
 */
#ifndef GGMLC_CPU_REPACK_H
#define GGMLC_CPU_REPACK_H

#include "quant-dot.h"

#define CPU_REPACK_ROWS 8 /* weight rows interleaved */

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
/* Whether the CPU backend runs node as far as CPU_REPACK is concerned: true when no source
 * is in such a buffer, or node is a MUL_MAT of a packed src[0] and host F32 src[1]. */
CPU_HIDDEN bool cpu_repack_node_supported(const struct ggml_tensor *node);

/* Bytes of a group's block (eight blocks of type, interleaved); 0 for types not packed. */
CPU_HIDDEN size_t cpu_repack_group_block(enum ggml_type type);

/* The kernel of a group: s[r * s_stride + j] = (weight row j of the group) . y_r for
 * j < 8 and r < y->nrows, over n values, summed as ggml's repacked kernels sum the type
 * (quant-match.h): block by block, acc = fma(float(isum_b), dx_b * dy_b, acc), for Q4_0,
 * IQ4_NL and MXFP4 against Q8_0 planes with their block sums; Q4_K and Q2_K against Q8_K
 * rows in ggml's GEMV order (gemm false: a step per super-block) or its GEMM's (64 values a
 * step for Q4_K, 128 for Q2_K). */
typedef void (*cpu_repack_kernel_t)(int n, const void *group, const struct cpu_q8_rows *y, float *s, size_t s_stride);
/* The kernel of a type on a path (lower paths filling in), and on this CPU's path. */
CPU_HIDDEN cpu_repack_kernel_t cpu_repack_kernel_on_path(enum ggml_type type, bool gemm,
                                                         enum cpu_quant_path path);
CPU_HIDDEN cpu_repack_kernel_t cpu_repack_kernel(enum ggml_type type, bool gemm);
/* The AVX2 and AVX-512 VNNI kernels (repack-x86.c, repack-vnni.c); NULL where the build has none. */
CPU_HIDDEN cpu_repack_kernel_t cpu_repack_kernel_avx2(enum ggml_type type, bool gemm);
CPU_HIDDEN cpu_repack_kernel_t cpu_repack_kernel_vnni(enum ggml_type type, bool gemm);

#endif /* GGMLC_CPU_REPACK_H */
