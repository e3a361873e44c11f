/*
 * ops-ew.h - helpers shared by the element-wise kernel files (ops-binary.c,
 * ops-unary.c, ops-reduce.c, ops-copy.c, ops-custom.c): element
 * conversion to and from float, row addressing, and how many tasks a node
 * is worth.
 */
#ifndef GGMLC_CPU_OPS_EW_H
#define GGMLC_CPU_OPS_EW_H

#include <math.h>
#include <string.h>

#include "cpu-impl.h"
#include "ggmlc-blocks.h"

/* The hot row loops are compiled for three x86-64 levels (baseline SSE2, AVX2 + FMA,
 * AVX-512) and the dynamic loader picks one by the CPU's cpuid (an ifunc), so one
 * build runs on any x86-64 and never executes an instruction the CPU lacks.  ISO C
 * mode keeps -ffp-contract=off, so every level computes bit-identical results. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define EW_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define EW_CLONES
#endif

/* Rows of mixed-type operands are converted through float buffers of this many values. */
#define EW_CHUNK 512

/* Integers from float: toward zero, saturating, NaN -> 0. */
static inline int32_t ew_f32_to_i32(float v) {
    if (!(v == v)) return 0;
    return v <= -2147483648.0f ? INT32_MIN : v >= 2147483648.0f ? INT32_MAX : (int32_t)v;
}

/* e^x without a libm call, so that loops over it vectorize: x = n ln2 + r with |r| <= ln2/2,
 * e^r by its Taylor polynomial to r^7 (error below 1e-8 relative), 2^n built in the
 * exponent bits as two factors 2^(n/2) so that n = 128 and the subnormal range work.
 * Beyond ln(FLT_MAX) the result is inf, below ln(2^-150) it is 0. */
#define EW_EXP_HI 88.72283935f
#define EW_EXP_LO -103.972f
static inline float ew_expf(float x) {
    float xc = x < EW_EXP_LO ? EW_EXP_LO : x; /* selects, unlike fminf, vectorize without -ffast-math */
    xc = xc > EW_EXP_HI ? EW_EXP_HI : xc;
    const float n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f; /* round to nearest */
    const float r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const int32_t ni = (int32_t)n, half = ni >> 1;
    const int32_t bits1 = (half + 127) << 23, bits2 = (ni - half + 127) << 23;
    float s1, s2;
    memcpy(&s1, &bits1, sizeof s1);
    memcpy(&s2, &bits2, sizeof s2);
    float e = p * s1 * s2;
    e = x > EW_EXP_HI ? INFINITY : e;
    return x < EW_EXP_LO ? 0.0f : e;
}

/* tanh without a libm call: an odd Taylor polynomial near 0 (where 1 - 2/(e^2x + 1)
 * would cancel), the exponential form elsewhere; about 2e-7 relative error. */
static inline float ew_tanhf(float x) {
    const float a = fabsf(x), a2 = a * a;
    float p = 21844.0f / 6081075.0f;
    p = p * a2 - 1382.0f / 155925.0f;
    p = p * a2 + 62.0f / 2835.0f;
    p = p * a2 - 17.0f / 315.0f;
    p = p * a2 + 2.0f / 15.0f;
    p = p * a2 - 1.0f / 3.0f;
    p = p * a2 * a + a;
    const float big = 1.0f - 2.0f / (ew_expf(2.0f * a) + 1.0f);
    const float t = a < 0.3f ? p : big;
    return x < 0.0f ? -t : t;
}

/* z = silu(x) * g (g NULL: silu(x)) for n values in ggml's x86 rounding (ops-glu.c). */
CPU_HIDDEN void cpu_silu_mul_row(int64_t n, float *z, const float *x, const float *g);
/* GELU (tanh form) y = gelu(x), and out = dy * gelu'(x), of a row's first values by the SIMD
 * path's kernels (ops-glu.c): return how many values they computed, 0 where the path has none;
 * the caller computes the rest. */
CPU_HIDDEN int64_t cpu_gelu_row_simd(int64_t n, float *y, const float *x);
CPU_HIDDEN int64_t cpu_gelu_back_row_simd(int64_t n, float *out, const float *x, const float *dy);
/* y[i] = exp(x[i] - max) (y may be x) in ggml's x86 rounding of ggml_vec_soft_max_f32; returns
 * their sum in ggml's order (ops-glu.c). */
CPU_HIDDEN double cpu_softmax_exp_sum(int64_t n, float *y, const float *x, float max);

/* Types whose elements convert through float. */
static inline bool ew_type_ok(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16 || t == GGML_TYPE_I32 || t == GGML_TYPE_I16 ||
           t == GGML_TYPE_I8;
}

static inline bool ew_is_float(enum ggml_type t) { return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16; }

/* Contiguous f16 rows to and from float (ops-copy.c): eight values per F16C instruction on
 * CPUs that have it, libgcc's exact conversion elsewhere; round to nearest even. */
CPU_HIDDEN void ew_f16_to_f32_row(int64_t n, float *y, const ggml_fp16_t *x);
CPU_HIDDEN void ew_f32_to_f16_row(int64_t n, ggml_fp16_t *y, const float *x);
/* x[0..n) rounded in place to f16 (type F16) or bf16 (BF16) and back, to nearest even. */
CPU_HIDDEN void ew_round_row(enum ggml_type type, int64_t n, float *x);

/* n elements at src (byte stride nb) of the given type, as floats. */
static inline void ew_load(float *dst, const char *src, enum ggml_type type, size_t nb, int64_t n) {
    switch (type) {
    case GGML_TYPE_F32:
        if (nb == sizeof(float)) memcpy(dst, src, (size_t)n * sizeof(float));
        else for (int64_t i = 0; i < n; i++) dst[i] = *(const float *)(src + i * nb);
        break;
    case GGML_TYPE_F16:
        if (nb == sizeof(ggml_fp16_t)) ew_f16_to_f32_row(n, dst, (const ggml_fp16_t *)src);
        else for (int64_t i = 0; i < n; i++) dst[i] = ggml_fp16_to_fp32(*(const ggml_fp16_t *)(src + i * nb));
        break;
    case GGML_TYPE_BF16: for (int64_t i = 0; i < n; i++) dst[i] = ggmlc_bf16_to_fp32(*(const ggml_bf16_t *)(src + i * nb)); break;
    case GGML_TYPE_I32: for (int64_t i = 0; i < n; i++) dst[i] = (float)*(const int32_t *)(src + i * nb); break;
    case GGML_TYPE_I16: for (int64_t i = 0; i < n; i++) dst[i] = (float)*(const int16_t *)(src + i * nb); break;
    case GGML_TYPE_I8: for (int64_t i = 0; i < n; i++) dst[i] = (float)*(const int8_t *)(src + i * nb); break;
    default: memset(dst, 0, (size_t)n * sizeof(float)); break;
    }
}

/* n floats stored as the given type at dst (byte stride nb). */
static inline void ew_store(char *dst, enum ggml_type type, size_t nb, const float *src, int64_t n) {
    switch (type) {
    case GGML_TYPE_F32:
        if (nb == sizeof(float)) memmove(dst, src, (size_t)n * sizeof(float));
        else for (int64_t i = 0; i < n; i++) *(float *)(dst + i * nb) = src[i];
        break;
    case GGML_TYPE_F16:
        if (nb == sizeof(ggml_fp16_t)) ew_f32_to_f16_row(n, (ggml_fp16_t *)dst, src);
        else for (int64_t i = 0; i < n; i++) *(ggml_fp16_t *)(dst + i * nb) = ggml_fp32_to_fp16(src[i]);
        break;
    case GGML_TYPE_BF16: for (int64_t i = 0; i < n; i++) *(ggml_bf16_t *)(dst + i * nb) = ggmlc_fp32_to_bf16(src[i]); break;
    case GGML_TYPE_I32: for (int64_t i = 0; i < n; i++) *(int32_t *)(dst + i * nb) = ew_f32_to_i32(src[i]); break;
    case GGML_TYPE_I16:
        for (int64_t i = 0; i < n; i++) {
            const int32_t v = ew_f32_to_i32(src[i]);
            *(int16_t *)(dst + i * nb) = (int16_t)(v < INT16_MIN ? INT16_MIN : v > INT16_MAX ? INT16_MAX : v);
        }
        break;
    case GGML_TYPE_I8:
        for (int64_t i = 0; i < n; i++) {
            const int32_t v = ew_f32_to_i32(src[i]);
            *(int8_t *)(dst + i * nb) = (int8_t)(v < INT8_MIN ? INT8_MIN : v > INT8_MAX ? INT8_MAX : v);
        }
        break;
    default: break;
    }
}

/* Same-type copy of n elements of es bytes with byte strides. */
static inline void ew_copy_same(char *dst, size_t dnb, const char *src, size_t snb, int64_t n, size_t es) {
    if (dnb == es && snb == es) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
    for (int64_t i = 0; i < n; i++) memcpy(dst + i * dnb, src + i * snb, es);
}

/* Address of row (i1, i2, i3) of t. */
static inline char *ew_row(const struct ggml_tensor *t, int64_t i1, int64_t i2, int64_t i3) {
    return (char *)t->data + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

/* Coordinates of flat row index ir of a tensor of shape ne. */
static inline void ew_row_coords(int64_t ir, const int64_t *ne, int64_t *i1, int64_t *i2, int64_t *i3) {
    *i1 = ir % ne[1];
    *i2 = (ir / ne[1]) % ne[2];
    *i3 = ir / (ne[1] * ne[2]);
}

/* The rows [*r0, *r1) of dst that task ith of nth computes. */
static inline void ew_task_rows(const struct ggml_tensor *dst, int ith, int nth, int64_t *r0, int64_t *r1) {
    cpu_split_range(ggml_nrows(dst), ith, nth, r0, r1);
}

/* A task's share of rows x columns: whole rows when there are at least nth of them, else
 * a column range of every row (so that one long row still uses every thread); column
 * boundaries fall on multiples of 16 elements, keeping tasks off each other's cache lines. */
static inline void ew_task_share(int64_t nrows, int64_t ne0, int ith, int nth, int64_t *r0, int64_t *r1, int64_t *c0,
                                 int64_t *c1) {
    if (nrows >= nth) {
        cpu_split_range(nrows, ith, nth, r0, r1);
        *c0 = 0;
        *c1 = ne0;
        return;
    }
    int64_t b0, b1;
    cpu_split_range((ne0 + 15) / 16, ith, nth, &b0, &b1);
    *r0 = 0;
    *r1 = nrows;
    *c0 = b0 * 16 < ne0 ? b0 * 16 : ne0;
    *c1 = b1 * 16 < ne0 ? b1 * 16 : ne0;
}

/* Task counts: splitting a node costs a barrier (~1 us), worth it only above a few
 * microseconds of work.  Kernels that split by rows leave surplus tasks idle. */
static inline int ew_tasks_for(const struct ggml_tensor *node, int n_threads, int64_t min_elements) {
    return ggml_nelements(node) < min_elements ? 1 : n_threads;
}
static inline int ew_tasks_cheap(const struct ggml_tensor *node, int n_threads) { return ew_tasks_for(node, n_threads, 32768); }
static inline int ew_tasks_costly(const struct ggml_tensor *node, int n_threads) { return ew_tasks_for(node, n_threads, 4096); }

/* Registration of the files of the element-wise family (called by cpu_ops_elementwise_register). */
CPU_HIDDEN void cpu_ops_binary_register(struct cpu_op_table *t);
CPU_HIDDEN void cpu_ops_unary_register(struct cpu_op_table *t);
CPU_HIDDEN void cpu_ops_reduce_register(struct cpu_op_table *t);
CPU_HIDDEN void cpu_ops_copy_register(struct cpu_op_table *t);
CPU_HIDDEN void cpu_ops_custom_register(struct cpu_op_table *t);
CPU_HIDDEN void cpu_ops_glu_register(struct cpu_op_table *t);
CPU_HIDDEN void cpu_ops_matrix_register(struct cpu_op_table *t);
CPU_HIDDEN void cpu_ops_layout_register(struct cpu_op_table *t);

#endif /* GGMLC_CPU_OPS_EW_H */
