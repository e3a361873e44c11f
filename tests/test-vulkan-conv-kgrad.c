/*
 * test-vulkan-conv-kgrad.c - the kernel gradient of a convolution on the Vulkan plugin: the
 * backward rules of CONV_2D and CONV_TRANSPOSE_2D build it as one CONV_2D with the batch and the
 * channels exchanged (core/backward-rules.c, conv_kernel_grad), which the plugin computes as an
 * implicit GEMM split along its long k (the batch's pixels) into layers of workgroups added in
 * order (ops-conv.c).  Checked against a double-precision reference computed here and against the
 * CPU backend: strides, padding, dilation, a forward pass that leaves a remainder of the data
 * unread, odd sizes, channel counts that are not multiples of 16, batches > 1; the split sums
 * deterministic (two runs give the same bits); and the fallbacks when a pipeline fails
 * ($GGMLC_VK_FAULT, vk-fault.c): without mm_split_sum the products run unsplit, without
 * conv2d_cm the f32 implicit GEMM takes them, without any conv2d kernel the nodes go to the CPU.
 *
 * Bounds as test-vulkan-conv's: every value within REL of the sum of |products| that makes it,
 * F16_REL where cooperative matrices may round the operands to f16, F32_REL with
 * GGMLC_VK_CONV_CM=0.  Skipped, visibly, when there is no Vulkan device.
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

/* A convolution: CONV_2D (kernel [KW, KH, IC, OC]) or, transposed, CONV_TRANSPOSE_2D (kernel
 * [KW, KH, OC, IC], stride s0, no padding or dilation); data [W, H, IC, N]. */
struct kg_case {
    const char *name;
    bool transposed;
    int kw, kh, ic, oc, w, h, n;
    int s0, s1, p0, p1, d0, d1;
};

static const struct kg_case cases[] = {
    {"conv_2d 3x3 3->19 on 31x29, batch 5 (k 4495)", false, 3, 3, 3, 19, 31, 29, 5, 1, 1, 1, 1, 1,
     1},
    {"conv_2d 3x2 5->7 stride 2,3 on 12x11 (remainder unread)", false, 3, 2, 5, 7, 12, 11, 3, 2, 3,
     0, 0, 1, 1},
    {"conv_2d 2x3 6->33 stride 3,2 pad 2,1 dil 2,3, batch 2", false, 2, 3, 6, 33, 23, 19, 2, 3, 2,
     2, 1, 2, 3},
    {"conv_2d 1x1 17->9, batch 7", false, 1, 1, 17, 9, 13, 10, 7, 1, 1, 0, 0, 1, 1},
    {"conv_transpose_2d 3x3 7->5 stride 2, batch 2", true, 3, 3, 7, 5, 9, 6, 2, 2, 2, 0, 0, 1, 1},
    {"conv_transpose_2d 2x2 20->18 stride 1, batch 3", true, 2, 2, 20, 18, 11, 13, 3, 1, 1, 0, 0, 1,
     1},
    {"conv_transpose_2d 4x3 3->17 stride 3", true, 4, 3, 3, 17, 7, 5, 1, 3, 3, 0, 0, 1, 1},
};

static int64_t out_size(const struct kg_case *c, int in, int k, int axis) {
    if (c->transposed) return (int64_t)(in - 1) * c->s0 + k;
    const int s = axis ? c->s1 : c->s0, p = axis ? c->p1 : c->p0, d = axis ? c->d1 : c->d0;
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* Inputs (kernel, data, output weights: loss = sum(y * w)) and the double reference. */
struct problem {
    int64_t ow, oh, nk, nx, ny;
    float *k, *x, *w;
    double *dk, *adk, *dx, *adx; /* gradients and the sums of |products| that make them */
};

/* Kernel element (kx, ky, ic, oc) in the case's layout. */
static int64_t kernel_index(const struct kg_case *c, int kx, int ky, int ic, int oc) {
    return c->transposed ? (((int64_t)ic * c->oc + oc) * c->kh + ky) * c->kw + kx
                         : (((int64_t)oc * c->ic + ic) * c->kh + ky) * c->kw + kx;
}

/* The data position kernel tap kx reads for output ox along an axis (-1: none, or padding). */
static int64_t tap_source(const struct kg_case *c, int64_t o, int k, int axis) {
    if (c->transposed) {
        const int64_t t = o - k;
        return t >= 0 && t % c->s0 == 0 ? t / c->s0 : -1;
    }
    return axis ? o * c->s1 - c->p1 + (int64_t)k * c->d1 : o * c->s0 - c->p0 + (int64_t)k * c->d0;
}

static void problem_make(const struct kg_case *c, struct problem *p) {
    p->ow = out_size(c, c->w, c->kw, 0);
    p->oh = out_size(c, c->h, c->kh, 1);
    p->nk = (int64_t)c->kw * c->kh * c->ic * c->oc;
    p->nx = (int64_t)c->w * c->h * c->ic * c->n;
    p->ny = p->ow * p->oh * c->oc * c->n;
    p->k = malloc((size_t)p->nk * sizeof(float));
    p->x = malloc((size_t)p->nx * sizeof(float));
    p->w = malloc((size_t)p->ny * sizeof(float));
    test_fill_uniform(p->k, (size_t)p->nk, -1.0f, 1.0f);
    test_fill_uniform(p->x, (size_t)p->nx, -1.0f, 1.0f);
    test_fill_uniform(p->w, (size_t)p->ny, -1.0f, 1.0f);
    p->dk = calloc((size_t)p->nk, sizeof(double));
    p->adk = calloc((size_t)p->nk, sizeof(double));
    p->dx = calloc((size_t)p->nx, sizeof(double));
    p->adx = calloc((size_t)p->nx, sizeof(double));
    for (int n = 0; n < c->n; n++)
        for (int oc = 0; oc < c->oc; oc++)
            for (int64_t oy = 0; oy < p->oh; oy++)
                for (int64_t ox = 0; ox < p->ow; ox++) {
                    const double wv = p->w[((n * (int64_t)c->oc + oc) * p->oh + oy) * p->ow + ox];
                    for (int ic = 0; ic < c->ic; ic++)
                        for (int ky = 0; ky < c->kh; ky++)
                            for (int kx = 0; kx < c->kw; kx++) {
                                const int64_t x = tap_source(c, ox, kx, 0),
                                              y = tap_source(c, oy, ky, 1);
                                if (x < 0 || x >= c->w || y < 0 || y >= c->h) continue;
                                const int64_t ki = kernel_index(c, kx, ky, ic, oc),
                                              xi =
                                                  ((n * (int64_t)c->ic + ic) * c->h + y) * c->w + x;
                                p->dk[ki] += wv * p->x[xi];
                                p->adk[ki] += fabs(wv * p->x[xi]);
                                p->dx[xi] += wv * p->k[ki];
                                p->adx[xi] += fabs(wv * p->k[ki]);
                            }
                }
}

static void problem_free(struct problem *p) {
    void *all[] = {p->k, p->x, p->w, p->dk, p->adk, p->dx, p->adx};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

/* The gradients of the kernel and the data on backend into dk, dx; false (with a diagnostic) where
 * the graph could not be built or computed. */
static bool gradients(ggml_backend_t backend, const struct kg_case *c, const struct problem *p,
                      float *dk, float *dx) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){
        256 * ggml_tensor_overhead() + ggml_graph_overhead_custom(512, true), NULL, true});
    struct ggml_tensor *k =
        c->transposed ? ggml_new_tensor_4d(ctx, GGML_TYPE_F32, c->kw, c->kh, c->oc, c->ic)
                      : ggml_new_tensor_4d(ctx, GGML_TYPE_F32, c->kw, c->kh, c->ic, c->oc);
    struct ggml_tensor *x = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, c->w, c->h, c->ic, c->n);
    struct ggml_tensor *w = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, p->ow, p->oh, c->oc, c->n);
    ggml_set_param(k);
    ggml_set_param(x);
    struct ggml_tensor *y =
        c->transposed ? ggml_conv_transpose_2d_p0(ctx, k, x, c->s0)
                      : ggml_conv_2d_direct(ctx, k, x, c->s0, c->s1, c->p0, c->p1, c->d0, c->d1);
    struct ggml_tensor *loss = ggml_sum(ctx, ggml_mul(ctx, y, w));
    struct ggml_cgraph *g = ggml_new_graph_custom(ctx, 512, true);
    ggml_build_forward_expand(g, loss);
    ggml_set_loss(loss);
    ggml_build_backward_expand(ctx, g, NULL);
    struct ggml_tensor *gk = ggml_graph_get_grad(g, k), *gx = ggml_graph_get_grad(g, x);
    ggml_backend_buffer_t buf = gk && gx ? ggml_backend_alloc_ctx_tensors(ctx, backend) : NULL;
    bool ok = buf != NULL;
    if (ok) {
        tensor_set_f32(k, p->k);
        tensor_set_f32(x, p->x);
        tensor_set_f32(w, p->w);
        ggml_graph_reset(g);
        ok = ggml_backend_graph_compute(backend, g) == GGML_STATUS_SUCCESS;
    }
    if (ok) {
        tensor_get_f32(gk, dk);
        tensor_get_f32(gx, dx);
    } else {
        tap_diag("%s: the graph failed on %s: %s", c->name, ggml_backend_name(backend),
                 ggmlc_last_error());
    }
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    return ok;
}

/* Every value within rel of the sum of |products| that makes it (plus a tiny absolute floor). */
static bool within(const float *got, const double *ref, const double *abs_sum, int64_t n,
                   double rel, const char *what) {
    int64_t worst = 0;
    double worst_ratio = 0;
    for (int64_t i = 0; i < n; i++) {
        const double ratio = fabs(got[i] - ref[i]) / (rel * abs_sum[i] + 1e-30);
        if (!(ratio <= worst_ratio)) worst_ratio = ratio, worst = i;
    }
    const bool ok = worst_ratio <= 1.0;
    tap_ok(ok, "%s within %.1e of the sum of |products| (worst: %.3g of the bound)", what, rel,
           worst_ratio);
    if (!ok)
        tap_diag("  [%lld] got %.9g, reference %.9g, sum |products| %.6g", (long long)worst,
                 got[worst], ref[worst], abs_sum[worst]);
    return ok;
}

/* The case on backend against the reference, labelled label. */
static void check_backend(ggml_backend_t backend, const struct kg_case *c, const struct problem *p,
                          double rel, const char *label) {
    float *dk = malloc((size_t)p->nk * sizeof(float)), *dx = malloc((size_t)p->nx * sizeof(float));
    char what[256];
    const bool ok = gradients(backend, c, p, dk, dx);
    tap_ok(ok, "%s: %s computes the gradients", c->name, label);
    if (ok) {
        snprintf(what, sizeof what, "%s: %s kernel gradient", c->name, label);
        within(dk, p->dk, p->adk, p->nk, rel, what);
        snprintf(what, sizeof what, "%s: %s input gradient", c->name, label);
        within(dx, p->dx, p->adx, p->nx, rel, what);
    }
    free(dk);
    free(dx);
}

/* Two runs of the kernel gradient on backend give the same bits (split-k sums in a fixed order). */
static void check_deterministic(ggml_backend_t backend, const struct kg_case *c,
                                const struct problem *p) {
    float *dk[2], *dx = malloc((size_t)p->nx * sizeof(float));
    bool ok = true;
    for (int r = 0; r < 2; r++) {
        dk[r] = malloc((size_t)p->nk * sizeof(float));
        ok = gradients(backend, c, p, dk[r], dx) && ok;
    }
    tap_ok(ok && memcmp(dk[0], dk[1], (size_t)p->nk * sizeof(float)) == 0,
           "%s: vulkan kernel gradient identical in two runs", c->name);
    free(dk[0]);
    free(dk[1]);
    free(dx);
}

/* The Vulkan backend with fault spec ("" for none) in $GGMLC_VK_FAULT; NULL without a device. */
static ggml_backend_t vulkan_start(const char *spec) {
    if (*spec) setenv("GGMLC_VK_FAULT", spec, 1);
    ggmlc_init();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) return NULL;
    return ggml_backend_init_by_name("vulkan", NULL);
}

static void vulkan_stop(ggml_backend_t vk) {
    ggml_backend_free(vk);
    ggmlc_shutdown();
    unsetenv("GGMLC_VK_FAULT");
}

/* Pipelines that fail, and what takes their work. */
static const char *const faults[][2] = {
    {"pipeline:mm_split_sum", "unsplit (no mm_split_sum)"},
    {"pipeline:conv2d_cm", "f32 implicit GEMM (no conv2d_cm)"},
    {"pipeline:conv2d", "CPU fallback (no conv2d kernels)"},
};

int main(void) {
    test_vulkan_env();
    ggml_backend_t vk = vulkan_start("");
    if (!vk) return tap_skip_all("no Vulkan device");
    ggml_backend_t cpu = ggml_backend_init_by_name("cpu", NULL);
    if (!cpu) return tap_skip_all("no CPU backend");
    const char *cm = getenv("GGMLC_VK_CONV_CM");
    const double rel = cm && strcmp(cm, "0") == 0 ? F32_REL : F16_REL;
    tap_diag("tolerance %.1e of the sum of |products| on Vulkan, %.1e on the CPU", rel, F32_REL);
    const size_t n_cases = sizeof cases / sizeof cases[0];
    struct problem problems[sizeof cases / sizeof cases[0]];
    test_seed(24);
    for (size_t i = 0; i < n_cases; i++) problem_make(&cases[i], &problems[i]);
    for (size_t i = 0; i < n_cases; i++) {
        check_backend(vk, &cases[i], &problems[i], rel, "vulkan");
        check_backend(cpu, &cases[i], &problems[i], F32_REL, "cpu");
    }
    check_deterministic(vk, &cases[0], &problems[0]);
    ggml_backend_free(cpu);
    vulkan_stop(vk);
    for (size_t f = 0; f < sizeof faults / sizeof faults[0]; f++) {
        ggml_backend_t v = vulkan_start(faults[f][0]);
        if (!tap_ok(v != NULL, "the plugin starts with GGMLC_VK_FAULT=%s", faults[f][0])) continue;
        check_backend(v, &cases[0], &problems[0], rel, faults[f][1]);
        check_backend(v, &cases[4], &problems[4], rel, faults[f][1]);
        vulkan_stop(v);
    }
    for (size_t i = 0; i < n_cases; i++) problem_free(&problems[i]);
    return tap_done();
}
