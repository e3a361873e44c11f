/*
 * vk-test-cases.h - the op cases test-vulkan.c computes on the backend under
 * test and on the CPU.
 */
#ifndef VK_TEST_CASES_H
#define VK_TEST_CASES_H

#include <stdbool.h>
#include <stddef.h>

#include "ggml.h"
#include "ggml-backend.h"

struct vk_test_case {
    const char *name;
    /* Leaves and the result in ctx (no_alloc), or NULL when a constructor is missing.
     * Leaf names choose their values: "pos:" positive, "big:" large, "idx<N>:" indices < N. */
    struct ggml_tensor *(*build)(struct ggml_context *ctx);
    double max_nmse;
    bool expect_supported; /* false: the backend must decline it */
};

/* Products of F16 and BF16 weights with f32 activations: the CPU backend rounds the
 * activations to the weights' type first, as ggml's CPU backend does; the Vulkan kernels
 * multiply them as they are, as ggml-vulkan's do (2e-8 to 8e-8 NMSE apart for F16, 2.5e-6
 * for BF16, on lavapipe). */
#define VK_TOL_F16_ACT 1e-6
#define VK_TOL_BF16_ACT 1e-5

/* A new 4-D tensor of ctx named name (the name chooses its fill, see above); NULL on failure. */
struct ggml_tensor *vk_test_leaf(struct ggml_context *ctx, enum ggml_type type, const char *name, int64_t n0, int64_t n1,
                                 int64_t n2, int64_t n3);

/* A case function fn: quantized or float a [k, m, a2] (of type) times f32 b [k, n, b2]
 * (NULL when ggml_mul_mat is missing: the file declares it weak). */
#define VK_MUL_MAT_CASE(fn, type, k, m, n, a2, b2) \
    static struct ggml_tensor *fn(struct ggml_context *ctx) { \
        if (!ggml_mul_mat) return NULL; \
        return ggml_mul_mat(ctx, vk_test_leaf(ctx, type, "a", k, m, a2, 1), vk_test_leaf(ctx, GGML_TYPE_F32, "b", k, n, b2, 1)); \
    }

/* The table of cases and its length. */
const struct vk_test_case *vk_test_cases(size_t *n);
/* The K-quant and mul_mat_id cases (vk-test-cases-quant.c). */
const struct vk_test_case *vk_test_cases_quant(size_t *n);
/* mul_mat_id on backend with expert ids out of range: zero rows, the rest computed (TAP). */
void vk_check_moe_bad_ids(ggml_backend_t backend);
/* The integer-dot q4_0/q8_0 mat-vec cases, for GGMLC_VK_MVQ_KERNEL=dot (vk-test-cases-dot.c). */
const struct vk_test_case *vk_test_cases_dot(size_t *n);
/* The cases of the ops and modes added later (vk-test-cases-ops.c). */
const struct vk_test_case *vk_test_cases_ops(size_t *n);
/* The cases of a CNN's training step: split-k products, repeat_back by workgroup
 * (vk-test-cases-train.c). */
const struct vk_test_case *vk_test_cases_train(size_t *n);

#endif
