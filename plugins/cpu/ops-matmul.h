/*
 * ops-matmul.h - what the files of the matmul kernel family share
 * (ops-matmul.c: MUL_MAT, OUT_PROD; ops-matmul-id.c: MUL_MAT_ID).
 */
#ifndef GGMLC_CPU_OPS_MATMUL_H
#define GGMLC_CPU_OPS_MATMUL_H

#include "cpu-impl.h"

/* Thread call->ith's scratch of per_thread bytes after `shared` bytes of wdata. */
CPU_HIDDEN void *cpu_matmul_thread_work(const struct ggmlc_op_call *call, size_t shared, size_t per_thread);
/* True when quantized weights of type have the CPU kernels a product needs. */
CPU_HIDDEN bool cpu_matmul_quant_ok(enum ggml_type type);
/* Convert k values (src_type, src_k_stride bytes apart) to a row of type `to`
 * (F32, F16, BF16 or one with from_float); tmp holds k floats. */
CPU_HIDDEN void cpu_matmul_convert_row(enum ggml_type to, const void *src, enum ggml_type src_type, size_t src_k_stride,
                                       int64_t k, void *dst, float *tmp);
/* This thread's share of all rows of b, converted to type `to`, packed in logical row order at dst. */
CPU_HIDDEN void cpu_matmul_convert_rows(const struct ggmlc_op_call *call, const struct ggml_tensor *b,
                                        enum ggml_type to, void *dst, float *tmp);
/* Whether the multi-row kernel of a weight type (quant-dot.h) reads its activations as
 * Q8_0 planes (vec_dot_type Q8_0), else as plain rows of its vec_dot_type. */
CPU_HIDDEN bool cpu_matmul_uses_planes(enum ggml_type type);
/* The type a product's f32 activations are rounded through before a GEMM multiplies them, as
 * ggml's CPU backend converts them: the weights' vec_dot type (quantized weights dequantized
 * while packing, F16 and BF16 weights); GGML_TYPE_F32 where they are used as they are. */
CPU_HIDDEN enum ggml_type cpu_matmul_rounding(enum ggml_type weights, enum ggml_type activations);
/* Fill the MUL_MAT_ID entries of the op table (ops-matmul-id.c). */
CPU_HIDDEN void cpu_ops_matmul_id_register(struct cpu_op_table *t);

/* MUL_MAT with I8 weights (ggml_mul_mat_i8_tensorwise) and QUANTIZE_I8_CONVROT: ops-i8.c. */
CPU_HIDDEN enum ggml_status cpu_mul_mat_i8_compute(const struct ggmlc_op_call *call, struct ggml_tensor *dst);
CPU_HIDDEN bool cpu_mul_mat_i8_supports(const struct ggml_tensor *node);
CPU_HIDDEN size_t cpu_mul_mat_i8_work_size(const struct ggml_tensor *node, int n_threads);
CPU_HIDDEN void cpu_ops_i8_register(struct cpu_op_table *t);

#endif /* GGMLC_CPU_OPS_MATMUL_H */
