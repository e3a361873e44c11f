/*
 * vk-test-cases-train.c - cases for test-vulkan.c with the shapes of training a small CNN
 * (ggmlc-bench train-epoch --model cnn, batch 32): the products of few rows and columns
 * over long k that the tiled GEMM splits along k (the convolutions' weight gradients as
 * out_prod, a dense layer's mul_mat), the bias gradients that repeat_back sums with a
 * workgroup per element, and the loss of a classifier's short rows; odd sizes (a last layer
 * of k shorter than the others, tails of the repeat loop), f16 operands and strided ones
 * beside them.
 */
#include "vk-test-cases.h"

#define leaf                  vk_test_leaf
#define F32(name, a, b, c, d) leaf(ctx, GGML_TYPE_F32, name, a, b, c, d)
#define F16(name, a, b, c, d) leaf(ctx, GGML_TYPE_F16, name, a, b, c, d)

/* ------------------------------------------------------ split-k products */

/* conv 1's weight gradient: 9 x 32 over the 25088 pixels of 32 images 28 x 28 */
static struct ggml_tensor *c_out_prod_conv1_grad(struct ggml_context *ctx) {
    return ggml_out_prod(ctx, F32("a", 9, 25088, 1, 1), F32("b", 32, 25088, 1, 1));
}
/* conv 2's: 288 x 64 over 6272 pixels */
static struct ggml_tensor *c_out_prod_conv2_grad(struct ggml_context *ctx) {
    return ggml_out_prod(ctx, F32("a", 288, 6272, 1, 1), F32("b", 64, 6272, 1, 1));
}
/* odd sizes, b a transposed view (k along its dimension 0) */
static struct ggml_tensor *c_out_prod_odd_transposed(struct ggml_context *ctx) {
    return ggml_out_prod(ctx, F32("a", 37, 1999, 1, 1),
                         ggml_transpose(ctx, F32("b", 1999, 21, 1, 1)));
}
static struct ggml_tensor *c_out_prod_f16_long(struct ggml_context *ctx) {
    return ggml_out_prod(ctx, F32("a", 33, 3001, 1, 1), F16("b", 21, 3001, 1, 1));
}
/* a batched one: not split (its layers are the batches) */
static struct ggml_tensor *c_out_prod_batched_long(struct ggml_context *ctx) {
    return ggml_out_prod(ctx, F32("a", 17, 1500, 2, 1), F32("b", 12, 1500, 2, 1));
}
/* the dense layer 3136 -> 128 at batch 32 */
static struct ggml_tensor *c_mul_mat_dense_long(struct ggml_context *ctx) {
    return ggml_mul_mat(ctx, F32("a", 3136, 128, 1, 1), F32("b", 3136, 32, 1, 1));
}
static struct ggml_tensor *c_mul_mat_odd_long(struct ggml_context *ctx) {
    return ggml_mul_mat(ctx, F32("a", 1001, 13, 1, 1), F32("b", 1001, 11, 1, 1));
}
static struct ggml_tensor *c_mul_mat_f16_f32_long(struct ggml_context *ctx) {
    return ggml_mul_mat(ctx, F16("a", 2050, 40, 1, 1), F32("b", 2050, 24, 1, 1));
}
/* the forward convolutions' products: 32 or 64 rows, many columns (64 x 64 tiles) */
static struct ggml_tensor *c_mul_mat_conv1_fwd(struct ggml_context *ctx) {
    return ggml_mul_mat(ctx, F32("a", 9, 32, 1, 1), F32("b", 9, 25088, 1, 1));
}
static struct ggml_tensor *c_mul_mat_conv2_fwd(struct ggml_context *ctx) {
    return ggml_mul_mat(ctx, F32("a", 288, 64, 1, 1), F32("b", 288, 6272, 1, 1));
}

/* ------------------------------------------------------------ repeat_back */

static struct ggml_tensor *c_repeat_back_conv1_bias(struct ggml_context *ctx) {
    return ggml_repeat_back(ctx, F32("a", 28, 28, 32, 32), F32("b", 1, 1, 32, 1));
}
static struct ggml_tensor *c_repeat_back_conv2_bias(struct ggml_context *ctx) {
    return ggml_repeat_back(ctx, F32("a", 14, 14, 64, 32), F32("b", 1, 1, 64, 1));
}
/* repeats along every dimension, 600 each (the four-at-a-time loop and its tail) */
static struct ggml_tensor *c_repeat_back_odd(struct ggml_context *ctx) {
    return ggml_repeat_back(ctx, F32("a", 14, 300, 3, 2), F32("b", 7, 1, 3, 1));
}
/* a strided view: a permuted */
static struct ggml_tensor *c_repeat_back_permuted(struct ggml_context *ctx) {
    struct ggml_tensor *a =
        ggml_permute(ctx, F32("a", 20, 30, 8, 3), 1, 0, 2, 3); /* [30, 20, 8, 3] */
    return ggml_repeat_back(ctx, a, F32("b", 1, 1, 8, 1));
}
static struct ggml_tensor *c_repeat_back_f16(struct ggml_context *ctx) {
    return ggml_repeat_back(ctx, F16("a", 5, 5, 16, 40), F16("b", 1, 1, 16, 1));
}

/* ------------------------------------------- cross-entropy of short rows */

/* a classifier's loss at batch 32: a row per invocation */
static struct ggml_tensor *c_cross_entropy_classes(struct ggml_context *ctx) {
    return ggml_cross_entropy_loss(ctx, F32("big:x", 10, 32, 1, 1), F32("pos:t", 10, 32, 1, 1));
}
/* more rows than invocations, the longest short rows, and just past them */
static struct ggml_tensor *c_cross_entropy_many_rows(struct ggml_context *ctx) {
    return ggml_cross_entropy_loss(ctx, F32("big:x", 64, 150, 3, 1), F32("pos:t", 64, 150, 3, 1));
}
/* a GPT's loss: long rows (a workgroup each in the two-dispatch form), over two batches */
static struct ggml_tensor *c_cross_entropy_long_rows(struct ggml_context *ctx) {
    return ggml_cross_entropy_loss(ctx, F32("big:x", 256, 300, 2, 1), F32("pos:t", 256, 300, 2, 1));
}

/* short rows over every dimension: several workgroups of a thread per row */
static struct ggml_tensor *c_cross_entropy_short_4d(struct ggml_context *ctx) {
    return ggml_cross_entropy_loss(ctx, F32("big:x", 10, 300, 2, 3), F32("pos:t", 10, 300, 2, 3));
}

static struct ggml_tensor *c_cross_entropy_65(struct ggml_context *ctx) {
    return ggml_cross_entropy_loss(ctx, F32("big:x", 65, 33, 1, 1), F32("pos:t", 65, 33, 1, 1));
}

#define CASE(fn, err) \
    { #fn + 2, fn, err, true }
static const struct vk_test_case cases[] = {
    CASE(c_out_prod_conv1_grad, 1e-10),     CASE(c_out_prod_conv2_grad, 1e-10),
    CASE(c_out_prod_odd_transposed, 1e-10), CASE(c_out_prod_f16_long, 1e-10),
    CASE(c_out_prod_batched_long, 1e-10),   CASE(c_mul_mat_dense_long, 1e-10),
    CASE(c_mul_mat_odd_long, 1e-10),        CASE(c_mul_mat_f16_f32_long, VK_TOL_F16_ACT),
    CASE(c_mul_mat_conv1_fwd, 1e-10),       CASE(c_mul_mat_conv2_fwd, 1e-10),
    CASE(c_repeat_back_conv1_bias, 1e-10),  CASE(c_repeat_back_conv2_bias, 1e-10),
    CASE(c_repeat_back_odd, 1e-10),         CASE(c_repeat_back_permuted, 1e-10),
    CASE(c_repeat_back_f16, 1e-6),          CASE(c_cross_entropy_classes, 1e-10),
    CASE(c_cross_entropy_many_rows, 1e-10), CASE(c_cross_entropy_65, 1e-10),
    CASE(c_cross_entropy_long_rows, 1e-10), CASE(c_cross_entropy_short_4d, 1e-10),
};

const struct vk_test_case *vk_test_cases_train(size_t *n) {
    *n = sizeof cases / sizeof *cases;
    return cases;
}
