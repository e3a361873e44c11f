/*
 * ops-matmul.h - what the matrix-product files of the Vulkan plugin share: ops-matmul.c
 * chooses a product's kernel (the float matrix-vector kernels and the tiled GEMM are its
 * own), ops-matmul-dot.c holds the integer-dot matrix-vector kernels, ops-matmul-coopmat.c
 * the tensor-core GEMM, ops-matmul-id.c mul_mat_id.  The calls go one way: ops-matmul.c and
 * ops-matmul-id.c choose and call into the kernel files, which share only the helpers below.
 */
#ifndef GGMLC_VK_OPS_MATMUL_H
#define GGMLC_VK_OPS_MATMUL_H

#include "vk-impl.h"

#define MV_MAX_N 8 /* columns of b up to which the matrix-vector kernels take a product */

/* The kernel families of mul_mat, chosen in one place (mm_kernel_for in ops-matmul.c), which
 * both the scratch-memory estimate and the recording consult:
 *  1. VK_MM_INT_DOT: the integer-dot matrix-vector kernels (ops-matmul-dot.c), for block-format
 *     weights and at most MV_MAX_N columns of b, where the device and the tuning allow them;
 *  2. VK_MM_MAT_VEC: the float matrix-vector kernels (ops-matmul.c), at most MV_MAX_N columns;
 *  3. VK_MM_GEMM: the tensor-core GEMM (ops-matmul-coopmat.c) where it takes the product, else
 *     the tiled shared-memory GEMM (ops-matmul.c).
 * A family that declines at recording time gives way to the next one down. */
enum vk_mm_kernel { VK_MM_INT_DOT, VK_MM_MAT_VEC, VK_MM_GEMM };

/* The push constants of the products (mm-push.glsl) for node (a's strides in a_unit bytes, b's
 * in b_unit; the binding offsets, k_split and off_s 0). */
static inline struct vk_pc_mm vk_pc_matmul(const struct ggml_tensor *node, size_t a_unit,
                                           size_t b_unit) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    return (struct vk_pc_mm){
        .M = (uint32_t)a->ne[1],
        .N = (uint32_t)b->ne[1],
        .K = (uint32_t)a->ne[0],
        .nb01 = (uint32_t)(a->nb[1] / a_unit),
        .nb02 = (uint32_t)(a->nb[2] / a_unit),
        .nb03 = (uint32_t)(a->nb[3] / a_unit),
        .nb11 = (uint32_t)(b->nb[1] / b_unit),
        .nb12 = (uint32_t)(b->nb[2] / b_unit),
        .nb13 = (uint32_t)(b->nb[3] / b_unit),
        .nb1 = (uint32_t)(node->nb[1] / 4),
        .nb2 = (uint32_t)(node->nb[2] / 4),
        .nb3 = (uint32_t)(node->nb[3] / 4),
        .ne12 = (uint32_t)b->ne[2],
        .r2 = (uint32_t)(b->ne[2] / a->ne[2]),
        .r3 = (uint32_t)(b->ne[3] / a->ne[3]),
        .ka = 1, /* unit k strides */
        .kb = 1,
    };
}

/* Whether t can be read 16 bytes at a time: rows, row strides and offset 16-byte aligned. */
static inline bool vk_vectorizable(const struct vk_device *d, const struct ggml_tensor *t) {
    const struct vk_buffer *buf = vk_tensor_buffer(d, t);
    if (!buf) return false;
    const size_t per = 16 / ggml_type_size(t->type);
    return t->ne[0] % per == 0 && t->nb[1] % 16 == 0 && t->nb[2] % 16 == 0 && t->nb[3] % 16 == 0 &&
           vk_tensor_offset(buf, t) % 16 == 0 && d->props.limits.minStorageBufferOffsetAlignment <= 16;
}

/* Whether the integer-dot matrix-vector kernels take a x b; *scratch: the bytes of b quantized. */
VK_HIDDEN bool vk_mvq_dot_takes(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b,
                                VkDeviceSize *scratch);
/* Records node on them (b quantized first, unless an earlier product of the segment did); false,
 * with nothing recorded, when they do not take it or the scratch memory does not hold b
 * quantized.  The status in *st.  With add (NULL: none), the add of e that follows the product
 * comes along (vk-fuse.c; false too when that kernel is not to be had). */
VK_HIDDEN bool vk_mvq_dot_record(struct vk_rec *rec, const struct ggml_tensor *node, const struct ggml_tensor *e,
                                 const struct ggml_tensor *add, enum ggml_status *st);
/* Whether a kernel of node's type takes the add after the product (mvqd_<type>_add). */
VK_HIDDEN bool vk_mvq_dot_add_takes(const struct ggml_tensor *node, const struct ggml_tensor *add);

/* The same for mul_mat_id node's products of few tokens (mvqd_id_<type>: one per (slot, token) pair). */
VK_HIDDEN bool vk_mvq_dot_id_takes(const struct vk_device *d, const struct ggml_tensor *node, VkDeviceSize *scratch);
VK_HIDDEN bool vk_mvq_dot_id_record(struct vk_rec *rec, const struct ggml_tensor *node, enum ggml_status *st);
/* The push constants of mm-id-push.glsl for mul_mat_id node (the experts' strides in a_unit
 * bytes; the binding offsets and off_s 0). */
static inline struct vk_pc_mm_id vk_pc_matmul_id(const struct ggml_tensor *node, size_t a_unit) {
    const struct ggml_tensor *as = node->src[0], *b = node->src[1], *ids = node->src[2];
    return (struct vk_pc_mm_id){
        .M = (uint32_t)as->ne[1],
        .K = (uint32_t)as->ne[0],
        .n_as = (uint32_t)as->ne[2],
        .nb01 = (uint32_t)(as->nb[1] / a_unit),
        .nb02 = (uint32_t)(as->nb[2] / a_unit),
        .ne11 = (uint32_t)b->ne[1],
        .nb11 = (uint32_t)(b->nb[1] / 4),
        .nb12 = (uint32_t)(b->nb[2] / 4),
        .n_used = (uint32_t)ids->ne[0],
        .n_tokens = (uint32_t)ids->ne[1],
        .nbi0 = (uint32_t)(ids->nb[0] / 4),
        .nbi1 = (uint32_t)(ids->nb[1] / 4),
        .nb1 = (uint32_t)(node->nb[1] / 4),
        .nb2 = (uint32_t)(node->nb[2] / 4),
    };
}

/* Whether the cooperative-matrix kernel takes a x b (else the tiled GEMM does). */
VK_HIDDEN bool vk_coopmat_takes(const struct vk_device *d, const struct ggml_tensor *a,
                                const struct ggml_tensor *b);
/* The scratch memory a x b takes on the cooperative-matrix kernel, when that kernel takes it, into *need. */
VK_HIDDEN void vk_coopmat_scratch(const struct vk_device *d, const struct ggml_tensor *a, const struct ggml_tensor *b,
                                  struct vk_scratch_need *need);
/* Records node on the cooperative-matrix kernel (block-format weights dequantized and f32 activations
 * packed into f16 before it, where chosen); false, with nothing of the product recorded, when that
 * kernel does not take it: the caller records the tiled GEMM.  A variant whose pipeline fails gives
 * way to the next (FLEX, KHR fragments, NV fragments, the tiled GEMM), with a warning.  The status
 * in *st. */
VK_HIDDEN bool vk_coopmat_record(struct vk_rec *rec, const struct ggml_tensor *node, enum ggml_status *st);

/* Split-k products (mm-coopmat-nv.comp, mm.comp): node's d written as `splits` layers of partial
 * results, each M x N contiguous at scratch offset at, layer z taking k from z * k_split on
 * (pc: the product's push constants, its d strides and k_split set here). */
VK_HIDDEN void vk_split_bind_partials(struct vk_dispatch *ds, struct vk_pc_mm *pc,
                                      const struct ggml_tensor *node, VkDeviceSize at,
                                      uint32_t splits, uint32_t k_split);
/* Records d = the sum of those partial results, layer by layer (mm-split-sum.comp). */
VK_HIDDEN enum ggml_status vk_split_sum_record(struct vk_rec *rec, const struct ggml_tensor *node,
                                               VkDeviceSize at, uint32_t splits);
/* The same for any result seen as m x n values (columns nb1 values apart in node, each layer
 * m x n contiguous at scratch offset at): a split convolution's result is one column. */
VK_HIDDEN enum ggml_status vk_split_sum_record_mn(struct vk_rec *rec, const struct ggml_tensor *node,
                                                  VkDeviceSize at, uint32_t splits, uint32_t m,
                                                  uint32_t n, uint32_t nb1);

#endif
