/* test-ops-conv.c - im2col (1-D, 2-D, 3-D, f32/f16 results, strided data),
 * im2col_back, col2im_1d, the direct 2-D / depthwise (also channels-last) /
 * 3-D convolutions, transposed convolutions and pooling on the CPU backend
 * against PyTorch (tests/golden/gen_conv.py). */
#include <stdlib.h>

#include "ggmlc.h"
#include "opstest.h"

static struct gold_set *G;
#define GOLD(name) gold_get(G, name)

/* A tensor of the given shape whose values do not matter (kernels passed for their shape). */
static struct ggml_tensor *shape_only(struct ggml_context *ctx, enum ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    return ggml_new_tensor_4d(ctx, type, ne0, ne1, ne2, ne3);
}

/* Inputs ggml accepts: im2col_3d reads only the kernel's spatial dims (its dim 3 need not hold
 * IC * OC) and makes an empty result of data with fewer than IC channels; col2im_1d takes
 * F16 and BF16 columns and answers in their type. */
static void test_ggml_accepted_shapes(struct ggml_context *ctx) {
    struct ggml_tensor *r3 = ggml_im2col_3d(ctx, shape_only(ctx, GGML_TYPE_F16, 2, 2, 2, 1), ops_input(ctx, GOLD("im2col3d.x"), GGML_TYPE_F32, true),
                                            2, 1, 2, 1, 1, 0, 1, 1, 1, 2, GGML_TYPE_F32);
    if (!r3) tap_ok(false, "im2col_3d with a kernel of dim 3 = 1: %s", ggmlc_last_error());
    else if (ops_compute(ctx, r3)) ops_check(r3, GOLD("im2col3d.out"), 0.0, "im2col_3d does not read the kernel's dim 3");
    const struct gold_tensor *gx = GOLD("im2col3d.x");
    struct ggml_tensor *few = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, gx->ne[0], gx->ne[1], gx->ne[2], 1);
    struct ggml_tensor *empty = ggml_im2col_3d(ctx, shape_only(ctx, GGML_TYPE_F32, 2, 2, 2, 6), few, 2, 1, 2, 1, 1, 0, 1, 1, 1, 2,
                                               GGML_TYPE_F32);
    tap_ok(empty && empty->ne[3] == 0 && ggml_nelements(empty) == 0, "im2col_3d of 1 channel with IC = 2 is empty, not an error");
    if (empty) ops_compute(ctx, empty);
    const enum ggml_type half[] = {GGML_TYPE_F16, GGML_TYPE_BF16};
    for (int i = 0; i < 2; i++) {
        struct ggml_tensor *c = ggml_col2im_1d(ctx, ops_input(ctx, GOLD("col2im.a"), half[i], false), 2, 2, 1);
        char name[64];
        snprintf(name, sizeof name, "col2im_1d of %s columns, in %s", ggml_type_name(half[i]), ggml_type_name(half[i]));
        if (!c || c->type != half[i]) tap_ok(false, "%s: %s", name, c ? "wrong result type" : ggmlc_last_error());
        else if (ops_compute(ctx, c)) ops_check(c, GOLD("col2im.out"), half[i] == GGML_TYPE_F16 ? 1e-5 : 1e-4, name);
    }
}

static void test_im2col(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *k2 = shape_only(ctx, GGML_TYPE_F32, 3, 2, 3, 2);
    for (int f16 = 0; f16 < 2; f16++) {
        struct ggml_tensor *x = ops_input(ctx, GOLD("im2col.x"), GGML_TYPE_F32, f16 == 1);
        struct ggml_tensor *r = ggml_im2col(ctx, k2, x, 2, 1, 1, 0, 1, 2, true, f16 ? GGML_TYPE_F16 : GGML_TYPE_F32);
        if (ops_compute(ctx, r))
            ops_check(r, GOLD("im2col.out"), f16 ? 1e-6 : 0.0, f16 ? "im2col 2-D to f16 from strided data" : "im2col 2-D (stride, padding, dilation)");
    }
    struct ggml_tensor *r1 = ggml_im2col(ctx, shape_only(ctx, GGML_TYPE_F16, 3, 2, 4, 1), ops_input(ctx, GOLD("im2col1d.x"), GGML_TYPE_F32, false),
                                         2, 0, 2, 0, 2, 0, false, GGML_TYPE_F32);
    if (ops_compute(ctx, r1)) ops_check(r1, GOLD("im2col1d.out"), 0.0, "im2col 1-D");
    int64_t ne[4] = {7, 6, 3, 2};
    struct ggml_tensor *rb = ggml_im2col_back(ctx, shape_only(ctx, GGML_TYPE_F32, 3, 2, 3, 1), gold_new_tensor(ctx, GOLD("im2col_back.g")),
                                              ne, 2, 1, 1, 0, 1, 1, true);
    if (ops_compute(ctx, rb)) ops_check(rb, GOLD("im2col_back.out"), 1e-12, "im2col_back sums overlapping patches (vs F.fold)");
    struct ggml_tensor *r3 = ggml_im2col_3d(ctx, shape_only(ctx, GGML_TYPE_F32, 2, 2, 2, 6), ops_input(ctx, GOLD("im2col3d.x"), GGML_TYPE_F32, true),
                                            2, 1, 2, 1, 1, 0, 1, 1, 1, 2, GGML_TYPE_F32);
    if (ops_compute(ctx, r3)) ops_check(r3, GOLD("im2col3d.out"), 0.0, "im2col_3d from strided data");
    struct ggml_tensor *c2 = ggml_col2im_1d(ctx, gold_new_tensor(ctx, GOLD("col2im.a")), 2, 2, 1);
    if (ops_compute(ctx, c2)) ops_check(c2, GOLD("col2im.out"), 1e-12, "col2im_1d overlap-add (vs F.fold)");
    test_ggml_accepted_shapes(ctx);

    ggmlc_clear_error();
    ops_check_rejected(ggml_im2col(ctx, shape_only(ctx, GGML_TYPE_F32, 3, 9, 3, 2), ops_input(ctx, GOLD("im2col.x"), GGML_TYPE_F32, false),
                                   1, 1, 0, 0, 1, 1, true, GGML_TYPE_F32), "ggml_im2col", "a kernel taller than the image");
    ggmlc_clear_error();
    ops_check_rejected(ggml_im2col(ctx, k2, ops_input(ctx, GOLD("im2col1d.x"), GGML_TYPE_F32, false), 1, 1, 0, 0, 1, 1, true, GGML_TYPE_F32),
                       "ggml_im2col", "data with another channel count");
    ggmlc_clear_error();
    ops_check_rejected(ggml_im2col(ctx, k2, k2, 0, 1, 0, 0, 1, 1, true, GGML_TYPE_F32), "ggml_im2col", "stride 0");
    ggml_free(ctx);
}

static void test_direct_convolutions(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *x = ops_input(ctx, GOLD("conv2d.x"), GGML_TYPE_F32, false);
    for (int f16 = 0; f16 < 2; f16++) {
        struct ggml_tensor *w = ops_input(ctx, GOLD("conv2d.w"), f16 ? GGML_TYPE_F16 : GGML_TYPE_F32, false);
        struct ggml_tensor *r = ggml_conv_2d_direct(ctx, w, x, 1, 2, 1, 0, 2, 1);
        if (ops_compute(ctx, r)) ops_check(r, GOLD("conv2d.out"), f16 ? 1e-6 : 1e-11, f16 ? "conv_2d_direct, f16 kernel" : "conv_2d_direct");
    }
    struct ggml_tensor *ws = ggml_conv_2d_direct(ctx, ops_input(ctx, GOLD("conv2d.w"), GGML_TYPE_F32, true), x, 1, 2, 1, 0, 2, 1);
    if (ops_compute(ctx, ws)) ops_check(ws, GOLD("conv2d.out"), 1e-11, "conv_2d_direct, strided kernel");
    /* a larger image computed in several GEMM chunks, against the im2col path (golden-tested below) */
    struct ggml_tensor *bx = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 67, 61, 64, 2), *bw = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 3, 3, 64, 20);
    test_seed(11);
    float *vals = malloc(sizeof(float) * (size_t)ggml_nelements(bx));
    test_fill_uniform(vals, (size_t)ggml_nelements(bx), -4.0f, 4.0f);
    tensor_set_f32(bx, vals);
    test_fill_uniform(vals, (size_t)ggml_nelements(bw), -1.0f, 1.0f);
    tensor_set_f32(bw, vals);
    free(vals);
    struct ggml_tensor *big_direct = ggml_conv_2d_direct(ctx, bw, bx, 2, 1, 1, 2, 1, 2), *big_im2col = ggml_conv_2d(ctx, bw, bx, 2, 1, 1, 2, 1, 2);
    if (ops_compute(ctx, big_direct) && ops_compute(ctx, big_im2col)) {
        const size_t n = (size_t)ggml_nelements(big_im2col);
        float *d = malloc(n * sizeof(float)), *r = malloc(n * sizeof(float));
        tensor_get_f32(big_direct, d);
        tensor_get_f32(big_im2col, r);
        ok_nmse(d, r, n, 1e-10, "conv_2d_direct of 64 channels, 67x61x2 (GEMM chunks) equals conv_2d");
        free(d);
        free(r);
    }
    struct ggml_tensor *wd = gold_new_tensor(ctx, GOLD("conv2d_dw.w"));
    struct ggml_tensor *dw = ggml_conv_2d_dw_direct(ctx, wd, gold_new_tensor(ctx, GOLD("conv2d_dw.x")), 1, 2, 1, 1, 2, 1);
    if (ops_compute(ctx, dw)) ops_check(dw, GOLD("conv2d_dw.out"), 1e-11, "conv_2d_dw_direct");
    /* channels-last data: a WHCN view of CWHN storage gives a result in the same layout */
    const struct gold_tensor *gx = GOLD("conv2d_dw.x");
    struct ggml_tensor *cwhn = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, gx->ne[2], gx->ne[0], gx->ne[1], gx->ne[3]);
    struct ggml_tensor *xv = ggml_permute(ctx, cwhn, 2, 0, 1, 3);
    tensor_set_f32(xv, gx->data);
    struct ggml_tensor *dwc = ggml_conv_2d_dw_direct(ctx, wd, xv, 1, 2, 1, 1, 2, 1);
    tap_ok(dwc && dwc->nb[2] == sizeof(float), "conv_2d_dw_direct keeps a channels-last layout");
    if (ops_compute(ctx, dwc)) ops_check(dwc, GOLD("conv2d_dw.out"), 1e-11, "conv_2d_dw_direct on channels-last data");
    struct ggml_tensor *d1 = ggml_conv_1d_dw(ctx, gold_new_tensor(ctx, GOLD("conv1d_dw.w")), gold_new_tensor(ctx, GOLD("conv1d.x")), 1, 1, 1);
    if (ops_compute(ctx, d1)) ops_check(d1, GOLD("conv1d_dw.out"), 1e-11, "conv_1d_dw");
    struct ggml_tensor *c3 = ggml_conv_3d_direct(ctx, gold_new_tensor(ctx, GOLD("conv3d.w")), ops_input(ctx, GOLD("conv3d.x"), GGML_TYPE_F32, true),
                                                 1, 2, 1, 1, 0, 1, 1, 1, 2, 2, 2, 3);
    if (ops_compute(ctx, c3)) ops_check(c3, GOLD("conv3d.out"), 1e-11, "conv_3d_direct from strided data");
    for (int variant = 0; variant < 2; variant++) { /* a strided kernel (gather path), an f16 kernel (GEMM path) */
        struct ggml_tensor *w3 = ops_input(ctx, GOLD("conv3d.w"), variant ? GGML_TYPE_F16 : GGML_TYPE_F32, variant == 0);
        struct ggml_tensor *c3v = ggml_conv_3d_direct(ctx, w3, gold_new_tensor(ctx, GOLD("conv3d.x")), 1, 2, 1, 1, 0, 1, 1, 1, 2, 2, 2, 3);
        if (ops_compute(ctx, c3v))
            ops_check(c3v, GOLD("conv3d.out"), variant ? 1e-6 : 1e-11, variant ? "conv_3d_direct, f16 kernel" : "conv_3d_direct, strided kernel");
    }

    ggmlc_clear_error();
    ops_check_rejected(ggml_conv_2d_direct(ctx, ops_input(ctx, GOLD("conv2d.w"), GGML_TYPE_F32, false), gold_new_tensor(ctx, GOLD("im2col1d.x")),
                                           1, 1, 0, 0, 1, 1), "ggml_conv_2d_direct", "3 kernel channels for 2 data channels");
    ggmlc_clear_error();
    ops_check_rejected(ggml_conv_3d_direct(ctx, gold_new_tensor(ctx, GOLD("conv3d.w")), gold_new_tensor(ctx, GOLD("conv3d.x")),
                                           1, 1, 1, 0, 0, 0, 1, 1, 1, 2, 3, 3), "ggml_conv_3d_direct", "a batch that does not match the data");
    ggml_free(ctx);
}

/* The convolutions built from im2col and mul_mat (kernel as the matrix product's weight). */
static void test_im2col_convolutions(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *x = ops_input(ctx, GOLD("conv2d.x"), GGML_TYPE_F32, false);
    for (int f16 = 0; f16 < 2; f16++) {
        struct ggml_tensor *w = ops_input(ctx, GOLD("conv2d.w"), f16 ? GGML_TYPE_F16 : GGML_TYPE_F32, false);
        struct ggml_tensor *r = ggml_conv_2d(ctx, w, x, 1, 2, 1, 0, 2, 1);
        if (ops_compute(ctx, r)) ops_check(r, GOLD("conv2d.out"), f16 ? 1e-6 : 1e-10, f16 ? "conv_2d, f16 kernel" : "conv_2d");
    }
    struct ggml_tensor *w = gold_new_tensor(ctx, GOLD("conv2d.w"));
    struct ggml_tensor *wt = ops_input(ctx, GOLD("conv2d.w"), GGML_TYPE_F32, true);
    struct ggml_tensor *sk = ggml_conv_2d_sk_p0(ctx, wt, x), *ph = ggml_conv_2d_s1_ph(ctx, w, x);
    if (ops_compute(ctx, sk)) ops_check(sk, GOLD("conv2d.sk_p0"), 1e-10, "conv_2d_sk_p0 of a strided kernel");
    if (ops_compute(ctx, ph)) ops_check(ph, GOLD("conv2d.s1_ph"), 1e-10, "conv_2d_s1_ph");
    struct ggml_tensor *dw = ggml_conv_2d_dw(ctx, ops_input(ctx, GOLD("conv2d_dw.w"), GGML_TYPE_F32, true),
                                             ops_input(ctx, GOLD("conv2d_dw.x"), GGML_TYPE_F32, true), 1, 2, 1, 1, 2, 1);
    if (ops_compute(ctx, dw)) ops_check(dw, GOLD("conv2d_dw.out"), 1e-10, "conv_2d_dw of a strided kernel and strided data");
    struct ggml_tensor *x1 = ops_input(ctx, GOLD("conv1d.x"), GGML_TYPE_F32, true), *w1 = gold_new_tensor(ctx, GOLD("conv1d.w"));
    struct ggml_tensor *c1 = ggml_conv_1d(ctx, w1, x1, 2, 1, 2), *c1p = ggml_conv_1d_ph(ctx, w1, x1, 2, 1);
    if (ops_compute(ctx, c1)) ops_check(c1, GOLD("conv1d.out"), 1e-10, "conv_1d of strided data, batch 2");
    if (ops_compute(ctx, c1p)) ops_check(c1p, GOLD("conv1d.ph"), 1e-10, "conv_1d_ph");
    struct ggml_tensor *c3 = ggml_conv_3d(ctx, gold_new_tensor(ctx, GOLD("conv3d.w")), gold_new_tensor(ctx, GOLD("conv3d.x")), 2,
                                          1, 2, 1, 1, 0, 1, 1, 1, 2);
    if (ops_compute(ctx, c3)) ops_check(c3, GOLD("conv3d.out"), 1e-10, "conv_3d");
    ggmlc_clear_error();
    ops_check_rejected(ggml_conv_2d(ctx, w, gold_new_tensor(ctx, GOLD("im2col1d.x")), 1, 1, 0, 0, 1, 1), "ggml_conv_2d",
                       "data with another channel count");
    ggmlc_clear_error();
    ops_check_rejected(ggml_conv_1d(ctx, w1, gold_new_tensor(ctx, GOLD("im2col1d.x")), 1, 0, 1), "ggml_conv_1d",
                       "data with another channel count");
    ggml_free(ctx);
}

static void test_transposed_convolutions(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *w = gold_new_tensor(ctx, GOLD("convt1d.w")), *x = ops_input(ctx, GOLD("convt1d.x"), GGML_TYPE_F32, true);
    struct ggml_tensor *t1 = ggml_conv_transpose_1d(ctx, w, x, 2, 1, 2);
    if (ops_compute(ctx, t1)) ops_check(t1, GOLD("convt1d.out"), 1e-11, "conv_transpose_1d with padding and dilation");
    struct ggml_tensor *t0 = ggml_conv_transpose_1d(ctx, ops_input(ctx, GOLD("convt1d.w"), GGML_TYPE_F16, false), x, 3, 0, 1);
    if (ops_compute(ctx, t0)) ops_check(t0, GOLD("convt1d.out_p0"), 1e-6, "conv_transpose_1d, stride 3, f16 kernel");
    struct ggml_tensor *tg = ggml_conv_transpose_1d(ctx, ops_input(ctx, GOLD("convt1d.w"), GGML_TYPE_F32, true), x, 2, 1, 2);
    if (ops_compute(ctx, tg)) ops_check(tg, GOLD("convt1d.out"), 1e-11, "conv_transpose_1d, strided kernel (gather path)");
    /* a long input in several GEMM chunks, against the gather path of a strided copy of the same kernel */
    struct ggml_tensor *bk = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 16, 256, 32), *bx = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 600, 32, 2);
    struct ggml_tensor *bk_t = ggml_transpose(ctx, ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 256, 16, 32));
    test_seed(5);
    float *vals = malloc(sizeof(float) * 16 * 256 * 32); /* the larger of kernel and data */
    test_fill_uniform(vals, 16 * 256 * 32, -1.0f, 1.0f);
    tensor_set_f32(bk, vals);
    tensor_set_f32(bk_t, vals);
    test_fill_uniform(vals, 600 * 32 * 2, -2.0f, 2.0f);
    tensor_set_f32(bx, vals);
    free(vals);
    struct ggml_tensor *big_gemm = ggml_conv_transpose_1d(ctx, bk, bx, 3, 2, 1), *big_gather = ggml_conv_transpose_1d(ctx, bk_t, bx, 3, 2, 1);
    if (ops_compute(ctx, big_gemm) && ops_compute(ctx, big_gather)) {
        const size_t n = (size_t)ggml_nelements(big_gemm);
        float *g = malloc(n * sizeof(float)), *r = malloc(n * sizeof(float));
        tensor_get_f32(big_gemm, g);
        tensor_get_f32(big_gather, r);
        ok_nmse(g, r, n, 1e-10, "conv_transpose_1d of 600 positions x 256 channels x 16 taps (GEMM chunks) equals the gather path");
        free(g);
        free(r);
    }
    struct ggml_tensor *t2 = ggml_conv_transpose_2d_p0(ctx, gold_new_tensor(ctx, GOLD("convt2d.w")), gold_new_tensor(ctx, GOLD("convt2d.x")), 2);
    if (ops_compute(ctx, t2)) ops_check(t2, GOLD("convt2d.out"), 1e-11, "conv_transpose_2d_p0, stride 2");
    struct ggml_tensor *t2g = ggml_conv_transpose_2d_p0(ctx, ops_input(ctx, GOLD("convt2d.w"), GGML_TYPE_F32, true),
                                                        gold_new_tensor(ctx, GOLD("convt2d.x")), 2);
    if (ops_compute(ctx, t2g)) ops_check(t2g, GOLD("convt2d.out"), 1e-11, "conv_transpose_2d_p0, strided kernel (gather path)");
    /* 40x30 positions in two GEMM chunks, against the gather path of a strided copy of the same kernel */
    struct ggml_tensor *k2 = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 4, 4, 64, 16), *x2 = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 40, 30, 16, 2);
    struct ggml_tensor *k2_t = ggml_transpose(ctx, ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 4, 4, 64, 16));
    float *v2 = malloc(sizeof(float) * 40 * 30 * 16 * 2);
    test_fill_uniform(v2, 4 * 4 * 64 * 16, -1.0f, 1.0f);
    tensor_set_f32(k2, v2);
    tensor_set_f32(k2_t, v2);
    test_fill_uniform(v2, 40 * 30 * 16 * 2, -2.0f, 2.0f);
    tensor_set_f32(x2, v2);
    free(v2);
    struct ggml_tensor *t2_gemm = ggml_conv_transpose_2d_p0(ctx, k2, x2, 2), *t2_gather = ggml_conv_transpose_2d_p0(ctx, k2_t, x2, 2);
    if (ops_compute(ctx, t2_gemm) && ops_compute(ctx, t2_gather)) {
        const size_t n = (size_t)ggml_nelements(t2_gemm);
        float *g = malloc(n * sizeof(float)), *r = malloc(n * sizeof(float));
        tensor_get_f32(t2_gemm, g);
        tensor_get_f32(t2_gather, r);
        ok_nmse(g, r, n, 1e-10, "conv_transpose_2d_p0 of 40x30x16 into 64 channels, f16 kernel (GEMM chunks) equals the gather path");
        free(g);
        free(r);
    }
    ggmlc_clear_error();
    ops_check_rejected(ggml_conv_transpose_1d(ctx, w, gold_new_tensor(ctx, GOLD("im2col1d.x")), 1, 0, 1), "ggml_conv_transpose_1d",
                       "data with another channel count");
    ggml_free(ctx);
}

static void test_pooling(void) {
    struct ggml_context *ctx = ops_ctx();
    struct ggml_tensor *x = ops_input(ctx, GOLD("pool2d.x"), GGML_TYPE_F32, true);
    const char *ref[2] = {"pool2d.max", "pool2d.avg"}, *back[2] = {"pool2d.back_max", "pool2d.back_avg"};
    for (int op = 0; op < 2; op++) {
        struct ggml_tensor *p = ggml_pool_2d(ctx, x, (enum ggml_op_pool)op, 3, 2, 2, 1, 1, 1);
        if (ops_compute(ctx, p)) ops_check(p, GOLD(ref[op]), 1e-13, op ? "pool_2d avg, padding counted" : "pool_2d max with padding");
        struct ggml_tensor *pb = ggml_pool_2d_back(ctx, gold_new_tensor(ctx, GOLD("pool2d.dy")), x, (enum ggml_op_pool)op, 3, 2, 2, 1, 1, 1);
        if (ops_compute(ctx, pb)) ops_check(pb, GOLD(back[op]), 1e-12, op ? "pool_2d_back avg" : "pool_2d_back max");
    }
    struct ggml_tensor *p16 = ggml_pool_2d(ctx, ops_input(ctx, GOLD("pool2d.x"), GGML_TYPE_F16, false), GGML_OP_POOL_AVG, 3, 2, 2, 1, 1, 1);
    if (ops_compute(ctx, p16)) ops_check(p16, GOLD("pool2d.avg"), 1e-6, "pool_2d avg of f16 data");
    struct ggml_tensor *x1 = gold_new_tensor(ctx, GOLD("pool1d.x"));
    struct ggml_tensor *m1 = ggml_pool_1d(ctx, x1, GGML_OP_POOL_MAX, 3, 2, 1), *a1 = ggml_pool_1d(ctx, x1, GGML_OP_POOL_AVG, 3, 2, 1);
    if (ops_compute(ctx, m1)) ops_check(m1, GOLD("pool1d.max"), 0.0, "pool_1d max");
    if (ops_compute(ctx, a1)) ops_check(a1, GOLD("pool1d.avg"), 1e-13, "pool_1d avg");
    ggmlc_clear_error();
    ops_check_rejected(ggml_pool_2d(ctx, x, GGML_OP_POOL_MAX, 20, 2, 1, 1, 0, 0), "ggml_pool_2d", "a window wider than the input");
    ggmlc_clear_error();
    ops_check_rejected(ggml_pool_1d(ctx, x1, GGML_OP_POOL_COUNT, 2, 2, 0), "ggml_pool_1d", "an unknown pooling op");
    ggml_free(ctx);
}

int main(void) {
    G = gold_load("conv.gold");
    if (!G) return tap_skip_all("golden data tests/golden/conv.gold missing");
    test_im2col();
    test_direct_convolutions();
    test_im2col_convolutions();
    test_transposed_convolutions();
    test_pooling();
    gold_free(G);
    return tap_done();
}
