/*
 * ops-new.c - operators and helpers of ggml's newer API: the gated delta rule,
 * argsort-based top k, circular padding, matrix-product hints, branch
 * selection in graphs, stable-diffusion.cpp's int8 products, RoPE offsets, and
 * the constructors ggmlc declares but refuses (DeepSeek's indexer and
 * hyper-connections).
 */
#include "ggml-impl.h"

/* ------------------------------------------------------ gated delta rule */

static bool gdn_all_f32(struct ggml_tensor *const *t, int n) {
    for (int i = 0; i < n; i++)
        if (t[i]->type != GGML_TYPE_F32) return false;
    return true;
}

/* q, k [S, H_k, T, n_k3], v [S, H, T, n_seqs]: H_k divides H, n_k3 divides n_seqs. */
static bool gdn_heads_fit(const struct ggml_tensor *qk, const struct ggml_tensor *v) {
    return qk->ne[0] == v->ne[0] && qk->ne[1] > 0 && v->ne[1] % qk->ne[1] == 0 && qk->ne[2] == v->ne[2] &&
           qk->ne[3] > 0 && v->ne[3] % qk->ne[3] == 0 && qk->nb[0] == sizeof(float);
}

struct ggml_tensor *ggml_gated_delta_net(struct ggml_context *ctx, struct ggml_tensor *q, struct ggml_tensor *k,
                                         struct ggml_tensor *v, struct ggml_tensor *g, struct ggml_tensor *beta,
                                         struct ggml_tensor *state, int64_t K) {
    GGMLC_CHECK_SRC(q);
    GGMLC_CHECK_SRC(k);
    GGMLC_CHECK_SRC(v);
    GGMLC_CHECK_SRC(g);
    GGMLC_CHECK_SRC(beta);
    GGMLC_CHECK_SRC(state);
    if (!gdn_all_f32((struct ggml_tensor *[]){q, k, v, g, beta, state}, 6))
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "every operand must be F32");
    const int64_t S = v->ne[0], H = v->ne[1], T = v->ne[2], n_seqs = v->ne[3];
    if (v->nb[0] != sizeof(float) || !gdn_heads_fit(q, v) || !gdn_heads_fit(k, v))
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__,
                                    "q and k must be [S, H_k, T, n] with contiguous rows, H_k | H and n | n_seqs of v", q, v);
    if (!ggml_is_contiguous(g) || (g->ne[0] != 1 && g->ne[0] != S) || g->ne[1] != H || g->ne[2] != T || g->ne[3] != n_seqs)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "g must be contiguous [1 or S, H, T, n_seqs]", g, v);
    if (!ggml_is_contiguous(beta) || beta->ne[0] != 1 || beta->ne[1] != H || beta->ne[2] != T || beta->ne[3] != n_seqs)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "beta must be contiguous [1, H, T, n_seqs]", beta, v);
    if (!ggml_is_contiguous(state) || state->ne[0] != S || state->ne[1] != S || state->ne[2] != H || state->ne[3] != n_seqs)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "state must be contiguous [S, S, H, n_seqs]", state, v);
    if (K < 1 || K > INT32_MAX)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "K (state snapshots) must be >= 1, not %lld", (long long)K);
    /* outputs [S*H, T*n_seqs] followed by K states of S rows per sequence */
    struct ggml_tensor *r = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, S * H, T * n_seqs + K * S * n_seqs);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, (int32_t)K);
    ggmlc__node_set(r, GGML_OP_GATED_DELTA_NET, q, k, v);
    r->src[3] = g;
    r->src[4] = beta;
    r->src[5] = state;
    return r;
}

/* ------------------------------------------------- declared, not built */

/* q [D, H, T, S] F32, k [D, 1, n_kv, S], weights [H, T, 1, S] F32, mask [n_kv, T, 1, S_m] F16
 * with S_m dividing S: the result [n_kv, T, 1, S] (ggml d99724f's shapes, as it asserts them). */
static bool indexer_shapes_ok(const struct ggml_tensor *q, const struct ggml_tensor *k, const struct ggml_tensor *w,
                              const struct ggml_tensor *m) {
    return q->ne[0] == k->ne[0] && m->ne[0] == k->ne[2] && q->ne[1] == w->ne[0] && k->ne[1] == 1 &&
           m->ne[1] == q->ne[2] && q->ne[2] == w->ne[1] && w->ne[2] == 1 && m->ne[2] == 1 && q->ne[3] == k->ne[3] &&
           k->ne[3] == w->ne[3] && m->ne[3] > 0 && w->ne[3] % m->ne[3] == 0;
}

struct ggml_tensor *ggml_lightning_indexer(struct ggml_context *ctx, struct ggml_tensor *q, struct ggml_tensor *k,
                                           struct ggml_tensor *weights, struct ggml_tensor *mask) {
    GGMLC_CHECK_SRC(q);
    GGMLC_CHECK_SRC(k);
    GGMLC_CHECK_SRC(weights);
    GGMLC_CHECK_SRC(mask);
    if (q->type != GGML_TYPE_F32 || weights->type != GGML_TYPE_F32 || mask->type != GGML_TYPE_F16 ||
        (k->type != GGML_TYPE_F32 && !ggml_get_type_traits(k->type)->to_float))
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "q and weights must be F32, mask F16, k F32 or convertible");
    if (!indexer_shapes_ok(q, k, weights, mask))
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__,
                                    "need q [D, H, T, S], k [D, 1, n_kv, S], weights [H, T, 1, S], mask [n_kv, T, 1, S_m | S]",
                                    q, k);
    const int64_t ne[4] = {k->ne[2], q->ne[2], 1, q->ne[3]};
    struct ggml_tensor *r = ggmlc__new_node(ctx, GGML_TYPE_F32, 4, ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_LIGHTNING_INDEXER, q, k, weights);
    r->src[3] = mask;
    return r;
}

/* DeepSeek V4 hyper-connections: hc streams of the residual instead of one.  The CPU computes
 * them for any stream count; ggml d99724f asserts hc == 4 (hc_comb), so models use 4. */

/* The stream count hc with (2 + hc) * hc == mix_dim, or 0. */
static int64_t hc_streams(int64_t mix_dim) {
    for (int64_t hc = 1; (2 + hc) * hc <= mix_dim; hc++)
        if ((2 + hc) * hc == mix_dim) return hc;
    return 0;
}

static bool all_f32(const struct ggml_tensor *a, const struct ggml_tensor *b, const struct ggml_tensor *c,
                    const struct ggml_tensor *d) {
    return a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32 && (!c || c->type == GGML_TYPE_F32) &&
           (!d || d->type == GGML_TYPE_F32);
}

struct ggml_tensor *ggml_dsv4_hc_comb(struct ggml_context *ctx, struct ggml_tensor *mixes, struct ggml_tensor *scale,
                                      struct ggml_tensor *base, float eps, int32_t n_iter) {
    GGMLC_CHECK_SRC(mixes);
    GGMLC_CHECK_SRC(scale);
    GGMLC_CHECK_SRC(base);
    if (!all_f32(mixes, scale, base, NULL)) return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "mixes, scale and base must be F32");
    if (n_iter < 1) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "n_iter must be at least 1, not %d", (int)n_iter);
    const int64_t hc = hc_streams(mixes->ne[0]);
    if (hc == 0 || mixes->ne[2] != 1 || mixes->ne[3] != 1)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "mixes must be [(2 + hc) * hc, n_tokens], not %s",
                              ggmlc__shape_str(mixes, (char[GGMLC_SHAPE_STR]){0}));
    if (scale->ne[0] < 3 || ggml_nelements(scale) != scale->ne[0] || !ggml_is_vector(base) || base->ne[0] != mixes->ne[0])
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "need scale [>= 3] and base [(2 + hc) * hc]", scale, base);
    struct ggml_tensor *r = ggmlc__new_node(ctx, GGML_TYPE_F32, 3, (const int64_t[]){hc, hc, mixes->ne[1]});
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_f32(r, 0, eps);
    ggmlc__set_op_params_i32(r, 1, n_iter);
    ggmlc__node_set(r, GGML_OP_DSV4_HC_COMB, mixes, scale, base);
    return r;
}

struct ggml_tensor *ggml_dsv4_hc_pre(struct ggml_context *ctx, struct ggml_tensor *x, struct ggml_tensor *weights) {
    GGMLC_CHECK_SRC(x);
    GGMLC_CHECK_SRC(weights);
    if (!all_f32(x, weights, NULL, NULL)) return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "x and weights must be F32");
    if (x->ne[1] < 1 || x->ne[3] != 1 || weights->ne[0] != x->ne[1] || weights->ne[1] != x->ne[2] || weights->ne[2] != 1 ||
        weights->ne[3] != 1)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "need x [n_embd, hc, n_tokens] and weights [hc, n_tokens]",
                                    x, weights);
    struct ggml_tensor *r = ggmlc__new_node(ctx, GGML_TYPE_F32, 2, (const int64_t[]){x->ne[0], x->ne[2]});
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_DSV4_HC_PRE, x, weights, NULL);
    return r;
}

/* x [n_embd, n_tokens], residual [n_embd, hc, n_tokens], post [hc, n_tokens], comb [hc, hc, n_tokens]. */
static bool hc_post_shapes_ok(const struct ggml_tensor *x, const struct ggml_tensor *res, const struct ggml_tensor *post,
                              const struct ggml_tensor *comb) {
    const int64_t hc = res->ne[1], n = x->ne[1];
    return hc > 0 && x->ne[2] == 1 && x->ne[3] == 1 && res->ne[0] == x->ne[0] && res->ne[2] == n && res->ne[3] == 1 &&
           post->ne[0] == hc && post->ne[1] == n && post->ne[2] == 1 && post->ne[3] == 1 && comb->ne[0] == hc &&
           comb->ne[1] == hc && comb->ne[2] == n && comb->ne[3] == 1;
}

struct ggml_tensor *ggml_dsv4_hc_post(struct ggml_context *ctx, struct ggml_tensor *x, struct ggml_tensor *residual,
                                      struct ggml_tensor *post, struct ggml_tensor *comb) {
    GGMLC_CHECK_SRC(x);
    GGMLC_CHECK_SRC(residual);
    GGMLC_CHECK_SRC(post);
    GGMLC_CHECK_SRC(comb);
    if (!all_f32(x, residual, post, comb))
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "x, residual, post and comb must be F32");
    if (!hc_post_shapes_ok(x, residual, post, comb))
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__,
                                    "need x [n_embd, n_tokens], residual [n_embd, hc, n_tokens], post [hc, n_tokens], "
                                    "comb [hc, hc, n_tokens]",
                                    x, residual);
    struct ggml_tensor *r = ggmlc__new_node(ctx, GGML_TYPE_F32, 3, (const int64_t[]){x->ne[0], residual->ne[1], x->ne[1]});
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_DSV4_HC_POST, x, residual, post);
    r->src[3] = comb;
    return r;
}

/* ------------------------------------------------ int8 products (sd.cpp) */

/* A rotation group is 4^j values (ggml's Hadamard-like butterfly works on fours); 1 is none. */
static bool convrot_group_ok(int group_size) {
    int n = group_size;
    while (n > 1 && n % 4 == 0) n /= 4;
    return group_size >= 1 && group_size <= 256 && n == 1;
}

/* Rows of the packed I8 result of ggml_quantize_i8_convrot for `rows` rows of k values: the
 * rows padded to a multiple of 4, then enough rows of k bytes for one f32 scale per row. */
static int64_t convrot_packed_rows(int64_t rows, int64_t k) {
    return GGML_PAD(rows, 4) + (rows * (int64_t)sizeof(float) + k - 1) / k;
}

struct ggml_tensor *ggml_quantize_i8_convrot(struct ggml_context *ctx, struct ggml_tensor *x, int group_size) {
    GGMLC_CHECK_SRC(x);
    if (x->type != GGML_TYPE_F32 || !ggml_is_contiguous(x))
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "x must be contiguous F32, not %s", ggml_type_name(x->type));
    if (!convrot_group_ok(group_size) || x->ne[0] % group_size != 0)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__,
                              "group size %d must be a power of 4 up to 256 dividing the row length %lld", group_size,
                              (long long)x->ne[0]);
    const int64_t ne[2] = {x->ne[0], convrot_packed_rows(ggml_nrows(x), x->ne[0])};
    struct ggml_tensor *r = ggmlc__new_node(ctx, GGML_TYPE_I8, 2, ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, group_size);
    ggmlc__node_set(r, GGML_OP_QUANTIZE_I8_CONVROT, x, NULL, NULL);
    return r;
}

/* The activations an int8 product reads: x itself, or the rows packed by ggml_quantize_i8_convrot. */
static const struct ggml_tensor *i8_logical_input(const struct ggml_tensor *w, const struct ggml_tensor *x) {
    if (x->type == GGML_TYPE_F32) return x;
    if (x->op != GGML_OP_QUANTIZE_I8_CONVROT || !x->src[0]) return NULL;
    const struct ggml_tensor *in = x->src[0];
    return x->ne[0] == w->ne[0] && x->ne[1] == convrot_packed_rows(ggml_nrows(in), w->ne[0]) ? in : NULL;
}

static bool i8_per_row_ok(const struct ggml_tensor *t, const struct ggml_tensor *w) {
    return t->type == GGML_TYPE_F32 && ggml_is_contiguous(t) && ggml_nelements(t) == w->ne[1];
}

/* A MUL_MAT node, as in ggml: src[2] the scales, src[3] the bias, op_params[2] the group size. */
struct ggml_tensor *ggml_mul_mat_i8_tensorwise(struct ggml_context *ctx, struct ggml_tensor *w, struct ggml_tensor *x,
                                               struct ggml_tensor *weight_scale, struct ggml_tensor *bias, int group_size) {
    GGMLC_CHECK_SRC(w);
    GGMLC_CHECK_SRC(x);
    GGMLC_CHECK_SRC(weight_scale);
    if (w->type != GGML_TYPE_I8 || !ggml_is_contiguous(w) || w->ne[2] != 1 || w->ne[3] != 1)
        return ggmlc_op_fail_shapes(GGMLC_ERR_TYPE, __func__, "w must be a contiguous 2-D I8 matrix", w, x);
    const struct ggml_tensor *in = i8_logical_input(w, x);
    if (!in || !ggml_is_contiguous(x) || in->ne[0] != w->ne[0])
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__,
                                    "x must be contiguous F32 rows of w's length, or ggml_quantize_i8_convrot of such", w, x);
    if (!i8_per_row_ok(weight_scale, w) || (bias && !i8_per_row_ok(bias, w)))
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "weight_scale and bias must be contiguous F32, one per row of w",
                                    weight_scale, w);
    if (group_size != 0 && (!convrot_group_ok(group_size) || w->ne[0] % group_size != 0))
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__,
                              "group size %d must be 0 or a power of 4 up to 256 dividing the row length %lld", group_size,
                              (long long)w->ne[0]);
    const int64_t ne[4] = {w->ne[1], in->ne[1], in->ne[2], in->ne[3]};
    struct ggml_tensor *r = ggmlc__new_node(ctx, GGML_TYPE_F32, 4, ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 2, group_size);
    ggmlc__node_set(r, GGML_OP_MUL_MAT, w, x, weight_scale);
    r->src[3] = bias;
    return r;
}

/* The offset rides in op_params[15], after the four multi-section counts (ggml's slot). */
struct ggml_tensor *ggml_rope_set_offset(struct ggml_tensor *a, int n_offs) {
    GGMLC_CHECK_SRC(a);
    if (a->op != GGML_OP_ROPE && a->op != GGML_OP_ROPE_BACK)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "node is a %s, not a rope", ggml_op_name(a->op));
    const int32_t n_dims = a->op_params[1], mode = a->op_params[2];
    if (mode == GGML_ROPE_TYPE_VISION && n_offs != 0)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "vision rope rotates every dimension: no offset");
    if (n_offs < 0 || n_offs % 2 != 0 || (int64_t)n_offs + n_dims > a->ne[0])
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__,
                              "offset %d must be even, >= 0 and leave room for %d rotated of %lld dims", n_offs,
                              n_dims, (long long)a->ne[0]);
    a->op_params[15] = n_offs;
    return a;
}

/* ----------------------------------------------------------- small ones */

struct ggml_tensor *ggml_argsort_top_k(struct ggml_context *ctx, struct ggml_tensor *a, int k) {
    GGMLC_CHECK_SRC(a);
    if (k < 0 || k > a->ne[0])
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "k = %d must be in [0, %lld]", k, (long long)a->ne[0]);
    struct ggml_tensor *sorted = ggml_argsort(ctx, a, GGML_SORT_ORDER_DESC);
    GGMLC_CHECK_SRC(sorted);
    return ggml_view_4d(ctx, sorted, k, sorted->ne[1], sorted->ne[2], sorted->ne[3], sorted->nb[1], sorted->nb[2],
                        sorted->nb[3], 0);
}

/* op_params[8] of GGML_OP_PAD: 1 = take the padding from the other end (circular). */
struct ggml_tensor *ggml_pad_ext_circular(struct ggml_context *ctx, struct ggml_tensor *a,
                                          int lp0, int rp0, int lp1, int rp1, int lp2, int rp2, int lp3, int rp3) {
    GGMLC_CHECK_SRC(a);
    const int32_t lp[4] = {lp0, lp1, lp2, lp3}, rp[4] = {rp0, rp1, rp2, rp3};
    for (int i = 0; i < 4; i++) {
        if (lp[i] > a->ne[i] || rp[i] > a->ne[i]) /* one wrap at most, as ggml */
            return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "padding %d, %d of dim %d exceeds its size %lld", lp[i], rp[i],
                                 i, (long long)a->ne[i]);
    }
    struct ggml_tensor *r = ggml_pad_ext(ctx, a, lp0, rp0, lp1, rp1, lp2, rp2, lp3, rp3);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 8, 1);
    return r;
}

struct ggml_tensor *ggml_pad_circular(struct ggml_context *ctx, struct ggml_tensor *a, int p0, int p1, int p2, int p3) {
    return ggml_pad_ext_circular(ctx, a, 0, p0, 0, p1, 0, p2, 0, p3);
}

/* Stored past the precision slot (op_params[0]); no kernel depends on it, so ignoring it is exact. */
void ggml_mul_mat_set_hint(struct ggml_tensor *a, enum ggml_op_hint hint) {
    if (!a) return;
    if (a->op != GGML_OP_MUL_MAT) {
        ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "node is a %s, not a matrix product", ggml_op_name(a->op));
        return;
    }
    if (hint != GGML_HINT_NONE && hint != GGML_HINT_SRC0_IS_HADAMARD) {
        ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "unknown hint %d", (int)hint);
        return;
    }
    ggmlc__set_op_params_i32(a, 1, (int32_t)hint);
}

/* ------------------------------------------------------ graph building */

/* ggmlc computes every node of a graph, so only the chosen branch enters it: the others
 * are neither computed nor allocated (their inputs may hold no valid data). */
struct ggml_tensor *ggml_build_forward_select(struct ggml_cgraph *cgraph, struct ggml_tensor **tensors, int n_tensors,
                                              int idx) {
    if (!cgraph || !tensors || idx < 0 || idx >= n_tensors || !tensors[idx])
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "index %d outside the %d branches (or NULL)", idx, n_tensors);
    ggml_build_forward_expand(cgraph, tensors[idx]);
    tensors[idx]->flags |= GGML_TENSOR_FLAG_COMPUTE;
    return tensors[idx];
}

void ggml_build_forward_order(struct ggml_cgraph *cgraph, struct ggml_tensor *tensor) {
    ggml_build_forward_expand(cgraph, tensor); /* computed too: see docs/compatibility.md */
}
