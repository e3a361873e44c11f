/*
 * matvec.h - streaming products of float weight rows with a few activation
 * columns (matrix-vector and small-batch products):
 *
 *     out[r * out_row_stride + c * out_col_stride] = sum_k w(r, k) * x[c * x_stride + k]
 *
 * for weight rows r < nw (F32, F16 or BF16, contiguous along k, row_stride
 * bytes apart) and activation columns c < nx <= CPU_MATVEC_MAX_COLS (f32,
 * contiguous along k).  The weights are read once, straight from where they
 * lie (no packing, no conversion pass): a small group of weight rows at a
 * time is multiplied with every column, in a register block of rows x
 * columns, so the product runs at the speed memory delivers the weights.
 * The GEMM's dot path (gemm.c) calls these for products with few columns;
 * each SIMD path has its own (matvec-generic.c, matvec-avx2.c,
 * matvec-avx512.c) and the path's struct cpu_gemm_kernel points at it.
 */
#ifndef GGMLC_CPU_MATVEC_H
#define GGMLC_CPU_MATVEC_H

#include <stddef.h>
#include <stdint.h>

#include "cpu-impl.h"

/* Most activation columns one call takes. */
#define CPU_MATVEC_MAX_COLS 16

/* Depth chunk of the kernels while more columns than one register block holds: the
 * chunk of every column (16 x 256 f32 = 16 KiB) and of a group of weight rows stay in
 * L1 while each register block of columns passes over them. */
#define CPU_MATVEC_KC 256

typedef void (*cpu_matvec_fn)(int64_t k, enum ggml_type type, const void *w, size_t w_row_stride, int64_t nw,
                              const float *x, int64_t x_stride, int nx, float *out, int64_t out_row_stride,
                              int64_t out_col_stride);

CPU_HIDDEN void cpu_matvec_generic(int64_t k, enum ggml_type type, const void *w, size_t w_row_stride, int64_t nw,
                                   const float *x, int64_t x_stride, int nx, float *out, int64_t out_row_stride,
                                   int64_t out_col_stride);
CPU_HIDDEN void cpu_matvec_avx2(int64_t k, enum ggml_type type, const void *w, size_t w_row_stride, int64_t nw,
                                const float *x, int64_t x_stride, int nx, float *out, int64_t out_row_stride,
                                int64_t out_col_stride);
CPU_HIDDEN void cpu_matvec_avx512(int64_t k, enum ggml_type type, const void *w, size_t w_row_stride, int64_t nw,
                                  const float *x, int64_t x_stride, int nx, float *out, int64_t out_row_stride,
                                  int64_t out_col_stride);

#endif /* GGMLC_CPU_MATVEC_H */
