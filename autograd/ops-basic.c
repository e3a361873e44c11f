/*
 * ops-basic.c - reductions, unary functions, softmax, the MSE loss and shape views, with their
 * vector-Jacobian products.
 */
#include <string.h>

#include "ggmlc.h"
#include "autograd-impl.h"

static ga_tensor *unary_result(ga_tensor *a, struct ggml_tensor *n, int ndim, const char *op,
                               ga_vjp vjp) {
    return ggmlc__ga_record(ggmlc__ga_from_node(a->dev, n, ndim), op, vjp, &a, 1);
}

/* ------------------------------------------------------------ reductions */

/* sum and mean of everything: the gradient is spread back over the input's shape */
static void sum_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                    struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    const ga_tensor *a = fn->inputs[0];
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    if (fn->f[0] != 1.0f) g = ggml_scale(ctx, g, fn->f[0]);
    grads[0] = ggml_repeat_4d(ctx, g, a->ne[0], a->ne[1], a->ne[2], a->ne[3]);
}

static ga_tensor *sum_all(const ga_tensor *ca, bool mean, const char *op) {
    ga_tensor *a = (ga_tensor *)ca;
    if (!ggmlc__ga_check(a, op) || !ggmlc__ga_reserve(a->dev, 4)) return NULL;
    struct ggml_tensor *n = ggmlc__ga_node(a);
    if (!n) return NULL;
    float scale = mean ? 1.0f / (float)ga_numel(a) : 1.0f;
    struct ggml_tensor *s = ggml_sum(ggmlc__ga_ctx(a), n);
    if (mean) s = ggml_scale(ggmlc__ga_ctx(a), s, scale);
    ga_tensor *r = unary_result(a, s, 0, op, sum_vjp);
    if (r && r->fn) r->fn->f[0] = scale;
    return r;
}

ga_tensor *ga_sum(const ga_tensor *a) { return sum_all(a, false, "ga_sum"); }
ga_tensor *ga_mean(const ga_tensor *a) { return sum_all(a, true, "ga_mean"); }

/* over one axis: i[0] = ggml axis; the gradient is reshaped to keepdim's shape and repeated */
static void sum_dim_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                        struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    const ga_tensor *a = fn->inputs[0];
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    int64_t kept[GGML_MAX_DIMS];
    memcpy(kept, a->ne, sizeof kept);
    kept[fn->i[0]] = 1;
    g = ggmlc__ga_as_ne(ctx, g, kept);
    if (fn->f[0] != 1.0f) g = ggml_scale(ctx, g, fn->f[0]);
    grads[0] = ggml_repeat_4d(ctx, g, a->ne[0], a->ne[1], a->ne[2], a->ne[3]);
}

static ga_tensor *sum_dim(const ga_tensor *ca, int dim, bool keepdim, bool mean, const char *op) {
    ga_tensor *a = (ga_tensor *)ca;
    if (!ggmlc__ga_check(a, op)) return NULL;
    int k = ggmlc__ga_axis(a, dim, op);
    if (k < 0 || !ggmlc__ga_reserve(a->dev, 8)) return NULL;
    struct ggml_tensor *n = ggmlc__ga_node(a);
    if (!n) return NULL;
    struct ggml_context *ctx = ggmlc__ga_ctx(a);
    struct ggml_tensor *s = ggmlc__ga_swap0(ctx, ggml_sum_rows(ctx, ggmlc__ga_swap0(ctx, n, k)), k);
    float scale = mean ? 1.0f / (float)a->ne[k] : 1.0f;
    if (mean) s = ggml_scale(ctx, s, scale);
    int ndim = a->ndim;
    if (!keepdim && a->ndim > 0) {
        int64_t ne[GGML_MAX_DIMS + 1];
        int j = 0;
        for (int i = 0; i < GGML_MAX_DIMS; i++)
            if (i != k) ne[j++] = a->ne[i];
        ne[j] = 1;
        s = ggmlc__ga_as_ne(ctx, s, ne);
        ndim--;
    }
    ga_tensor *r = unary_result(a, s, ndim, op, sum_dim_vjp);
    if (r && r->fn) {
        r->fn->i[0] = k;
        r->fn->f[0] = scale;
    }
    return r;
}

ga_tensor *ga_sum_dim(const ga_tensor *a, int dim, bool keepdim) {
    return sum_dim(a, dim, keepdim, false, "ga_sum_dim");
}
ga_tensor *ga_mean_dim(const ga_tensor *a, int dim, bool keepdim) {
    return sum_dim(a, dim, keepdim, true, "ga_mean_dim");
}

/* ----------------------------------------------------------------- unary */

enum unary_kind { U_NEG, U_EXP, U_LOG, U_SQRT, U_ABS, U_RELU, U_SIGMOID, U_TANH };
static const char *const unary_names[] = {"ga_neg", "ga_exp",  "ga_log",     "ga_sqrt",
                                          "ga_abs", "ga_relu", "ga_sigmoid", "ga_tanh"};

static struct ggml_tensor *unary_node(struct ggml_context *ctx, enum unary_kind k,
                                      struct ggml_tensor *x) {
    switch (k) {
    case U_NEG: return ggml_neg(ctx, x);
    case U_EXP: return ggml_exp(ctx, x);
    case U_LOG: return ggml_log(ctx, x);
    case U_SQRT: return ggml_sqrt(ctx, x);
    case U_ABS: return ggml_abs(ctx, x);
    case U_RELU: return ggml_relu(ctx, x);
    case U_SIGMOID: return ggml_sigmoid(ctx, x);
    default: return ggml_tanh(ctx, x);
    }
}

static void unary_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                      struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    struct ggml_tensor *x = ggmlc__ga_node(fn->inputs[0]), *y = ggmlc__ga_node(out);
    switch ((enum unary_kind)fn->i[0]) {
    case U_NEG: grads[0] = ggml_neg(ctx, g); break;
    case U_EXP: grads[0] = ggml_mul(ctx, g, y); break;
    case U_LOG: grads[0] = ggml_div(ctx, g, x); break;
    case U_SQRT: grads[0] = ggml_scale(ctx, ggml_div(ctx, g, y), 0.5f); break;
    case U_ABS: grads[0] = ggml_mul(ctx, g, ggml_sgn(ctx, x)); break;
    case U_RELU: /* one UNARY_BACK node, g * (x > 0), where step and mul were two */
        grads[0] = ggml_unary_back(ctx, x, ggmlc__ga_as_ne(ctx, g, x->ne), GGML_UNARY_OP_RELU);
        break;
    case U_SIGMOID: /* y (1 - y) */
        grads[0] = ggml_mul(ctx, g, ggml_mul(ctx, y, ggml_scale_bias(ctx, y, -1.0f, 1.0f)));
        break;
    case U_TANH: /* 1 - y^2 */
        grads[0] = ggml_mul(ctx, g, ggml_scale_bias(ctx, ggml_sqr(ctx, y), -1.0f, 1.0f));
        break;
    }
}

static ga_tensor *unary(const ga_tensor *ca, enum unary_kind k) {
    ga_tensor *a = (ga_tensor *)ca;
    const char *op = unary_names[k];
    if (!ggmlc__ga_check(a, op) || !ggmlc__ga_reserve(a->dev, 4)) return NULL;
    struct ggml_tensor *n = ggmlc__ga_node(a);
    if (!n) return NULL;
    if (!ggml_is_contiguous(n)) n = ggml_cont(ggmlc__ga_ctx(a), n);
    ga_tensor *r = unary_result(a, unary_node(ggmlc__ga_ctx(a), k, n), a->ndim, op, unary_vjp);
    if (r && r->fn) r->fn->i[0] = k;
    return r;
}

ga_tensor *ga_neg(const ga_tensor *t) { return unary(t, U_NEG); }
ga_tensor *ga_exp(const ga_tensor *t) { return unary(t, U_EXP); }
ga_tensor *ga_log(const ga_tensor *t) { return unary(t, U_LOG); }
ga_tensor *ga_sqrt(const ga_tensor *t) { return unary(t, U_SQRT); }
ga_tensor *ga_abs(const ga_tensor *t) { return unary(t, U_ABS); }
ga_tensor *ga_relu(const ga_tensor *t) { return unary(t, U_RELU); }
ga_tensor *ga_sigmoid(const ga_tensor *t) { return unary(t, U_SIGMOID); }
ga_tensor *ga_tanh(const ga_tensor *t) { return unary(t, U_TANH); }

/* --------------------------------------------------------------- softmax */

/* i[0] = ggml axis, i[1] = log.  softmax: dx = y (g - sum(g y)); log: dx = g - e^y sum(g). */
static void softmax_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                        struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    int k = fn->i[0];
    struct ggml_tensor *gs = ggmlc__ga_swap0(ctx, ggmlc__ga_as_ne(ctx, g, out->ne), k);
    struct ggml_tensor *ys = ggmlc__ga_swap0(ctx, ggmlc__ga_node(out), k), *dx;
    if (fn->i[1]) {
        dx = ggml_sub(ctx, gs, ggml_mul(ctx, ggml_exp(ctx, ys), ggml_sum_rows(ctx, gs)));
    } else {
        struct ggml_tensor *dot = ggml_sum_rows(ctx, ggml_mul(ctx, gs, ys));
        dx = ggml_mul(ctx, ys, ggml_sub(ctx, gs, dot));
    }
    grads[0] = ggmlc__ga_swap0(ctx, dx, k);
}

static ga_tensor *softmax(const ga_tensor *ca, int dim, bool log, const char *op) {
    ga_tensor *a = (ga_tensor *)ca;
    if (!ggmlc__ga_check(a, op)) return NULL;
    int k = ggmlc__ga_axis(a, dim, op);
    if (k < 0 || !ggmlc__ga_reserve(a->dev, 8)) return NULL;
    struct ggml_tensor *n = ggmlc__ga_node(a);
    if (!n) return NULL;
    struct ggml_context *ctx = ggmlc__ga_ctx(a);
    struct ggml_tensor *x = ggmlc__ga_swap0(ctx, n, k);
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    struct ggml_tensor *y = ggml_soft_max(ctx, x);
    /* log of the stable softmax: exact except where a probability underflows float */
    if (log) y = ggml_log(ctx, y);
    ga_tensor *r = unary_result(a, ggmlc__ga_swap0(ctx, y, k), a->ndim, op, softmax_vjp);
    if (r && r->fn) {
        r->fn->i[0] = k;
        r->fn->i[1] = log;
    }
    return r;
}

ga_tensor *ga_softmax(const ga_tensor *t, int dim) { return softmax(t, dim, false, "ga_softmax"); }
ga_tensor *ga_log_softmax(const ga_tensor *t, int dim) {
    return softmax(t, dim, true, "ga_log_softmax");
}

/* ----------------------------------------------------------------- views */

static void reshape_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                        struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    grads[0] = ggmlc__ga_as_ne(ggmlc__ga_ctx(out), g, fn->inputs[0]->ne);
}

ga_tensor *ga_reshape(const ga_tensor *ca, int ndim, const int64_t *shape) {
    ga_tensor *a = (ga_tensor *)ca;
    if (!ggmlc__ga_check(a, "ga_reshape")) return NULL;
    if (ndim < 0 || ndim > GA_MAX_DIMS || (ndim && !shape))
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "ga_reshape: %d dimensions", ndim), NULL;
    int64_t sh[GA_MAX_DIMS], known = 1;
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        sh[i] = shape[i];
        if (sh[i] == -1 && infer < 0)
            infer = i;
        else if (sh[i] < 1)
            return ggmlc_set_error(GGMLC_ERR_SHAPE, "ga_reshape: size %lld", (long long)sh[i]),
                   NULL;
        else
            known *= sh[i];
    }
    if (infer >= 0) sh[infer] = known > 0 ? ga_numel(a) / known : 0;
    int64_t ne[GGML_MAX_DIMS];
    ggmlc__ga_shape_to_ne(ndim, sh, ne);
    if (ne[0] * ne[1] * ne[2] * ne[3] != ga_numel(a) || (infer >= 0 && sh[infer] < 1))
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "ga_reshape: %lld elements do not fit the shape",
                               (long long)ga_numel(a)),
               NULL;
    if (!ggmlc__ga_reserve(a->dev, 4)) return NULL;
    struct ggml_tensor *n = ggmlc__ga_as_ne(ggmlc__ga_ctx(a), ggmlc__ga_node(a), ne);
    return unary_result(a, n, ndim, "ga_reshape", reshape_vjp);
}

static void transpose_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                          struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    int ax[GGML_MAX_DIMS] = {0, 1, 2, 3};
    ax[fn->i[0]] = fn->i[1];
    ax[fn->i[1]] = fn->i[0];
    grads[0] = ggml_cont(ctx, ggml_permute(ctx, g, ax[0], ax[1], ax[2], ax[3]));
}

ga_tensor *ga_transpose(const ga_tensor *ca, int dim0, int dim1) {
    ga_tensor *a = (ga_tensor *)ca;
    if (!ggmlc__ga_check(a, "ga_transpose")) return NULL;
    int k0 = ggmlc__ga_axis(a, dim0, "ga_transpose"),
        k1 = k0 < 0 ? -1 : ggmlc__ga_axis(a, dim1, "ga_transpose");
    if (k1 < 0 || !ggmlc__ga_reserve(a->dev, 4)) return NULL;
    struct ggml_tensor *n = ggmlc__ga_node(a);
    if (!n) return NULL;
    int ax[GGML_MAX_DIMS] = {0, 1, 2, 3};
    ax[k0] = k1;
    ax[k1] = k0;
    struct ggml_context *ctx = ggmlc__ga_ctx(a);
    /* a copy for now: ggml's kernels mostly want contiguous operands */
    struct ggml_tensor *t = ggml_cont(ctx, ggml_permute(ctx, n, ax[0], ax[1], ax[2], ax[3]));
    ga_tensor *r = unary_result(a, t, a->ndim, "ga_transpose", transpose_vjp);
    if (r && r->fn) {
        r->fn->i[0] = k0;
        r->fn->i[1] = k1;
    }
    return r;
}

/* ---------------------------------------------------------------- losses */

ga_tensor *ga_mse_loss(const ga_tensor *input, const ga_tensor *target) {
    if (!ggmlc__ga_check_pair(input, target, "ga_mse_loss")) return NULL;
    if (memcmp(input->ne, target->ne, sizeof input->ne) != 0)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "ga_mse_loss: input and target shapes differ"),
               NULL;
    ggmlc__ga_internal(1);
    ga_tensor *d = ga_sub(input, target);
    ga_tensor *sq = ga_mul(d, d);
    ga_tensor *r = ga_mean(sq);
    ga_release(d);
    ga_release(sq);
    ggmlc__ga_internal(-1);
    ggmlc__ga_scope_track(r);
    return r;
}
