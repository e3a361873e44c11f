/*
 * vk-test-cases-dot.c - test-vulkan.c cases for the integer-dot matrix-vector kernels
 * (mvq-dot.comp: q4_0/q4_1/q5_0/q5_1/q8_0/iq4_nl; mvq-dot-mxfp4.comp; mvq-dot-k.comp: q2_K..q6_K,
 * iq4_xs), run with
 * GGMLC_VK_MVQ_KERNEL=dot.
 * The kernels quantize b to 8 bits per 32-value block as the CPU reference does for
 * q4_0, q5_0, q8_0, iq4_nl and mxfp4 (ggml's Q8_0), so the two agree to rounding (1e-14 here; 1e-7
 * in the worst of 300 random shapes): the 1e-6 bounds are below what a float-
 * activation kernel reaches (7e-6 to 3e-5), so a case that silently took another
 * kernel fails.  For q4_1 and q5_1 the CPU takes b as Q8_1, whose block sums it
 * rounds to f16 from the f32 scale; the kernel keeps them in f32 (NMSE up to 1.2e-6
 * from that alone, so their bound is 3e-6, still below the float kernels').  For the
 * K-quants and iq4_xs the CPU takes b as Q8_K (a scale per 256 values): about 2e-5 apart on
 * random b, 1e-14 on b that every format holds exactly (the _exact cases).
 */
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "testutil.h"
#include "vk-test-cases.h"

#pragma weak ggml_mul_mat
#pragma weak ggml_mul_mat_id
#pragma weak ggml_view_2d
#pragma weak ggml_add
#pragma weak ggml_scale_inplace

#define NEED(fn) do { if (!(fn)) return NULL; } while (0)
#define leaf vk_test_leaf

/* a [k, m, a2] times b [k, n, b2]: odd row counts (rows past the last workgroup's), K of 3 blocks
 * (blocks at every halfword offset of a 16-byte word), more blocks per row than threads */
VK_MUL_MAT_CASE(c_mvd_q4_0_n1, GGML_TYPE_Q4_0, 512, 37, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q4_0_k96, GGML_TYPE_Q4_0, 96, 45, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q4_0_n3, GGML_TYPE_Q4_0, 288, 19, 3, 2, 4)
VK_MUL_MAT_CASE(c_mvd_q4_0_n8, GGML_TYPE_Q4_0, 256, 53, 8, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q4_0_long, GGML_TYPE_Q4_0, 8224, 21, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q8_0_n1, GGML_TYPE_Q8_0, 1024, 41, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q8_0_k96, GGML_TYPE_Q8_0, 96, 33, 2, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q8_0_n5, GGML_TYPE_Q8_0, 160, 17, 5, 1, 3)
VK_MUL_MAT_CASE(c_mvd_q8_0_n8, GGML_TYPE_Q8_0, 256, 29, 8, 2, 2)
VK_MUL_MAT_CASE(c_mvd_q8_0_long, GGML_TYPE_Q8_0, 4640, 27, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q4_1_n1, GGML_TYPE_Q4_1, 512, 37, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q4_1_k96, GGML_TYPE_Q4_1, 96, 45, 2, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q4_1_n6, GGML_TYPE_Q4_1, 288, 19, 6, 2, 4)
VK_MUL_MAT_CASE(c_mvd_q5_0_n1, GGML_TYPE_Q5_0, 1024, 41, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q5_0_k96, GGML_TYPE_Q5_0, 96, 33, 3, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q5_0_n8, GGML_TYPE_Q5_0, 256, 29, 8, 2, 2)
VK_MUL_MAT_CASE(c_mvd_q5_1_n1, GGML_TYPE_Q5_1, 2080, 23, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q5_1_k96, GGML_TYPE_Q5_1, 96, 17, 4, 1, 3)
VK_MUL_MAT_CASE(c_mvd_q5_1_n7, GGML_TYPE_Q5_1, 160, 31, 7, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q4_K_n1, GGML_TYPE_Q4_K, 1024, 37, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q4_K_n5, GGML_TYPE_Q4_K, 768, 19, 5, 2, 4)
VK_MUL_MAT_CASE(c_mvd_q4_K_long, GGML_TYPE_Q4_K, 8448, 11, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q5_K_n1, GGML_TYPE_Q5_K, 1280, 23, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q5_K_n8, GGML_TYPE_Q5_K, 256, 29, 8, 1, 3)
VK_MUL_MAT_CASE(c_mvd_q6_K_n1, GGML_TYPE_Q6_K, 1024, 41, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q6_K_n3, GGML_TYPE_Q6_K, 768, 17, 3, 2, 2)
VK_MUL_MAT_CASE(c_mvd_q6_K_long, GGML_TYPE_Q6_K, 8448, 13, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q2_K_n1, GGML_TYPE_Q2_K, 1024, 37, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q2_K_n6, GGML_TYPE_Q2_K, 512, 21, 6, 2, 4)
VK_MUL_MAT_CASE(c_mvd_q3_K_n1, GGML_TYPE_Q3_K, 1280, 29, 1, 1, 1)
/* MXFP4's 17-byte blocks: K of 3 and 5 blocks puts blocks and rows at every byte offset of a 16-byte word */
VK_MUL_MAT_CASE(c_mvd_mxfp4_n1, GGML_TYPE_MXFP4, 512, 37, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_mxfp4_k96, GGML_TYPE_MXFP4, 96, 45, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_mxfp4_k160, GGML_TYPE_MXFP4, 160, 33, 3, 2, 4)
VK_MUL_MAT_CASE(c_mvd_mxfp4_n8, GGML_TYPE_MXFP4, 256, 29, 8, 1, 1)
VK_MUL_MAT_CASE(c_mvd_q3_K_n4, GGML_TYPE_Q3_K, 768, 15, 4, 1, 3)
VK_MUL_MAT_CASE(c_mvd_iq4_nl_n1, GGML_TYPE_IQ4_NL, 512, 37, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_iq4_nl_n5, GGML_TYPE_IQ4_NL, 288, 19, 5, 2, 4)
VK_MUL_MAT_CASE(c_mvd_iq4_xs_n1, GGML_TYPE_IQ4_XS, 1024, 37, 1, 1, 1)
VK_MUL_MAT_CASE(c_mvd_iq4_xs_n3, GGML_TYPE_IQ4_XS, 768, 17, 3, 2, 2)
/* k of an odd number of super-blocks (blocks) with odd row counts and several columns: q2_K, iq4_xs
 * (whose 136-byte super-blocks lie at both 8-byte offsets of a 16-byte word), MXFP4 (7 blocks) */
VK_MUL_MAT_CASE(c_mvd_q2_K_k768, GGML_TYPE_Q2_K, 768, 27, 3, 1, 1)
VK_MUL_MAT_CASE(c_mvd_iq4_xs_k1280, GGML_TYPE_IQ4_XS, 1280, 23, 2, 1, 1)
VK_MUL_MAT_CASE(c_mvd_mxfp4_k224, GGML_TYPE_MXFP4, 224, 31, 5, 1, 1)

/* b one float into its buffer (read 4 bytes at a time), a a view one block into its rows
 * (offset 18 bytes), and q8_0 rows of 6 blocks read 4 blocks at a time from the second */
static struct ggml_tensor *c_mvd_q4_0_offset_b(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    struct ggml_tensor *b = leaf(ctx, GGML_TYPE_F32, "b", 260, 3, 1, 1);
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a", 256, 23, 1, 1), ggml_view_2d(ctx, b, 256, 2, b->nb[1], sizeof(float)));
}
static struct ggml_tensor *c_mvd_q4_0_offset_a(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    struct ggml_tensor *a = leaf(ctx, GGML_TYPE_Q4_0, "a", 192, 13, 1, 1);
    return ggml_mul_mat(ctx, ggml_view_2d(ctx, a, 128, 13, a->nb[1], ggml_type_size(GGML_TYPE_Q4_0)), leaf(ctx, GGML_TYPE_F32, "b", 128, 1, 1, 1));
}
static struct ggml_tensor *c_mvd_q8_0_stride_a(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    struct ggml_tensor *a = leaf(ctx, GGML_TYPE_Q8_0, "a", 192, 11, 1, 1);
    return ggml_mul_mat(ctx, ggml_view_2d(ctx, a, 128, 11, a->nb[1], ggml_type_size(GGML_TYPE_Q8_0)), leaf(ctx, GGML_TYPE_F32, "b", 128, 2, 1, 1));
}

/* several products in one graph (one command buffer): each takes its own scratch memory for
 * its quantized b; the second product of a chain reads the first's output */
static struct ggml_tensor *c_mvd_two_in_graph(struct ggml_context *ctx) {
    NEED(ggml_mul_mat); NEED(ggml_add);
    struct ggml_tensor *x = ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a", 256, 40, 1, 1), leaf(ctx, GGML_TYPE_F32, "b", 256, 2, 1, 1));
    struct ggml_tensor *y = ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q8_0, "a2", 128, 40, 1, 1), leaf(ctx, GGML_TYPE_F32, "b2", 128, 2, 1, 1));
    return ggml_add(ctx, x, y);
}
static struct ggml_tensor *c_mvd_chain(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    struct ggml_tensor *x = ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q8_0, "a", 256, 64, 1, 1), leaf(ctx, GGML_TYPE_F32, "b", 256, 1, 1, 1));
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a2", 64, 29, 1, 1), x);
}

/* products sharing their activations quantize them once per graph: three products of one b;
 * views of b's first and last two columns are not the same activations; b scaled in place
 * between two products must be quantized again */
static struct ggml_tensor *c_mvd_shared_b(struct ggml_context *ctx) {
    NEED(ggml_mul_mat); NEED(ggml_add);
    struct ggml_tensor *b = leaf(ctx, GGML_TYPE_F32, "b", 256, 2, 1, 1);
    struct ggml_tensor *y1 = ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a1", 256, 40, 1, 1), b);
    struct ggml_tensor *y2 = ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q8_0, "a2", 256, 40, 1, 1), b);
    struct ggml_tensor *y3 = ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a3", 256, 40, 1, 1), b);
    return ggml_add(ctx, ggml_add(ctx, y1, y2), y3);
}
static struct ggml_tensor *c_mvd_shared_b_view(struct ggml_context *ctx) {
    NEED(ggml_mul_mat); NEED(ggml_add); NEED(ggml_view_2d);
    struct ggml_tensor *b = leaf(ctx, GGML_TYPE_F32, "b", 256, 3, 1, 1);
    struct ggml_tensor *first = ggml_view_2d(ctx, b, 256, 2, b->nb[1], 0), *last = ggml_view_2d(ctx, b, 256, 2, b->nb[1], b->nb[1]);
    struct ggml_tensor *y1 = ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q8_0, "a1", 256, 24, 1, 1), first);
    return ggml_add(ctx, y1, ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a2", 256, 24, 1, 1), last));
}
static struct ggml_tensor *c_mvd_shared_b_written(struct ggml_context *ctx) {
    NEED(ggml_mul_mat); NEED(ggml_add); NEED(ggml_scale_inplace);
    struct ggml_tensor *b = leaf(ctx, GGML_TYPE_F32, "b", 256, 2, 1, 1);
    struct ggml_tensor *y1 = ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a1", 256, 40, 1, 1), b);
    struct ggml_tensor *y2 = ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_0, "a2", 256, 40, 1, 1), ggml_scale_inplace(ctx, b, -3.0f));
    return ggml_add(ctx, y1, y2);
}

/* b of integers that every 8-bit activation format holds exactly (the "q8:" fill: scale 1 per block),
 * so that the kernel and the CPU (Q8_K for the K-quants, Q8_1 for q4_1 / q5_1) agree to float
 * rounding, not only to b's rounding: a wrong scale or offset of one sub-block shows. */
static struct ggml_tensor *exact_b(struct ggml_context *ctx, enum ggml_type type, int64_t k, int64_t m, int64_t n) {
    NEED(ggml_mul_mat);
    return ggml_mul_mat(ctx, leaf(ctx, type, "a", k, m, 1, 1), leaf(ctx, GGML_TYPE_F32, "q8:b", k, n, 1, 1));
}
static struct ggml_tensor *c_mvd_q4_K_exact(struct ggml_context *ctx) { return exact_b(ctx, GGML_TYPE_Q4_K, 1024, 37, 2); }
static struct ggml_tensor *c_mvd_q5_K_exact(struct ggml_context *ctx) { return exact_b(ctx, GGML_TYPE_Q5_K, 768, 23, 1); }
static struct ggml_tensor *c_mvd_q6_K_exact(struct ggml_context *ctx) { return exact_b(ctx, GGML_TYPE_Q6_K, 1280, 19, 3); }
static struct ggml_tensor *c_mvd_q2_K_exact(struct ggml_context *ctx) { return exact_b(ctx, GGML_TYPE_Q2_K, 768, 31, 2); }
static struct ggml_tensor *c_mvd_q3_K_exact(struct ggml_context *ctx) { return exact_b(ctx, GGML_TYPE_Q3_K, 1024, 27, 1); }
static struct ggml_tensor *c_mvd_q4_1_exact(struct ggml_context *ctx) { return exact_b(ctx, GGML_TYPE_Q4_1, 512, 29, 1); }
static struct ggml_tensor *c_mvd_q5_1_exact(struct ggml_context *ctx) { return exact_b(ctx, GGML_TYPE_Q5_1, 288, 31, 2); }
static struct ggml_tensor *c_mvd_iq4_nl_exact(struct ggml_context *ctx) { return exact_b(ctx, GGML_TYPE_IQ4_NL, 352, 29, 1); }
static struct ggml_tensor *c_mvd_iq4_xs_exact(struct ggml_context *ctx) { return exact_b(ctx, GGML_TYPE_IQ4_XS, 1280, 19, 2); }
static struct ggml_tensor *c_mvd_mxfp4_exact(struct ggml_context *ctx) { return exact_b(ctx, GGML_TYPE_MXFP4, 224, 31, 2); }

/* mul_mat_id with few tokens (the per-pair kernel): as [k, 19, n_as] routed by ids [n_used, tokens],
 * b with a row per slot or one for all (b_rows 1) */
static struct ggml_tensor *moe(struct ggml_context *ctx, enum ggml_type type, int64_t k, const char *b_fill, int64_t b_rows) {
    NEED(ggml_mul_mat_id);
    return ggml_mul_mat_id(ctx, leaf(ctx, type, "as", k, 19, 5, 1), leaf(ctx, GGML_TYPE_F32, b_fill, k, b_rows, 4, 1),
                           leaf(ctx, GGML_TYPE_I32, "idx5:ids", 3, 4, 1, 1));
}
static struct ggml_tensor *c_mvd_id_q4_0(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_Q4_0, 512, "b", 3); }
static struct ggml_tensor *c_mvd_id_q5_1_exact(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_Q5_1, 256, "q8:b", 1); }
static struct ggml_tensor *c_mvd_id_q8_0_bcast(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_Q8_0, 288, "b", 1); }
static struct ggml_tensor *c_mvd_id_q4_K(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_Q4_K, 512, "b", 3); }
static struct ggml_tensor *c_mvd_id_q4_K_exact(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_Q4_K, 768, "q8:b", 3); }
static struct ggml_tensor *c_mvd_id_q6_K_exact(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_Q6_K, 512, "q8:b", 1); }
static struct ggml_tensor *c_mvd_id_q2_K_exact(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_Q2_K, 256, "q8:b", 3); }
static struct ggml_tensor *c_mvd_id_iq4_nl(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_IQ4_NL, 512, "b", 3); }
static struct ggml_tensor *c_mvd_id_iq4_xs_exact(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_IQ4_XS, 512, "q8:b", 1); }
static struct ggml_tensor *c_mvd_id_mxfp4(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_MXFP4, 160, "b", 3); }

#define CASE(fn, err) {#fn + 2, fn, err, true}
static const struct vk_test_case cases[] = {
    CASE(c_mvd_q4_0_n1, 1e-6), CASE(c_mvd_q4_0_k96, 1e-6), CASE(c_mvd_q4_0_n3, 1e-6), CASE(c_mvd_q4_0_n8, 1e-6),
    CASE(c_mvd_q4_0_long, 1e-6), CASE(c_mvd_q8_0_n1, 1e-6), CASE(c_mvd_q8_0_k96, 1e-6), CASE(c_mvd_q8_0_n5, 1e-6),
    CASE(c_mvd_q8_0_n8, 1e-6), CASE(c_mvd_q8_0_long, 1e-6), CASE(c_mvd_q4_0_offset_b, 1e-6), CASE(c_mvd_q4_0_offset_a, 1e-6),
    CASE(c_mvd_q8_0_stride_a, 1e-6), CASE(c_mvd_two_in_graph, 1e-6), CASE(c_mvd_chain, 1e-6), CASE(c_mvd_shared_b, 1e-6),
    CASE(c_mvd_shared_b_view, 1e-6), CASE(c_mvd_shared_b_written, 1e-6), CASE(c_mvd_q4_1_n1, 3e-6), CASE(c_mvd_q4_1_k96, 3e-6),
    CASE(c_mvd_q4_1_n6, 3e-6), CASE(c_mvd_q5_0_n1, 1e-6), CASE(c_mvd_q5_0_k96, 1e-6), CASE(c_mvd_q5_0_n8, 1e-6),
    CASE(c_mvd_q5_1_n1, 3e-6), CASE(c_mvd_q5_1_k96, 3e-6), CASE(c_mvd_q5_1_n7, 3e-6), CASE(c_mvd_q4_K_n1, 1e-4),
    CASE(c_mvd_q4_K_n5, 1e-4), CASE(c_mvd_q4_K_long, 1e-4), CASE(c_mvd_q5_K_n1, 1e-4), CASE(c_mvd_q5_K_n8, 1e-4),
    CASE(c_mvd_q6_K_n1, 1e-4), CASE(c_mvd_q6_K_n3, 1e-4), CASE(c_mvd_q6_K_long, 1e-4), CASE(c_mvd_q4_K_exact, 1e-10),
    CASE(c_mvd_q5_K_exact, 1e-10), CASE(c_mvd_q6_K_exact, 1e-10), CASE(c_mvd_q4_1_exact, 1e-10), CASE(c_mvd_q5_1_exact, 1e-10),
    CASE(c_mvd_q2_K_n1, 1e-4), CASE(c_mvd_q2_K_n6, 1e-4), CASE(c_mvd_q3_K_n1, 1e-4), CASE(c_mvd_q3_K_n4, 1e-4),
    CASE(c_mvd_q2_K_exact, 1e-10), CASE(c_mvd_q3_K_exact, 1e-10), CASE(c_mvd_id_q4_0, 1e-6), CASE(c_mvd_id_q5_1_exact, 1e-10),
    CASE(c_mvd_id_q8_0_bcast, 1e-6), CASE(c_mvd_id_q4_K, 1e-4), CASE(c_mvd_id_q4_K_exact, 1e-10), CASE(c_mvd_id_q6_K_exact, 1e-10),
    CASE(c_mvd_id_q2_K_exact, 1e-10), CASE(c_mvd_iq4_nl_n1, 1e-6), CASE(c_mvd_iq4_nl_n5, 1e-6), CASE(c_mvd_iq4_xs_n1, 1e-4),
    CASE(c_mvd_iq4_xs_n3, 1e-4), CASE(c_mvd_iq4_nl_exact, 1e-10), CASE(c_mvd_iq4_xs_exact, 1e-10), CASE(c_mvd_id_iq4_nl, 1e-6),
    CASE(c_mvd_id_iq4_xs_exact, 1e-10), CASE(c_mvd_mxfp4_n1, 1e-6), CASE(c_mvd_mxfp4_k96, 1e-6), CASE(c_mvd_mxfp4_k160, 1e-6),
    CASE(c_mvd_mxfp4_n8, 1e-6), CASE(c_mvd_mxfp4_exact, 1e-10), CASE(c_mvd_id_mxfp4, 1e-6),
    CASE(c_mvd_q2_K_k768, 1e-4), CASE(c_mvd_iq4_xs_k1280, 1e-4), CASE(c_mvd_mxfp4_k224, 1e-6),
};

const struct vk_test_case *vk_test_cases_dot(size_t *n) {
    *n = sizeof cases / sizeof *cases;
    return cases;
}
