/*
 * ops-conv.c - convolutions and pooling.  A convolution is im2col (a recorded op whose
 * gradient is ggml's im2col_back) followed by linear, a permute and the bias, all recorded, so
 * the gradients of input, weight and bias follow.  Pooling records ggml's pool_2d with
 * pool_2d_back as its gradient.
 */
#include <string.h>

#include "ggmlc.h"
#include "autograd-impl.h"

/* i[0..5] = s0, s1, p0, p1, d0, d1 (0: width) */
static void im2col_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                       struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    int64_t ne[GGML_MAX_DIMS];
    memcpy(ne, fn->inputs[0]->ne, sizeof ne);
    const int *i = fn->i;
    if (!ggml_is_contiguous(g)) g = ggml_cont(ctx, g);
    grads[0] = ggml_im2col_back(ctx, ggmlc__ga_node(fn->inputs[1]), g, ne, i[0], i[1], i[2], i[3],
                                fn->f[0], fn->f[1], true);
}

/* The patches of x (N, C, H, W) for kernels shaped as w: (N, OH, OW, C*KH*KW). */
static ga_tensor *im2col(ga_tensor *x, ga_tensor *w, const int p[6]) {
    if (!ggmlc__ga_reserve(x->dev, 4)) return NULL;
    struct ggml_tensor *nx = ggmlc__ga_node(x), *nw = ggmlc__ga_node(w);
    if (!nx || !nw) return NULL;
    struct ggml_tensor *cols = ggml_im2col(ggmlc__ga_ctx(x), nw, nx, p[0], p[1], p[2], p[3], p[4],
                                           p[5], true, GGML_TYPE_F32);
    ga_tensor *in[2] = {x, w};
    ga_tensor *r = ggmlc__ga_from_node(x->dev, cols, 4);
    /* only x gets a gradient from here: w gives the kernel's shape */
    bool w_grad = w->requires_grad;
    w->requires_grad = false;
    r = ggmlc__ga_record(r, "im2col", im2col_vjp, in, 2);
    w->requires_grad = w_grad;
    if (r && r->fn) {
        memcpy(r->fn->i, p, 4 * sizeof *p);
        r->fn->f[0] = (float)p[4];
        r->fn->f[1] = (float)p[5];
    }
    return r;
}

/* conv2d with per-axis stride, padding and dilation p = {s0, s1, p0, p1, d0, d1} (0: width). */
static ga_tensor *conv2d(const ga_tensor *cx, const ga_tensor *cw, const ga_tensor *b,
                         const int p[6], const char *op) {
    ga_tensor *x = (ga_tensor *)cx, *w = (ga_tensor *)cw;
    if (!ggmlc__ga_check_pair(x, w, op) || (b && !ggmlc__ga_check_pair(x, b, op))) return NULL;
    if (x->ndim != 4 || w->ndim != 4 || x->ne[2] != w->ne[2] ||
        (b && (b->ndim != 1 || b->ne[0] != w->ne[3])))
        return ggmlc_set_error(GGMLC_ERR_SHAPE,
                               "%s: input (N, C, ...), weight (OC, C, ...) and "
                               "bias (OC) do not fit",
                               op),
               NULL;
    for (int i = 0; i < 6; i++)
        if (p[i] < (i >= 2 && i < 4 ? 0 : 1))
            return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                                   "%s: stride and dilation >= 1, "
                                   "padding >= 0",
                                   op),
                   NULL;
    const int64_t kw = w->ne[0], kh = w->ne[1];
    const int64_t ow = (x->ne[0] + 2 * p[2] - p[4] * (kw - 1) - 1) / p[0] + 1;
    const int64_t oh = (x->ne[1] + 2 * p[3] - p[5] * (kh - 1) - 1) / p[1] + 1;
    if (ow < 1 || oh < 1)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: the kernel is larger than the input", op),
               NULL;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *cols = ggmlc__ga_tmp(&s, im2col(x, w, p));
    ga_tensor *w2 = ggmlc__ga_tmp(&s, ga_reshape(w, GA_SHAPE(w->ne[3], -1)));
    ga_tensor *y = ggmlc__ga_tmp(&s, cols && w2 ? ga_linear(cols, w2, NULL) : NULL);
    y = ggmlc__ga_tmp(&s, y ? ga_permute(y, (const int[]){0, 3, 1, 2}) : NULL);
    if (y && b) {
        ga_tensor *bb = ggmlc__ga_tmp(&s, ga_reshape(b, GA_SHAPE(b->ne[0], 1, 1)));
        y = ggmlc__ga_tmp(&s, ga_add(y, bb));
    }
    return ggmlc__ga_tmp_end(&s, y ? ga_retain(y) : NULL);
}

ga_tensor *ga_conv2d(const ga_tensor *input, const ga_tensor *weight, const ga_tensor *bias,
                     int stride, int padding, int dilation) {
    const int p[6] = {stride, stride, padding, padding, dilation, dilation};
    return conv2d(input, weight, bias, p, "ga_conv2d");
}

ga_tensor *ga_conv1d(const ga_tensor *input, const ga_tensor *weight, const ga_tensor *bias,
                     int stride, int padding, int dilation) {
    if (!ggmlc__ga_check_pair(input, weight, "ga_conv1d")) return NULL;
    if (input->ndim != 3 || weight->ndim != 3)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "ga_conv1d: input (N, C, L), weight (OC, C, K)"),
               NULL;
    /* a 2-D convolution of height 1 */
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    int64_t xs[4] = {input->ne[2], input->ne[1], 1, input->ne[0]};
    int64_t ws[4] = {weight->ne[2], weight->ne[1], 1, weight->ne[0]};
    ga_tensor *x4 = ggmlc__ga_tmp(&s, ga_reshape(input, 4, xs));
    ga_tensor *w4 = ggmlc__ga_tmp(&s, ga_reshape(weight, 4, ws));
    const int p[6] = {stride, 1, padding, 0, dilation, 1};
    ga_tensor *y = ggmlc__ga_tmp(&s, x4 && w4 ? conv2d(x4, w4, bias, p, "ga_conv1d") : NULL);
    return ggmlc__ga_tmp_end(&s, y ? ga_squeeze(y, 2) : NULL);
}

/* ------------------------------------------------------------------ pooling */

/* i[0] = op, i[1] = kernel, i[2] = stride, f[0] = padding */
static void pool_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                     struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    const int *i = fn->i;
    if (!ggml_is_contiguous(g)) g = ggml_cont(ctx, g);
    grads[0] = ggml_pool_2d_back(ctx, g, ggmlc__ga_node(fn->inputs[0]), (enum ggml_op_pool)i[0],
                                 i[1], i[1], i[2], i[2], fn->f[0], fn->f[0]);
}

static ga_tensor *pool2d(const ga_tensor *cx, enum ggml_op_pool kind, int kernel, int stride,
                         int padding, const char *op) {
    ga_tensor *x = (ga_tensor *)cx;
    if (!ggmlc__ga_check(x, op)) return NULL;
    if (stride <= 0) stride = kernel;
    if (x->ndim != 4 || kernel < 1 || padding < 0 || 2 * padding > kernel ||
        x->ne[0] + 2 * padding < kernel || x->ne[1] + 2 * padding < kernel)
        return ggmlc_set_error(GGMLC_ERR_SHAPE,
                               "%s: input (N, C, H, W) at least the kernel, "
                               "padding at most half the kernel",
                               op),
               NULL;
    if (!ggmlc__ga_reserve(x->dev, 4)) return NULL;
    struct ggml_tensor *n = ggmlc__ga_node(x);
    if (!n) return NULL;
    struct ggml_tensor *y = ggml_pool_2d(ggmlc__ga_ctx(x), n, kind, kernel, kernel, stride, stride,
                                         (float)padding, (float)padding);
    ga_tensor *r = ggmlc__ga_record(ggmlc__ga_from_node(x->dev, y, 4), op, pool_vjp, &x, 1);
    if (r && r->fn) {
        r->fn->i[0] = kind;
        r->fn->i[1] = kernel;
        r->fn->i[2] = stride;
        r->fn->f[0] = (float)padding;
    }
    return r;
}

ga_tensor *ga_max_pool2d(const ga_tensor *input, int kernel, int stride, int padding) {
    return pool2d(input, GGML_OP_POOL_MAX, kernel, stride, padding, "ga_max_pool2d");
}

ga_tensor *ga_avg_pool2d(const ga_tensor *input, int kernel, int stride, int padding) {
    return pool2d(input, GGML_OP_POOL_AVG, kernel, stride, padding, "ga_avg_pool2d");
}
