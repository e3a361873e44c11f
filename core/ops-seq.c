/*
 * ops-seq.c - constructors of the sequence-model operators: Mamba's ssm_conv
 * and ssm_scan, the linear-attention recurrences (RWKV v6/v7, gated linear
 * attention) and the triangular solve they are chunked with.
 */
#include "ggml-impl.h"

static bool all_f32(struct ggml_tensor *const *t, int n) {
    for (int i = 0; i < n; i++)
        if (t[i]->type != GGML_TYPE_F32) return false;
    return true;
}

static bool all_contiguous(struct ggml_tensor *const *t, int n) {
    for (int i = 0; i < n; i++)
        if (!ggml_is_contiguous(t[i])) return false;
    return true;
}

static bool has_shape3(const struct ggml_tensor *t, int64_t ne0, int64_t ne1, int64_t ne2) {
    return t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == ne2 && t->ne[3] == 1;
}

struct ggml_tensor *ggml_ssm_conv(struct ggml_context *ctx, struct ggml_tensor *sx, struct ggml_tensor *c) {
    GGMLC_CHECK_SRC(sx);
    GGMLC_CHECK_SRC(c);
    if (!all_f32((struct ggml_tensor *[]){sx, c}, 2))
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "sx and c must be F32");
    const int64_t d_conv = c->ne[0], d_inner = c->ne[1];
    if (!ggml_is_3d(sx) || !ggml_is_matrix(c) || sx->ne[1] != d_inner || sx->ne[0] < d_conv)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "sx must be [d_conv - 1 + n_t, d_inner, n_s] for c [d_conv, d_inner]", sx, c);
    struct ggml_tensor *r = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, d_inner, sx->ne[0] - d_conv + 1, sx->ne[2]);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_SSM_CONV, sx, c, NULL);
    return r;
}

struct ggml_tensor *ggml_ssm_scan(struct ggml_context *ctx, struct ggml_tensor *s,
                                  struct ggml_tensor *x, struct ggml_tensor *dt,
                                  struct ggml_tensor *A, struct ggml_tensor *B,
                                  struct ggml_tensor *C, struct ggml_tensor *ids, int64_t K) {
    GGMLC_CHECK_SRC(s);
    GGMLC_CHECK_SRC(x);
    GGMLC_CHECK_SRC(dt);
    GGMLC_CHECK_SRC(A);
    GGMLC_CHECK_SRC(B);
    GGMLC_CHECK_SRC(C);
    GGMLC_CHECK_SRC(ids);
    if (!all_f32((struct ggml_tensor *[]){s, x, dt, A, B, C}, 6) || ids->type != GGML_TYPE_I32)
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__,
                              "s, x, dt, A, B, C must be F32 and ids I32");
    const int64_t d_state = s->ne[0], head_dim = x->ne[0], n_head = x->ne[1], n_tok = x->ne[2], n_seqs = x->ne[3];
    if (!ggml_is_contiguous(s) || s->ne[1] != head_dim || s->ne[2] != n_head)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "state must be contiguous [d_state, head_dim, n_head, n_rs] for x", s, x);
    if (!has_shape3(dt, n_head, n_tok, n_seqs))
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "dt must be [n_head, n_tokens, n_seqs]", dt, x);
    if (!ggml_is_matrix(A) || (A->ne[0] != 1 && A->ne[0] != d_state) || A->ne[1] != n_head)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "A must be [d_state, n_head] or [1, n_head]", A, s);
    if (!ggml_are_same_shape(B, C) || B->ne[0] != d_state || B->ne[1] == 0 || n_head % B->ne[1] != 0 ||
        B->ne[2] != n_tok || B->ne[3] != n_seqs)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "B and C must be [d_state, n_group, n_tokens, n_seqs] with n_head % n_group == 0", B, x);
    if (!ggml_is_vector(ids) || ids->ne[0] != n_seqs)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "ids must be [n_seqs]", ids, x);
    for (int i = 0; i < 7; i++) {
        const struct ggml_tensor *t = (const struct ggml_tensor *[]){s, x, dt, A, B, C, ids}[i];
        if (t->nb[0] != ggml_type_size(t->type))
            return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "every operand needs contiguous rows", t, x);
    }
    if (K < 1 || K > INT32_MAX)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__,
                              "K (state slots) must be in [1, INT32_MAX]");
    if (K > 1 && A->ne[0] != 1)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__,
                                    "K > 1 needs A of [1, n_head] (Mamba-2)", A, s);
    /* outputs y (x's shape) followed by K slots of every sequence's state */
    const int64_t n_state = d_state * head_dim * n_head * n_seqs;
    if (n_state > (INT64_MAX - ggml_nelements(x)) / K)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__,
                              "K state slots overflow the result size");
    struct ggml_tensor *r = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, ggml_nelements(x) + K * n_state);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_SSM_SCAN, s, x, dt);
    ggmlc__set_op_params_i32(r, 0, (int32_t)K);
    r->src[3] = A;
    r->src[4] = B;
    r->src[5] = C;
    r->src[6] = ids;
    return r;
}

/* Shared checks of the linear-attention recurrences: every per-token operand is
 * [S, H, T], state holds S*S*H values per sequence, T splits evenly into sequences. */
static struct ggml_tensor *new_recurrence(struct ggml_context *ctx, const char *func, struct ggml_tensor *const *tok, int n_tok,
                                          struct ggml_tensor *state) {
    if (!all_f32(tok, n_tok) || state->type != GGML_TYPE_F32)
        return ggmlc__op_fail(GGMLC_ERR_TYPE, func, "every operand must be F32");
    if (!all_contiguous(tok, n_tok) || !ggml_is_contiguous(state))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, func, "every operand must be contiguous");
    const int64_t S = tok[0]->ne[0], H = tok[0]->ne[1], T = tok[0]->ne[2];
    for (int i = 1; i < n_tok; i++)
        if (!has_shape3(tok[i], S, H, T)) return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, func, "per-token operands must share the shape [S, H, T]", tok[i], tok[0]);
    const int64_t n_seqs = state->ne[1];
    if (ggml_nelements(state) != S * S * H * n_seqs || n_seqs == 0 || T % n_seqs != 0)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, func, "state must hold [S*S*H, n_seqs] with n_seqs dividing the tokens", state, tok[0]);
    return ggml_new_tensor_4d(ctx, GGML_TYPE_F32, S * H, T + S * n_seqs, 1, 1);
}

static void set_sources(struct ggml_tensor *r, enum ggml_op op, struct ggml_tensor *const *src, int n) {
    r->op = op;
    for (int i = 0; i < n; i++) r->src[i] = src[i];
}

struct ggml_tensor *ggml_rwkv_wkv6(struct ggml_context *ctx, struct ggml_tensor *k, struct ggml_tensor *v, struct ggml_tensor *r,
                                   struct ggml_tensor *tf, struct ggml_tensor *td, struct ggml_tensor *state) {
    GGMLC_CHECK_SRC(k);
    GGMLC_CHECK_SRC(v);
    GGMLC_CHECK_SRC(r);
    GGMLC_CHECK_SRC(tf);
    GGMLC_CHECK_SRC(td);
    GGMLC_CHECK_SRC(state);
    if (tf->type != GGML_TYPE_F32 || !ggml_is_contiguous(tf) || ggml_nelements(tf) != k->ne[0] * k->ne[1])
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "time_first must be F32 [S, H]", tf, k);
    struct ggml_tensor *res = new_recurrence(ctx, __func__, (struct ggml_tensor *[]){k, v, r, td}, 4, state);
    GGMLC_CHECK_SRC(res);
    set_sources(res, GGML_OP_RWKV_WKV6, (struct ggml_tensor *[]){k, v, r, tf, td, state}, 6);
    return res;
}

struct ggml_tensor *ggml_gated_linear_attn(struct ggml_context *ctx, struct ggml_tensor *k, struct ggml_tensor *v, struct ggml_tensor *q,
                                           struct ggml_tensor *g, struct ggml_tensor *state, float scale) {
    GGMLC_CHECK_SRC(k);
    GGMLC_CHECK_SRC(v);
    GGMLC_CHECK_SRC(q);
    GGMLC_CHECK_SRC(g);
    GGMLC_CHECK_SRC(state);
    struct ggml_tensor *res = new_recurrence(ctx, __func__, (struct ggml_tensor *[]){k, v, q, g}, 4, state);
    GGMLC_CHECK_SRC(res);
    ggmlc__set_op_params_f32(res, 0, scale);
    set_sources(res, GGML_OP_GATED_LINEAR_ATTN, (struct ggml_tensor *[]){k, v, q, g, state}, 5);
    return res;
}

struct ggml_tensor *ggml_rwkv_wkv7(struct ggml_context *ctx, struct ggml_tensor *r, struct ggml_tensor *w, struct ggml_tensor *k,
                                   struct ggml_tensor *v, struct ggml_tensor *a, struct ggml_tensor *b, struct ggml_tensor *state) {
    GGMLC_CHECK_SRC(r);
    GGMLC_CHECK_SRC(w);
    GGMLC_CHECK_SRC(k);
    GGMLC_CHECK_SRC(v);
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    GGMLC_CHECK_SRC(state);
    struct ggml_tensor *res = new_recurrence(ctx, __func__, (struct ggml_tensor *[]){r, w, k, v, a, b}, 6, state);
    GGMLC_CHECK_SRC(res);
    set_sources(res, GGML_OP_RWKV_WKV7, (struct ggml_tensor *[]){r, w, k, v, a, b, state}, 7);
    return res;
}

struct ggml_tensor *ggml_solve_tri(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, bool left, bool lower, bool uni) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (a->type != GGML_TYPE_F32 || b->type != GGML_TYPE_F32)
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "A and B must be F32");
    const int64_t n = a->ne[0];
    /* ggml order: ne[0] indexes columns, ne[1] rows; A X = B needs B with n rows, X A = B with n columns */
    const int64_t b_dim = left ? b->ne[1] : b->ne[0];
    if (a->ne[1] != n || b_dim != n || a->ne[2] != b->ne[2] || a->ne[3] != b->ne[3])
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "A must be square [n, n, B2, B3] and B must have n rows (left) or n columns (right)", a, b);
    struct ggml_tensor *r = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, b->ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, left);
    ggmlc__set_op_params_i32(r, 1, lower);
    ggmlc__set_op_params_i32(r, 2, uni);
    ggmlc__node_set(r, GGML_OP_SOLVE_TRI, a, b, NULL);
    return r;
}
