/*
 * test-ops-hc.c - DeepSeek V4 hyper-connections on the CPU: ggml_dsv4_hc_comb, _pre and _post
 * against their definitions (ggml.h's comments) evaluated in double, for 4 streams (what ggml
 * takes) and 3, contiguous and strided operands, 1 and 3 threads; and each constructor's errors.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"
#include "ggmlc.h"
#include "testutil.h"

enum { T = 5, EMBD = 37 };

static struct ggml_context *new_ctx(void) {
    return ggml_init((struct ggml_init_params){16 << 20, NULL, false});
}

static bool compute(struct ggml_context *ctx, struct ggml_tensor *out, int threads) {
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    return ggml_graph_compute_with_ctx(ctx, gf, threads) == GGML_STATUS_SUCCESS;
}

static double at(const struct ggml_tensor *t, int64_t i0, int64_t i1, int64_t i2) {
    return *(const float *)((const char *)t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2]);
}

/* A [ne0, ne1, ne2] F32 tensor of uniform values; strided: a view of every other row of a larger one. */
static struct ggml_tensor *filled(struct ggml_context *ctx, int64_t ne0, int64_t ne1, int64_t ne2,
                                  bool strided, float lo, float hi) {
    struct ggml_tensor *t =
        ggml_new_tensor_3d(ctx, GGML_TYPE_F32, ne0, strided ? 2 * ne1 : ne1, ne2);
    test_fill_uniform(t->data, (size_t)ggml_nelements(t), lo, hi);
    return strided ? ggml_view_3d(ctx, t, ne0, ne1, ne2, 2 * t->nb[1], t->nb[2], 0) : t;
}

/* ------------------------------------------------------------ hc_comb */

/* Divide each line (over src for each dst, or over dst for each src) by eps + its sum. */
static void normalize_ref(double *c, int hc, double eps, bool over_src) {
    for (int l = 0; l < hc; l++) {
        double sum = eps;
        for (int i = 0; i < hc; i++) sum += over_src ? c[l + hc * i] : c[i + hc * l];
        for (int i = 0; i < hc; i++) *(over_src ? &c[l + hc * i] : &c[i + hc * l]) /= sum;
    }
}

static void comb_ref(const struct ggml_tensor *mixes, const float *scale, const float *base, int hc,
                     int t, float eps, int n_iter, double *c) {
    for (int src = 0; src < hc; src++) {
        double max = -INFINITY, sum = 0;
        for (int d = 0; d < hc; d++) {
            const int k = 2 * hc + d + hc * src;
            c[d + hc * src] = at(mixes, k, t, 0) * scale[2] + base[k];
            max = fmax(max, c[d + hc * src]);
        }
        for (int d = 0; d < hc; d++) sum += c[d + hc * src] = exp(c[d + hc * src] - max);
        for (int d = 0; d < hc; d++) c[d + hc * src] = c[d + hc * src] / sum + eps;
    }
    normalize_ref(c, hc, eps, true);
    for (int i = 1; i < n_iter; i++) {
        normalize_ref(c, hc, eps, false);
        normalize_ref(c, hc, eps, true);
    }
}

static void check_comb(int hc, int n_iter, bool strided, int threads) {
    struct ggml_context *ctx = new_ctx();
    test_seed(10 * hc + n_iter);
    struct ggml_tensor *mixes = filled(ctx, (2 + hc) * hc, T, 1, strided, -2.0f, 2.0f);
    struct ggml_tensor *scale = filled(ctx, 3, 1, 1, false, 0.5f, 1.5f),
                       *base = filled(ctx, (2 + hc) * hc, 1, 1, false, -1.0f, 1.0f);
    const float eps = 1e-3f;
    struct ggml_tensor *r = ggml_dsv4_hc_comb(ctx, mixes, scale, base, eps, n_iter);
    if (!tap_ok(r && r->ne[0] == hc && r->ne[1] == hc && r->ne[2] == T && compute(ctx, r, threads),
                "hc_comb, %d streams, %d iterations%s, %d threads: [%d, %d, %d] computes", hc,
                n_iter, strided ? ", strided mixes" : "", threads, hc, hc, T))
        goto done;
    double worst = 0, c[64];
    for (int t = 0; t < T; t++) {
        comb_ref(mixes, scale->data, base->data, hc, t, eps, n_iter, c);
        for (int src = 0; src < hc; src++)
            for (int d = 0; d < hc; d++)
                worst = fmax(worst, fabs(at(r, d, src, t) - c[d + hc * src]));
    }
    tap_ok(worst < 1e-6, "hc_comb, %d streams, %d iterations%s: within %.2g of double", hc, n_iter,
           strided ? ", strided mixes" : "", worst);
done:
    ggml_free(ctx);
}

/* ------------------------------------------------------------ hc_pre, hc_post */

static void check_pre(int hc, bool strided, int threads) {
    struct ggml_context *ctx = new_ctx();
    test_seed(20 + hc);
    struct ggml_tensor *x = filled(ctx, EMBD, hc, T, strided, -1.0f, 1.0f),
                       *w = filled(ctx, hc, T, 1, false, 0.0f, 1.0f);
    struct ggml_tensor *r = ggml_dsv4_hc_pre(ctx, x, w);
    if (!tap_ok(r && r->ne[0] == EMBD && r->ne[1] == T && r->ne[2] == 1 && compute(ctx, r, threads),
                "hc_pre, %d streams%s, %d threads: [%d, %d] computes", hc,
                strided ? ", strided x" : "", threads, EMBD, T))
        goto done;
    double worst = 0;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < EMBD; i++) {
            double sum = 0;
            for (int h = 0; h < hc; h++) sum += at(x, i, h, t) * at(w, h, t, 0);
            worst = fmax(worst, fabs(at(r, i, t, 0) - sum));
        }
    tap_ok(worst < 1e-6, "hc_pre, %d streams%s: sum_h x w within %.2g of double", hc,
           strided ? ", strided x" : "", worst);
done:
    ggml_free(ctx);
}

static void check_post(int hc, bool strided, int threads) {
    struct ggml_context *ctx = new_ctx();
    test_seed(30 + hc);
    struct ggml_tensor *x = filled(ctx, EMBD, T, 1, strided, -1.0f, 1.0f),
                       *res = filled(ctx, EMBD, hc, T, strided, -1.0f, 1.0f);
    struct ggml_tensor *post = filled(ctx, hc, T, 1, false, 0.0f, 2.0f),
                       *comb = filled(ctx, hc, hc, T, false, 0.0f, 1.0f);
    struct ggml_tensor *r = ggml_dsv4_hc_post(ctx, x, res, post, comb);
    if (!tap_ok(r && r->ne[0] == EMBD && r->ne[1] == hc && r->ne[2] == T &&
                    compute(ctx, r, threads),
                "hc_post, %d streams%s, %d threads: [%d, %d, %d] computes", hc,
                strided ? ", strided x and residual" : "", threads, EMBD, hc, T))
        goto done;
    double worst = 0;
    for (int t = 0; t < T; t++)
        for (int d = 0; d < hc; d++)
            for (int i = 0; i < EMBD; i++) {
                double sum = at(x, i, t, 0) * at(post, d, t, 0);
                for (int s = 0; s < hc; s++) sum += at(res, i, s, t) * at(comb, d, s, t);
                worst = fmax(worst, fabs(at(r, i, d, t) - sum));
            }
    tap_ok(worst < 1e-6,
           "hc_post, %d streams%s: x post + sum_s residual comb within %.2g of double", hc,
           strided ? ", strided x and residual" : "", worst);
done:
    ggml_free(ctx);
}

/* ------------------------------------------------------------ errors */

static void check_errors(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, true});
    struct ggml_tensor *mixes = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 24, T),
                       *scale = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    struct ggml_tensor *base = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 24);
    tap_expect_op_fail(ggml_dsv4_hc_comb(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 23, T), scale,
                                         base, 1e-6f, 1),
                       GGMLC_ERR_SHAPE, "ggml_dsv4_hc_comb",
                       "hc_comb with mixes of 23 (no hc with (2 + hc) hc = 23)");
    tap_expect_op_fail(
        ggml_dsv4_hc_comb(ctx, mixes, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2), base, 1e-6f, 1),
        GGMLC_ERR_SHAPE, "ggml_dsv4_hc_comb", "hc_comb with a scale of 2");
    tap_expect_op_fail(
        ggml_dsv4_hc_comb(ctx, mixes, scale, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 15), 1e-6f, 1),
        GGMLC_ERR_SHAPE, "ggml_dsv4_hc_comb", "hc_comb with base of another stream count");
    tap_expect_op_fail(ggml_dsv4_hc_comb(ctx, mixes, scale, base, 1e-6f, 0), GGMLC_ERR_INVALID_ARG,
                       "ggml_dsv4_hc_comb", "hc_comb with 0 iterations");
    tap_expect_op_fail(ggml_dsv4_hc_comb(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 24, T), scale,
                                         base, 1e-6f, 1),
                       GGMLC_ERR_TYPE, "ggml_dsv4_hc_comb", "hc_comb with F16 mixes");
    struct ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, EMBD, 4, T);
    tap_expect_op_fail(ggml_dsv4_hc_pre(ctx, x, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, T)),
                       GGMLC_ERR_SHAPE, "ggml_dsv4_hc_pre",
                       "hc_pre with weights for 3 streams of 4");
    tap_expect_op_fail(ggml_dsv4_hc_pre(ctx, x, ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 4, T)),
                       GGMLC_ERR_TYPE, "ggml_dsv4_hc_pre", "hc_pre with F16 weights");
    struct ggml_tensor *y = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, EMBD, T),
                       *post = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, T);
    tap_expect_op_fail(
        ggml_dsv4_hc_post(ctx, y, x, post, ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, T)),
        GGMLC_ERR_SHAPE, "ggml_dsv4_hc_post", "hc_post with a 4 x 3 comb");
    tap_expect_op_fail(ggml_dsv4_hc_post(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, EMBD, T + 1),
                                         x, post, ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 4, T)),
                       GGMLC_ERR_SHAPE, "ggml_dsv4_hc_post",
                       "hc_post with x of another token count");
    ggml_free(ctx);
}

int main(void) {
    for (int hc = 3; hc <= 4; hc++) {
        check_comb(hc, 1, false, 1);
        check_comb(hc, 3, hc == 4, 3);
        check_pre(hc, false, 1);
        check_pre(hc, true, 3);
        check_post(hc, false, 1);
        check_post(hc, true, 3);
    }
    check_errors();
    return tap_done();
}
