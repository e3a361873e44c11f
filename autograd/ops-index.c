/*
 * ops-index.c - gather, index_select and scatter_add.  Indices (integer values stored as
 * floats) are read on the host and turned into one-hot weights, so each op is a product or a
 * masked sum of recorded ops and its gradients follow (gather's is a scatter-add, and the
 * other way round).  Dense one-hot weights cost O(rows x size of the dim): fine for the sizes
 * of classes and sequences, not for large vocabularies.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"
#include "autograd-impl.h"

/* dim as a non-negative PyTorch dim, or -1 with a message. */
static int dim_of(const ga_tensor *t, int dim, const char *op) {
    int k = ggmlc__ga_axis(t, dim, op);
    return k < 0 ? -1 : (t->ndim > 0 ? t->ndim : 1) - 1 - k;
}

ga_tensor *ggmlc__ga_one_hot(struct ga_tmps *s, const ga_tensor *idx, int64_t n, const char *op) {
    const int64_t count = ga_numel(idx);
    float *v = ggmlc__ga_host_copy(idx);
    float *oh = v ? calloc((size_t)(count * n), sizeof *oh) : NULL;
    bool ok = oh != NULL;
    for (int64_t i = 0; i < count && ok; i++) {
        ok = v[i] >= 0 && v[i] < (float)n && v[i] == floorf(v[i]);
        if (ok)
            oh[i * n + (int64_t)v[i]] = 1;
        else
            ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: index %g is outside [0, %lld)", op, v[i],
                            (long long)n);
    }
    free(v);
    int64_t shape[GA_MAX_DIMS + 1];
    int nd = ga_shape(idx, shape);
    shape[nd] = n;
    ga_tensor *t = ok && nd < GA_MAX_DIMS
                       ? ga_from_array(idx->dev, oh, (size_t)(count * n), nd + 1, shape)
                       : NULL;
    if (ok && nd >= GA_MAX_DIMS)
        ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: indices of at most %d dimensions", op,
                        GA_MAX_DIMS - 1);
    free(oh);
    return ggmlc__ga_tmp(s, t);
}

/* The permutation that swaps dim with the last one (its own inverse). */
static void swap_last(int nd, int dim, int perm[GA_MAX_DIMS]) {
    for (int i = 0; i < nd; i++) perm[i] = i;
    perm[dim] = nd - 1;
    perm[nd - 1] = dim;
}

static ga_tensor *to_last(struct ga_tmps *s, const ga_tensor *t, int dim) {
    int perm[GA_MAX_DIMS];
    swap_last(t->ndim, dim, perm);
    return dim == t->ndim - 1 ? (ga_tensor *)t : ggmlc__ga_tmp(s, ga_permute(t, perm));
}

static bool same_lead(const ga_tensor *t, const ga_tensor *idx, int dim, const char *op) {
    if (!ggmlc__ga_check_pair(t, idx, op)) return false;
    bool ok = t->ndim == idx->ndim && t->ndim < GA_MAX_DIMS;
    for (int d = 0; d < t->ndim && ok; d++) ok = d == dim || ga_size(t, d) == ga_size(idx, d);
    if (!ok)
        ggmlc_set_error(GGMLC_ERR_SHAPE,
                        "%s: index and input of the same dimensions (at most %d), "
                        "equal except along dim",
                        op, GA_MAX_DIMS - 1);
    return ok;
}

ga_tensor *ga_gather(const ga_tensor *t, int dim, const ga_tensor *indices) {
    const char *op = "ga_gather";
    if (!ggmlc__ga_check(t, op) || (dim = dim_of(t, dim, op)) < 0 ||
        !same_lead(t, indices, dim, op))
        return NULL;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    /* along the last dim: out[..., k] = sum_j onehot[..., k, j] t[..., j] */
    ga_tensor *tl = to_last(&s, t, dim), *il = to_last(&s, indices, dim);
    ga_tensor *oh = tl && il ? ggmlc__ga_one_hot(&s, il, ga_size(tl, -1), op) : NULL;
    ga_tensor *tu = ggmlc__ga_tmp(&s, oh ? ga_unsqueeze(tl, -2) : NULL);
    ga_tensor *g =
        ggmlc__ga_tmp(&s, tu ? ga_sum_dim(ggmlc__ga_tmp(&s, ga_mul(oh, tu)), -1, false) : NULL);
    int perm[GA_MAX_DIMS];
    swap_last(t->ndim, dim, perm);
    return ggmlc__ga_tmp_end(&s, g ? ga_permute(g, perm) : NULL);
}

ga_tensor *ga_scatter_add(const ga_tensor *t, int dim, const ga_tensor *indices,
                          const ga_tensor *src) {
    const char *op = "ga_scatter_add";
    if (!ggmlc__ga_check(t, op) || (dim = dim_of(t, dim, op)) < 0 ||
        !same_lead(t, indices, dim, op) || !ggmlc__ga_check_pair(t, src, op))
        return NULL;
    if (memcmp(src->ne, indices->ne, sizeof src->ne) != 0)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: src and index shapes differ", op), NULL;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    /* along the last dim: add[..., j] = sum_k onehot[..., k, j] src[..., k] */
    ga_tensor *tl = to_last(&s, t, dim), *il = to_last(&s, indices, dim);
    ga_tensor *sl = to_last(&s, src, dim);
    ga_tensor *oh = tl && il && sl ? ggmlc__ga_one_hot(&s, il, ga_size(tl, -1), op) : NULL;
    ga_tensor *su = ggmlc__ga_tmp(&s, oh ? ga_unsqueeze(sl, -1) : NULL);
    ga_tensor *add =
        ggmlc__ga_tmp(&s, su ? ga_sum_dim(ggmlc__ga_tmp(&s, ga_mul(oh, su)), -2, false) : NULL);
    ga_tensor *sum = ggmlc__ga_tmp(&s, add ? ga_add(tl, add) : NULL);
    int perm[GA_MAX_DIMS];
    swap_last(t->ndim, dim, perm);
    return ggmlc__ga_tmp_end(&s, sum ? ga_permute(sum, perm) : NULL);
}

ga_tensor *ga_index_select(const ga_tensor *t, int dim, const ga_tensor *indices) {
    const char *op = "ga_index_select";
    if (!ggmlc__ga_check_pair(t, indices, op) || (dim = dim_of(t, dim, op)) < 0) return NULL;
    if (indices->ndim != 1)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: indices must be 1-D", op), NULL;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    /* the dim first, the rest flattened: onehot (K, n) @ t (n, rest) */
    int perm[GA_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) perm[i] = i;
    perm[0] = dim;
    perm[dim] = 0;
    ga_tensor *tf = dim == 0 ? (ga_tensor *)t : ggmlc__ga_tmp(&s, ga_permute(t, perm));
    int64_t shape[GA_MAX_DIMS];
    int nd = tf ? ga_shape(tf, shape) : 0;
    ga_tensor *t2 = tf ? ggmlc__ga_tmp(&s, ga_reshape(tf, GA_SHAPE(shape[0], -1))) : NULL;
    ga_tensor *oh = t2 ? ggmlc__ga_one_hot(&s, indices, shape[0], op) : NULL;
    ga_tensor *r = ggmlc__ga_tmp(&s, oh ? ga_matmul(oh, t2) : NULL);
    if (nd > 0) shape[0] = ga_numel(indices);
    ga_tensor *rs = ggmlc__ga_tmp(&s, r ? ga_reshape(r, nd, shape) : NULL);
    return ggmlc__ga_tmp_end(&s, rs ? (dim == 0 ? ga_retain(rs) : ga_permute(rs, perm)) : NULL);
}
