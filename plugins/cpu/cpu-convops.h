/*
 * cpu-convops.h - what the convolution, image, indexing, sorting and sequence
 * kernel files of the CPU plugin share: strided element access in any float
 * type and the registration functions of the sub-families.
 */
#ifndef GGMLC_CPU_CONVOPS_H
#define GGMLC_CPU_CONVOPS_H

#include <string.h>

#include "cpu-impl.h"

/* Address of element (i0, i1, i2, i3) of t, whatever its strides. */
static inline char *cpu_elem_ptr(const struct ggml_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (char *)t->data + i0 * (int64_t)t->nb[0] + i1 * (int64_t)t->nb[1] + i2 * (int64_t)t->nb[2] + i3 * (int64_t)t->nb[3];
}

/* One F32, F16, BF16 or I32 value as float. */
static inline float cpu_load_f32(enum ggml_type type, const void *p) {
    switch (type) {
    case GGML_TYPE_F16: return ggml_fp16_to_fp32(*(const ggml_fp16_t *)p);
    case GGML_TYPE_BF16: return ggml_bf16_to_fp32(*(const ggml_bf16_t *)p);
    case GGML_TYPE_I32: return (float)*(const int32_t *)p;
    default: return *(const float *)p;
    }
}

/* Store a float as one F32, F16 or BF16 value. */
static inline void cpu_store_f32(enum ggml_type type, void *p, float v) {
    switch (type) {
    case GGML_TYPE_F16: *(ggml_fp16_t *)p = ggml_fp32_to_fp16(v); break;
    case GGML_TYPE_BF16: *(ggml_bf16_t *)p = ggml_fp32_to_bf16(v); break;
    default: *(float *)p = v; break;
    }
}

static inline float cpu_get_f32(const struct ggml_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return cpu_load_f32(t->type, cpu_elem_ptr(t, i0, i1, i2, i3));
}

static inline void cpu_set_f32(const struct ggml_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, float v) {
    cpu_store_f32(t->type, cpu_elem_ptr(t, i0, i1, i2, i3), v);
}

/* Input position hit by output position o and kernel tap k, or -1 outside [0, n). */
static inline int64_t cpu_tap_pos(int64_t o, int64_t k, int s, int p, int d, int64_t n) {
    const int64_t i = o * s + k * d - p;
    return i >= 0 && i < n ? i : -1;
}

/* Output position o that input position i reaches through tap k (i = o*s + k*d - p), or -1 outside [0, n_out). */
static inline int64_t cpu_tap_out(int64_t i, int64_t k, int s, int p, int d, int64_t n_out) {
    const int64_t num = i + p - k * d;
    if (num < 0 || num % s != 0) return -1;
    return num / s < n_out ? num / s : -1;
}

/* Sub-families registered by cpu_ops_conv_register and cpu_ops_index_register. */
CPU_HIDDEN void cpu_ops_conv_gemm_register(struct cpu_op_table *t); /* ops-conv-gemm.c */
CPU_HIDDEN void cpu_ops_pool_register(struct cpu_op_table *t);  /* ops-pool.c */
CPU_HIDDEN void cpu_ops_image_register(struct cpu_op_table *t); /* ops-image.c */
CPU_HIDDEN void cpu_ops_sort_register(struct cpu_op_table *t);  /* ops-sort.c */
CPU_HIDDEN void cpu_ops_seq_register(struct cpu_op_table *t);   /* ops-seq.c */
CPU_HIDDEN void cpu_ops_delta_register(struct cpu_op_table *t); /* ops-delta.c */
CPU_HIDDEN void cpu_ops_indexer_register(struct cpu_op_table *t); /* ops-indexer.c */
CPU_HIDDEN void cpu_ops_hc_register(struct cpu_op_table *t);      /* ops-hc.c */
/* UPSCALE with GGML_SCALE_FLAG_ANTIALIAS (bilinear only): ops-resample-aa.c. */
CPU_HIDDEN enum ggml_status cpu_upscale_antialias(const struct ggmlc_op_call *call, struct ggml_tensor *dst);

#endif /* GGMLC_CPU_CONVOPS_H */
