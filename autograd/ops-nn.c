/*
 * ops-nn.c - neural-network functions written as compositions of recorded ops, so that their
 * gradients are exact by construction: where, masked_fill, dropout, layer_norm, rms_norm,
 * batch_norm, group_norm, embedding and scaled_dot_product_attention.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"
#include "optimizer.h"
#include "autograd-impl.h"

/* 1 where t is nonzero, else 0; records nothing (masks carry no gradient). */
static ga_tensor *nonzero_mask(struct ga_tmps *s, const ga_tensor *t) {
    bool was = ga_set_grad_enabled(false);
    ga_tensor *a = ggmlc__ga_tmp(s, ga_abs(t));
    ga_tensor *m = ggmlc__ga_tmp(
        s, a ? ggmlc__ga_from_node(a->dev, ggml_step(ggmlc__ga_ctx(a), ggmlc__ga_node(a)), a->ndim)
             : NULL);
    ga_set_grad_enabled(was);
    return m;
}

ga_tensor *ga_where(const ga_tensor *cond, const ga_tensor *a, const ga_tensor *b) {
    if (!ggmlc__ga_check_pair(cond, a, "ga_where") || !ggmlc__ga_check_pair(a, b, "ga_where"))
        return NULL;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    /* b + mask (a - b): the gradient is mask g for a and (1 - mask) g for b */
    ga_tensor *m = nonzero_mask(&s, cond);
    ga_tensor *d = ggmlc__ga_tmp(&s, ga_sub(a, b));
    ga_tensor *md = ggmlc__ga_tmp(&s, m && d ? ga_mul(m, d) : NULL);
    return ggmlc__ga_tmp_end(&s, md ? ga_add(b, md) : NULL);
}

ga_tensor *ga_masked_fill(const ga_tensor *t, const ga_tensor *mask, float value) {
    if (!ggmlc__ga_check_pair(t, mask, "ga_masked_fill")) return NULL;
    /* an infinite fill becomes the largest float: 0 * inf would poison the other elements */
    if (isinf(value)) value = value > 0 ? FLT_MAX : -FLT_MAX;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *m = nonzero_mask(&s, mask);
    ga_tensor *keep = ggmlc__ga_tmp(&s, m ? ga_add_scalar(ggmlc__ga_tmp(&s, ga_neg(m)), 1) : NULL);
    ga_tensor *kept = ggmlc__ga_tmp(&s, keep ? ga_mul(t, keep) : NULL);
    ga_tensor *fill = ggmlc__ga_tmp(&s, m ? ga_mul_scalar(m, value) : NULL);
    return ggmlc__ga_tmp_end(&s, kept && fill ? ga_add(kept, fill) : NULL);
}

/* ---------------------------------------------------------------- dropout */

ga_tensor *ga_dropout(const ga_tensor *t, float p, bool training) {
    if (!ggmlc__ga_check(t, "ga_dropout")) return NULL;
    if (!(p >= 0 && p <= 1)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_dropout: p = %g is not in [0, 1]", p);
        return NULL;
    }
    if (!training || p == 0) return ga_mul_scalar(t, 1.0f);
    size_t n = (size_t)ga_numel(t);
    float *keep = malloc(n * sizeof *keep);
    if (!keep) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_dropout: out of memory"), NULL;
    struct ggmlc_rng *rng = ggmlc__ga_rng();
    const float scale = p < 1 ? 1.0f / (1.0f - p) : 0.0f;
    for (size_t i = 0; i < n; i++) keep[i] = ggmlc__rng_uniform(rng) >= p ? scale : 0.0f;
    int64_t shape[GA_MAX_DIMS];
    int nd = ga_shape(t, shape);
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *mask = ggmlc__ga_tmp(&s, ga_from_array(t->dev, keep, n, nd, shape));
    free(keep);
    return ggmlc__ga_tmp_end(&s, mask ? ga_mul(t, mask) : NULL);
}

/* --------------------------------------------------------- normalisations */

/* (x - mean) / sqrt(var + eps) over dims (all keepdim), var biased; *var_out (if asked) gets
 * the variance tensor (a temporary of s). */
static ga_tensor *normalize(struct ga_tmps *s, const ga_tensor *x, const int *dims, int n_dims,
                            float eps, ga_tensor **mean_out, ga_tensor **var_out) {
    ga_tensor *mu = (ga_tensor *)x;
    for (int i = 0; i < n_dims; i++) mu = ggmlc__ga_tmp(s, ga_mean_dim(mu, dims[i], true));
    ga_tensor *d = ggmlc__ga_tmp(s, ga_sub(x, mu));
    ga_tensor *v = ggmlc__ga_tmp(s, ga_mul(d, d));
    for (int i = 0; i < n_dims; i++) v = ggmlc__ga_tmp(s, ga_mean_dim(v, dims[i], true));
    if (mean_out) *mean_out = mu;
    if (var_out) *var_out = v;
    ga_tensor *inv = ggmlc__ga_tmp(s, ga_pow(ggmlc__ga_tmp(s, ga_add_scalar(v, eps)), -0.5f));
    return ggmlc__ga_tmp(s, ga_mul(d, inv));
}

/* y * weight + bias, each optional, broadcast as given. */
static ga_tensor *affine(struct ga_tmps *s, ga_tensor *y, const ga_tensor *w, const ga_tensor *b) {
    if (y && w) y = ggmlc__ga_tmp(s, ga_mul(y, w));
    if (y && b) y = ggmlc__ga_tmp(s, ga_add(y, b));
    return y ? ga_retain(y) : NULL;
}

static bool vector_of(const ga_tensor *v, int64_t n, const char *what, const char *op) {
    if (!v) return true;
    if (!ggmlc__ga_check(v, op)) return false;
    if (v->ndim == 1 && v->ne[0] == n) return true;
    ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: %s must be a vector of %lld", op, what, (long long)n);
    return false;
}

ga_tensor *ga_layer_norm(const ga_tensor *t, const ga_tensor *weight, const ga_tensor *bias,
                         float eps) {
    if (!ggmlc__ga_check(t, "ga_layer_norm") || t->ndim < 1 ||
        !vector_of(weight, t->ne[0], "weight", "ga_layer_norm") ||
        !vector_of(bias, t->ne[0], "bias", "ga_layer_norm"))
        return NULL;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *y = normalize(&s, t, (const int[]){-1}, 1, eps, NULL, NULL);
    return ggmlc__ga_tmp_end(&s, affine(&s, y, weight, bias));
}

ga_tensor *ga_rms_norm(const ga_tensor *t, const ga_tensor *weight, float eps) {
    if (!ggmlc__ga_check(t, "ga_rms_norm") || t->ndim < 1 ||
        !vector_of(weight, t->ne[0], "weight", "ga_rms_norm"))
        return NULL;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *ms = ggmlc__ga_tmp(&s, ga_mean_dim(ggmlc__ga_tmp(&s, ga_mul(t, t)), -1, true));
    ga_tensor *inv = ggmlc__ga_tmp(&s, ga_pow(ggmlc__ga_tmp(&s, ga_add_scalar(ms, eps)), -0.5f));
    ga_tensor *y = ggmlc__ga_tmp(&s, ga_mul(t, inv));
    return ggmlc__ga_tmp_end(&s, affine(&s, y, weight, NULL));
}

/* A per-channel vector (C) shaped to broadcast over (N, C, ...) of ndim dimensions. */
static ga_tensor *per_channel(struct ga_tmps *s, const ga_tensor *v, int ndim) {
    if (!v) return NULL;
    int64_t shape[GA_MAX_DIMS] = {v->ne[0], 1, 1, 1};
    return ggmlc__ga_tmp(s, ga_reshape(v, ndim - 1, shape));
}

/* running = (1 - momentum) running + momentum stat, without recording */
static enum ggmlc_status update_running(ga_tensor *running, ga_tensor *stat, float momentum,
                                        float stat_scale) {
    if (!running) return GGMLC_OK;
    bool was = ga_set_grad_enabled(false);
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *st = ggmlc__ga_tmp(&s, ga_reshape(stat, 1, (const int64_t[]){running->ne[0]}));
    ga_tensor *a = ggmlc__ga_tmp(&s, ga_mul_scalar(running, 1 - momentum));
    ga_tensor *b = ggmlc__ga_tmp(&s, ga_mul_scalar(st, momentum * stat_scale));
    ga_tensor *n = ggmlc__ga_tmp(&s, ga_add(a, b));
    enum ggmlc_status r = n ? ga_assign_(running, n) : ggmlc_last_status();
    ggmlc__ga_tmp_end(&s, NULL);
    ga_set_grad_enabled(was);
    return r;
}

ga_tensor *ga_batch_norm(const ga_tensor *t, ga_tensor *running_mean, ga_tensor *running_var,
                         const ga_tensor *weight, const ga_tensor *bias, bool training,
                         float momentum, float eps) {
    const char *op = "ga_batch_norm";
    if (!ggmlc__ga_check(t, op)) return NULL;
    if (t->ndim < 2)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: input must be (N, C, ...)", op), NULL;
    const int64_t c = t->ne[t->ndim - 2];
    if (!vector_of(running_mean, c, "running_mean", op) ||
        !vector_of(running_var, c, "running_var", op) || !vector_of(weight, c, "weight", op) ||
        !vector_of(bias, c, "bias", op))
        return NULL;
    if (!training && (!running_mean || !running_var))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: evaluation needs running statistics",
                               op),
               NULL;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    int dims[GA_MAX_DIMS] = {0}, nd = 1;
    for (int d = 2; d < t->ndim; d++) dims[nd++] = d;
    ga_tensor *y;
    if (training) {
        ga_tensor *mu = NULL, *var = NULL;
        y = normalize(&s, t, dims, nd, eps, &mu, &var);
        const double n = (double)ga_numel(t) / (double)c;
        if (y && (update_running(running_mean, mu, momentum, 1) != GGMLC_OK ||
                  update_running(running_var, var, momentum, n > 1 ? (float)(n / (n - 1)) : 1)))
            y = NULL;
    } else {
        ga_tensor *mu = per_channel(&s, running_mean, t->ndim);
        ga_tensor *v = per_channel(&s, running_var, t->ndim);
        ga_tensor *inv = ggmlc__ga_tmp(&s, ga_pow(ggmlc__ga_tmp(&s, ga_add_scalar(v, eps)), -0.5f));
        y = ggmlc__ga_tmp(&s, ga_mul(ggmlc__ga_tmp(&s, ga_sub(t, mu)), inv));
    }
    return ggmlc__ga_tmp_end(
        &s, affine(&s, y, per_channel(&s, weight, t->ndim), per_channel(&s, bias, t->ndim)));
}

ga_tensor *ga_group_norm(const ga_tensor *t, int num_groups, const ga_tensor *weight,
                         const ga_tensor *bias, float eps) {
    const char *op = "ga_group_norm";
    if (!ggmlc__ga_check(t, op)) return NULL;
    int64_t shape[GA_MAX_DIMS];
    int nd = ga_shape(t, shape);
    if (nd < 2 || num_groups < 1 || shape[1] % num_groups != 0)
        return ggmlc_set_error(GGMLC_ERR_SHAPE,
                               "%s: input (N, C, ...) with C divisible by %d "
                               "groups",
                               op, num_groups),
               NULL;
    if (!vector_of(weight, shape[1], "weight", op) || !vector_of(bias, shape[1], "bias", op))
        return NULL;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *g = ggmlc__ga_tmp(&s, ga_reshape(t, GA_SHAPE(shape[0], num_groups, -1)));
    ga_tensor *y = normalize(&s, g, (const int[]){-1}, 1, eps, NULL, NULL);
    y = ggmlc__ga_tmp(&s, ga_reshape(y, nd, shape));
    return ggmlc__ga_tmp_end(&s,
                             affine(&s, y, per_channel(&s, weight, nd), per_channel(&s, bias, nd)));
}

/* ------------------------------------------------------------- embedding */

ga_tensor *ga_embedding(const ga_tensor *indices, const ga_tensor *weight) {
    const char *op = "ga_embedding";
    if (!ggmlc__ga_check_pair(indices, weight, op)) return NULL;
    if (weight->ndim != 2 || indices->ndim > GA_MAX_DIMS - 1)
        return ggmlc_set_error(GGMLC_ERR_SHAPE,
                               "%s: weight (num, dim), indices of at most %d "
                               "dimensions",
                               op, GA_MAX_DIMS - 1),
               NULL;
    const int64_t num = weight->ne[1], n = ga_numel(indices);
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    /* a one-hot product: the gradient of weight is the scatter-add of the rows' gradients */
    ga_tensor *oh = ggmlc__ga_one_hot(&s, indices, num, op);
    ga_tensor *oh2 = oh ? ggmlc__ga_tmp(&s, ga_reshape(oh, GA_SHAPE(n, num))) : NULL;
    ga_tensor *rows = oh2 ? ggmlc__ga_tmp(&s, ga_matmul(oh2, weight)) : NULL;
    int64_t shape[GA_MAX_DIMS];
    int nd = ga_shape(indices, shape);
    shape[nd] = weight->ne[0];
    return ggmlc__ga_tmp_end(&s, rows ? ga_reshape(rows, nd + 1, shape) : NULL);
}

/* ------------------------------------------------------------- attention */

/* 0 on and below the diagonal, a very negative number above: (L, S) */
static ga_tensor *causal_mask(ga_device *dev, int64_t l, int64_t s) {
    float *m = malloc((size_t)(l * s) * sizeof *m);
    if (!m) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga: out of memory"), NULL;
    for (int64_t i = 0; i < l; i++)
        for (int64_t j = 0; j < s; j++) m[i * s + j] = j > i ? -INFINITY : 0;
    ga_tensor *t = ga_from_array(dev, m, (size_t)(l * s), GA_SHAPE(l, s));
    free(m);
    return t;
}

ga_tensor *ga_scaled_dot_product_attention(const ga_tensor *q, const ga_tensor *k,
                                           const ga_tensor *v, const ga_tensor *mask,
                                           float dropout_p, bool is_causal, float scale) {
    const char *op = "ga_scaled_dot_product_attention";
    if (!ggmlc__ga_check_pair(q, k, op) || !ggmlc__ga_check_pair(q, v, op) ||
        (mask && !ggmlc__ga_check_pair(q, mask, op)))
        return NULL;
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2 || q->ne[0] != k->ne[0] || k->ne[1] != v->ne[1])
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: q (..., L, E), k (..., S, E), v (..., S, Ev)",
                               op),
               NULL;
    if (scale == 0) scale = 1.0f / sqrtf((float)q->ne[0]);
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *kt = ggmlc__ga_tmp(&s, ga_transpose(k, -2, -1));
    ga_tensor *sc = ggmlc__ga_tmp(&s, ga_mul_scalar(ggmlc__ga_tmp(&s, ga_matmul(q, kt)), scale));
    if (mask) sc = ggmlc__ga_tmp(&s, ga_add(sc, mask));
    if (is_causal) {
        ga_tensor *cm = ggmlc__ga_tmp(&s, causal_mask(q->dev, q->ne[1], k->ne[1]));
        sc = ggmlc__ga_tmp(&s, cm ? ga_add(sc, cm) : NULL);
    }
    ga_tensor *p = ggmlc__ga_tmp(&s, ga_softmax(sc, -1));
    if (dropout_p > 0) p = ggmlc__ga_tmp(&s, ga_dropout(p, dropout_p, true));
    return ggmlc__ga_tmp_end(&s, p ? ga_matmul(p, v) : NULL);
}

/* ------------------------------------------------- scaled, masked softmax */

/* f[0] = scale, f[1] = max_bias: ggml's soft_max_ext_back gives the input's gradient */
static void softmax_ext_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                            struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    if (!ggml_is_contiguous(g)) g = ggml_cont(ctx, g);
    grads[0] = ggml_soft_max_ext_back(ctx, g, ggmlc__ga_node(out), fn->f[0], fn->f[1]);
}

ga_tensor *ga_softmax_ext(const ga_tensor *ct, const ga_tensor *cmask, float scale,
                          float max_bias) {
    ga_tensor *t = (ga_tensor *)ct, *mask = (ga_tensor *)cmask;
    const char *op = "ga_softmax_ext";
    if (!ggmlc__ga_check(t, op) || (mask && !ggmlc__ga_check_pair(t, mask, op))) return NULL;
    if (max_bias > 0 && !mask)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: ALiBi (max_bias > 0) needs a mask", op),
               NULL;
    if (!ggmlc__ga_reserve(t->dev, 4)) return NULL;
    struct ggml_tensor *x = ggmlc__ga_node(t), *m = mask ? ggmlc__ga_node(mask) : NULL;
    if (!x || (mask && !m)) return NULL;
    struct ggml_context *ctx = ggmlc__ga_ctx(t);
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    ga_tensor *r =
        ggmlc__ga_from_node(t->dev, ggml_soft_max_ext(ctx, x, m, scale, max_bias), t->ndim);
    r = ggmlc__ga_record(r, op, softmax_ext_vjp, &t, 1); /* the mask gets no gradient */
    if (r && r->fn) {
        r->fn->f[0] = scale;
        r->fn->f[1] = max_bias;
    }
    return r;
}
