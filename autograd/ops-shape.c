/*
 * ops-shape.c - shape ops with their gradients: permute, narrow, squeeze, unsqueeze, expand,
 * cat, stack, split and chunk.  Results are contiguous copies except where a reshape does.
 */
#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"
#include "autograd-impl.h"

static ga_tensor *finish(ga_tensor *a, struct ggml_tensor *n, int ndim, const char *op,
                         ga_vjp vjp) {
    return ggmlc__ga_record(ggmlc__ga_from_node(a->dev, n, ndim), op, vjp, &a, 1);
}

/* ---------------------------------------------------------------- permute */

/* i[0..3]: the ggml permutation (axis k of the input goes to position i[k]) */
static void permute_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                        struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    int inv[GGML_MAX_DIMS];
    for (int k = 0; k < GGML_MAX_DIMS; k++) inv[fn->i[k]] = k;
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    grads[0] = ggml_cont(ctx, ggml_permute(ctx, g, inv[0], inv[1], inv[2], inv[3]));
}

ga_tensor *ga_permute(const ga_tensor *ca, const int *dims) {
    ga_tensor *a = (ga_tensor *)ca;
    if (!ggmlc__ga_check(a, "ga_permute")) return NULL;
    const int nd = a->ndim;
    int ax[GGML_MAX_DIMS] = {0, 1, 2, 3};
    bool seen[GGML_MAX_DIMS] = {0};
    for (int i = 0; i < nd; i++) {
        int d = dims ? dims[i] : -99;
        if (d < 0) d += nd;
        if (d < 0 || d >= nd || seen[d]) {
            ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_permute: dims are no permutation of %d", nd);
            return NULL;
        }
        seen[d] = true;
        ax[nd - 1 - d] = nd - 1 - i;
    }
    if (!ggmlc__ga_reserve(a->dev, 4)) return NULL;
    struct ggml_tensor *n = ggmlc__ga_node(a);
    if (!n) return NULL;
    struct ggml_context *ctx = ggmlc__ga_ctx(a);
    n = ggml_cont(ctx, ggml_permute(ctx, n, ax[0], ax[1], ax[2], ax[3]));
    ga_tensor *r = finish(a, n, nd, "ga_permute", permute_vjp);
    if (r && r->fn) memcpy(r->fn->i, ax, sizeof ax);
    return r;
}

/* ----------------------------------------------------------------- narrow */

/* i[0] = axis, i[1] = start: the gradient is zero-padded back to the input's size */
static void narrow_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                       struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    const ga_tensor *a = fn->inputs[0];
    int pad[2 * GGML_MAX_DIMS] = {0};
    const int k = fn->i[0];
    pad[2 * k] = fn->i[1];
    pad[2 * k + 1] = (int)(a->ne[k] - out->ne[k] - fn->i[1]);
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    if (!ggml_is_contiguous(g)) g = ggml_cont(ctx, g);
    grads[0] = ggml_pad_ext(ctx, g, pad[0], pad[1], pad[2], pad[3], pad[4], pad[5], pad[6], pad[7]);
}

/* A contiguous copy of axis k of n from start, length long. */
static struct ggml_tensor *slice(struct ggml_context *ctx, struct ggml_tensor *n, int k,
                                 int64_t start, int64_t length) {
    int64_t ne[GGML_MAX_DIMS];
    memcpy(ne, n->ne, sizeof ne);
    ne[k] = length;
    struct ggml_tensor *v = ggml_view_4d(ctx, n, ne[0], ne[1], ne[2], ne[3], n->nb[1], n->nb[2],
                                         n->nb[3], (size_t)start * n->nb[k]);
    return ggml_cont(ctx, v);
}

ga_tensor *ga_narrow(const ga_tensor *ca, int dim, int64_t start, int64_t length) {
    ga_tensor *a = (ga_tensor *)ca;
    if (!ggmlc__ga_check(a, "ga_narrow")) return NULL;
    int k = ggmlc__ga_axis(a, dim, "ga_narrow");
    if (k < 0) return NULL;
    if (start < 0) start += a->ne[k];
    if (start < 0 || length < 1 || start + length > a->ne[k]) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_narrow: [%lld, %lld) is outside size %lld",
                        (long long)start, (long long)(start + length), (long long)a->ne[k]);
        return NULL;
    }
    if (!ggmlc__ga_reserve(a->dev, 4)) return NULL;
    struct ggml_tensor *n = ggmlc__ga_node(a);
    if (!n) return NULL;
    ga_tensor *r =
        finish(a, slice(ggmlc__ga_ctx(a), n, k, start, length), a->ndim, "ga_narrow", narrow_vjp);
    if (r && r->fn) {
        r->fn->i[0] = k;
        r->fn->i[1] = (int)start;
    }
    return r;
}

/* ------------------------------------------------- squeeze, unsqueeze, expand */

ga_tensor *ga_squeeze(const ga_tensor *a, int dim) {
    if (!ggmlc__ga_check(a, "ga_squeeze")) return NULL;
    int k = ggmlc__ga_axis(a, dim, "ga_squeeze");
    if (k < 0) return NULL;
    int64_t shape[GA_MAX_DIMS];
    int nd = ga_shape(a, shape);
    if (nd == 0 || shape[nd - 1 - k] != 1) return ga_reshape(a, nd, shape); /* unchanged */
    memmove(&shape[nd - 1 - k], &shape[nd - k], (size_t)k * sizeof *shape);
    return ga_reshape(a, nd - 1, shape);
}

ga_tensor *ga_unsqueeze(const ga_tensor *a, int dim) {
    if (!ggmlc__ga_check(a, "ga_unsqueeze")) return NULL;
    int nd = a->ndim;
    if (dim < 0) dim += nd + 1;
    if (dim < 0 || dim > nd || nd == GA_MAX_DIMS) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                        "ga_unsqueeze: dimension %d of a %d-D tensor "
                        "(at most %d dimensions)",
                        dim, nd, GA_MAX_DIMS);
        return NULL;
    }
    int64_t shape[GA_MAX_DIMS + 1];
    ga_shape(a, shape);
    memmove(&shape[dim + 1], &shape[dim], (size_t)(nd - dim) * sizeof *shape);
    shape[dim] = 1;
    return ga_reshape(a, nd + 1, shape);
}

static void expand_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                       struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    grads[0] = g; /* summed back to the input's shape by backward */
}

ga_tensor *ga_expand(const ga_tensor *ca, int ndim, const int64_t *shape) {
    ga_tensor *a = (ga_tensor *)ca;
    if (!ggmlc__ga_check(a, "ga_expand")) return NULL;
    if (ndim < a->ndim || ndim > GA_MAX_DIMS || !shape) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "ga_expand: %d dimensions for a %d-D tensor", ndim,
                        a->ndim);
        return NULL;
    }
    int64_t ne[GGML_MAX_DIMS] = {1, 1, 1, 1};
    for (int j = 0; j < ndim; j++) { /* j: ggml axis */
        int64_t want = shape[ndim - 1 - j], have = a->ne[j];
        ne[j] = want == -1 && j < a->ndim ? have : want;
        if (ne[j] < 1 || (have != 1 && have != ne[j])) {
            ggmlc_set_error(GGMLC_ERR_SHAPE, "ga_expand: size %lld cannot become %lld",
                            (long long)have, (long long)want);
            return NULL;
        }
    }
    if (!ggmlc__ga_reserve(a->dev, 4)) return NULL;
    struct ggml_tensor *n = ggmlc__ga_node(a);
    if (!n) return NULL;
    n = ggml_repeat_4d(ggmlc__ga_ctx(a), n, ne[0], ne[1], ne[2], ne[3]);
    return finish(a, n, ndim, "ga_expand", expand_vjp);
}

/* ------------------------------------------------------------------- cat */

/* i[0] = axis: each input's gradient is its slice of g */
static void cat_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                    struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    const int k = fn->i[0];
    if (!ggml_is_contiguous(g)) g = ggml_cont(ctx, g);
    int64_t start = 0;
    for (int i = 0; i < fn->n_inputs; i++) {
        const int64_t len = fn->inputs[i]->ne[k];
        if (fn->inputs[i]->requires_grad) grads[i] = slice(ctx, g, k, start, len);
        start += len;
    }
}

/* Up to GA_MAX_INPUTS tensors of matching shapes, concatenated along ggml axis k. */
static ga_tensor *cat_few(ga_tensor *const *ts, int n, int k) {
    struct ggml_tensor *acc = NULL;
    for (int i = 0; i < n; i++) {
        struct ggml_tensor *x = ggmlc__ga_node(ts[i]);
        if (!x) return NULL;
        acc = acc ? ggml_concat(ggmlc__ga_ctx(ts[0]), acc, x, k) : x;
    }
    if (n == 1) acc = ggml_cont(ggmlc__ga_ctx(ts[0]), acc);
    int nd = ts[0]->ndim > 0 ? ts[0]->ndim : 1;
    ga_tensor *r = ggmlc__ga_from_node(ts[0]->dev, acc, nd);
    r = ggmlc__ga_record(r, "ga_cat", cat_vjp, ts, n);
    if (r && r->fn) r->fn->i[0] = k;
    return r;
}

static bool cat_check(ga_tensor *const *ts, int n, int k, const char *op) {
    for (int i = 0; i < n; i++) {
        if (!ggmlc__ga_check_pair(ts[0], ts[i], op)) return false;
        if (ts[i]->ndim != ts[0]->ndim) {
            ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: tensor %d has %d dimensions, not %d", op, i,
                            ts[i]->ndim, ts[0]->ndim);
            return false;
        }
        for (int j = 0; j < GGML_MAX_DIMS; j++) {
            if (j != k && ts[i]->ne[j] != ts[0]->ne[j]) {
                ggmlc_set_error(GGMLC_ERR_SHAPE,
                                "%s: tensor %d differs in a dimension other "
                                "than the joined one",
                                op, i);
                return false;
            }
        }
    }
    return true;
}

ga_tensor *ga_cat(ga_tensor *const *ts, int n, int dim) {
    if (!ts || n < 1) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_cat: no tensors");
        return NULL;
    }
    if (!ggmlc__ga_check(ts[0], "ga_cat")) return NULL;
    int k = ggmlc__ga_axis(ts[0], dim, "ga_cat");
    if (k < 0 || !cat_check(ts, n, k, "ga_cat") || !ggmlc__ga_reserve(ts[0]->dev, 2 * n + 4))
        return NULL;
    /* groups of GA_MAX_INPUTS, the running result first in each next group */
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    int take = n < GA_MAX_INPUTS ? n : GA_MAX_INPUTS;
    ga_tensor *acc = cat_few(ts, take, k);
    for (int i = take; i < n && acc; i += GA_MAX_INPUTS - 1) {
        ga_tensor *group[GA_MAX_INPUTS] = {ggmlc__ga_tmp(&s, acc)};
        int m = n - i < GA_MAX_INPUTS - 1 ? n - i : GA_MAX_INPUTS - 1;
        memcpy(&group[1], &ts[i], (size_t)m * sizeof *ts);
        acc = cat_few(group, m + 1, k);
    }
    return ggmlc__ga_tmp_end(&s, acc);
}

ga_tensor *ga_stack(ga_tensor *const *ts, int n, int dim) {
    if (!ts || n < 1 || n > 1024) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_stack: 1 to 1024 tensors");
        return NULL;
    }
    ga_tensor **u = calloc((size_t)n, sizeof *u);
    if (!u) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_stack: out of memory"), NULL;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    bool ok = true;
    for (int i = 0; i < n && ok; i++) ok = (u[i] = ga_unsqueeze(ts[i], dim)) != NULL;
    ga_tensor *r = ok ? ga_cat(u, n, dim) : NULL;
    for (int i = 0; i < n; i++) ga_release(u[i]);
    free(u);
    return ggmlc__ga_tmp_end(&s, r);
}

/* ------------------------------------------------------------ split, chunk */

int ga_split(const ga_tensor *t, int64_t split_size, int dim, ga_tensor **out, int max_out) {
    if (!ggmlc__ga_check(t, "ga_split")) return -1;
    int k = ggmlc__ga_axis(t, dim, "ga_split");
    if (k < 0) return -1;
    const int64_t size = t->ne[k];
    if (split_size < 1 || !out || (size + split_size - 1) / split_size > max_out) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_split: pieces of %lld of %lld do not fit in %d",
                        (long long)split_size, (long long)size, max_out);
        return -1;
    }
    int n = 0;
    for (int64_t start = 0; start < size; start += split_size) {
        int64_t len = size - start < split_size ? size - start : split_size;
        out[n] = ga_narrow(t, dim, start, len);
        if (!out[n]) {
            while (n > 0) ga_release(out[--n]);
            return -1;
        }
        n++;
    }
    return n;
}

int ga_chunk(const ga_tensor *t, int chunks, int dim, ga_tensor **out, int max_out) {
    if (!ggmlc__ga_check(t, "ga_chunk")) return -1;
    int k = ggmlc__ga_axis(t, dim, "ga_chunk");
    if (k < 0) return -1;
    if (chunks < 1) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_chunk: %d chunks", chunks);
        return -1;
    }
    /* as torch.chunk: pieces of ceil(size / chunks), perhaps fewer of them */
    return ga_split(t, (t->ne[k] + chunks - 1) / chunks, dim, out, max_out);
}
