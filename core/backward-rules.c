/*
 * backward-rules.c - the gradient of each differentiable operator, built
 * from other graph operators so that every backend can run it.
 *
 * Notation: node = f(a, b, ...), dy = dL/dnode; each rule adds dL/da, dL/db
 * through ggmlc__bw_add_grad, which sums over broadcast dimensions.  Operator
 * parameters are read from op_params in the layout their constructors
 * (core/ops-*.c) write, which is ggml's.
 */
#include <math.h>

#include "backward.h"

static float param_f32(const struct ggml_tensor *t, int i) {
    return ggmlc__get_op_params_f32(t, i);
}
static int32_t param_i32(const struct ggml_tensor *t, int i) { return ggmlc__get_op_params_i32(t, i); }

/* t where it is already contiguous, else a contiguous copy.  The rules hand gradients to
 * operators that need contiguous rows; a CONT node of a contiguous tensor would copy it all
 * the same (in a Transformer's backward pass: every dy of GELU, softmax, mask, norm, rope). */
static struct ggml_tensor *cont_if_needed(struct ggml_context *ctx, struct ggml_tensor *t) {
    return ggml_is_contiguous(t) ? t : ggml_cont(ctx, t);
}

/* A zero tensor of t's shape (F32), written by the graph itself. */
static struct ggml_tensor *zeros_like(struct ggml_context *ctx, struct ggml_tensor *t) {
    return ggml_fill(ctx, ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, t->ne), 0.0f);
}

/* d * unary'(x) through the UNARY_BACK operator, carrying the forward parameters (xielu). */
static struct ggml_tensor *unary_grad(struct ggml_context *ctx, const struct ggml_tensor *fwd, struct ggml_tensor *x,
                                      struct ggml_tensor *d, enum ggml_unary_op op) {
    struct ggml_tensor *r = ggml_unary_back(ctx, x, d, op);
    if (r && fwd) memcpy(&r->op_params[1], &fwd->op_params[1], sizeof r->op_params - sizeof r->op_params[0]);
    return r;
}

/* The slice of dy that was a's part of a concatenation / padding: a contiguous copy. */
static struct ggml_tensor *slice(struct ggml_context *ctx, struct ggml_tensor *dy, const int64_t *ne, size_t offset) {
    return cont_if_needed(ctx, ggml_view_4d(ctx, dy, ne[0], ne[1], ne[2], ne[3], dy->nb[1], dy->nb[2], dy->nb[3], offset));
}

/* Row-normalisation gradient: with y = (x - mean) * rstd (rows of x),
 * dx = rstd * (dy - mean(dy) - y * mean(dy * y)); rstd recomputed from x. */
static struct ggml_tensor *norm_grad(struct ggml_context *ctx, struct ggml_tensor *x, struct ggml_tensor *dy, float eps) {
    struct ggml_tensor *xc = ggml_sub(ctx, x, ggml_mean(ctx, x));
    struct ggml_tensor *var = ggml_mean(ctx, ggml_sqr(ctx, xc));
    struct ggml_tensor *std = ggml_sqrt(ctx, ggml_scale_bias(ctx, var, 1.0f, eps));
    struct ggml_tensor *y = ggml_div(ctx, xc, std);
    struct ggml_tensor *t = ggml_sub(ctx, ggml_sub(ctx, dy, ggml_mean(ctx, dy)), ggml_mul(ctx, y, ggml_mean(ctx, ggml_mul(ctx, dy, y))));
    return ggml_div(ctx, t, std);
}

static bool rule_unary(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *a = node->src[0];
    const enum ggml_unary_op op = ggml_get_unary_op(node);
    switch (op) {
    case GGML_UNARY_OP_SGN: case GGML_UNARY_OP_STEP: case GGML_UNARY_OP_FLOOR:
    case GGML_UNARY_OP_CEIL: case GGML_UNARY_OP_ROUND: case GGML_UNARY_OP_TRUNC:
        return true; /* piecewise constant: zero gradient almost everywhere */
    case GGML_UNARY_OP_NEG:
        ggmlc__bw_add_grad(s, a, ggml_neg(ctx, dy));
        return true;
    default:
        ggmlc__bw_add_grad(s, a, unary_grad(ctx, node, a, cont_if_needed(ctx, dy), op));
        return true;
    }
}

/* gpt-oss SwiGLU: y = v sigmoid(alpha v) (w + 1) with v = min(x, limit), w = clamp(g, -limit, limit)
 * (op_params f32 [2] alpha, [3] limit).  d/dv of v sigmoid(alpha v) is silu'(alpha v). */
static void swiglu_oai_grads(struct ggml_context *ctx, const struct ggml_tensor *node, struct ggml_tensor *x, struct ggml_tensor *g,
                             struct ggml_tensor *dy, struct ggml_tensor **dx, struct ggml_tensor **dg) {
    const float alpha = param_f32(node, 2), limit = param_f32(node, 3);
    struct ggml_tensor *v = ggml_sub(ctx, x, ggml_relu(ctx, ggml_scale_bias(ctx, x, 1.0f, -limit))); /* min(x, limit) */
    struct ggml_tensor *w = ggml_clamp(ctx, ggml_scale(ctx, g, 1.0f), -limit, limit);             /* clamp works in place: on a copy */
    struct ggml_tensor *below = ggml_step(ctx, ggml_scale_bias(ctx, x, -1.0f, limit));              /* x < limit */
    struct ggml_tensor *inside = ggml_mul(ctx, ggml_step(ctx, ggml_scale_bias(ctx, g, 1.0f, limit)),
                                          ggml_step(ctx, ggml_scale_bias(ctx, g, -1.0f, limit)));   /* |g| < limit */
    struct ggml_tensor *dv = unary_grad(ctx, NULL, ggml_scale(ctx, v, alpha), ggml_mul(ctx, dy, ggml_scale_bias(ctx, w, 1.0f, 1.0f)),
                                        GGML_UNARY_OP_SILU);
    *dx = ggml_mul(ctx, dv, below);
    *dg = ggml_mul(ctx, ggml_mul(ctx, dy, ggml_mul(ctx, v, ggml_sigmoid(ctx, ggml_scale(ctx, v, alpha)))), inside);
}

/* GLU: y = act(x) * g with x, g the two halves (or tensors) of the input. */
static bool rule_glu(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    const enum ggml_glu_op op = ggml_get_glu_op(node);
    static const enum ggml_unary_op act[GGML_GLU_OP_COUNT] = {
        [GGML_GLU_OP_REGLU] = GGML_UNARY_OP_RELU,       [GGML_GLU_OP_GEGLU] = GGML_UNARY_OP_GELU,
        [GGML_GLU_OP_SWIGLU] = GGML_UNARY_OP_SILU,      [GGML_GLU_OP_SWIGLU_OAI] = GGML_UNARY_OP_SILU,
        [GGML_GLU_OP_GEGLU_ERF] = GGML_UNARY_OP_GELU_ERF, [GGML_GLU_OP_GEGLU_QUICK] = GGML_UNARY_OP_GELU_QUICK,
    };
    struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const int64_t n = node->ne[0];
    struct ggml_tensor *x, *g;
    if (b) {
        x = a;
        g = b;
    } else { /* one tensor: value half first unless swapped */
        const bool swapped = param_i32(node, 1) != 0;
        struct ggml_tensor *first = ggml_view_4d(ctx, a, n, a->ne[1], a->ne[2], a->ne[3], a->nb[1], a->nb[2], a->nb[3], 0);
        struct ggml_tensor *second = ggml_view_4d(ctx, a, n, a->ne[1], a->ne[2], a->ne[3], a->nb[1], a->nb[2], a->nb[3],
                                                  (size_t)n * a->nb[0]);
        x = cont_if_needed(ctx, swapped ? second : first);
        g = cont_if_needed(ctx, swapped ? first : second);
    }
    struct ggml_tensor *dx, *dg;
    if (op == GGML_GLU_OP_SWIGLU_OAI) {
        swiglu_oai_grads(ctx, node, x, g, dy, &dx, &dg);
    } else {
        dx = unary_grad(ctx, NULL, x, ggml_mul(ctx, dy, g), act[op]);
        dg = ggml_mul(ctx, dy, ggml_unary(ctx, x, act[op]));
    }
    if (b) {
        ggmlc__bw_add_grad(s, a, dx);
        ggmlc__bw_add_grad(s, b, dg);
    } else {
        const bool swapped = param_i32(node, 1) != 0;
        struct ggml_tensor *da = swapped ? ggml_concat(ctx, dg, dx, 0) : ggml_concat(ctx, dx, dg, 0);
        /* an odd width's unused last column gets a zero gradient */
        if (a->ne[0] != 2 * n) da = ggml_pad(ctx, da, (int)(a->ne[0] - 2 * n), 0, 0, 0);
        ggmlc__bw_add_grad(s, a, da);
    }
    return true;
}

/* Sums the per-batch gradients t [k, n, r*A, B3] of a broadcast operand over the r batches that
 * share it along dimension dim (2 or 3): mul_mat broadcasts in blocks (batch i of b uses batch
 * i / r of a), so the r contributions to one batch of a are consecutive. */
static struct ggml_tensor *sum_batch_blocks(struct ggml_context *ctx, struct ggml_tensor *t, int dim, int64_t n_like) {
    const int64_t r = t->ne[dim] / n_like;
    if (r <= 1) return t;
    const int64_t inner = dim == 2 ? t->ne[0] * t->ne[1] : t->ne[0] * t->ne[1] * t->ne[2];
    const int64_t outer = dim == 2 ? t->ne[3] : 1;
    const int64_t ne_out[4] = {t->ne[0], t->ne[1], dim == 2 ? n_like : t->ne[2], dim == 3 ? n_like : t->ne[3]};
    /* [inner, r, n_like, outer] -> r first -> sum it -> back to the operand's shape */
    struct ggml_tensor *v = ggml_reshape_4d(ctx, cont_if_needed(ctx, t), inner, r, n_like, outer);
    v = ggml_sum_rows(ctx, cont_if_needed(ctx, ggml_permute(ctx, v, 1, 0, 2, 3)));
    return ggml_reshape_4d(ctx, v, ne_out[0], ne_out[1], ne_out[2], ne_out[3]);
}

static bool rule_mul_mat(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *a = node->src[0], *b = node->src[1];
    /* y[n,m] = sum_k a[k,n] b[k,m]: da[k,n] = sum_m b[k,m] dy[n,m], db[k,m] = sum_n a[k,n] dy[n,m] */
    if (ggmlc__bw_needs_grad(s, a)) {
        struct ggml_tensor *da;
        if (a->ne[2] * a->ne[3] == 1 && ggml_is_contiguous(b) && ggml_is_contiguous(dy)) {
            /* one matrix of weights applied to every batch of b (a Linear layer on [C, T, B]):
             * the batches are just more rows, so one product of depth T*B gives the sum at once,
             * instead of a product per batch and a transposing reduction of their results */
            const int64_t rows = b->ne[1] * b->ne[2] * b->ne[3];
            da = ggml_out_prod(ctx, ggml_reshape_2d(ctx, b, b->ne[0], rows),
                               ggml_reshape_2d(ctx, dy, dy->ne[0], rows));
        } else {
            da = ggml_out_prod(ctx, b, dy); /* one gradient per batch of b */
            da = sum_batch_blocks(ctx, sum_batch_blocks(ctx, da, 3, a->ne[3]), 2, a->ne[2]);
        }
        ggmlc__bw_add_grad(s, a, da);
    }
    if (ggmlc__bw_needs_grad(s, b))
        ggmlc__bw_add_grad(s, b, ggml_out_prod(ctx, a, ggml_transpose(ctx, dy)));
    return true;
}

static bool rule_concat(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const int dim = param_i32(node, 0);
    ggmlc__bw_add_grad(s, a, slice(s->ctx, dy, a->ne, 0));
    ggmlc__bw_add_grad(s, b, slice(s->ctx, dy, b->ne, (size_t)a->ne[dim] * dy->nb[dim]));
    return true;
}

static bool rule_pad(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_tensor *a = node->src[0];
    size_t offset = 0; /* left padding of each dimension, from pad_ext's (lp0, rp0, lp1, rp1, ...) */
    for (int d = 0; d < GGML_MAX_DIMS; d++) offset += (size_t)param_i32(node, 2 * d) * dy->nb[d];
    ggmlc__bw_add_grad(s, a, slice(s->ctx, dy, a->ne, offset));
    return true;
}

static bool rule_view(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *a = node->src[0];
    size_t offset;
    memcpy(&offset, node->op_params, sizeof offset);
    struct ggml_tensor *d = cont_if_needed(ctx, dy), **sum = ggmlc__bw_open_grad(s, a);
    if (sum) { /* dy added at the view's place into the sum so far (a fused QKV's 3 views) */
        *sum = ggml_acc(ctx, *sum, d, node->nb[1], node->nb[2], node->nb[3], offset);
        return true;
    }
    /* scatter dy into zeros of a's shape at the view's place */
    ggmlc__bw_add_grad(s, a, ggml_acc(ctx, zeros_like(ctx, a), d, node->nb[1], node->nb[2], node->nb[3],
                                      offset));
    return true;
}

static bool rule_permute(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    const int32_t *axes = node->op_params;
    int inv[GGML_MAX_DIMS];
    for (int i = 0; i < GGML_MAX_DIMS; i++) inv[axes[i]] = i;
    ggmlc__bw_add_grad(s, node->src[0], cont_if_needed(s->ctx, ggml_permute(s->ctx, dy, inv[0], inv[1], inv[2], inv[3])));
    return true;
}

/* The gradient of a softmax's attention sinks (src[2], one logit per head, i.e. per index of
 * dimension 2): the sink of head h joins each of its rows' normalisation, so with p_sink the
 * probability it takes, dL/dsink_h = -sum over the rows of head h of p_sink * <y, dy>.  The sink
 * has no output, so p_sink = 1 - sum(y): exact to an absolute 1e-7, which is that of y itself. */
static struct ggml_tensor *softmax_sink_grad(struct ggml_context *ctx, struct ggml_tensor *y, struct ggml_tensor *dy) {
    struct ggml_tensor *minus_p_sink = ggml_scale_bias(ctx, ggml_sum_rows(ctx, y), 1.0f, -1.0f);
    struct ggml_tensor *per_row = ggml_mul(ctx, minus_p_sink, ggml_sum_rows(ctx, ggml_mul(ctx, dy, y))); /* [1, ne1, ne2, ne3] */
    /* heads to dimension 0, where the sink vector has them; the other dimensions are summed away */
    return ggml_cont(ctx, ggml_permute(ctx, per_row, 2, 1, 0, 3));
}

static bool rule_softmax(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    const float scale = param_f32(node, 0), max_bias = param_f32(node, 1);
    struct ggml_tensor *d = cont_if_needed(s->ctx, dy);
    ggmlc__bw_add_grad(s, node->src[0], ggml_soft_max_ext_back(s->ctx, d, node, scale, max_bias));
    if (node->src[2] && ggmlc__bw_needs_grad(s, node->src[2]))
        ggmlc__bw_add_grad(s, node->src[2], softmax_sink_grad(s->ctx, node, d));
    return true;
}

static bool rule_rope(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    /* op_params: i32 n_dims [1], mode [2], n_ctx_orig [4]; f32 [5..10]; i32 sections [11..14], n_offs [15] */
    const int n_dims = param_i32(node, 1), mode = param_i32(node, 2), n_ctx_orig = param_i32(node, 4);
    float f[6];
    for (int i = 0; i < 6; i++) f[i] = param_f32(node, 5 + i);
    struct ggml_tensor *d = cont_if_needed(ctx, dy), *r;
    if (mode & GGML_ROPE_TYPE_MROPE) {
        int sections[GGML_MROPE_SECTIONS];
        for (int i = 0; i < GGML_MROPE_SECTIONS; i++) sections[i] = param_i32(node, 11 + i);
        r = ggml_rope_multi_back(ctx, d, node->src[1], node->src[2], n_dims, sections, mode, n_ctx_orig, f[0], f[1], f[2], f[3], f[4], f[5]);
    } else {
        r = ggml_rope_ext_back(ctx, d, node->src[1], node->src[2], n_dims, mode, n_ctx_orig, f[0], f[1], f[2], f[3], f[4], f[5]);
    }
    const int n_offs = param_i32(node, 15); /* the backward turns the same range back */
    if (r && n_offs != 0) r = ggml_rope_set_offset(r, n_offs);
    if (!r) return false;
    ggmlc__bw_add_grad(s, node->src[0], r);
    return true;
}

static bool rule_l2_norm(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *x = node->src[0];
    const float eps = param_f32(node, 0);
    /* y = x / max(|x|, eps): dx = (dy - y * sum(dy * y)) / max(|x|, eps) */
    struct ggml_tensor *len = ggml_clamp(ctx, ggml_sqrt(ctx, ggml_sum_rows(ctx, ggml_sqr(ctx, x))), eps, INFINITY);
    struct ggml_tensor *y = ggml_div(ctx, x, len);
    struct ggml_tensor *t = ggml_sub(ctx, dy, ggml_mul(ctx, y, ggml_sum_rows(ctx, ggml_mul(ctx, dy, y))));
    ggmlc__bw_add_grad(s, x, ggml_div(ctx, t, len));
    return true;
}

static bool rule_group_norm(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *x = node->src[0];
    const int n_groups = param_i32(node, 0);
    const float eps = param_f32(node, 1);
    if (n_groups <= 0 || x->ne[2] % n_groups != 0) return false;
    /* a group is ne0*ne1*(ne2/n_groups) consecutive elements: one row of a reshaped tensor */
    const int64_t row = x->ne[0] * x->ne[1] * (x->ne[2] / n_groups);
    struct ggml_tensor *xr = ggml_reshape_2d(ctx, cont_if_needed(ctx, x), row, ggml_nelements(x) / row);
    struct ggml_tensor *dr = ggml_reshape_2d(ctx, cont_if_needed(ctx, dy), row, ggml_nelements(x) / row);
    ggmlc__bw_add_grad(s, x, norm_grad(ctx, xr, dr, eps));
    return true;
}

static bool rule_clamp(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *a = node->src[0];
    const float lo = param_f32(node, 0), hi = param_f32(node, 1);
    /* pass the gradient where lo < a < hi */
    struct ggml_tensor *inside = ggml_mul(ctx, ggml_step(ctx, ggml_scale_bias(ctx, a, 1.0f, -lo)),
                                          ggml_step(ctx, ggml_scale_bias(ctx, a, -1.0f, hi)));
    ggmlc__bw_add_grad(s, a, ggml_mul(ctx, dy, inside));
    return true;
}

static bool rule_leaky_relu(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *a = node->src[0];
    const float slope = param_f32(node, 0);
    struct ggml_tensor *d = ggml_add(ctx, ggml_step(ctx, a), ggml_scale(ctx, ggml_step(ctx, ggml_neg(ctx, a)), slope));
    ggmlc__bw_add_grad(s, a, ggml_mul(ctx, dy, d));
    return true;
}

static bool rule_cumsum(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    /* dx[i] = sum_{j >= i} dy[j] = total - cumsum(dy)[i] + dy[i] */
    struct ggml_tensor *d = cont_if_needed(ctx, dy);
    ggmlc__bw_add_grad(s, node->src[0], ggml_sub(ctx, ggml_add(ctx, d, ggml_sum_rows(ctx, d)), ggml_cumsum(ctx, d)));
    return true;
}

static bool rule_acc_set(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const size_t nb1 = (size_t)param_i32(node, 0), nb2 = (size_t)param_i32(node, 1), nb3 = (size_t)param_i32(node, 2);
    const size_t offset = (size_t)param_i32(node, 3);
    struct ggml_tensor *part = cont_if_needed(ctx, ggml_view_4d(ctx, dy, b->ne[0], b->ne[1], b->ne[2], b->ne[3], nb1, nb2, nb3, offset));
    if (node->op == GGML_OP_ACC) {
        ggmlc__bw_add_grad(s, a, dy);
    } else { /* set: the overwritten region of a gets no gradient */
        ggmlc__bw_add_grad(s, a, ggml_set(ctx, cont_if_needed(ctx, dy), zeros_like(ctx, b), nb1, nb2, nb3, offset));
    }
    ggmlc__bw_add_grad(s, b, part);
    return true;
}

/* op_params (ggml's, all int32): POOL_2D {op, k0, k1, s0, s1, p0, p1}, POOL_1D {op, k0, s0, p0}. */
static bool rule_pool(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    const int32_t *p = node->op_params;
    struct ggml_tensor *d = cont_if_needed(s->ctx, dy), *a = node->src[0], *r;
    if (node->op == GGML_OP_POOL_2D) {
        r = ggml_pool_2d_back(s->ctx, d, a, (enum ggml_op_pool)p[0], p[1], p[2], p[3], p[4], (float)p[5], (float)p[6]);
    } else { /* a 1-D pool is a 2-D pool with a kernel of height 1 */
        r = ggml_pool_2d_back(s->ctx, d, a, (enum ggml_op_pool)p[0], p[1], 1, p[2], 1, (float)p[3], 0.0f);
    }
    if (!r) return false;
    ggmlc__bw_add_grad(s, a, r);
    return true;
}

static bool rule_im2col(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    const int32_t *p = node->op_params;
    struct ggml_tensor *b = node->src[1];
    int64_t ne[4] = {b->ne[0], b->ne[1], b->ne[2], b->ne[3]};
    ggmlc__bw_add_grad(s, b, ggml_im2col_back(s->ctx, node->src[0], cont_if_needed(s->ctx, dy), ne, p[0], p[1], p[2], p[3], p[4], p[5], p[6] != 0));
    return true;
}

/* ------------------------------------------------- convolutions (direct) */

/* A tensor [a, b, ...] as a contiguous 2-D matrix [ne0, rest]. */
static struct ggml_tensor *as_matrix(struct ggml_context *ctx, struct ggml_tensor *t, int64_t ne0) {
    t = cont_if_needed(ctx, t);
    return ggml_reshape_2d(ctx, t, ne0, ggml_nelements(t) / ne0);
}

/* The kernel gradient of y = conv_2d(K, x) with K [KW, KH, CI, CO], x [W, H, CI, N], strides s,
 * paddings p, dilations d and output gradient dy [OW, OH, CO, N]:
 *   dK[kw, kh, ci, co] = sum over (ow, oh, n) of x[ow s0 - p0 + kw d0, oh s1 - p1 + kh d1, ci, n] dy[ow, oh, co, n],
 * which is itself a convolution with the roles of the batch and the channels exchanged: the data
 * x read as [W, H, N, CI] (CI images of N channels), the kernel dy read as [OW, OH, N, CO], the
 * forward dilations as strides and the strides as dilations.  Its result [>= KW, >= KH, CO, CI]
 * (wider where the forward convolution left a remainder of the data unread) holds dK at
 * [0, KW) x [0, KH), channels exchanged back.  So every backend computes dK as one CONV_2D, the
 * Vulkan plugin as an implicit GEMM split along the long reduction over (ow, oh, n), with no
 * im2col matrix [KW*KH*CI, OW*OH*N] (and its transposed copy) of earlier versions.  Returns dK
 * [KW, KH, CI, CO], contiguous; NULL (an error set) where the op is refused. */
static struct ggml_tensor *conv_kernel_grad(struct ggml_context *ctx, struct ggml_tensor *x,
                                            struct ggml_tensor *dy, int64_t KW, int64_t KH,
                                            const int32_t s[2], const int32_t p[2],
                                            const int32_t d[2]) {
    struct ggml_tensor *kernel =
        cont_if_needed(ctx, ggml_permute(ctx, dy, 0, 1, 3, 2));  /* [OW, OH, N, CO] */
    struct ggml_tensor *data = ggml_permute(ctx, x, 0, 1, 3, 2); /* [W, H, N, CI] */
    struct ggml_tensor *r = ggml_conv_2d_direct(ctx, kernel, data, d[0], d[1], p[0], p[1], s[0],
                                                s[1]); /* [., ., CO, CI] */
    if (!r) return NULL;
    if (r->ne[0] != KW || r->ne[1] != KH)
        r = ggml_view_4d(ctx, r, KW, KH, r->ne[2], r->ne[3], r->nb[1], r->nb[2], r->nb[3], 0);
    return ggml_cont(ctx, ggml_permute(ctx, r, 0, 1, 3, 2));
}

/* The input gradient of CONV_2D as one transposed convolution where that op can express it (no
 * dilation, one stride for both axes, a result that covers the input): dx[iw, ih] is the
 * transposed convolution's output at (iw + p0, ih + p1), with the kernel as it is ([KW, KH, IC, OC]
 * is conv_transpose_2d's [KW, KH, out, in]).  Backends compute it in one pass (the Vulkan plugin
 * as an implicit GEMM), instead of a product of K^T with dY^T and im2col_back.  False (nothing
 * added) where it does not apply. */
static bool conv_2d_input_grad_transposed(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *k = node->src[0], *x = node->src[1];
    const int32_t *p = node->op_params; /* s0, s1, p0, p1, d0, d1 */
    if (p[0] != p[1] || p[4] != 1 || p[5] != 1 || dy->type != GGML_TYPE_F32) return false;
    const int64_t full_w = (node->ne[0] - 1) * p[0] + k->ne[0], full_h = (node->ne[1] - 1) * p[1] + k->ne[1];
    if (full_w < x->ne[0] + p[2] || full_h < x->ne[1] + p[3]) return false;
    struct ggml_tensor *full = ggml_conv_transpose_2d_p0(ctx, k, cont_if_needed(ctx, dy), p[0]);
    if (!full) return false;
    struct ggml_tensor *dx = full;
    if (full_w != x->ne[0] || full_h != x->ne[1])
        dx = ggml_cont(ctx, ggml_view_4d(ctx, full, x->ne[0], x->ne[1], x->ne[2], x->ne[3], full->nb[1], full->nb[2], full->nb[3],
                                         (size_t)p[2] * full->nb[0] + (size_t)p[3] * full->nb[1]));
    ggmlc__bw_add_grad(s, x, dx);
    return true;
}

/* CONV_2D computed directly: a = kernel [KW, KH, IC, OC], b = input [W, H, IC, N]; op_params {s0, s1, p0, p1, d0, d1}. */
static bool rule_conv_2d(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *k = node->src[0], *x = node->src[1];
    const int32_t *p = node->op_params;
    const int64_t CK = k->ne[0] * k->ne[1] * k->ne[2];
    if (ggmlc__bw_needs_grad(s, k))
        ggmlc__bw_add_grad(s, k, conv_kernel_grad(ctx, x, dy, k->ne[0], k->ne[1], p, p + 2, p + 4));
    if (ggmlc__bw_needs_grad(s, x) && !conv_2d_input_grad_transposed(s, node, dy)) {
        /* dY [P, OC] with P = OW*OH*N: dy [OW, OH, OC, N] with OC moved last; dcol = K dY^T */
        struct ggml_tensor *dY = as_matrix(ctx, ggml_permute(ctx, dy, 0, 1, 3, 2),
                                           node->ne[0] * node->ne[1] * node->ne[3]);
        struct ggml_tensor *kt = cont_if_needed(ctx, ggml_transpose(ctx, as_matrix(ctx, k, CK))); /* [OC, CK] */
        struct ggml_tensor *dcol = ggml_mul_mat(ctx, kt, cont_if_needed(ctx, ggml_transpose(ctx, dY))); /* [CK, P] */
        dcol = ggml_reshape_4d(ctx, dcol, CK, node->ne[0], node->ne[1], node->ne[3]);
        int64_t ne[4] = {x->ne[0], x->ne[1], x->ne[2], x->ne[3]};
        ggmlc__bw_add_grad(s, x, ggml_im2col_back(ctx, k, dcol, ne, p[0], p[1], p[2], p[3], p[4], p[5], true));
    }
    return true;
}

/* CONV_TRANSPOSE_2D (no padding): a = kernel [KW, KH, OC, IC], b = input [W, H, IC, N]; op_params {stride}. */
static bool rule_conv_transpose_2d(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *k = node->src[0], *x = node->src[1];
    const int st = node->op_params[0];
    struct ggml_tensor *d = cont_if_needed(ctx, dy);
    /* db is the ordinary convolution of dy with the same kernel (in-channels OC, out-channels IC) */
    if (ggmlc__bw_needs_grad(s, x))
        ggmlc__bw_add_grad(s, x, ggml_conv_2d(ctx, k, d, st, st, 0, 0, 1, 1));
    if (ggmlc__bw_needs_grad(s, k)) {
        /* that convolution's kernel gradient: da[kx, ky, oc, ic] = sum over (ix, iy, n) of
         * dy[ix st + kx, iy st + ky, oc, n] x[ix, iy, ic, n] */
        const int32_t stride[2] = {st, st}, pad[2] = {0, 0}, dil[2] = {1, 1};
        ggmlc__bw_add_grad(s, k, conv_kernel_grad(ctx, d, x, k->ne[0], k->ne[1], stride, pad, dil));
    }
    return true;
}

/* ------------------------------------------------------------- upscale */

/* The 1-D resampling weights of mode from n to m samples, as a matrix [m, n] (column i = the
 * weights of input i), obtained by resampling the identity with the forward operator itself. */
static struct ggml_tensor *resample_weights(struct ggml_context *ctx, int64_t n, int64_t m, uint32_t mode) {
    struct ggml_tensor *eye = ggml_diag(ctx, ggml_fill(ctx, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n), 1.0f));
    return ggml_interpolate(ctx, eye, m, n, 1, 1, mode);
}

/* UPSCALE (interpolate) in dimensions 0 and 1: every mode is separable and linear in the input,
 * so dx = W0^T dy W1 with the resampling weight matrices of the two dimensions. */
static bool rule_upscale(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *a = node->src[0];
    const uint32_t mode = (uint32_t)node->op_params[0];
    if (node->ne[2] != a->ne[2] || node->ne[3] != a->ne[3]) return false; /* resampling of dims 2, 3: no rule */
    const int64_t W = a->ne[0], H = a->ne[1], OW = node->ne[0], OH = node->ne[1], CN = a->ne[2] * a->ne[3];
    /* along dimension 0: [OW, OH*CN] -> [W, OH*CN] */
    struct ggml_tensor *g = ggml_mul_mat(ctx, resample_weights(ctx, W, OW, mode), as_matrix(ctx, dy, OW));
    /* along dimension 1: bring it first, [OH, W*CN] -> [H, W*CN] */
    g = cont_if_needed(ctx, ggml_permute(ctx, ggml_reshape_3d(ctx, g, W, OH, CN), 1, 0, 2, 3));
    g = ggml_mul_mat(ctx, resample_weights(ctx, H, OH, mode), ggml_reshape_2d(ctx, g, OH, W * CN));
    g = cont_if_needed(ctx, ggml_permute(ctx, ggml_reshape_3d(ctx, g, H, W, CN), 1, 0, 2, 3));
    ggmlc__bw_add_grad(s, a, ggml_reshape_4d(ctx, g, W, H, a->ne[2], a->ne[3]));
    return true;
}

/* SET_ROWS is, as in ggml, a view of the destination with src[0] = the rows written,
 * src[1] = their indices and src[2] = the destination; only the rows get a gradient. */
static bool rule_set_rows(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_tensor *b = node->src[0], *idx = node->src[1];
    if (!ggml_is_matrix(b) || idx->type != GGML_TYPE_I32) return false;
    ggmlc__bw_add_grad(s, b, ggml_get_rows(s->ctx, cont_if_needed(s->ctx, dy), idx));
    return true;
}

/* ------------------------------------------------------- flash attention */

/* Sum groups of r consecutive heads (dimension 2): [A, B, H] -> [A, B, H / r], as mul_mat broadcasts k/v heads. */
static struct ggml_tensor *sum_head_groups(struct ggml_context *ctx, struct ggml_tensor *t, int64_t r) {
    if (r == 1) return t;
    const int64_t a = t->ne[0] * t->ne[1], hkv = t->ne[2] / r;
    struct ggml_tensor *g = ggml_reshape_4d(ctx, cont_if_needed(ctx, t), a, r, hkv, t->ne[3]);
    g = ggml_sum_rows(ctx, cont_if_needed(ctx, ggml_permute(ctx, g, 1, 0, 2, 3))); /* [1, a, hkv, B3] */
    return ggml_reshape_4d(ctx, g, t->ne[0], t->ne[1], hkv, t->ne[3]);
}

/* res = softmax(q k^T * scale (softcap) + mask * slope) v, recomputed and differentiated. */
static bool rule_flash_attn(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2], *mask = node->src[3];
    if (node->src[4]) return false; /* attention sinks: no rule yet */
    const float scale = param_f32(node, 0), max_bias = param_f32(node, 1), softcap = param_f32(node, 2);
    const int64_t r = q->ne[2] / k->ne[2];
    struct ggml_tensor *kf = k->type == GGML_TYPE_F32 ? k : ggml_cast(ctx, k, GGML_TYPE_F32);
    struct ggml_tensor *vf = v->type == GGML_TYPE_F32 ? v : ggml_cast(ctx, v, GGML_TYPE_F32);
    struct ggml_tensor *kq = ggml_mul_mat(ctx, kf, q); /* [Nk, Nq, H, B3] */
    struct ggml_tensor *pre = kq, *tcap = NULL;
    float sm_scale = scale;
    if (softcap > 0) {
        tcap = ggml_tanh(ctx, ggml_scale(ctx, kq, scale / softcap));
        pre = ggml_scale(ctx, tcap, softcap);
        sm_scale = 1.0f;
    }
    struct ggml_tensor *P = ggml_soft_max_ext(ctx, pre, mask, sm_scale, max_bias);
    struct ggml_tensor *dO = cont_if_needed(ctx, ggml_permute(ctx, dy, 0, 2, 1, 3)); /* [Dv, Nq, H, B3] */
    if (ggmlc__bw_needs_grad(s, v)) {
        struct ggml_tensor *dv = ggml_mul_mat(ctx, cont_if_needed(ctx, ggml_transpose(ctx, dO)), cont_if_needed(ctx, ggml_transpose(ctx, P)));
        ggmlc__bw_add_grad(s, v, sum_head_groups(ctx, dv, r)); /* [Dv, Nk, Hkv, B3] */
    }
    if (!ggmlc__bw_needs_grad(s, q) && !ggmlc__bw_needs_grad(s, k)) return true;
    struct ggml_tensor *dP = ggml_mul_mat(ctx, vf, dO);                     /* [Nk, Nq, H, B3] */
    struct ggml_tensor *dS = ggml_soft_max_ext_back(ctx, dP, P, sm_scale, max_bias);
    if (tcap) /* through softcap * tanh(kq * scale / softcap) */
        dS = ggml_mul(ctx, dS, ggml_scale(ctx, ggml_scale_bias(ctx, ggml_sqr(ctx, tcap), -1.0f, 1.0f), scale));
    if (ggmlc__bw_needs_grad(s, q)) ggmlc__bw_add_grad(s, q, ggml_mul_mat(ctx, cont_if_needed(ctx, ggml_transpose(ctx, kf)), dS));
    if (ggmlc__bw_needs_grad(s, k)) {
        struct ggml_tensor *dk = ggml_mul_mat(ctx, cont_if_needed(ctx, ggml_transpose(ctx, q)), cont_if_needed(ctx, ggml_transpose(ctx, dS)));
        ggmlc__bw_add_grad(s, k, sum_head_groups(ctx, dk, r));
    }
    return true;
}

/* Rules of the element-wise arithmetic operators. */
static bool rule_arith(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *a = node->src[0], *b = node->src[1];
    switch (node->op) {
    case GGML_OP_DUP: case GGML_OP_CONT: ggmlc__bw_add_grad(s, a, dy); return true;
    case GGML_OP_CPY: ggmlc__bw_add_grad(s, a, dy); return true; /* b is overwritten: no gradient */
    case GGML_OP_ADD: ggmlc__bw_add_grad(s, a, dy); ggmlc__bw_add_grad(s, b, dy); return true;
    case GGML_OP_ADD1:
        ggmlc__bw_add_grad(s, a, dy);
        ggmlc__bw_add_grad(s, b, ggml_sum(ctx, dy));
        return true;
    case GGML_OP_SUB:
        ggmlc__bw_add_grad(s, a, dy);
        ggmlc__bw_add_grad(s, b, ggml_neg(ctx, dy));
        return true;
    case GGML_OP_MUL:
        if (ggmlc__bw_needs_grad(s, a)) ggmlc__bw_add_grad(s, a, ggml_mul(ctx, dy, b));
        if (ggmlc__bw_needs_grad(s, b)) ggmlc__bw_add_grad(s, b, ggml_mul(ctx, dy, a));
        return true;
    case GGML_OP_DIV: /* y = a / b: da = dy / b, db = -dy * y / b */
        if (ggmlc__bw_needs_grad(s, a)) ggmlc__bw_add_grad(s, a, ggml_div(ctx, dy, b));
        if (ggmlc__bw_needs_grad(s, b)) ggmlc__bw_add_grad(s, b, ggml_neg(ctx, ggml_div(ctx, ggml_mul(ctx, dy, node), b)));
        return true;
    case GGML_OP_SQR:
        ggmlc__bw_add_grad(s, a, ggml_mul(ctx, dy, ggml_scale(ctx, a, 2.0f)));
        return true;
    case GGML_OP_SQRT: ggmlc__bw_add_grad(s, a, ggml_div(ctx, ggml_scale(ctx, dy, 0.5f), node)); return true;
    case GGML_OP_LOG: ggmlc__bw_add_grad(s, a, ggml_div(ctx, dy, a)); return true;
    case GGML_OP_SIN: ggmlc__bw_add_grad(s, a, ggml_mul(ctx, dy, ggml_cos(ctx, a))); return true;
    case GGML_OP_COS: ggmlc__bw_add_grad(s, a, ggml_neg(ctx, ggml_mul(ctx, dy, ggml_sin(ctx, a)))); return true;
    case GGML_OP_SCALE:
        ggmlc__bw_add_grad(s, a, ggml_scale(ctx, dy, param_f32(node, 0)));
        return true;
    case GGML_OP_SUM: case GGML_OP_SUM_ROWS: ggmlc__bw_add_grad(s, a, ggml_repeat(ctx, dy, a)); return true;
    case GGML_OP_MEAN: ggmlc__bw_add_grad(s, a, ggml_repeat(ctx, ggml_scale(ctx, dy, 1.0f / (float)a->ne[0]), a)); return true;
    case GGML_OP_REPEAT: ggmlc__bw_add_grad(s, a, ggml_repeat_back(ctx, dy, a)); return true;
    case GGML_OP_REPEAT_BACK: ggmlc__bw_add_grad(s, a, ggml_repeat(ctx, dy, a)); return true;
    case GGML_OP_RESHAPE: ggmlc__bw_add_grad(s, a, dy); return true; /* add_grad reshapes */
    case GGML_OP_TRANSPOSE:
        ggmlc__bw_add_grad(s, a, cont_if_needed(ctx, ggml_transpose(ctx, dy)));
        return true;
    case GGML_OP_DIAG_MASK_INF: case GGML_OP_DIAG_MASK_ZERO:
        ggmlc__bw_add_grad(s, a, ggml_diag_mask_zero(ctx, cont_if_needed(ctx, dy), param_i32(node, 0)));
        return true;
    case GGML_OP_TRI: /* the kept triangle passes dy through, the rest is constant zero */
        ggmlc__bw_add_grad(s, a, ggml_tri(ctx, cont_if_needed(ctx, dy), (enum ggml_tri_type)param_i32(node, 0)));
        return true;
    default: return false;
    }
}

bool ggmlc__bw_apply_rule(struct bw_state *s, struct ggml_tensor *node, struct ggml_tensor *dy) {
    struct ggml_context *ctx = s->ctx;
    struct ggml_tensor *a = node->src[0], *b = node->src[1];
    switch (node->op) {
    case GGML_OP_UNARY: return rule_unary(s, node, dy);
    case GGML_OP_GLU: return rule_glu(s, node, dy);
    case GGML_OP_MUL_MAT: return rule_mul_mat(s, node, dy);
    case GGML_OP_CONCAT: return rule_concat(s, node, dy);
    case GGML_OP_PAD: return rule_pad(s, node, dy);
    case GGML_OP_VIEW: return rule_view(s, node, dy);
    case GGML_OP_PERMUTE: return rule_permute(s, node, dy);
    case GGML_OP_SOFT_MAX: return rule_softmax(s, node, dy);
    case GGML_OP_ROPE: return rule_rope(s, node, dy);
    case GGML_OP_NORM: ggmlc__bw_add_grad(s, a, norm_grad(ctx, a, cont_if_needed(ctx, dy), param_f32(node, 0))); return true;
    case GGML_OP_RMS_NORM: ggmlc__bw_add_grad(s, a, ggml_rms_norm_back(ctx, cont_if_needed(ctx, dy), a, param_f32(node, 0))); return true;
    case GGML_OP_L2_NORM: return rule_l2_norm(s, node, dy);
    case GGML_OP_GROUP_NORM: return rule_group_norm(s, node, dy);
    case GGML_OP_CLAMP: return rule_clamp(s, node, dy);
    case GGML_OP_LEAKY_RELU: return rule_leaky_relu(s, node, dy);
    case GGML_OP_CUMSUM: return rule_cumsum(s, node, dy);
    case GGML_OP_ACC: case GGML_OP_SET: return rule_acc_set(s, node, dy);
    case GGML_OP_GET_ROWS: ggmlc__bw_add_grad(s, a, ggml_get_rows_back(ctx, cont_if_needed(ctx, dy), b, a)); return true;
    case GGML_OP_CROSS_ENTROPY_LOSS: ggmlc__bw_add_grad(s, a, ggml_cross_entropy_loss_back(ctx, a, b, dy)); return true;
    case GGML_OP_POOL_1D: case GGML_OP_POOL_2D: return rule_pool(s, node, dy);
    case GGML_OP_IM2COL: return rule_im2col(s, node, dy);
    case GGML_OP_CONV_2D: return rule_conv_2d(s, node, dy);
    case GGML_OP_CONV_TRANSPOSE_2D: return rule_conv_transpose_2d(s, node, dy);
    case GGML_OP_UPSCALE: return rule_upscale(s, node, dy);
    case GGML_OP_SET_ROWS: return rule_set_rows(s, node, dy);
    case GGML_OP_FLASH_ATTN_EXT: return rule_flash_attn(s, node, dy);
    default: return rule_arith(s, node, dy);
    }
}
