/*
 * ops-loss.c - losses as compositions of recorded ops (so their gradients follow): L1, smooth
 * L1, cross-entropy from logits (class indices or probabilities, label smoothing, ignore
 * index), NLL and BCE with logits; every one reduced by the mean, as PyTorch's default.
 *
 * Class indices are read on the host (they come from there) and turned into a weight matrix
 * W (N, C), so that the loss is -sum(W * log_probs) / (rows not ignored): one form for
 * indices, smoothing and ignored rows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"
#include "autograd-impl.h"

static bool same_shape(const ga_tensor *a, const ga_tensor *b, const char *op) {
    if (!ggmlc__ga_check_pair(a, b, op)) return false;
    if (memcmp(a->ne, b->ne, sizeof a->ne) == 0) return true;
    ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: input and target shapes differ", op);
    return false;
}

ga_tensor *ga_l1_loss(const ga_tensor *input, const ga_tensor *target) {
    if (!same_shape(input, target, "ga_l1_loss")) return NULL;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *d = ggmlc__ga_tmp(&s, ga_sub(input, target));
    return ggmlc__ga_tmp_end(&s, ga_mean(ggmlc__ga_tmp(&s, ga_abs(d))));
}

ga_tensor *ga_smooth_l1_loss(const ga_tensor *input, const ga_tensor *target, float beta) {
    if (!same_shape(input, target, "ga_smooth_l1_loss")) return NULL;
    if (!(beta >= 0)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_smooth_l1_loss: beta %g < 0", beta);
        return NULL;
    }
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    ga_tensor *a = ggmlc__ga_tmp(&s, ga_abs(ggmlc__ga_tmp(&s, ga_sub(input, target))));
    if (beta == 0) return ggmlc__ga_tmp_end(&s, ga_mean(a));
    /* with q = min(|d|, beta): q^2 / (2 beta) + (|d| - q) is the Huber form on both sides */
    ga_tensor *q = ggmlc__ga_tmp(&s, ga_clamp(a, -INFINITY, beta));
    ga_tensor *quad =
        ggmlc__ga_tmp(&s, ga_mul_scalar(ggmlc__ga_tmp(&s, ga_mul(q, q)), 0.5f / beta));
    ga_tensor *lin = ggmlc__ga_tmp(&s, ga_sub(a, q));
    return ggmlc__ga_tmp_end(&s, ga_mean(ggmlc__ga_tmp(&s, ga_add(quad, lin))));
}

/* The weights of indices (N) over C classes: one-hot (smoothed) rows, zero rows where the
 * index is ignore_index; *n_valid counts the others.  NULL with a message on a bad index. */
static ga_tensor *index_weights(const ga_tensor *logits, const ga_tensor *target,
                                int64_t ignore_index, float smoothing, int64_t *n_valid,
                                const char *op) {
    const int64_t c = logits->ne[0], rows = logits->ne[1] * logits->ne[2] * logits->ne[3];
    if (ga_numel(target) != rows || target->ndim != (logits->ndim > 0 ? logits->ndim - 1 : 0)) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: %lld targets for %lld rows of logits", op,
                        (long long)ga_numel(target), (long long)rows);
        return NULL;
    }
    float *idx = ggmlc__ga_host_copy(target), *w = calloc((size_t)(rows * c), sizeof *w);
    bool ok = idx && w;
    *n_valid = 0;
    for (int64_t r = 0; r < rows && ok; r++) {
        const float v = idx[r];
        if (v == (float)ignore_index) continue;
        if (!(v >= 0 && v < (float)c && v == floorf(v))) {
            ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: target %g of row %lld is no class of %lld",
                            op, v, (long long)r, (long long)c);
            ok = false;
            break;
        }
        for (int64_t k = 0; k < c; k++) w[r * c + k] = smoothing / (float)c;
        w[r * c + (int64_t)v] += 1 - smoothing;
        ++*n_valid;
    }
    int64_t shape[GA_MAX_DIMS];
    int nd = ga_shape(logits, shape);
    ga_tensor *wt = ok ? ga_from_array(logits->dev, w, (size_t)(rows * c), nd, shape) : NULL;
    free(idx);
    free(w);
    return wt;
}

/* -sum(weights * log_probs) / count */
static ga_tensor *weighted_nll(struct ga_tmps *s, ga_tensor *log_probs, ga_tensor *weights,
                               double count) {
    ga_tensor *total = ggmlc__ga_tmp(s, ga_sum(ggmlc__ga_tmp(s, ga_mul(log_probs, weights))));
    return ggmlc__ga_tmp_end(s, ga_mul_scalar(total, (float)(-1.0 / count)));
}

/* Cross-entropy of logits (N, C) or (C) with weights W as ggml's fused op: one node for the
 * loss and one for its gradient, where the composition (log_softmax, product, sum, scale)
 * took 6 nodes and its gradient 9 -- 15 single-task nodes in a row of a training step.
 * ggml's op is a mean over the rows, and its gradient scales each row's softmax by the
 * row's weight sum (ignored rows: 0), so any W works: f[0] = rows / count makes the mean
 * one over count.  Inputs: the logits and W (no gradient). */
/* The shape [C, rows] ggml's op takes for logits (or W) of shape (N, C) or (C). */
static void ce_rows_ne(const ga_tensor *logits, int64_t ne[GGML_MAX_DIMS]) {
    ne[0] = logits->ne[0];
    ne[1] = ga_numel(logits) / logits->ne[0];
    ne[2] = ne[3] = 1;
}

static void fused_ce_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                         struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    const ga_tensor *logits = fn->inputs[0];
    int64_t ne2[GGML_MAX_DIMS];
    ce_rows_ne(logits, ne2);
    struct ggml_tensor *x = ggmlc__ga_as_ne(ctx, ggmlc__ga_node(fn->inputs[0]), ne2);
    struct ggml_tensor *w = ggmlc__ga_as_ne(ctx, ggmlc__ga_node(fn->inputs[1]), ne2);
    struct ggml_tensor *dx = ggml_cross_entropy_loss_back(ctx, ggml_scale(ctx, g, fn->f[0]), x, w);
    grads[0] = ggmlc__ga_as_ne(ctx, dx, logits->ne);
}

static ga_tensor *fused_cross_entropy(ga_tensor *logits, ga_tensor *w, double count) {
    int64_t ne2[GGML_MAX_DIMS];
    ce_rows_ne(logits, ne2);
    if (!ggmlc__ga_reserve(logits->dev, 8)) return NULL;
    struct ggml_tensor *nx = ggmlc__ga_node(logits), *nw = ggmlc__ga_node(w);
    if (!nx || !nw) return NULL;
    struct ggml_context *ctx = ggmlc__ga_ctx(logits);
    const float ratio = (float)((double)ne2[1] / count);
    struct ggml_tensor *loss = ggml_cross_entropy_loss(ctx, ggmlc__ga_as_ne(ctx, nx, ne2), ggmlc__ga_as_ne(ctx, nw, ne2));
    ga_tensor *inputs[2] = {logits, w};
    ga_tensor *r = ggmlc__ga_record(ggmlc__ga_from_node(logits->dev, ggml_scale(ctx, loss, ratio), 0), "ga_cross_entropy",
                                    fused_ce_vjp, inputs, 2);
    if (r && r->fn) r->fn->f[0] = ratio;
    return r;
}

static ga_tensor *indexed_loss(const ga_tensor *input, const ga_tensor *target,
                               int64_t ignore_index, float smoothing, bool logits, const char *op) {
    if (!ggmlc__ga_check_pair(input, target, op)) return NULL;
    if (input->ndim < 1 || input->ndim > 2 || !(smoothing >= 0 && smoothing <= 1)) {
        ggmlc_set_error(GGMLC_ERR_SHAPE,
                        "%s: input must be (N, C) or (C), label smoothing in "
                        "[0, 1]",
                        op);
        return NULL;
    }
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    int64_t n_valid = 0;
    ga_tensor *w =
        ggmlc__ga_tmp(&s, index_weights(input, target, ignore_index, smoothing, &n_valid, op));
    if (w && logits && n_valid > 0 && input->dtype == GA_FLOAT32) /* none valid: the composition's 0 / 0, as PyTorch's NaN */
        return ggmlc__ga_tmp_end(&s, fused_cross_entropy((ga_tensor *)input, w, (double)n_valid));
    ga_tensor *lp = logits ? ggmlc__ga_tmp(&s, ga_log_softmax(input, -1)) : (ga_tensor *)input;
    if (!w || !lp) return ggmlc__ga_tmp_end(&s, NULL);
    return weighted_nll(&s, lp, w, (double)n_valid);
}

ga_tensor *ga_cross_entropy(const ga_tensor *logits, const ga_tensor *target, int64_t ignore_index,
                            float label_smoothing) {
    return indexed_loss(logits, target, ignore_index, label_smoothing, true, "ga_cross_entropy");
}

ga_tensor *ga_nll_loss(const ga_tensor *log_probs, const ga_tensor *target, int64_t ignore_index) {
    return indexed_loss(log_probs, target, ignore_index, 0, false, "ga_nll_loss");
}

ga_tensor *ga_cross_entropy_probs(const ga_tensor *logits, const ga_tensor *probs,
                                  float label_smoothing) {
    if (!same_shape(logits, probs, "ga_cross_entropy_probs")) return NULL;
    if (logits->ndim < 1 || logits->ndim > 2 || !(label_smoothing >= 0 && label_smoothing <= 1)) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "ga_cross_entropy_probs: logits must be (N, C) or (C), "
                                         "label smoothing in [0, 1]");
        return NULL;
    }
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    const float c = (float)logits->ne[0];
    ga_tensor *w = ggmlc__ga_tmp(&s, ga_mul_scalar(probs, 1 - label_smoothing));
    w = ggmlc__ga_tmp(&s, ga_add_scalar(w, label_smoothing / c));
    ga_tensor *lp = ggmlc__ga_tmp(&s, ga_log_softmax(logits, -1));
    return weighted_nll(&s, lp, w, (double)(ga_numel(logits) / logits->ne[0]));
}

ga_tensor *ga_bce_with_logits(const ga_tensor *logits, const ga_tensor *target) {
    if (!same_shape(logits, target, "ga_bce_with_logits")) return NULL;
    struct ga_tmps s;
    ggmlc__ga_tmp_begin(&s);
    /* softplus(z) - y z, the stable form */
    ga_tensor *sp = ggmlc__ga_tmp(&s, ga_softplus(logits));
    ga_tensor *yz = ggmlc__ga_tmp(&s, ga_mul(logits, target));
    return ggmlc__ga_tmp_end(&s, ga_mean(ggmlc__ga_tmp(&s, ga_sub(sp, yz))));
}
