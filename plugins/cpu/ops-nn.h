/*
 * ops-nn.h - what the files of the CPU plugin's nn family share: their
 * registration functions, row access for any float type and layout, the
 * per-task scratch and the ALiBi slope.
 *
 * Kernels work on rows: a row (ne[0] elements, any nb[0]) is loaded into f32
 * scratch (ops-ew.h converts), computed there and stored back, so F32/F16/BF16
 * operands and non-contiguous views need no special cases, and in-place results
 * (dst a view of src0) are safe as long as a row is read before it is written.
 */
#ifndef GGMLC_CPU_OPS_NN_H
#define GGMLC_CPU_OPS_NN_H

#include <math.h>
#include <string.h>

#include "cpu-impl.h"
#include "ops-ew.h" /* element conversion and row addressing */

CPU_HIDDEN void cpu_nn_norm_register(struct cpu_op_table *t);    /* ops-norm.c */
CPU_HIDDEN void cpu_nn_softmax_register(struct cpu_op_table *t); /* ops-softmax.c */
CPU_HIDDEN void cpu_nn_rope_register(struct cpu_op_table *t);    /* ops-rope.c */
CPU_HIDDEN void cpu_nn_attn_register(struct cpu_op_table *t);    /* ops-attn.c */
/* FLASH_ATTN_EXT rounded as ggml's CPU backend where it applies (f16 K/V, its one-row path;
 * ops-attn-match.c): computes this thread's share and returns true, else false. */
CPU_HIDDEN bool cpu_flash_attn_match(const struct ggmlc_op_call *call, struct ggml_tensor *dst);
/* Whether cpu_flash_attn_match's tasks of dst meet at a barrier (its split-KV path). */
CPU_HIDDEN bool cpu_flash_attn_tasks_meet(const struct ggml_tensor *dst);
/* Scratch floats per task of FLASH_ATTN_EXT (ops-attn.c's tiles, or the split-KV partials of
 * ops-attn-match.c: one M, S and value row per query head). */
CPU_HIDDEN int64_t cpu_attn_scratch_floats(const struct ggml_tensor *dst);
/* The most floats a task of FLASH_ATTN_EXT keeps K/V tiles converted to f32 in (4 MiB; ops-attn.c
 * and ops-attn-tiled.c): longer caches convert per block of queries. */
#define ATTN_CACHE_MAX_FLOATS (1 << 20)
/* -inf as f16 bits, the only f16 value that converts to -inf (masks are scanned as bits). */
#define F16_MINUS_INF 0xfc00
/* FLASH_ATTN_EXT rounded as ggml's CPU backend's tiled path (prompts of 64 or more queries;
 * ops-attn-tiled.c): whether it applies, its scratch floats per task, and this thread's share
 * computed (false where it does not apply). */
CPU_HIDDEN bool cpu_flash_attn_tiled_applies(const struct ggml_tensor *dst);
CPU_HIDDEN int64_t cpu_flash_attn_tiled_floats(const struct ggml_tensor *dst);
CPU_HIDDEN bool cpu_flash_attn_tiled(const struct ggmlc_op_call *call, struct ggml_tensor *dst);
/* The f16 loops of that path, each giving the bits of ops-attn-match.c's portable loops:
 * dot: ggml's vec_dot_f16 of x and y (n values; AVX-512 or AVX2 order by the CPU); scale: acc[d] = f16(acc[d] * s);
 * mad: acc[d] = f16(fma(v[d], s, acc[d])), d < n. */
struct cpu_attn_f16_loops {
    float (*dot)(const ggml_fp16_t *x, const ggml_fp16_t *y, int64_t n);
    void (*scale)(ggml_fp16_t *acc, float s, int64_t n);
    void (*mad)(ggml_fp16_t *acc, const ggml_fp16_t *v, float s, int64_t n);
};
/* The AVX2 (+FMA, F16C) and AVX-512 loops (ops-attn-match-x86.c, -avx512.c); NULL where the
 * build has none. */
CPU_HIDDEN const struct cpu_attn_f16_loops *cpu_attn_f16_loops_avx2(void);
CPU_HIDDEN const struct cpu_attn_f16_loops *cpu_attn_f16_loops_avx512(void);
CPU_HIDDEN void cpu_nn_loss_register(struct cpu_op_table *t);    /* ops-loss.c */

/* y[i] = exp(x[i] - shift) (y may be x); returns their sum, accumulated in double.
 * ew_expf is branch-free, so the first loop vectorizes at every x86-64 level
 * (softmax and the cross-entropy loss). */
EW_CLONES static inline double exp_shifted(float *y, const float *x, float shift, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = ew_expf(x[i] - shift);
    double part[4] = {0}; /* four chains of additions, not one waiting on each */
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int l = 0; l < 4; l++) part[l] += y[i + l];
    double sum = (part[0] + part[2]) + (part[1] + part[3]);
    for (; i < n; i++) sum += y[i];
    return sum;
}

/* The largest of init and w[0..n) (NaN values are passed over), in eight partial maxima so
 * that the loop vectorizes (softmax and the cross-entropy loss). */
EW_CLONES static inline float nn_row_max(const float *w, int64_t n, float init) {
    float part[8];
    for (int l = 0; l < 8; l++) part[l] = init;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) part[l] = w[i + l] > part[l] ? w[i + l] : part[l];
    float max = init;
    for (int l = 0; l < 8; l++) max = part[l] > max ? part[l] : max;
    for (; i < n; i++) max = w[i] > max ? w[i] : max;
    return max;
}

/* Address of element (i0, i1, i2, i3). */
static inline char *nn_elem(const struct ggml_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (char *)t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

/* Row (i1, i2, i3) of t into dst (t->ne[0] floats), and back. */
static inline void nn_row_load(const struct ggml_tensor *t, int64_t i1, int64_t i2, int64_t i3, float *dst) {
    const char *row = ew_row(t, i1, i2, i3);
    if ((const char *)dst == row) return; /* already in place */
    if (ggml_is_quantized(t->type)) {
        ggml_get_type_traits(t->type)->to_float(row, dst, t->ne[0]); /* quantized K/V caches */
    } else {
        ew_load(dst, row, t->type, t->nb[0], t->ne[0]);
    }
}
static inline void nn_row_store(struct ggml_tensor *t, int64_t i1, int64_t i2, int64_t i3, const float *src) {
    ew_store(ew_row(t, i1, i2, i3), t->type, t->nb[0], src, t->ne[0]);
}

/* Row (i1, i2, i3) of t when it is f32 with contiguous elements (a kernel can then work
 * in the destination itself), else NULL. */
static inline float *nn_f32_row(const struct ggml_tensor *t, int64_t i1, int64_t i2, int64_t i3) {
    return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float) ? (float *)nn_elem(t, 0, i1, i2, i3) : NULL;
}

/* Row index r (0 .. nrows) to (i1, i2, i3) of a tensor with t's shape. */
static inline void nn_row_index(const struct ggml_tensor *t, int64_t r, int64_t *i1, int64_t *i2, int64_t *i3) {
    ew_row_coords(r, t->ne, i1, i2, i3);
}

/* Floats of scratch per task, padded to a cache line so tasks never share one. */
static inline size_t nn_scratch_floats(int64_t n) { return ((size_t)n + 15) & ~(size_t)15; }
static inline size_t nn_scratch_bytes(int64_t n_per_task, int n_threads) {
    return nn_scratch_floats(n_per_task) * sizeof(float) * (size_t)n_threads;
}
/* This task's share of call->wdata (n_per_task floats as passed to nn_scratch_bytes). */
static inline float *nn_scratch(const struct ggmlc_op_call *call, int64_t n_per_task) {
    return (float *)call->wdata + nn_scratch_floats(n_per_task) * (size_t)call->ith;
}

/* ALiBi slope of head h of n_head: the first 2^floor(log2 n_head) heads get powers of
 * m0 = 2^(-max_bias/n), the rest odd powers of m1 = 2^(-max_bias/(2n)).  1 without ALiBi. */
static inline float nn_alibi_slope(float max_bias, int64_t n_head, int64_t h) {
    if (max_bias <= 0.0f) return 1.0f;
    const int64_t n_head_log2 = (int64_t)1 << (int)floor(log2((double)n_head));
    const float m0 = powf(2.0f, -max_bias / (float)n_head_log2);
    const float m1 = powf(2.0f, -(max_bias / 2.0f) / (float)n_head_log2);
    return h < n_head_log2 ? powf(m0, (float)(h + 1)) : powf(m1, (float)(2 * (h - n_head_log2) + 1));
}

#endif /* GGMLC_CPU_OPS_NN_H */
