/*
 * test-vulkan-conv.c - conv_2d (GGML_OP_CONV_2D) and both its gradients on the Vulkan plugin
 * against a double-precision reference computed here and against the CPU backend: strides,
 * padding, dilation, odd sizes, channel counts that are not multiples of 16, batches > 1, an f16
 * kernel and a strided (transposed) input view.
 *
 * Where the device has cooperative matrices the forward pass runs on conv2d-cm.comp, which
 * rounds the kernel and data to f16 (f32 sums): every output may then be off the exact sum by
 * F16_REL (2^-9, four times the bound of two roundings of 2^-11) of the sum of |k x| over its
 * window.  With GGMLC_VK_CONV_CM=0 (test-vulkan-conv-exact.sh) the plugin takes the f32 kernel
 * and the bound is F32_REL of that sum.  The gradients (the kernel's one more CONV_2D, the
 * input's a conv_transpose_2d or products and im2col_back) are held to the looser bound too.
 * The CPU backend rounds the data to f16 for an f16 kernel, as ggml's CPU backend does, so its
 * forward pass of that case is held to F16_REL too, and its difference from an f32 Vulkan
 * pass to that bound's square.
 * test-vulkan-conv-kgrad covers the kernel gradient's split along k and conv_transpose_2d's rule.
 * Skipped, visibly, when there is no Vulkan device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlc.h"
#include "testutil.h"

#define F16_REL (1.0 / 512)
#define F32_REL 1e-5

struct conv_case {
    const char *name;
    int kw, kh, ic, oc, w, h, n;
    int s0, s1, p0, p1, d0, d1;
    enum ggml_type ktype; /* f16 kernels: forward only */
    bool transposed;      /* the data is a transposed view (strided rows) */
};

static const struct conv_case cases[] = {
    {"cnn conv1 3x3 1->32", 3, 3, 1, 32, 28, 28, 2, 1, 1, 1, 1, 1, 1, GGML_TYPE_F32, false},
    {"cnn conv2 3x3 32->64", 3, 3, 32, 64, 14, 14, 3, 1, 1, 1, 1, 1, 1, GGML_TYPE_F32, false},
    {"5x3 7->13 stride 2,3 pad 2,1 dil 1,2", 5, 3, 7, 13, 17, 11, 2, 2, 3, 2, 1, 1, 2, GGML_TYPE_F32, false},
    {"1x1 20->70 batch 4", 1, 1, 20, 70, 9, 7, 4, 1, 1, 0, 0, 1, 1, GGML_TYPE_F32, false},
    {"3x3 40->24 stride 2 (K 360)", 3, 3, 40, 24, 15, 13, 2, 2, 2, 1, 1, 1, 1, GGML_TYPE_F32, false},
    {"f16 kernel 3x3 5->6 stride 2 dil 2", 3, 3, 5, 6, 13, 11, 2, 2, 2, 0, 0, 2, 2, GGML_TYPE_F16, false},
    {"transposed data 2x2 4->3 dil 1,2", 2, 2, 4, 3, 9, 12, 2, 1, 1, 0, 1, 1, 2, GGML_TYPE_F32, true},
};

static int64_t out_size(int in, int k, int s, int p, int d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

/* The inputs of a case: kernel, data [W, H, IC, N] (logical order) and the output weights. */
struct inputs {
    float *k, *x, *w;
    int64_t ow, oh, nk, nx, ny;
};

static void inputs_make(const struct conv_case *c, struct inputs *in) {
    in->ow = out_size(c->w, c->kw, c->s0, c->p0, c->d0);
    in->oh = out_size(c->h, c->kh, c->s1, c->p1, c->d1);
    in->nk = (int64_t)c->kw * c->kh * c->ic * c->oc;
    in->nx = (int64_t)c->w * c->h * c->ic * c->n;
    in->ny = in->ow * in->oh * c->oc * c->n;
    in->k = malloc((size_t)in->nk * sizeof(float));
    in->x = malloc((size_t)in->nx * sizeof(float));
    in->w = malloc((size_t)in->ny * sizeof(float));
    test_fill_uniform(in->k, (size_t)in->nk, -1.0f, 1.0f);
    test_fill_uniform(in->x, (size_t)in->nx, -1.0f, 1.0f);
    test_fill_uniform(in->w, (size_t)in->ny, -1.0f, 1.0f);
    if (c->ktype == GGML_TYPE_F16) /* the values the f16 kernel holds */
        for (int64_t i = 0; i < in->nk; i++) in->k[i] = ggml_fp16_to_fp32(ggml_fp32_to_fp16(in->k[i]));
}

static void inputs_free(struct inputs *in) {
    free(in->k);
    free(in->x);
    free(in->w);
}

/* Reference results in double: y, dk, dx (loss = sum(y * w)) and, for the bounds, the sums of
 * |products| that make each of them. */
struct reference {
    double *y, *dk, *dx, *ay, *adk, *adx;
};

static void reference_make(const struct conv_case *c, const struct inputs *in, struct reference *r) {
    double **all[6] = {&r->y, &r->ay, &r->dk, &r->adk, &r->dx, &r->adx};
    const int64_t sizes[6] = {in->ny, in->ny, in->nk, in->nk, in->nx, in->nx};
    for (int i = 0; i < 6; i++) *all[i] = calloc((size_t)sizes[i], sizeof(double));
    for (int n = 0; n < c->n; n++)
        for (int oc = 0; oc < c->oc; oc++)
            for (int64_t oy = 0; oy < in->oh; oy++)
                for (int64_t ox = 0; ox < in->ow; ox++) {
                    const int64_t yi = ((n * (int64_t)c->oc + oc) * in->oh + oy) * in->ow + ox;
                    for (int ic = 0; ic < c->ic; ic++)
                        for (int ky = 0; ky < c->kh; ky++)
                            for (int kx = 0; kx < c->kw; kx++) {
                                const int64_t x = ox * c->s0 - c->p0 + kx * c->d0, y = oy * c->s1 - c->p1 + ky * c->d1;
                                if (x < 0 || x >= c->w || y < 0 || y >= c->h) continue;
                                const int64_t ki = ((oc * (int64_t)c->ic + ic) * c->kh + ky) * c->kw + kx;
                                const int64_t xi = ((n * (int64_t)c->ic + ic) * c->h + y) * c->w + x;
                                const double kv = in->k[ki], xv = in->x[xi], wv = in->w[yi];
                                r->y[yi] += kv * xv;
                                r->ay[yi] += fabs(kv * xv);
                                r->dk[ki] += wv * xv;
                                r->adk[ki] += fabs(wv * xv);
                                r->dx[xi] += wv * kv;
                                r->adx[xi] += fabs(wv * kv);
                            }
                }
}

static void reference_free(struct reference *r) {
    double *all[6] = {r->y, r->ay, r->dk, r->adk, r->dx, r->adx};
    for (int i = 0; i < 6; i++) free(all[i]);
}

/* Results of one backend; false (with a diagnostic) where the graph could not be computed. */
struct results {
    float *y, *dk, *dx; /* dk, dx NULL for an f16 kernel */
};

static bool grads_wanted(const struct conv_case *c) { return c->ktype == GGML_TYPE_F32; }

static bool run_case(ggml_backend_t backend, const struct conv_case *c, const struct inputs *in, struct results *out) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){256 * ggml_tensor_overhead() + ggml_graph_overhead_custom(512, true), NULL, true});
    struct ggml_tensor *k = ggml_new_tensor_4d(ctx, c->ktype, c->kw, c->kh, c->ic, c->oc);
    /* a transposed view: the data stored [H, W, IC, N] */
    struct ggml_tensor *xs = c->transposed ? ggml_new_tensor_4d(ctx, GGML_TYPE_F32, c->h, c->w, c->ic, c->n)
                                           : ggml_new_tensor_4d(ctx, GGML_TYPE_F32, c->w, c->h, c->ic, c->n);
    struct ggml_tensor *x = c->transposed ? ggml_transpose(ctx, xs) : xs;
    struct ggml_tensor *w = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, in->ow, in->oh, c->oc, c->n);
    if (grads_wanted(c)) {
        ggml_set_param(k);
        ggml_set_param(xs);
    }
    struct ggml_tensor *y = ggml_conv_2d_direct(ctx, k, x, c->s0, c->s1, c->p0, c->p1, c->d0, c->d1);
    struct ggml_tensor *loss = ggml_sum(ctx, ggml_mul(ctx, y, w));
    struct ggml_cgraph *g = ggml_new_graph_custom(ctx, 512, grads_wanted(c));
    ggml_build_forward_expand(g, loss);
    if (grads_wanted(c)) {
        ggml_set_loss(loss);
        ggml_build_backward_expand(ctx, g, NULL);
    }
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    bool ok = buf != NULL;
    if (ok) {
        if (c->ktype == GGML_TYPE_F16) {
            ggml_fp16_t *h = malloc((size_t)in->nk * sizeof *h);
            for (int64_t i = 0; i < in->nk; i++) h[i] = ggml_fp32_to_fp16(in->k[i]);
            ggml_backend_tensor_set(k, h, 0, (size_t)in->nk * sizeof *h);
            free(h);
        } else {
            tensor_set_f32(k, in->k);
        }
        float *xt = malloc((size_t)in->nx * sizeof *xt); /* the data in its storage order */
        for (int64_t i = 0; i < in->nx; i++) {
            const int64_t xx = i % c->w, yy = (i / c->w) % c->h, rest = i / ((int64_t)c->w * c->h);
            xt[c->transposed ? (rest * c->w + xx) * c->h + yy : i] = in->x[i];
        }
        tensor_set_f32(xs, xt);
        free(xt);
        tensor_set_f32(w, in->w);
        ggml_graph_reset(g);
        ok = ggml_backend_graph_compute(backend, g) == GGML_STATUS_SUCCESS;
    }
    memset(out, 0, sizeof *out);
    if (ok) {
        out->y = malloc((size_t)in->ny * sizeof(float));
        tensor_get_f32(y, out->y);
    }
    if (ok && grads_wanted(c)) {
        struct ggml_tensor *gk = ggml_graph_get_grad(g, k), *gx = ggml_graph_get_grad(g, xs);
        ok = gk && gx;
        if (ok) {
            out->dk = malloc((size_t)in->nk * sizeof(float));
            float *gxs = malloc((size_t)in->nx * sizeof(float));
            out->dx = malloc((size_t)in->nx * sizeof(float));
            tensor_get_f32(gk, out->dk);
            tensor_get_f32(gx, gxs);
            for (int64_t i = 0; i < in->nx; i++) { /* back to the logical order */
                const int64_t xx = i % c->w, yy = (i / c->w) % c->h, rest = i / ((int64_t)c->w * c->h);
                out->dx[i] = gxs[c->transposed ? (rest * c->w + xx) * c->h + yy : i];
            }
            free(gxs);
        }
    }
    if (!ok) tap_diag("%s: the graph failed on %s: %s", c->name, ggml_backend_name(backend), ggmlc_last_error());
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    return ok;
}

static void results_free(struct results *r) {
    free(r->y);
    free(r->dk);
    free(r->dx);
}

/* Every value within rel of the sum of |products| that makes it (plus a tiny absolute floor). */
static bool within(const float *got, const double *ref, const double *abs_sum, int64_t n, double rel, const char *what,
                   const char *backend, const char *name) {
    int64_t worst = -1;
    double worst_ratio = 0;
    for (int64_t i = 0; i < n; i++) {
        const double bound = rel * abs_sum[i] + 1e-30, ratio = fabs(got[i] - ref[i]) / bound;
        if (!(ratio <= worst_ratio)) worst_ratio = ratio, worst = i;
    }
    const bool ok = worst_ratio <= 1.0;
    tap_ok(ok, "%s: %s %s within %.1e of the sum of |products| (worst: %.3g of the bound)", name, backend, what, rel, worst_ratio);
    if (!ok && worst >= 0) tap_diag("  [%lld] got %.9g, reference %.9g, sum |products| %.6g", (long long)worst, got[worst], ref[worst], abs_sum[worst]);
    return ok;
}

static void check_case(ggml_backend_t vk, ggml_backend_t cpu, const struct conv_case *c, double rel) {
    struct inputs in;
    struct reference ref;
    struct results rv, rc;
    inputs_make(c, &in);
    reference_make(c, &in, &ref);
    const bool ok_v = run_case(vk, c, &in, &rv), ok_c = run_case(cpu, c, &in, &rc);
    tap_ok(ok_v && ok_c, "%s: computed on %s and on the CPU", c->name, ggml_backend_name(vk));
    if (ok_v && ok_c) {
        const double cpu_rel = c->ktype == GGML_TYPE_F16 ? F16_REL : F32_REL, both = rel > cpu_rel ? rel : cpu_rel;
        within(rc.y, ref.y, ref.ay, in.ny, cpu_rel, "forward", "cpu", c->name);
        within(rv.y, ref.y, ref.ay, in.ny, rel, "forward", "vulkan", c->name);
        ok_nmse(rv.y, rc.y, (size_t)in.ny, both * both, "%s: vulkan forward against the CPU backend", c->name);
        if (grads_wanted(c)) {
            within(rv.dk, ref.dk, ref.adk, in.nk, rel, "kernel gradient", "vulkan", c->name);
            within(rv.dx, ref.dx, ref.adx, in.nx, rel, "input gradient", "vulkan", c->name);
            within(rc.dk, ref.dk, ref.adk, in.nk, F32_REL, "kernel gradient", "cpu", c->name);
            within(rc.dx, ref.dx, ref.adx, in.nx, F32_REL, "input gradient", "cpu", c->name);
        }
    }
    results_free(&rv);
    results_free(&rc);
    reference_free(&ref);
    inputs_free(&in);
}

int main(void) {
    test_vulkan_env();
    ggmlc_init();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) return tap_skip_all("no Vulkan device");
    ggml_backend_t vk = ggml_backend_init_by_name("vulkan", NULL), cpu = ggml_backend_init_by_name("cpu", NULL);
    if (!vk || !cpu) return tap_skip_all("no Vulkan or CPU backend");
    const char *cm = getenv("GGMLC_VK_CONV_CM");
    const bool exact = cm && strcmp(cm, "0") == 0;
    const double rel = exact ? F32_REL : F16_REL;
    tap_diag("tolerance %.1e of the sum of |products| (%s)", rel, exact ? "GGMLC_VK_CONV_CM=0: f32 kernels" : "f16 operands allowed");
    test_seed(42);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(vk, cpu, &cases[i], rel);
    ggml_backend_free(vk);
    ggml_backend_free(cpu);
    return tap_done();
}
