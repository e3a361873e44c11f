/*
 * vk-test-cases-quant.c - test-vulkan.c cases for K-quant, IQ4 and MXFP4 weights (Q2_K..Q6_K,
 * IQ4_NL, IQ4_XS, MXFP4: matrix-vector for n = 1, 3, 8, the tiled GEMM for n = 17, broadcast
 * batches, row-strided views, get_rows; MXFP4 also in rows of an odd number of bytes) and for
 * mul_mat_id (mixtures of experts: float weights, both block families, both kernels,
 * out-of-range ids).
 * The CPU reference quantizes the activations of quantized products (Q8_K or
 * Q8_0) while Vulkan keeps them f32, hence the 1e-4 NMSE bounds.
 */
#include <math.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlc.h"
#include "testutil.h"
#include "vk-test-cases.h"

#pragma weak ggml_mul_mat
#pragma weak ggml_get_rows
#pragma weak ggml_mul_mat_id
#pragma weak ggml_transpose
#pragma weak ggml_view_2d

#define NEED(fn) do { if (!(fn)) return NULL; } while (0)

#define leaf vk_test_leaf

/* ------------------------------------------------------- K-quant mul_mat */

/* a [512, 37] (two super-blocks per row, an odd row count) times b [512, n] */
#define KQ_MM(fn, type, n) \
    static struct ggml_tensor *fn(struct ggml_context *ctx) { \
        NEED(ggml_mul_mat); \
        return ggml_mul_mat(ctx, leaf(ctx, type, "a", 512, 37, 1, 1), leaf(ctx, GGML_TYPE_F32, "b", 512, n, 1, 1)); \
    }
/* a broadcast over b's dims 2 and 3 (ratios 2 and 3), n = 3 (mat-vec) or 19 (GEMM) */
#define KQ_BATCHED(fn, type, n) \
    static struct ggml_tensor *fn(struct ggml_context *ctx) { \
        NEED(ggml_mul_mat); \
        return ggml_mul_mat(ctx, leaf(ctx, type, "a", 256, 13, 2, 1), leaf(ctx, GGML_TYPE_F32, "b", 256, n, 4, 3)); \
    }
#define KQ_GET_ROWS(fn, type) \
    static struct ggml_tensor *fn(struct ggml_context *ctx) { \
        NEED(ggml_get_rows); \
        return ggml_get_rows(ctx, leaf(ctx, type, "a", 768, 11, 2, 1), leaf(ctx, GGML_TYPE_I32, "idx11:i", 5, 2, 1, 1)); \
    }
#define KQ_TYPE(t, T) \
    KQ_MM(c_mv_##t##_n1, GGML_TYPE_##T, 1) \
    KQ_MM(c_mv_##t##_n3, GGML_TYPE_##T, 3) \
    KQ_MM(c_mv_##t##_n8, GGML_TYPE_##T, 8) \
    KQ_MM(c_mm_##t##_n17, GGML_TYPE_##T, 17) \
    KQ_BATCHED(c_mv_##t##_batched, GGML_TYPE_##T, 3) \
    KQ_BATCHED(c_mm_##t##_batched, GGML_TYPE_##T, 19) \
    KQ_GET_ROWS(c_get_rows_##t, GGML_TYPE_##T)
KQ_TYPE(q2_K, Q2_K)
KQ_TYPE(q3_K, Q3_K)
KQ_TYPE(q4_K, Q4_K)
KQ_TYPE(q5_K, Q5_K)
KQ_TYPE(q6_K, Q6_K)
KQ_TYPE(iq4_nl, IQ4_NL) /* the non-linear 4-bit formats, 32-value blocks and 256-value super-blocks */
KQ_TYPE(iq4_xs, IQ4_XS)
KQ_TYPE(mxfp4, MXFP4) /* 17-byte blocks, read as bytes */

/* MXFP4 rows of an odd number of blocks, so of bytes: rows start on odd bytes */
static struct ggml_tensor *mxfp4_odd(struct ggml_context *ctx, int64_t k, int64_t n) {
    NEED(ggml_mul_mat);
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_MXFP4, "a", k, 29, 1, 1), leaf(ctx, GGML_TYPE_F32, "b", k, n, 1, 1));
}
static struct ggml_tensor *c_mv_mxfp4_odd_n1(struct ggml_context *ctx) { return mxfp4_odd(ctx, 96, 1); }
static struct ggml_tensor *c_mv_mxfp4_odd_n5(struct ggml_context *ctx) { return mxfp4_odd(ctx, 224, 5); }
static struct ggml_tensor *c_mm_mxfp4_odd_n17(struct ggml_context *ctx) { return mxfp4_odd(ctx, 224, 17); }
static struct ggml_tensor *c_mm_mxfp4_odd_n40(struct ggml_context *ctx) { return mxfp4_odd(ctx, 96, 40); }
static struct ggml_tensor *c_get_rows_mxfp4_odd(struct ggml_context *ctx) {
    NEED(ggml_get_rows);
    return ggml_get_rows(ctx, leaf(ctx, GGML_TYPE_MXFP4, "a", 160, 11, 2, 1), leaf(ctx, GGML_TYPE_I32, "idx11:i", 5, 2, 1, 1));
}

/* every other row of a [256, 2 * rows] K-quant matrix: a row stride of two rows */
static struct ggml_tensor *kq_row_view(struct ggml_context *ctx, enum ggml_type type, int64_t rows, int64_t n) {
    NEED(ggml_mul_mat);
    NEED(ggml_view_2d);
    struct ggml_tensor *a = leaf(ctx, type, "a", 256, 2 * rows, 1, 1);
    if (!a) return NULL;
    struct ggml_tensor *every_other = ggml_view_2d(ctx, a, 256, rows, 2 * a->nb[1], a->nb[1]);
    return ggml_mul_mat(ctx, every_other, leaf(ctx, GGML_TYPE_F32, "b", 256, n, 1, 1));
}
static struct ggml_tensor *c_mv_q6_K_row_view(struct ggml_context *ctx) { return kq_row_view(ctx, GGML_TYPE_Q6_K, 11, 2); }
static struct ggml_tensor *c_mm_q4_K_row_view(struct ggml_context *ctx) { return kq_row_view(ctx, GGML_TYPE_Q4_K, 11, 20); }

/* f16 activations with K-quant weights: the tiled kernel reading f16 */
static struct ggml_tensor *c_mm_q4_K_f16(struct ggml_context *ctx) {
    NEED(ggml_mul_mat);
    return ggml_mul_mat(ctx, leaf(ctx, GGML_TYPE_Q4_K, "a", 256, 8, 1, 1), leaf(ctx, GGML_TYPE_F16, "b", 256, 4, 1, 1));
}

/* ------------------------------------------------------------ mul_mat_id */

/* as [k, 19, n_as] routed by ids [n_used, tokens] (values idx<N>: experts N.. unused,
 * repeats within a token likely); b has one row per slot, or one for all (b_rows 1).
 * Up to 8 tokens take the matrix-vector kernel, more the GEMM. */
static struct ggml_tensor *moe(struct ggml_context *ctx, enum ggml_type type, int64_t k, int64_t rows, int64_t n_as, const char *ids_fill,
                               int64_t n_used, int64_t b_rows, int64_t tokens) {
    NEED(ggml_mul_mat_id);
    return ggml_mul_mat_id(ctx, leaf(ctx, type, "as", k, rows, n_as, 1), leaf(ctx, GGML_TYPE_F32, "b", k, b_rows, tokens, 1),
                           leaf(ctx, GGML_TYPE_I32, ids_fill, n_used, tokens, 1, 1));
}
static struct ggml_tensor *c_mul_mat_id_f32_n1(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_F32, 67, 37, 6, "idx4:ids", 3, 3, 1); }
static struct ggml_tensor *c_mul_mat_id_f32_mv(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_F32, 67, 37, 6, "idx4:ids", 3, 3, 5); }
static struct ggml_tensor *c_mul_mat_id_f16_bcast(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_F16, 96, 33, 4, "uniq4:ids", 2, 1, 7); }
static struct ggml_tensor *c_mul_mat_id_bf16_mm(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_BF16, 40, 21, 3, "idx3:ids", 2, 2, 17); }
/* about 150 pairs per used expert: several full tiles of pairs plus a partial one */
static struct ggml_tensor *c_mul_mat_id_f32_mm(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_F32, 67, 45, 4, "idx2:ids", 2, 2, 150); }
static struct ggml_tensor *c_mul_mat_id_f16_mm_bcast(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_F16, 64, 70, 8, "uniq8:ids", 4, 1, 33); }
/* ids as a transposed view: strides along both dims */
static struct ggml_tensor *c_mul_mat_id_ids_view(struct ggml_context *ctx) {
    NEED(ggml_mul_mat_id);
    NEED(ggml_transpose);
    struct ggml_tensor *ids = ggml_transpose(ctx, leaf(ctx, GGML_TYPE_I32, "idx5:ids", 12, 3, 1, 1));
    return ggml_mul_mat_id(ctx, leaf(ctx, GGML_TYPE_F32, "as", 32, 29, 5, 1), leaf(ctx, GGML_TYPE_F32, "b", 32, 3, 12, 1), ids);
}
/* The decoders are those mul_mat uses (tested above), so only a few types here: each
 * one is a pipeline more for lavapipe to compile (up to a second each). */
#define MOE_MV(t, T) \
    static struct ggml_tensor *c_mul_mat_id_##t##_mv(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_##T, 256, 19, 5, "idx4:ids", 3, 3, 4); }
#define MOE_MM(t, T) \
    static struct ggml_tensor *c_mul_mat_id_##t##_mm(struct ggml_context *ctx) { return moe(ctx, GGML_TYPE_##T, 256, 19, 5, "idx3:ids", 2, 1, 40); }
MOE_MV(q4_0, Q4_0)
MOE_MM(q8_0, Q8_0)
MOE_MV(q4_K, Q4_K)
MOE_MM(q4_K, Q4_K)
MOE_MM(q6_K, Q6_K)
MOE_MV(iq4_xs, IQ4_XS)
MOE_MM(iq4_nl, IQ4_NL)
MOE_MV(mxfp4, MXFP4) /* the experts of gpt-oss-like models */
MOE_MM(mxfp4, MXFP4)

/* dequantizing copies and out_prod of the non-linear formats */
static struct ggml_tensor *c_cpy_iq4_nl_f32(struct ggml_context *ctx) {
    return ggml_cpy(ctx, leaf(ctx, GGML_TYPE_IQ4_NL, "a", 64, 5, 3, 1), leaf(ctx, GGML_TYPE_F32, "d", 64, 5, 3, 1));
}
static struct ggml_tensor *c_cpy_iq4_xs_f32(struct ggml_context *ctx) {
    return ggml_cpy(ctx, leaf(ctx, GGML_TYPE_IQ4_XS, "a", 512, 3, 1, 1), leaf(ctx, GGML_TYPE_F32, "d", 512, 3, 1, 1));
}
static struct ggml_tensor *c_cpy_mxfp4_f32(struct ggml_context *ctx) {
    return ggml_cpy(ctx, leaf(ctx, GGML_TYPE_MXFP4, "a", 96, 5, 3, 1), leaf(ctx, GGML_TYPE_F32, "d", 96, 5, 3, 1));
}
static struct ggml_tensor *c_out_prod_mxfp4(struct ggml_context *ctx) {
    return ggml_out_prod(ctx, leaf(ctx, GGML_TYPE_MXFP4, "a", 96, 7, 1, 1), leaf(ctx, GGML_TYPE_F32, "b", 19, 7, 1, 1));
}
static struct ggml_tensor *c_out_prod_iq4_xs(struct ggml_context *ctx) {
    return ggml_out_prod(ctx, leaf(ctx, GGML_TYPE_IQ4_XS, "a", 256, 7, 1, 1), leaf(ctx, GGML_TYPE_F32, "b", 19, 7, 1, 1));
}
/* f16 activations have no kernel: declined */
static struct ggml_tensor *c_mul_mat_id_f16_b_declined(struct ggml_context *ctx) {
    NEED(ggml_mul_mat_id);
    return ggml_mul_mat_id(ctx, leaf(ctx, GGML_TYPE_F16, "as", 32, 8, 3, 1), leaf(ctx, GGML_TYPE_F16, "b", 32, 2, 4, 1),
                           leaf(ctx, GGML_TYPE_I32, "idx3:ids", 2, 4, 1, 1));
}

#define CASE(fn, err) {#fn + 2, fn, err, true}
#define KQ_CASES(t) \
    CASE(c_mv_##t##_n1, 1e-4), CASE(c_mv_##t##_n3, 1e-4), CASE(c_mv_##t##_n8, 1e-4), CASE(c_mm_##t##_n17, 1e-4), \
    CASE(c_mv_##t##_batched, 1e-4), CASE(c_mm_##t##_batched, 1e-4), CASE(c_get_rows_##t, 1e-12)
static const struct vk_test_case cases[] = {
    KQ_CASES(q2_K), KQ_CASES(q3_K), KQ_CASES(q4_K), KQ_CASES(q5_K), KQ_CASES(q6_K), KQ_CASES(iq4_nl), KQ_CASES(iq4_xs),
    KQ_CASES(mxfp4), CASE(c_mv_mxfp4_odd_n1, 1e-4), CASE(c_mv_mxfp4_odd_n5, 1e-4), CASE(c_mm_mxfp4_odd_n17, 1e-4),
    CASE(c_mm_mxfp4_odd_n40, 1e-4), CASE(c_get_rows_mxfp4_odd, 0), CASE(c_mul_mat_id_mxfp4_mv, 1e-4),
    CASE(c_mul_mat_id_mxfp4_mm, 1e-4), CASE(c_cpy_mxfp4_f32, 0), CASE(c_out_prod_mxfp4, 1e-10),
    CASE(c_mul_mat_id_iq4_xs_mv, 1e-4), CASE(c_mul_mat_id_iq4_nl_mm, 1e-4), CASE(c_cpy_iq4_nl_f32, 0), CASE(c_cpy_iq4_xs_f32, 0),
    CASE(c_out_prod_iq4_xs, 1e-10),
    CASE(c_mv_q6_K_row_view, 1e-4), CASE(c_mm_q4_K_row_view, 1e-4),
    CASE(c_mm_q4_K_f16, 1e-4),
    CASE(c_mul_mat_id_f32_n1, 1e-10), CASE(c_mul_mat_id_f32_mv, 1e-10), CASE(c_mul_mat_id_f16_bcast, VK_TOL_F16_ACT),
    CASE(c_mul_mat_id_bf16_mm, VK_TOL_BF16_ACT), CASE(c_mul_mat_id_f32_mm, 1e-10), CASE(c_mul_mat_id_f16_mm_bcast, VK_TOL_F16_ACT),
    CASE(c_mul_mat_id_ids_view, 1e-10),
    CASE(c_mul_mat_id_q4_0_mv, 1e-4), CASE(c_mul_mat_id_q8_0_mm, 1e-4), CASE(c_mul_mat_id_q4_K_mv, 1e-4),
    CASE(c_mul_mat_id_q4_K_mm, 1e-4), CASE(c_mul_mat_id_q6_K_mm, 1e-4),
    {"mul_mat_id_f16_b_declined", c_mul_mat_id_f16_b_declined, 0, false},
};

const struct vk_test_case *vk_test_cases_quant(size_t *n) {
    *n = sizeof cases / sizeof *cases;
    return cases;
}

/* ------------------------------------- mul_mat_id with out-of-range ids */

/* Some ids outside [0, n_as) (-1, n_as): the graph fails as on the CPU backend, with
 * GGMLC_ERR_INVALID_ARG naming MUL_MAT_ID (the kernels report them, tests/test-index-bounds.c
 * checks the message); with the ids brought into range the product is right, checked against
 * one computed here, for the matrix-vector (3 tokens) and the GEMM (12 tokens) kernels. */
static void check_bad_ids(ggml_backend_t backend, int64_t tokens) {
    enum { K = 32, ROWS = 9, N_AS = 3, N_USED = 2 };
    struct ggml_init_params ip = {.mem_size = 8 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *as = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, ROWS, N_AS);
    struct ggml_tensor *b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, N_USED, tokens);
    struct ggml_tensor *ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, N_USED, tokens);
    struct ggml_tensor *out = ggml_mul_mat_id(ctx, as, b, ids);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    if (!ggml_backend_supports_op(backend, out)) {
        tap_ok(false, "mul_mat_id with %lld tokens is supported", (long long)tokens);
        ggml_free(ctx);
        return;
    }
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    float va[K * ROWS * N_AS], vb[K * N_USED * 12], vout[ROWS * N_USED * 12];
    int32_t vids[N_USED * 12];
    for (int i = 0; i < K * ROWS * N_AS; i++) va[i] = test_uniform(-1.0f, 1.0f);
    for (int i = 0; i < K * N_USED * tokens; i++) vb[i] = test_uniform(-1.0f, 1.0f);
    for (int i = 0; i < N_USED * tokens; i++) vids[i] = i % 4 == 1 ? -1 : i % 5 == 2 ? N_AS : (i * 7) % N_AS;
    ggml_backend_tensor_set(as, va, 0, sizeof va);
    ggml_backend_tensor_set(b, vb, 0, (size_t)(K * N_USED * tokens) * sizeof(float));
    ggml_backend_tensor_set(ids, vids, 0, (size_t)(N_USED * tokens) * sizeof(int32_t));
    for (int i = 0; i < ROWS * N_USED * tokens; i++) vout[i] = NAN; /* rows left unwritten stay NaN */
    ggml_backend_tensor_set(out, vout, 0, (size_t)(ROWS * N_USED * tokens) * sizeof(float));
    const bool refused = ggml_backend_graph_compute(backend, g) == GGML_STATUS_FAILED &&
                         ggmlc_last_status() == GGMLC_ERR_INVALID_ARG && strstr(ggmlc_last_error(), "MUL_MAT_ID");
    tap_ok(refused, "mul_mat_id, %lld tokens: out-of-range expert ids fail the graph (%s)", (long long)tokens, ggmlc_last_error());
    for (int i = 0; i < N_USED * tokens; i++) vids[i] = (vids[i] % N_AS + N_AS) % N_AS;
    ggml_backend_tensor_set(ids, vids, 0, (size_t)(N_USED * tokens) * sizeof(int32_t));
    const bool computed = ggml_backend_graph_compute(backend, g) == GGML_STATUS_SUCCESS;
    double worst = computed ? 0.0 : INFINITY;
    if (computed) ggml_backend_tensor_get(out, vout, 0, (size_t)(ROWS * N_USED * tokens) * sizeof(float));
    for (int pair = 0; computed && pair < N_USED * tokens; pair++) {
        const int e = vids[pair];
        for (int m = 0; m < ROWS; m++) {
            double want = 0.0;
            for (int k = 0; e >= 0 && e < N_AS && k < K; k++) want += (double)va[(e * ROWS + m) * K + k] * vb[pair * K + k];
            const double err = fabs(vout[pair * ROWS + m] - want);
            if (isnan(err) || err > worst) worst = isnan(worst) ? worst : err; /* a NaN stays */
        }
    }
    tap_ok(worst <= 1e-5, "mul_mat_id, %lld tokens: with the ids in range, every row right (max error %.3g)",
           (long long)tokens, worst);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

void vk_check_moe_bad_ids(ggml_backend_t backend) {
    if (!ggml_mul_mat_id) return;
    check_bad_ids(backend, 3);
    check_bad_ids(backend, 12);
}
