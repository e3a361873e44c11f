/*
 * gemm.h - the CPU plugin's dense matrix product with f32 accumulation.
 *
 *     dst[m][n] = sum_k w(n, k) * x(m, k)      (n < N, m < M, k < K)
 *
 * which is ggml's mul_mat (w = src0 rows, x = src1 rows, dst [N, M]) and, with
 * other strides, out_prod.  Operands are F32, F16 or BF16 with any strides;
 * they are converted to f32 while being copied into packed panels, so
 * transposed views cost nothing extra.  Where the path has a strided micro-kernel, f32
 * operands already laid out as it reads them are not copied at all (gemm.c's
 * read_in_place).  The output is split into a 2-D grid
 * of tiles, one per thread; inside a tile the product is cache blocked and
 * computed by a register-tiled micro-kernel of the SIMD path in use.
 */
#ifndef GGMLC_CPU_GEMM_H
#define GGMLC_CPU_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "matvec.h"
#include "simd.h"

/* One operand: element (row r, k) lies at data + r * row_stride + k * k_stride (bytes).
 * Quantized weights set dequant (their type's to_float): rows are then whole blocks,
 * dequantized a cache block at a time while packing, and k_stride is unused. */
struct cpu_gemm_operand {
    const void *data;
    enum ggml_type type; /* F32, F16 or BF16; any type with dequant */
    size_t row_stride;
    size_t k_stride;
    ggml_to_float_t dequant;
};

struct cpu_gemm_problem {
    int64_t n, m, k;
    struct cpu_gemm_operand w; /* n rows */
    struct cpu_gemm_operand x; /* m rows */
    float *dst;                /* dst[m * dst_stride / 4 + n] */
    size_t dst_stride;         /* bytes between rows m and m + 1 */
    bool dst_transposed;       /* internal: dst[n * dst_stride / 4 + m] instead (leave false) */
};

/* The kernels of one SIMD path (gemm-generic.c, gemm-avx2.c, gemm-avx512.c). */
struct cpu_gemm_kernel {
    const char *name;
    int nr, mr;         /* register tile: nr outputs along n (vector lanes) by mr along m */
    int64_t kc, mc, nc; /* cache blocks: depth, n-block (in L2), m-block (in L3) */
    /* c[i * ldc + j] (+)= sum_k wp[k * nr + j] * xp[k * mr + i] for the full nr x mr tile. */
    void (*micro)(int64_t kc, const float *wp, const float *xp, float *c, int64_t ldc, bool accumulate);
    /* Optional: the same for a w panel of only cols (< nr) columns; c's first cols columns of
     * each row are written, the rest of the tile may be left alone. */
    void (*micro_narrow)(int64_t kc, const float *wp, const float *xp, float *c, int64_t ldc, bool accumulate,
                         int cols);
    /* Optional: the same as micro for operands read where they lie, without packing:
     * c[i * ldc + j] (+)= sum_k wp[k * w_ks + j] * x[i][k * x_ks] for j < nr, i < mr.  A packed
     * panel is the case w_ks = nr (or x[i] = xp + i, x_ks = mr); f32 operands stored k-major
     * (w) or along k or k-major (x) are read in place, saving the copy that packing costs,
     * which for the small products of attention took as long as the products. */
    void (*micro_strided)(int64_t kc, const float *wp, int64_t w_ks, const float *const *x, int64_t x_ks, float *c,
                          int64_t ldc, bool accumulate);
    /* n contiguous values of type (F32, F16, BF16) to f32. */
    void (*to_f32)(enum ggml_type type, const void *src, float *dst, int64_t n);
    /* The streaming product of weight rows with up to CPU_MATVEC_MAX_COLS columns (matvec.h). */
    cpu_matvec_fn matvec;
    /* Optional fast packing of rows contiguous along k into dst[k * width + j]
     * (rows <= width, the rest zero). */
    void (*pack_rows)(enum ggml_type type, const char *base, size_t row_stride, int64_t rows, int64_t kc, int width,
                      float *dst);
    /* Optional fast packing of a k-major operand: for each k, rows (<= width) contiguous
     * values k_stride bytes apart, into dst[k * width + j] (the rest zero). */
    void (*pack_cols)(enum ggml_type type, const char *base, size_t k_stride, int64_t rows, int64_t kc, int width,
                      float *dst);
    /* Optional vectorized dequantizer of a quantized type (NULL: none for that type). */
    ggml_to_float_t (*fast_dequant)(enum ggml_type type);
};

/* The kernels of the path in use (cpu_simd_level()). */
CPU_HIDDEN const struct cpu_gemm_kernel *cpu_gemm_kernel(void);
/* The kernels of a given path, or NULL when this build/CPU lacks it (for tests). */
CPU_HIDDEN const struct cpu_gemm_kernel *cpu_gemm_kernel_for(enum cpu_simd_level level);

/* Scratch bytes one thread needs for products of depth k with m rows of x. */
CPU_HIDDEN size_t cpu_gemm_thread_work(const struct cpu_gemm_kernel *kern, int64_t m, int64_t k);

/* Compute part ith of nth of the product (a tile of the output grid) with kernels
 * kern; work holds cpu_gemm_thread_work() bytes private to this thread. */
CPU_HIDDEN void cpu_gemm_compute(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_problem *p, int ith,
                                 int nth, void *work);

/* Team mode, for one large product: the threads of a node pack each block of
 * x together into `shared` (cpu_gemm_team_shared() bytes for products of up to
 * n x m of depth k, the same pointer for all), then take n-chunks of w from a
 * shared counter, so a thread slowed down by the machine does less work instead
 * of making the others wait.  Products of a few MB pack both operands whole, once.
 * call gives ith, nth and the barrier; work is private as for cpu_gemm_compute. */
CPU_HIDDEN bool cpu_gemm_use_team(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_problem *p, int nth);
CPU_HIDDEN size_t cpu_gemm_team_shared(const struct cpu_gemm_kernel *kern, int64_t n, int64_t m, int64_t k);
CPU_HIDDEN void cpu_gemm_compute_team(const struct cpu_gemm_kernel *kern, const struct cpu_gemm_problem *p,
                                      const struct ggmlc_op_call *call, void *shared, void *work);

/* True when weights of a quantized type can go through the GEMM (dequantized while
 * packing): its blocks tile the cache blocks of k. */
CPU_HIDDEN bool cpu_gemm_dequant_ok(const struct cpu_gemm_kernel *kern, enum ggml_type type);
/* The dequantizer the GEMM uses for a type: the path's vectorized one, else core's to_float. */
CPU_HIDDEN ggml_to_float_t cpu_gemm_dequant_fn(const struct cpu_gemm_kernel *kern, enum ggml_type type);

/* True for the operand types cpu_gemm_compute takes. */
static inline bool cpu_gemm_type_ok(enum ggml_type type) {
    return type == GGML_TYPE_F32 || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16;
}

#endif /* GGMLC_CPU_GEMM_H */
