/*
 * ops-reduce.c - reductions beyond sum and mean: max, min, argmax, var, std, logsumexp.
 *
 * max over a dim is ggml's 1-D max pooling with the row as the window, the dim moved to the
 * front first; its gradient goes to the elements equal to the maximum (all of them on a tie,
 * where PyTorch picks one).
 */
#include <math.h>
#include <string.h>

#include "ggmlc.h"
#include "autograd-impl.h"

/* The maximum along ggml axis k, keeping the axis as size 1. */
static struct ggml_tensor *max_keep(struct ggml_context *ctx, struct ggml_tensor *x, int k) {
    struct ggml_tensor *s = ggmlc__ga_swap0(ctx, x, k);
    const int64_t n = s->ne[0], rows = s->ne[1] * s->ne[2] * s->ne[3];
    struct ggml_tensor *m =
        ggml_pool_1d(ctx, ggml_reshape_2d(ctx, s, n, rows), GGML_OP_POOL_MAX, (int)n, (int)n, 0);
    m = ggml_reshape_4d(ctx, m, 1, s->ne[1], s->ne[2], s->ne[3]);
    return ggmlc__ga_swap0(ctx, m, k);
}

static void drop_axis(const ga_tensor *a, int k, int64_t ne[GGML_MAX_DIMS]) {
    int j = 0;
    for (int i = 0; i < GGML_MAX_DIMS; i++)
        if (i != k) ne[j++] = a->ne[i];
    ne[j] = 1;
}

/* i[0] = axis, i[1] = negate (min): g where x equals the extreme, 0 elsewhere */
static void max_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                    struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    const ga_tensor *a = fn->inputs[0];
    int64_t kept[GGML_MAX_DIMS];
    memcpy(kept, a->ne, sizeof kept);
    kept[fn->i[0]] = 1;
    struct ggml_tensor *x = ggmlc__ga_node(fn->inputs[0]);
    struct ggml_tensor *m = ggmlc__ga_as_ne(ctx, ggmlc__ga_node(out), kept);
    /* gap >= 0, zero exactly at the extreme: 1 - step(gap) marks it */
    struct ggml_tensor *mr = ggml_repeat(ctx, m, x);
    struct ggml_tensor *gap = fn->i[1] ? ggml_sub(ctx, x, mr) : ggml_sub(ctx, mr, x);
    struct ggml_tensor *mask = ggml_scale_bias(ctx, ggml_step(ctx, gap), -1, 1);
    grads[0] = ggml_mul(ctx, mask, ggml_repeat(ctx, ggmlc__ga_as_ne(ctx, g, kept), x));
}

static ga_tensor *extreme(const ga_tensor *ca, int dim, bool keepdim, bool min, const char *op) {
    ga_tensor *a = (ga_tensor *)ca;
    if (!ggmlc__ga_check(a, op)) return NULL;
    int k = ggmlc__ga_axis(a, dim, op);
    if (k < 0 || !ggmlc__ga_reserve(a->dev, 16)) return NULL;
    struct ggml_tensor *x = ggmlc__ga_node(a);
    if (!x) return NULL;
    struct ggml_context *ctx = ggmlc__ga_ctx(a);
    struct ggml_tensor *m =
        min ? ggml_neg(ctx, max_keep(ctx, ggml_neg(ctx, x), k)) : max_keep(ctx, x, k);
    int ndim = a->ndim;
    if (!keepdim && ndim > 0) {
        int64_t ne[GGML_MAX_DIMS];
        drop_axis(a, k, ne);
        m = ggmlc__ga_as_ne(ctx, m, ne);
        ndim--;
    }
    ga_tensor *r = ggmlc__ga_record(ggmlc__ga_from_node(a->dev, m, ndim), op, max_vjp, &a, 1);
    if (r && r->fn) {
        r->fn->i[0] = k;
        r->fn->i[1] = min;
    }
    return r;
}

ga_tensor *ga_max_dim(const ga_tensor *t, int dim, bool keepdim) {
    return extreme(t, dim, keepdim, false, "ga_max_dim");
}
ga_tensor *ga_min_dim(const ga_tensor *t, int dim, bool keepdim) {
    return extreme(t, dim, keepdim, true, "ga_min_dim");
}

ga_tensor *ga_argmax(const ga_tensor *ca, int dim, bool keepdim) {
    ga_tensor *a = (ga_tensor *)ca;
    if (!ggmlc__ga_check(a, "ga_argmax")) return NULL;
    int k = ggmlc__ga_axis(a, dim, "ga_argmax");
    if (k < 0 || !ggmlc__ga_reserve(a->dev, 8)) return NULL;
    struct ggml_tensor *x = ggmlc__ga_node(a);
    if (!x) return NULL;
    struct ggml_context *ctx = ggmlc__ga_ctx(a);
    struct ggml_tensor *s = ggmlc__ga_swap0(ctx, x, k);
    const int64_t rows = s->ne[1] * s->ne[2] * s->ne[3];
    /* ggml's argmax: the first maximum of each row, as I32, made float */
    struct ggml_tensor *i = ggml_argmax(ctx, ggml_reshape_2d(ctx, s, s->ne[0], rows));
    i = ggml_reshape_4d(ctx, ggml_cast(ctx, i, GGML_TYPE_F32), 1, s->ne[1], s->ne[2], s->ne[3]);
    i = ggmlc__ga_swap0(ctx, i, k);
    int ndim = a->ndim;
    if (!keepdim && ndim > 0) {
        int64_t ne[GGML_MAX_DIMS];
        drop_axis(a, k, ne);
        i = ggmlc__ga_as_ne(ctx, i, ne);
        ndim--;
    }
    return ggmlc__ga_from_node(a->dev, i, ndim); /* indices: no gradient */
}

/* --------------------------------------------------- var, std, logsumexp */

ga_tensor *ga_var(const ga_tensor *t, int dim, bool unbiased, bool keepdim) {
    if (!ggmlc__ga_check(t, "ga_var")) return NULL;
    int k = ggmlc__ga_axis(t, dim, "ga_var");
    if (k < 0) return NULL;
    const int64_t n = t->ne[k];
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *mu = ggmlc__ga_tmp(&s, ga_mean_dim(t, dim, true));
    ga_tensor *d = ggmlc__ga_tmp(&s, ga_sub(t, mu));
    ga_tensor *ss = ggmlc__ga_tmp(&s, ga_sum_dim(ggmlc__ga_tmp(&s, ga_mul(d, d)), dim, keepdim));
    const double div = (double)n - (unbiased ? 1 : 0);
    return ggmlc__ga_tmp_end(&s, ga_mul_scalar(ss, div > 0 ? (float)(1.0 / div) : NAN));
}

ga_tensor *ga_std(const ga_tensor *t, int dim, bool unbiased, bool keepdim) {
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *v = ggmlc__ga_tmp(&s, ga_var(t, dim, unbiased, keepdim));
    return ggmlc__ga_tmp_end(&s, ga_sqrt(v));
}

ga_tensor *ga_logsumexp(const ga_tensor *t, int dim, bool keepdim) {
    if (!ggmlc__ga_check(t, "ga_logsumexp") || ggmlc__ga_axis(t, dim, "ga_logsumexp") < 0)
        return NULL;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    /* m + log(sum(exp(x - m))) with m the maximum, held constant: the gradient is still
     * softmax(x), and nothing overflows */
    bool was = ga_set_grad_enabled(false);
    ga_tensor *m = ggmlc__ga_tmp(&s, ga_max_dim(t, dim, true));
    ga_set_grad_enabled(was);
    ga_tensor *e = ggmlc__ga_tmp(&s, ga_exp(ggmlc__ga_tmp(&s, ga_sub(t, m))));
    ga_tensor *l = ggmlc__ga_tmp(&s, ga_log(ggmlc__ga_tmp(&s, ga_sum_dim(e, dim, true))));
    ga_tensor *r = ggmlc__ga_tmp(&s, ga_add(l, m));
    return ggmlc__ga_tmp_end(&s, keepdim ? ga_retain(r) : ga_squeeze(r, dim));
}
