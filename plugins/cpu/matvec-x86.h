/*
 * matvec-x86.h - the loops of the x86 streaming mat-vec kernels (see
 * matvec.h), shared by matvec-avx2.c and matvec-avx512.c: each includes it
 * under its own target pragma after defining
 *
 *   mv_vec, LANES            the vector type and its f32 lanes
 *   ROWS, COLS               the register block: weight rows by columns
 *   mv_zero(), mv_add(a, b), mv_hsum(v)
 *   mv_load_w(type, p, left) LANES weight values of type at p as f32, or the first
 *                            `left` of them (the other lanes zero) when left < LANES
 *   mv_load_x(p, left)       the same for f32 activations
 *   mv_store(p, v)           LANES f32 values to p, aligned to the vector
 *   MATVEC_NAME              the name of the kernel function to define
 *
 * A register block is ROWS weight rows by up to COLS columns: per step of
 * LANES depth values, ROWS + C loads feed ROWS x C fused multiply-adds into
 * independent accumulators (enough of them to hide the FMA latency even for
 * one column).  Up to COLS columns take one pass over the weight rows; more
 * pass in turn over each depth chunk of the rows (which stays in L1).  Every
 * weight element is loaded from memory once.  The first block of columns
 * prefetches each row CPU_MATVEC_KC values ahead: a few rows streamed at
 * once leave the hardware prefetchers short of requests in flight (4096 x
 * 14336 weights, one column, single-threaded, the two builds alternating on
 * a loaded machine, best of 7, in ms without / with: f32 33.9 / 28.5,
 * f16 20.1 / 11.4, bf16 21.9 / 14.9; and in the opposite order 50.6 / 47.2,
 * 34.4 / 15.0, 24.7 / 20.3).
 */
#ifndef GGMLC_CPU_MATVEC_X86_H
#define GGMLC_CPU_MATVEC_X86_H

#include <immintrin.h>

#include "matvec.h"

#define MV_INLINE inline __attribute__((always_inline))
/* How far ahead (bytes) the one-column kernel prefetches its row: 4096 x 14336 weights, 2
 * threads, AVX2 dev VM, medians of 5 alternating runs, ms without / with 1024: f16 7.10 /
 * 6.49, bf16 7.18 / 5.73, f32 12.16 / 11.87 (512: no better; 2048, 4096: f16 worse). */
#define MV_ROW_PREFETCH 1024

/* Bytes per weight value (F32, or F16 / BF16): a constant once the type is (ggml_type_size is
 * a call). */
static MV_INLINE size_t mv_elem_size(const enum ggml_type type) {
    return type == GGML_TYPE_F32 ? 4 : 2;
}

/* One step of LANES (at the tail, `left` fewer) depth values of a register block. */
static MV_INLINE void mv_step(const int R, const int C, const enum ggml_type type, const char *w, size_t w_stride,
                              const float *x, int64_t x_stride, int64_t j, int64_t left, const bool prefetch,
                              mv_vec acc[ROWS][COLS]) {
    const size_t es = mv_elem_size(type);
    mv_vec wv[ROWS];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        wv[r] = mv_load_w(type, w + r * w_stride + j * es, left);
        if (prefetch) _mm_prefetch(w + r * w_stride + (j + CPU_MATVEC_KC) * es, _MM_HINT_T0);
    }
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) {
        const mv_vec xv = mv_load_x(x + c * x_stride + j, left);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) acc[r][c] = mv_fmadd(wv[r], xv, acc[r][c]);
    }
}

/* sum[r][c0 + c] += the products of rows r < R with columns c0 + c (c < C) over depth [k0, k1). */
static MV_INLINE void mv_block(const int R, const int C, const enum ggml_type type, const char *w, size_t w_stride,
                               const float *x, int64_t x_stride, int64_t k0, int64_t k1,
                               mv_vec sum[ROWS][CPU_MATVEC_MAX_COLS], int c0, const bool prefetch) {
    mv_vec acc[ROWS][COLS];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) acc[r][c] = mv_zero();
    }
    const float *xc = x + c0 * x_stride;
    int64_t j = k0;
    for (; j + LANES <= k1; j += LANES) mv_step(R, C, type, w, w_stride, xc, x_stride, j, LANES, prefetch, acc);
    if (j < k1) mv_step(R, C, type, w, w_stride, xc, x_stride, j, k1 - j, false, acc);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) sum[r][c0 + c] = mv_add(sum[r][c0 + c], acc[r][c]);
    }
}

/* The block of columns c0 .. c0 + C - 1, C = 1 .. COLS (COLS <= 4), over depth [k0, k1) of
 * rows wp (of type t, ws bytes apart) and columns xp. */
#define MV_BLOCK_CASES_AT(R, t, wp, ws, xp, k0, k1, prefetch)                               \
    switch (nx - c0 < COLS ? nx - c0 : COLS) {                                              \
    case 1: mv_block(R, 1, t, wp, ws, xp, x_stride, k0, k1, sum, c0, prefetch); break;      \
    case 2:                                                                                 \
        mv_block(R, 2 <= COLS ? 2 : 1, t, wp, ws, xp, x_stride, k0, k1, sum, c0, prefetch); \
        break;                                                                              \
    case 3:                                                                                 \
        mv_block(R, 3 <= COLS ? 3 : 1, t, wp, ws, xp, x_stride, k0, k1, sum, c0, prefetch); \
        break;                                                                              \
    default: mv_block(R, COLS, t, wp, ws, xp, x_stride, k0, k1, sum, c0, prefetch); break;  \
    }

/* Depth [k0, k1) of R rows of type as f32 into buf (rows CPU_MATVEC_KC apart), prefetching
 * each row's next chunk. */
static MV_INLINE void mv_convert_chunk(const int R, const enum ggml_type type, const char *w,
                                       size_t w_stride, int64_t k0, int64_t k1,
                                       float buf[][CPU_MATVEC_KC]) {
    const size_t es = mv_elem_size(type);
    enum { STEP = 64 / 2 }; /* values of one cache line of F16 / BF16 */
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        const char *row = w + r * w_stride;
        int64_t j = k0;
        for (; j + STEP <= k1; j += STEP) {
            _mm_prefetch(row + (j + CPU_MATVEC_KC) * es, _MM_HINT_T0);
#pragma GCC unroll 4
            for (int i = 0; i < STEP; i += LANES)
                mv_store(buf[r] + (j - k0) + i, mv_load_w(type, row + (j + i) * es, LANES));
        }
        for (; j < k1; j += LANES)
            mv_store(buf[r] + (j - k0),
                     mv_load_w(type, row + j * es, k1 - j < LANES ? k1 - j : LANES));
    }
}

/* R weight rows (R = ROWS or 1) times the nx columns.  With more columns than one register
 * block takes, the rows pass in depth chunks that stay in L1 while each block of columns
 * walks them; F16 and BF16 chunks are converted to f32 once for all those passes (converting
 * them in every pass made the conversions, not the multiply-adds, the bound: 4096 x 14336
 * f16, 1 thread, AVX2, 8 columns in 51 ms against 14 for 2). */
static MV_INLINE void mv_row_group(const int R, const enum ggml_type type, const char *w, size_t w_stride, int64_t k,
                                   const float *x, int64_t x_stride, int nx, float *out, int64_t out_row_stride,
                                   int64_t out_col_stride) {
    mv_vec sum[ROWS][CPU_MATVEC_MAX_COLS];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < nx; c++) sum[r][c] = mv_zero();
    const int64_t kc = nx <= COLS ? k : CPU_MATVEC_KC;
    const bool convert = type != GGML_TYPE_F32 && nx > COLS;
    _Alignas(64) float wf[ROWS][CPU_MATVEC_KC];
    for (int64_t k0 = 0; k0 < k; k0 += kc) {
        const int64_t k1 = k - k0 < kc ? k : k0 + kc;
        if (convert) {
            mv_convert_chunk(R, type, w, w_stride, k0, k1, wf);
            for (int c0 = 0; c0 < nx; c0 += COLS)
                MV_BLOCK_CASES_AT(R, GGML_TYPE_F32, (const char *)wf, sizeof wf[0], x + k0, 0,
                                  k1 - k0, false)
            continue;
        }
        for (int c0 = 0; c0 < nx; c0 += COLS)
            MV_BLOCK_CASES_AT(R, type, w, w_stride, x, k0, k1, c0 == 0)
    }
    for (int r = 0; r < R; r++)
        for (int c = 0; c < nx; c++) out[r * out_row_stride + c * out_col_stride] = mv_hsum(sum[r][c]);
}

/* One weight row times one column: four independent accumulators, 4 * LANES depth values a
 * step.  With one column there is nothing to share between rows, and one row read from start
 * to end is a single sequential stream that the hardware prefetchers follow from its first
 * lines, where the 4-row block reads four short streams at once (rows of 1 KiB: four streams
 * of 16 lines each).  Measured on this kernel, f32, one thread, one column, a loaded 2-core
 * Zen 4: 16 x 688 rows of 256 in 0.14 ms against 0.33 ms; 4 x 2048 rows of 768 in 0.73
 * against 2.27 ms; 4096 rows of 4096 in 4.1 against 7.0 ms.  The stream runs on through the
 * next rows, and a software prefetch MV_ROW_PREFETCH ahead keeps more lines in flight than
 * the hardware's on the AVX2 dev VM. */
static MV_INLINE float mv_row_dot(const enum ggml_type type, const char *w, int64_t k, const float *x) {
    const size_t es = mv_elem_size(type);
    mv_vec a0 = mv_zero(), a1 = mv_zero(), a2 = mv_zero(), a3 = mv_zero();
    int64_t j = 0;
    for (; j + 4 * LANES <= k; j += 4 * LANES) {
        for (size_t line = 0; line < 4 * LANES * es; line += 64)
            _mm_prefetch(w + j * es + line + MV_ROW_PREFETCH, _MM_HINT_T0);
        a0 = mv_fmadd(mv_load_w(type, w + j * es, LANES), mv_load_x(x + j, LANES), a0);
        a1 = mv_fmadd(mv_load_w(type, w + (j + LANES) * es, LANES), mv_load_x(x + j + LANES, LANES), a1);
        a2 = mv_fmadd(mv_load_w(type, w + (j + 2 * LANES) * es, LANES), mv_load_x(x + j + 2 * LANES, LANES), a2);
        a3 = mv_fmadd(mv_load_w(type, w + (j + 3 * LANES) * es, LANES), mv_load_x(x + j + 3 * LANES, LANES), a3);
    }
    for (; j < k; j += LANES) {
        const int64_t left = k - j < LANES ? k - j : LANES;
        a0 = mv_fmadd(mv_load_w(type, w + j * es, left), mv_load_x(x + j, left), a0);
    }
    return mv_hsum(mv_add(mv_add(a0, a1), mv_add(a2, a3)));
}

/* All nw rows, ROWS at a time (one at a time for one column), with the weight type fixed at
 * compile time. */
static MV_INLINE void mv_rows_of_type(const enum ggml_type type, int64_t k, const char *w, size_t w_stride, int64_t nw,
                                      const float *x, int64_t x_stride, int nx, float *out, int64_t out_row_stride,
                                      int64_t out_col_stride) {
    if (nx == 1) {
        for (int64_t r = 0; r < nw; r++) out[r * out_row_stride] = mv_row_dot(type, w + r * w_stride, k, x);
        return;
    }
    int64_t r = 0;
    for (; r + ROWS <= nw; r += ROWS)
        mv_row_group(ROWS, type, w + r * w_stride, w_stride, k, x, x_stride, nx, out + r * out_row_stride,
                     out_row_stride, out_col_stride);
    for (; r < nw; r++)
        mv_row_group(1, type, w + r * w_stride, w_stride, k, x, x_stride, nx, out + r * out_row_stride, out_row_stride,
                     out_col_stride);
}

#define MV_OF_TYPE(name, type)                                                                                        \
    static void name(int64_t k, const char *w, size_t w_stride, int64_t nw, const float *x, int64_t x_stride, int nx, \
                     float *out, int64_t out_row_stride, int64_t out_col_stride) {                                    \
        mv_rows_of_type(type, k, w, w_stride, nw, x, x_stride, nx, out, out_row_stride, out_col_stride);              \
    }
MV_OF_TYPE(mv_f32, GGML_TYPE_F32)
MV_OF_TYPE(mv_f16, GGML_TYPE_F16)
MV_OF_TYPE(mv_bf16, GGML_TYPE_BF16)

void MATVEC_NAME(int64_t k, enum ggml_type type, const void *w, size_t w_row_stride, int64_t nw, const float *x,
                 int64_t x_stride, int nx, float *out, int64_t out_row_stride, int64_t out_col_stride) {
    switch (type) {
    case GGML_TYPE_F16: mv_f16(k, w, w_row_stride, nw, x, x_stride, nx, out, out_row_stride, out_col_stride); break;
    case GGML_TYPE_BF16: mv_bf16(k, w, w_row_stride, nw, x, x_stride, nx, out, out_row_stride, out_col_stride); break;
    default: mv_f32(k, w, w_row_stride, nw, x, x_stride, nx, out, out_row_stride, out_col_stride); break;
    }
}

#endif /* GGMLC_CPU_MATVEC_X86_H */
