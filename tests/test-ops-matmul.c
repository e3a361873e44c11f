/*
 * test-ops-matmul.c - mul_mat, mul_mat_id and out_prod on the CPU backend
 * against golden results from PyTorch (tests/golden/gen_matmul.py), and the
 * constructors' shape and type errors.  Inputs come from test_pattern(), the
 * same integer hash the generator uses; its values are exact in f16 and bf16.
 */
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

static struct gold_set *gold;

/* Fill t (ggml order, any type and layout) with gen_matmul.py's pattern(). */
static void test_pattern(struct ggml_tensor *t, int seed, double scale) {
    const int64_t n = ggml_nelements(t);
    float *v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        const uint64_t h = ((uint64_t)i * 2654435761ull + (uint64_t)seed * 40503ull) & 0xffffffffull;
        v[i] = (float)(((int64_t)((h >> 8) % 255) - 127) * scale);
    }
    tensor_set_f32(t, v);
    free(v);
}

static struct ggml_context *new_ctx(void) {
    return ggml_init((struct ggml_init_params){64 << 20, NULL, false});
}

/* Compute out with 2 threads and compare with the golden tensor `name`. */
static void check_result(struct ggml_context *ctx, struct ggml_tensor *out, const char *name, double max_nmse) {
    const struct gold_tensor *g = gold_get(gold, name);
    if (!out || !g) {
        tap_ok(false, "%s: %s", name, out ? "no golden data" : ggmlc_last_error());
        return;
    }
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    const enum ggml_status st = ggml_graph_compute_with_ctx(ctx, gf, 2);
    bool same_shape = true;
    for (int i = 0; i < 4; i++) same_shape = same_shape && out->ne[i] == g->ne[i];
    if (st != GGML_STATUS_SUCCESS || !same_shape) {
        tap_ok(false, "%s: status %d, shape [%lld %lld %lld %lld]", name, (int)st, (long long)out->ne[0],
               (long long)out->ne[1], (long long)out->ne[2], (long long)out->ne[3]);
        return;
    }
    float *res = malloc(g->n * sizeof(float));
    tensor_get_f32(out, res);
    ok_nmse(res, g->data, g->n, max_nmse, "%s", name);
    free(res);
}

/* mul_mat of fresh a [ane] (type at) and b [bne] (type bt) filled with the pattern. */
static void check_mul_mat(const char *name, enum ggml_type at, const int64_t ane[4], int aseed, double ascale,
                          enum ggml_type bt, const int64_t bne[4], int bseed) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *a = ggml_new_tensor_4d(ctx, at, ane[0], ane[1], ane[2], ane[3]);
    struct ggml_tensor *b = ggml_new_tensor_4d(ctx, bt, bne[0], bne[1], bne[2], bne[3]);
    test_pattern(a, aseed, ascale);
    test_pattern(b, bseed, 1.0 / 64);
    check_result(ctx, ggml_mul_mat(ctx, a, b), name, 1e-10);
    ggml_free(ctx);
}

#define NE(...) ((const int64_t[4]){__VA_ARGS__})

/* Products large enough to be split between threads (a team for one product, whole
 * products per thread for many), against plain double loops over the same inputs. */
static void check_threaded(const char *what, const int64_t ane[4], const int64_t bne[4]) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, ane[0], ane[1], ane[2], ane[3]);
    struct ggml_tensor *b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, bne[0], bne[1], bne[2], bne[3]);
    test_pattern(a, 51, 1 / 64.0);
    test_pattern(b, 52, 1 / 64.0);
    struct ggml_tensor *out = ggml_mul_mat(ctx, a, b);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    if (!tap_ok(ggml_graph_compute_with_ctx(ctx, gf, 2) == GGML_STATUS_SUCCESS, "%s computes", what)) {
        ggml_free(ctx);
        return;
    }
    const int64_t n = ane[1], m = bne[1], k = ane[0], r2 = bne[2] / ane[2], r3 = bne[3] / ane[3];
    const size_t count = (size_t)ggml_nelements(out);
    float *ref = malloc(count * sizeof(float)), *res = malloc(count * sizeof(float));
    const float *av = a->data, *bv = b->data;
    for (int64_t i3 = 0; i3 < bne[3]; i3++)
        for (int64_t i2 = 0; i2 < bne[2]; i2++) {
            const float *am = av + ((i3 / r3) * ane[2] + i2 / r2) * n * k, *bm = bv + (i3 * bne[2] + i2) * m * k;
            float *om = ref + (i3 * bne[2] + i2) * m * n;
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double acc = 0;
                    for (int64_t q = 0; q < k; q++) acc += (double)am[j * k + q] * bm[i * k + q];
                    om[i * n + j] = (float)acc;
                }
        }
    tensor_get_f32(out, res);
    ok_nmse(res, ref, count, 1e-10, "%s matches double loops", what);
    free(ref);
    free(res);
    ggml_free(ctx);
}

/* Two float mat-vecs in a row on 3 threads, the second reading the first's output: shared
 * tasks of the second must start only when every task of the first is complete. */
static void check_matvec_chain(void) {
    enum { K = 515, H = 263, N = 199 };
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *w1 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, H);
    struct ggml_tensor *w2 = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, H, N);
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, 1);
    test_pattern(w1, 61, 1 / 64.0);
    test_pattern(w2, 62, 1 / 64.0);
    test_pattern(x, 63, 1 / 64.0);
    struct ggml_tensor *out = ggml_mul_mat(ctx, w2, ggml_mul_mat(ctx, w1, x));
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    if (tap_ok(ggml_graph_compute_with_ctx(ctx, gf, 3) == GGML_STATUS_SUCCESS, "f32 then f16 mat-vec computes")) {
        static float w1v[K * H], w2v[H * N], xv[K], res[N];
        double h[H];
        float ref[N];
        tensor_get_f32(w1, w1v);
        tensor_get_f32(w2, w2v);
        tensor_get_f32(x, xv);
        for (int j = 0; j < H; j++) {
            h[j] = 0;
            for (int q = 0; q < K; q++) h[j] += (double)w1v[j * K + q] * xv[q];
        }
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int q = 0; q < H; q++) acc += (double)w2v[j * H + q] * (double)(float)h[q];
            ref[j] = (float)acc;
        }
        tensor_get_f32(out, res);
        ok_nmse(res, ref, N, 1e-6, "f32 then f16 mat-vec on 3 threads matches double loops");
    }
    ggml_free(ctx);
}

static void test_mul_mat(void) {
    const enum ggml_type F32 = GGML_TYPE_F32, F16 = GGML_TYPE_F16, BF16 = GGML_TYPE_BF16;
    check_mul_mat("mm_f32", F32, NE(65, 33, 1, 1), 1, 1 / 64.0, F32, NE(65, 7, 1, 1), 2);
    check_mul_mat("mm_f32_blocks", F32, NE(300, 130, 1, 1), 3, 1 / 64.0, F32, NE(300, 77, 1, 1), 4);
    check_mul_mat("mm_f16", F16, NE(129, 65, 1, 1), 5, 1 / 64.0, F32, NE(129, 127, 1, 1), 6);
    check_mul_mat("mm_bf16", BF16, NE(127, 33, 1, 1), 7, 1 / 64.0, F32, NE(127, 20, 1, 1), 8);
    check_mul_mat("mm_vec", F32, NE(1000, 127, 1, 1), 9, 1 / 64.0, F32, NE(1000, 1, 1, 1), 10);
    check_mul_mat("mm_vec3_f16", F16, NE(1000, 61, 1, 1), 11, 1 / 64.0, F32, NE(1000, 3, 1, 1), 12);
    check_mul_mat("mm_batch", F32, NE(33, 17, 2, 3), 13, 1 / 64.0, F32, NE(33, 9, 4, 6), 14);
    check_mul_mat("mm_batch_bf16", BF16, NE(40, 12, 1, 2), 15, 1 / 64.0, F32, NE(40, 65, 3, 2), 16);
    check_mul_mat("mm_large", F32, NE(64, 48, 1, 1), 17, 64.0, F32, NE(64, 40, 1, 1), 18);
    check_mul_mat("mm_b_f16", F32, NE(33, 18, 1, 1), 19, 1 / 64.0, F16, NE(33, 10, 1, 1), 20);

    /* non-contiguous operands: a is a column range of a wider buffer, b a transposed view */
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *a_big = ggml_new_tensor_2d(ctx, F32, 50, 19);
    struct ggml_tensor *bt = ggml_new_tensor_2d(ctx, F32, 13, 45);
    test_pattern(a_big, 21, 1 / 64.0);
    test_pattern(bt, 22, 1 / 64.0);
    struct ggml_tensor *a = ggml_view_2d(ctx, a_big, 45, 19, a_big->nb[1], 0);
    check_result(ctx, ggml_mul_mat(ctx, a, ggml_transpose(ctx, bt)), "mm_views", 1e-10);
    ggml_free(ctx);

    check_threaded("one product split by a team of 2 threads", NE(300, 200, 1, 1), NE(300, 150, 1, 1));
    check_threaded("12 products shared by 2 threads", NE(256, 64, 2, 1), NE(256, 80, 4, 3));
    check_threaded("3 products each split over 2 threads", NE(200, 130, 1, 1), NE(200, 70, 3, 1));
    /* one weight matrix over batches of rows: computed as one product of all the rows */
    check_threaded("2-D weights times 5 x 2 batches of 37 rows (one team product)", NE(130, 100, 1, 1),
                   NE(130, 37, 5, 2));
    check_threaded("2-D weights times 4 batches of 5 rows (one product, GEMM not dot path)", NE(33, 17, 1, 1),
                   NE(33, 5, 4, 1));
    check_threaded("2-D weights times 3 batches of 2 rows (one product, dot path)", NE(65, 40, 1, 1), NE(65, 2, 3, 1));
    /* float mat-vecs: tasks taken by whichever thread comes first (mul_mat_tasks_free) */
    check_threaded("mat-vec of 131 rows, k 777, shared tasks", NE(777, 131, 1, 1), NE(777, 1, 1, 1));
    check_threaded("3 mat-vecs of 257 rows each split over 2 threads, shared tasks", NE(301, 257, 3, 1),
                   NE(301, 1, 3, 1));
    check_matvec_chain();
}

/* out_prod(W, transpose(g)) with W [n, K] shared by the batches of g [K, T, B] (the gradient
 * of a linear layer's input over a batch of sequences), whose batches continue each other:
 * one product.  Against double loops. */
static void check_out_prod_flat(int64_t n, int64_t K, int64_t T, int64_t B) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, K);
    struct ggml_tensor *g = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, T, B);
    test_pattern(w, 61, 1 / 64.0);
    test_pattern(g, 62, 1 / 64.0);
    struct ggml_tensor *out = ggml_out_prod(ctx, w, ggml_transpose(ctx, g));
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    if (!tap_ok(out && ggml_graph_compute_with_ctx(ctx, gf, 2) == GGML_STATUS_SUCCESS, "out_prod %lld x %lld by %lld x %lld x %lld computes",
                (long long)n, (long long)K, (long long)K, (long long)T, (long long)B)) {
        ggml_free(ctx);
        return;
    }
    const size_t count = (size_t)(n * T * B);
    float *ref = malloc(count * sizeof(float)), *res = malloc(count * sizeof(float));
    const float *wv = w->data, *gv = g->data;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t i = 0; i < n; i++) {
                double acc = 0;
                for (int64_t q = 0; q < K; q++) acc += (double)wv[q * n + i] * gv[(b * T + t) * K + q];
                ref[(b * T + t) * n + i] = (float)acc;
            }
    tensor_get_f32(out, res);
    ok_nmse(res, ref, count, 1e-10, "out_prod of 2-D W and %lld transposed batches matches double loops", (long long)B);
    free(ref);
    free(res);
    ggml_free(ctx);
}

static void check_out_prod(const char *name, enum ggml_type at, const int64_t ane[4], int aseed, const int64_t bne[4],
                           int bseed, bool b_transposed) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *a = ggml_new_tensor_4d(ctx, at, ane[0], ane[1], ane[2], ane[3]);
    struct ggml_tensor *b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, bne[0], bne[1], bne[2], bne[3]);
    test_pattern(a, aseed, 1 / 64.0);
    test_pattern(b, bseed, 1 / 64.0);
    check_result(ctx, ggml_out_prod(ctx, a, b_transposed ? ggml_transpose(ctx, b) : b), name, 1e-10);
    ggml_free(ctx);
}

static void test_out_prod(void) {
    check_out_prod("op_f32", GGML_TYPE_F32, NE(17, 29, 1, 1), 31, NE(13, 29, 1, 1), 32, false);
    check_out_prod("op_batch", GGML_TYPE_F32, NE(17, 29, 2, 1), 33, NE(13, 29, 4, 3), 34, false);
    check_out_prod("op_bT", GGML_TYPE_F32, NE(20, 37, 1, 1), 35, NE(37, 11, 1, 1), 36, true);
    check_out_prod("op_f16", GGML_TYPE_F16, NE(70, 33, 1, 1), 37, NE(9, 33, 1, 1), 38, false);
    check_out_prod_flat(130, 67, 41, 5); /* team mode */
    check_out_prod_flat(9, 13, 7, 3);
}

static void check_mul_mat_id(const char *name, const char *ids_name, enum ggml_type at, const int64_t ane[4], int aseed,
                             const int64_t bne[4], int bseed) {
    struct ggml_context *ctx = new_ctx();
    const struct gold_tensor *gi = gold_get(gold, ids_name);
    if (!gi) {
        tap_ok(false, "%s: no ids", name);
        ggml_free(ctx);
        return;
    }
    struct ggml_tensor *as = ggml_new_tensor_3d(ctx, at, ane[0], ane[1], ane[2]);
    struct ggml_tensor *b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, bne[0], bne[1], bne[2]);
    test_pattern(as, aseed, 1 / 64.0);
    test_pattern(b, bseed, 1 / 64.0);
    struct ggml_tensor *ids = gold_new_tensor(ctx, gi);
    check_result(ctx, ggml_mul_mat_id(ctx, as, b, ids), name, 1e-10);
    ggml_free(ctx);
}

static void test_mul_mat_id(void) {
    check_mul_mat_id("id_f32", "id_ids", GGML_TYPE_F32, NE(40, 23, 4, 1), 41, NE(40, 2, 5, 1), 42);
    check_mul_mat_id("id_bcast_f16", "id1_ids", GGML_TYPE_F16, NE(64, 35, 5, 1), 43, NE(64, 1, 6, 1), 44);

    /* an expert id out of range fails the computation instead of reading past as */
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *as = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 4, 2);
    struct ggml_tensor *b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 1, 3);
    struct ggml_tensor *ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 1, 3);
    test_pattern(as, 1, 1 / 64.0);
    test_pattern(b, 2, 1 / 64.0);
    const int32_t bad[3] = {0, 7, 1};
    memcpy(ids->data, bad, sizeof bad);
    struct ggml_tensor *out = ggml_mul_mat_id(ctx, as, b, ids);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    tap_ok(ggml_graph_compute_with_ctx(ctx, gf, 2) != GGML_STATUS_SUCCESS, "mul_mat_id with an expert id out of range fails");
    ggml_free(ctx);
}

/* Quantized weights: the product must match a double-precision product of the
 * dequantized weights (the activations are quantized on the fly, hence the
 * looser bound); skipped for types without CPU kernels. */
static void check_quantized(enum ggml_type type, int64_t k, int64_t n, int64_t m) {
    if (!ggml_get_type_traits_cpu(type)->vec_dot) {
        tap_skip("no CPU vec_dot for this type yet", "mul_mat with %s weights", ggml_type_name(type));
        return;
    }
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, type, k, n);
    struct ggml_tensor *b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, m);
    float *wf = malloc((size_t)(k * n) * sizeof(float)), *xf = malloc((size_t)(k * m) * sizeof(float));
    test_seed(77);
    test_fill_uniform(wf, (size_t)(k * n), -1.0f, 1.0f);
    test_fill_uniform(xf, (size_t)(k * m), -1.0f, 1.0f);
    ggml_quantize_chunk(type, wf, a->data, 0, n, k, NULL);
    ggml_get_type_traits(type)->to_float(a->data, wf, k * n); /* the weights as stored */
    memcpy(b->data, xf, (size_t)(k * m) * sizeof(float));
    float *ref = malloc((size_t)(n * m) * sizeof(float)), *res = malloc((size_t)(n * m) * sizeof(float));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t q = 0; q < k; q++) acc += (double)wf[j * k + q] * xf[i * k + q];
            ref[i * n + j] = (float)acc;
        }
    struct ggml_tensor *out = ggml_mul_mat(ctx, a, b);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    if (tap_ok(ggml_graph_compute_with_ctx(ctx, gf, 2) == GGML_STATUS_SUCCESS, "mul_mat %s [%lld,%lld] x [%lld,%lld] computes",
               ggml_type_name(type), (long long)k, (long long)n, (long long)k, (long long)m)) {
        tensor_get_f32(out, res);
        ok_nmse(res, ref, (size_t)(n * m), 1e-4, "mul_mat %s matches the dequantized product", ggml_type_name(type));
    }
    free(wf);
    free(xf);
    free(ref);
    free(res);
    ggml_free(ctx);
}

/* A quantized tensor of shape ne filled from uniform values; wf gets the values as stored. */
static struct ggml_tensor *new_quantized(struct ggml_context *ctx, enum ggml_type type, const int64_t ne[3], float *wf) {
    struct ggml_tensor *t = ggml_new_tensor_3d(ctx, type, ne[0], ne[1], ne[2]);
    const int64_t n = ggml_nelements(t);
    test_fill_uniform(wf, (size_t)n, -1.0f, 1.0f);
    ggml_quantize_chunk(type, wf, t->data, 0, n / ne[0], ne[0], NULL);
    ggml_get_type_traits(type)->to_float(t->data, wf, n);
    return t;
}

static bool compute_2_threads(struct ggml_context *ctx, struct ggml_tensor *out) {
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    return ggml_graph_compute_with_ctx(ctx, gf, 2) == GGML_STATUS_SUCCESS;
}

/* mul_mat_id with q8_0 experts: as [256, 9, 3], b [256, 2, 4], ids [2, 4]. */
static void check_quantized_id(void) {
    const enum ggml_type type = GGML_TYPE_Q8_0;
    if (!ggml_get_type_traits_cpu(type)->vec_dot) {
        tap_skip("no CPU vec_dot for this type yet", "mul_mat_id with q8_0 experts");
        return;
    }
    enum { K = 256, N = 9, E = 3, U = 2, T = 4 };
    struct ggml_context *ctx = new_ctx();
    float *wf = malloc(sizeof(float) * K * N * E), *xf = malloc(sizeof(float) * K * U * T);
    struct ggml_tensor *as = new_quantized(ctx, type, (const int64_t[3]){K, N, E}, wf);
    struct ggml_tensor *b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, U, T);
    struct ggml_tensor *ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, U, T);
    test_fill_uniform(xf, K * U * T, -1.0f, 1.0f);
    memcpy(b->data, xf, sizeof(float) * K * U * T);
    float ref[N * U * T], res[N * U * T];
    for (int t = 0; t < T; t++)
        for (int s = 0; s < U; s++) {
            const int32_t e = (s + 2 * t) % E;
            ((int32_t *)ids->data)[t * U + s] = e;
            for (int n = 0; n < N; n++) {
                double acc = 0;
                for (int q = 0; q < K; q++) acc += (double)wf[(e * N + n) * K + q] * xf[(t * U + s) * K + q];
                ref[(t * U + s) * N + n] = (float)acc;
            }
        }
    struct ggml_tensor *out = ggml_mul_mat_id(ctx, as, b, ids);
    if (tap_ok(compute_2_threads(ctx, out), "mul_mat_id with q8_0 experts computes")) {
        tensor_get_f32(out, res);
        ok_nmse(res, ref, N * U * T, 1e-4, "mul_mat_id with q8_0 experts matches the dequantized product");
    }
    free(wf);
    free(xf);
    ggml_free(ctx);
}

/* F16 and BF16 weights multiply their f32 activations rounded to the weights' type, as
 * ggml's CPU backend does: the result is the product with those activations given in that
 * type, bit for bit, for a decode step's one row (rounded in every task), a few rows and a
 * batch (rounded once, shared), and for mul_mat_id's experts. */
static void check_rounded_activations(enum ggml_type wt) {
    enum { K = 200, N = 70, E = 2 };
    const char *name = ggml_type_name(wt);
    static const int row_counts[] = {1, 3, 40};
    for (size_t i = 0; i < sizeof row_counts / sizeof *row_counts; i++) {
        const int rows = row_counts[i];
        struct ggml_context *ctx = new_ctx();
        struct ggml_tensor *w = ggml_new_tensor_2d(ctx, wt, K, N), *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, rows);
        test_pattern(w, 61, 1 / 64.0);
        float *xv = malloc(sizeof(float) * K * rows);
        test_fill_uniform(xv, (size_t)(K * rows), -3.0f, 3.0f);
        tensor_set_f32(x, xv);
        struct ggml_tensor *xr = ggml_new_tensor_2d(ctx, wt, K, rows);
        tensor_set_f32(xr, xv); /* the same values rounded to the weights' type */
        struct ggml_tensor *got = ggml_mul_mat(ctx, w, x), *want = ggml_mul_mat(ctx, w, xr);
        if (tap_ok(compute_2_threads(ctx, got) && compute_2_threads(ctx, want), "%s weights x %d f32 rows compute", name, rows))
            tap_ok(memcmp(got->data, want->data, ggml_nbytes(got)) == 0,
                   "%s weights x %d f32 rows: the product of the activations rounded to %s", name, rows, name);
        free(xv);
        ggml_free(ctx);
    }
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *as = ggml_new_tensor_3d(ctx, wt, K, N, E), *b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, 1, 3);
    struct ggml_tensor *br = ggml_new_tensor_3d(ctx, wt, K, 1, 3), *ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 1, 3);
    test_pattern(as, 62, 1 / 64.0);
    float xv[K * 3];
    test_fill_uniform(xv, K * 3, -3.0f, 3.0f);
    tensor_set_f32(b, xv);
    tensor_set_f32(br, xv);
    for (int t = 0; t < 3; t++) ((int32_t *)ids->data)[t] = t % E;
    struct ggml_tensor *got = ggml_mul_mat_id(ctx, as, b, ids), *want = ggml_mul_mat_id(ctx, as, br, ids);
    if (tap_ok(compute_2_threads(ctx, got) && compute_2_threads(ctx, want), "mul_mat_id with %s experts computes", name))
        tap_ok(memcmp(got->data, want->data, ggml_nbytes(got)) == 0,
               "mul_mat_id with %s experts: the product of the activations rounded to %s", name, name);
    ggml_free(ctx);
}

/* out_prod with q8_0 a [64, 20] (dequantized by the kernel) and f32 b [9, 20]. */
static void check_quantized_out_prod(void) {
    enum { N = 64, K = 20, M = 9 };
    struct ggml_context *ctx = new_ctx();
    float *af = malloc(sizeof(float) * N * K), *bf = malloc(sizeof(float) * M * K);
    struct ggml_tensor *a = new_quantized(ctx, GGML_TYPE_Q8_0, (const int64_t[3]){N, K, 1}, af);
    struct ggml_tensor *b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, M, K);
    test_fill_uniform(bf, M * K, -1.0f, 1.0f);
    memcpy(b->data, bf, sizeof(float) * M * K);
    float ref[N * M], res[N * M];
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double acc = 0;
            for (int q = 0; q < K; q++) acc += (double)af[q * N + n] * bf[q * M + m];
            ref[m * N + n] = (float)acc;
        }
    struct ggml_tensor *out = ggml_out_prod(ctx, a, b);
    if (tap_ok(compute_2_threads(ctx, out), "out_prod with q8_0 a computes")) {
        tensor_get_f32(out, res);
        ok_nmse(res, ref, N * M, 1e-10, "out_prod with q8_0 a matches the dequantized product");
    }
    free(af);
    free(bf);
    ggml_free(ctx);
}

/* Quantized weights [K, N, 2] broadcast over activations [K, M, 4] (two activation
 * batches per weight matrix): M = 11 rows go to the multi-row kernels as a group of 8 and
 * one of 3; the destination's batches and rows must land in place. */
static void check_quantized_batched(enum ggml_type type) {
    enum { K = 2048, N = 47, M = 11, WB = 2, XB = 4 }; /* above the serial threshold: 2 threads */
    struct ggml_context *ctx = new_ctx();
    float *wf = malloc(sizeof(float) * K * N * WB), *xf = malloc(sizeof(float) * K * M * XB);
    struct ggml_tensor *a = new_quantized(ctx, type, (const int64_t[3]){K, N, WB}, wf);
    struct ggml_tensor *b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, M, XB);
    test_fill_uniform(xf, K * M * XB, -2.0f, 2.0f);
    memcpy(b->data, xf, sizeof(float) * K * M * XB);
    float *ref = malloc(sizeof(float) * N * M * XB), *res = malloc(sizeof(float) * N * M * XB);
    for (int bi = 0; bi < XB; bi++)
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double acc = 0;
                for (int q = 0; q < K; q++) acc += (double)wf[((bi / 2) * N + n) * K + q] * xf[(bi * M + m) * K + q];
                ref[(bi * M + m) * N + n] = (float)acc;
            }
    struct ggml_tensor *out = ggml_mul_mat(ctx, a, b);
    if (tap_ok(compute_2_threads(ctx, out), "mul_mat %s [%d,%d,%d] x [%d,%d,%d] computes", ggml_type_name(type), K, N, WB, K, M, XB)) {
        tensor_get_f32(out, res);
        ok_nmse(res, ref, N * M * XB, 1e-4, "mul_mat %s, broadcast batches, %d rows: matches the dequantized product",
                ggml_type_name(type), M);
    }
    free(wf);
    free(xf);
    free(ref);
    free(res);
    ggml_free(ctx);
}

static void test_quantized(void) {
    check_quantized(GGML_TYPE_Q4_0, 256, 33, 7);
    check_quantized(GGML_TYPE_Q4_0, 4096, 131, 8); /* large enough for both threads */
    check_quantized(GGML_TYPE_Q8_0, 4096, 31, 9);
    const enum ggml_type multi_row[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q5_0, GGML_TYPE_Q8_0, GGML_TYPE_IQ4_NL,
                                        GGML_TYPE_MXFP4, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
    for (size_t t = 0; t < sizeof multi_row / sizeof multi_row[0]; t++) check_quantized_batched(multi_row[t]);
    check_quantized(GGML_TYPE_Q8_0, 512, 17, 1);
    check_quantized(GGML_TYPE_Q4_K, 256, 9, 12);
    /* 128 rows and more: the weights are dequantized into the GEMM's panels */
    check_quantized(GGML_TYPE_Q4_0, 512, 70, 130);
    check_quantized(GGML_TYPE_Q6_K, 512, 50, 128);
    check_quantized_id();
    check_quantized_out_prod();
}

static void test_errors(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, true});
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 8);
    struct ggml_tensor *b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 16, 5, 3);
    struct ggml_tensor *a3 = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 16, 8, 2);
    struct ggml_tensor *k15 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 15, 5);
    struct ggml_tensor *i32 = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 16, 5);
    struct ggml_tensor *r = ggml_mul_mat(ctx, a, b);
    tap_ok(r && r->type == GGML_TYPE_F32 && r->ne[0] == 8 && r->ne[1] == 5 && r->ne[2] == 3 && r->op == GGML_OP_MUL_MAT,
           "mul_mat [16,8] x [16,5,3] -> [8,5,3] f32");
    tap_expect_op_fail(ggml_mul_mat(ctx, a, k15), GGMLC_ERR_SHAPE, "ggml_mul_mat", "mul_mat with different K");
    tap_expect_op_fail(ggml_mul_mat(ctx, a3, b), GGMLC_ERR_SHAPE, "ggml_mul_mat", "mul_mat that cannot broadcast 2 to 3");
    tap_expect_op_fail(ggml_mul_mat(ctx, ggml_transpose(ctx, a), ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2)),
                GGMLC_ERR_SHAPE, "ggml_mul_mat", "mul_mat with a transposed a");
    tap_expect_op_fail(ggml_mul_mat(ctx, a, i32), GGMLC_ERR_TYPE, "ggml_mul_mat", "mul_mat with i32 activations");
    tap_ok(ggml_mul_mat(ctx, NULL, b) == NULL && ggml_mul_mat(ctx, a, NULL) == NULL, "mul_mat of NULL is NULL");
    ggml_mul_mat_set_prec(r, GGML_PREC_F32);
    tap_ok(r->op_params[0] == GGML_PREC_F32, "mul_mat_set_prec records the precision");
    ggml_mul_mat_set_prec(a, GGML_PREC_F32);
    tap_ok(ggmlc_last_status() == GGMLC_ERR_INVALID_ARG, "mul_mat_set_prec on a non-product node is an error");

    struct ggml_tensor *pa = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 7, 16);
    struct ggml_tensor *pb = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 9, 16);
    r = ggml_out_prod(ctx, pa, pb);
    tap_ok(r && r->ne[0] == 7 && r->ne[1] == 9 && r->op == GGML_OP_OUT_PROD, "out_prod [7,16] x [9,16] -> [7,9]");
    tap_expect_op_fail(ggml_out_prod(ctx, pa, k15), GGMLC_ERR_SHAPE, "ggml_out_prod", "out_prod with different K");

    struct ggml_tensor *as = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 16, 8, 4);
    struct ggml_tensor *xb = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 16, 2, 6);
    struct ggml_tensor *ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 2, 6);
    r = ggml_mul_mat_id(ctx, as, xb, ids);
    tap_ok(r && r->ne[0] == 8 && r->ne[1] == 2 && r->ne[2] == 6 && r->src[2] == ids, "mul_mat_id -> [8,2,6]");
    tap_expect_op_fail(ggml_mul_mat_id(ctx, as, xb, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 2, 6)), GGMLC_ERR_TYPE,
                "ggml_mul_mat_id", "mul_mat_id with f32 ids");
    tap_expect_op_fail(ggml_mul_mat_id(ctx, as, xb, ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 2, 5)), GGMLC_ERR_SHAPE,
                "ggml_mul_mat_id", "mul_mat_id with ids for another token count");
    tap_expect_op_fail(ggml_mul_mat_id(ctx, as, xb, ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 3, 6)), GGMLC_ERR_SHAPE,
                "ggml_mul_mat_id", "mul_mat_id with n_used not a multiple of b->ne[1]");
    ggml_free(ctx);
}

int main(void) {
    test_errors();
    gold = gold_load("matmul.gold");
    if (!tap_ok(gold != NULL, "golden data tests/golden/matmul.gold loads")) return tap_done();
    test_mul_mat();
    test_out_prod();
    test_mul_mat_id();
    test_quantized();
    check_rounded_activations(GGML_TYPE_F16);
    check_rounded_activations(GGML_TYPE_BF16);
    gold_free(gold);
    return tap_done();
}
