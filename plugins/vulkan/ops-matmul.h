/*
 * ops-matmul.h - what the matrix-product files of the Vulkan plugin share: ops-matmul.c
 * chooses a product's kernel (the float matrix-vector kernels and the tiled GEMM are its
 * own), ops-matmul-dot.c holds the integer-dot matrix-vector kernels, ops-matmul-coopmat.c
 * the tensor-core GEMM, ops-matmul-id.c mul_mat_id.
 */
#ifndef GGMLC_VK_OPS_MATMUL_H
#define GGMLC_VK_OPS_MATMUL_H

#include "vk-impl.h"

#define MV_MAX_N 8 /* columns of b up to which the matrix-vector kernels take a product */

/* The push constants of the products (mm-push.glsl) for node (a's strides in a_unit bytes, b's
 * in b_unit; the binding offsets, k_split and off_s 0). */
VK_HIDDEN struct vk_pc_mm vk_pc_matmul(const struct ggml_tensor *node, size_t a_unit, size_t b_unit);
/* Whether t can be read 16 bytes at a time: rows, row strides and offset 16-byte aligned. */
VK_HIDDEN bool vk_vectorizable(const struct vk_device *d, const struct ggml_tensor *t);

/* Whether the integer-dot matrix-vector kernels take a x b; *scratch: the bytes of b quantized. */
VK_HIDDEN bool vk_mvq_dot_takes(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b,
                                VkDeviceSize *scratch);
/* Records node on them (b quantized first, unless an earlier product of the segment did); false,
 * with nothing recorded, when they do not take it or the scratch memory does not hold b
 * quantized.  The status in *st. */
VK_HIDDEN bool vk_mvq_dot_record(struct vk_rec *rec, const struct ggml_tensor *node, enum ggml_status *st);

/* The same for mul_mat_id node's products of few tokens (mvqd_id_<type>: one per (slot, token) pair). */
VK_HIDDEN bool vk_mvq_dot_id_takes(const struct vk_device *d, const struct ggml_tensor *node, VkDeviceSize *scratch);
VK_HIDDEN bool vk_mvq_dot_id_record(struct vk_rec *rec, const struct ggml_tensor *node, enum ggml_status *st);
/* The push constants of mm-id-push.glsl for mul_mat_id node (the experts' strides in a_unit
 * bytes; the binding offsets and off_s 0). */
VK_HIDDEN struct vk_pc_mm_id vk_pc_matmul_id(const struct ggml_tensor *node, size_t a_unit);
/* The scratch memory mul_mat_id node takes, into *need. */
VK_HIDDEN void vk_mul_mat_id_scratch(const struct vk_device *d, const struct ggml_tensor *node, struct vk_scratch_need *need);

/* The scratch memory a x b takes on the cooperative-matrix kernel, when that kernel takes it, into *need. */
VK_HIDDEN void vk_coopmat_scratch(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b,
                                  struct vk_scratch_need *need);
/* Records node on the cooperative-matrix kernel (block-format weights dequantized and f32 activations
 * packed into f16 before it, where chosen); false, with nothing of the product recorded, when that
 * kernel does not take it: the caller records the tiled GEMM.  A variant whose pipeline fails gives
 * way to the next (FLEX, KHR fragments, NV fragments, the tiled GEMM), with a warning.  The status
 * in *st. */
VK_HIDDEN bool vk_coopmat_record(struct vk_rec *rec, const struct ggml_tensor *node, enum ggml_status *st);

#endif
