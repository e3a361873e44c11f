/* ops-seq.c - sequence-model kernels: Mamba's ssm_conv / ssm_scan, the RWKV v6,
 * gated-linear-attention and RWKV v7 recurrences, and triangular solves.
 * The recurrences split the work by head: a head's state is touched by one task. */
#include <math.h>

#include "cpu-convops.h"

static enum ggml_status ssm_conv(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *sx = dst->src[0], *c = dst->src[1];
    const int64_t d_conv = c->ne[0], d_inner = c->ne[1], n_t = dst->ne[1], n_s = dst->ne[2];
    int64_t i0, i1;
    cpu_split_range(d_inner, call->ith, call->nth, &i0, &i1);
    for (int64_t s = 0; s < n_s; s++)
        for (int64_t t = 0; t < n_t; t++)
            for (int64_t i = i0; i < i1; i++) {
                float sum = 0.0f;
                for (int64_t k = 0; k < d_conv; k++) sum += cpu_get_f32(sx, t + k, i, s, 0) * cpu_get_f32(c, k, i, 0, 0);
                *(float *)cpu_elem_ptr(dst, i, t, s, 0) = sum;
            }
    return GGML_STATUS_SUCCESS;
}

/* softplus with the usual cut-off above which it is the identity in float */
static inline float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

/* ssm_scan with K slots: slot k (0 < k < K) gets this thread's heads [from, from + n) of the
 * state after token n_tok - 1 - k (slot 0, the final state, is where the scan writes). */
static void keep_state_slot(struct ggml_tensor *dst, const float *state, int64_t slot,
                            int64_t seq_off, int64_t from, int64_t n) {
    const struct ggml_tensor *x = dst->src[1];
    if (slot <= 0 || slot >= ggmlc_ssm_scan_slots_of(dst)) return;
    const int64_t all_seqs = ggml_nelements(dst->src[0]) / dst->src[0]->ne[3] * x->ne[3];
    float *slot_base = (float *)dst->data + ggml_nelements(x) + slot * all_seqs + seq_off;
    memcpy(slot_base + from, state + from, (size_t)n * sizeof *state);
}

static enum ggml_status ssm_scan(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *s = dst->src[0], *x = dst->src[1], *dt = dst->src[2], *A = dst->src[3];
    const struct ggml_tensor *B = dst->src[4], *C = dst->src[5], *ids = dst->src[6];
    const int64_t d_state = s->ne[0], head_dim = x->ne[0], n_head = x->ne[1], n_tok = x->ne[2], n_seqs = x->ne[3];
    const int64_t heads_per_group = n_head / B->ne[1], state_size = d_state * head_dim * n_head;
    const bool scalar_decay = A->ne[0] == 1; /* Mamba-2: one decay per head */
    float *y = (float *)dst->data, *states = y + ggml_nelements(x);
    int64_t h0, h1;
    cpu_split_range(n_head, call->ith, call->nth, &h0, &h1);
    for (int64_t q = 0; q < n_seqs; q++) {
        const int32_t slot = *(const int32_t *)cpu_elem_ptr(ids, q, 0, 0, 0);
        if (slot < 0 || slot >= s->ne[3]) return cpu_index_out_of_range(call, dst, ids, slot, q, 0, 0, s->ne[3]);
        float *state = states + q * state_size;
        const float *prev = (const float *)cpu_elem_ptr(s, 0, 0, 0, slot);
        for (int64_t t = 0; t < n_tok; t++) {
            for (int64_t h = h0; h < h1; h++) {
                const float delta = softplus(cpu_get_f32(dt, h, t, q, 0));
                const int64_t g = h / heads_per_group;
                const float *Bt = (const float *)cpu_elem_ptr(B, 0, g, t, q), *Ct = (const float *)cpu_elem_ptr(C, 0, g, t, q);
                const float *Ah = (const float *)cpu_elem_ptr(A, 0, h, 0, 0);
                for (int64_t d = 0; d < head_dim; d++) {
                    const float x_dt = cpu_get_f32(x, d, h, t, q) * delta;
                    const int64_t base = (h * head_dim + d) * d_state;
                    float sum = 0.0f;
                    for (int64_t n = 0; n < d_state; n++) {
                        const float decay = expf(delta * (scalar_decay ? Ah[0] : Ah[n]));
                        const float st = prev[base + n] * decay + Bt[n] * x_dt;
                        state[base + n] = st;
                        sum += st * Ct[n];
                    }
                    y[((q * n_tok + t) * n_head + h) * head_dim + d] = sum;
                }
            }
            keep_state_slot(dst, state, n_tok - 1 - t, q * state_size, h0 * head_dim * d_state,
                            (h1 - h0) * head_dim * d_state);
            prev = state; /* later tokens continue from the state just written */
        }
    }
    return GGML_STATUS_SUCCESS;
}

/* The recurrences of RWKV v6 (kind 6), gated linear attention (kind 0) and RWKV v7 (kind 7).
 * Operands are contiguous [S, H, T]; the result holds [S*H, T] outputs, then the states. */
struct recurrence {
    int64_t S, H, T, n_seqs;
    const float *src[7];
    const float *state_in;
    float *out, *state_out;
};

static void wkv6_token(const struct recurrence *rc, int64_t t, int64_t h, float *st) {
    const int64_t S = rc->S, at = (t * rc->H + h) * S;
    const float *k = rc->src[0] + at, *v = rc->src[1] + at, *r = rc->src[2] + at, *tf = rc->src[3] + h * S, *td = rc->src[4] + at;
    float *out = rc->out + at;
    for (int64_t j = 0; j < S; j++) out[j] = 0.0f;
    for (int64_t i = 0; i < S; i++)
        for (int64_t j = 0; j < S; j++) {
            const float kv = k[i] * v[j];
            out[j] += r[i] * (tf[i] * kv + st[i * S + j]);
            st[i * S + j] = st[i * S + j] * td[i] + kv;
        }
}

static void gla_token(const struct recurrence *rc, int64_t t, int64_t h, float *st, float scale) {
    const int64_t S = rc->S, at = (t * rc->H + h) * S;
    const float *k = rc->src[0] + at, *v = rc->src[1] + at, *q = rc->src[2] + at, *g = rc->src[3] + at;
    float *out = rc->out + at;
    for (int64_t j = 0; j < S; j++) out[j] = 0.0f;
    for (int64_t i = 0; i < S; i++)
        for (int64_t j = 0; j < S; j++) {
            st[i * S + j] = st[i * S + j] * g[i] + k[i] * v[j];
            out[j] += st[i * S + j] * q[i] * scale;
        }
}

static void wkv7_token(const struct recurrence *rc, int64_t t, int64_t h, float *st) {
    const int64_t S = rc->S, at = (t * rc->H + h) * S;
    const float *r = rc->src[0] + at, *w = rc->src[1] + at, *k = rc->src[2] + at, *v = rc->src[3] + at;
    const float *a = rc->src[4] + at, *b = rc->src[5] + at;
    float *out = rc->out + at;
    for (int64_t i = 0; i < S; i++) { /* row i of the state belongs to value channel i */
        float sa = 0.0f, sum = 0.0f;
        for (int64_t j = 0; j < S; j++) sa += a[j] * st[i * S + j];
        for (int64_t j = 0; j < S; j++) {
            st[i * S + j] = st[i * S + j] * w[j] + v[i] * k[j] + sa * b[j];
            sum += st[i * S + j] * r[j];
        }
        out[i] = sum;
    }
}

static enum ggml_status recurrence_run(const struct ggmlc_op_call *call, struct ggml_tensor *dst, int kind, int n_src) {
    struct recurrence rc = {.S = dst->src[0]->ne[0], .H = dst->src[0]->ne[1], .T = dst->src[0]->ne[2]};
    for (int i = 0; i < n_src; i++) rc.src[i] = (const float *)dst->src[i]->data;
    const struct ggml_tensor *state = dst->src[n_src];
    rc.n_seqs = state->ne[1];
    rc.state_in = (const float *)state->data;
    rc.out = (float *)dst->data;
    rc.state_out = rc.out + rc.S * rc.H * rc.T;
    const float scale = kind == 0 ? ggmlc_op_param_f32(dst, 0) : 0.0f;
    const int64_t per_seq = rc.T / rc.n_seqs, head_state = rc.S * rc.S;
    int64_t h0, h1;
    cpu_split_range(rc.H, call->ith, call->nth, &h0, &h1);
    for (int64_t q = 0; q < rc.n_seqs; q++)
        for (int64_t h = h0; h < h1; h++) {
            float *st = rc.state_out + (q * rc.H + h) * head_state;
            memcpy(st, rc.state_in + (q * rc.H + h) * head_state, (size_t)head_state * sizeof(float));
            for (int64_t t = q * per_seq; t < (q + 1) * per_seq; t++) {
                if (kind == 6) wkv6_token(&rc, t, h, st);
                else if (kind == 7) wkv7_token(&rc, t, h, st);
                else gla_token(&rc, t, h, st, scale);
            }
        }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status rwkv_wkv6(const struct ggmlc_op_call *call, struct ggml_tensor *dst) { return recurrence_run(call, dst, 6, 5); }
static enum ggml_status gated_linear_attn(const struct ggmlc_op_call *call, struct ggml_tensor *dst) { return recurrence_run(call, dst, 0, 4); }
static enum ggml_status rwkv_wkv7(const struct ggmlc_op_call *call, struct ggml_tensor *dst) { return recurrence_run(call, dst, 7, 6); }

/* A (row r, column c) is element (c, r) of the ggml tensor. */
static inline float mat(const struct ggml_tensor *t, int64_t r, int64_t c, int64_t i2, int64_t i3) { return cpu_get_f32(t, c, r, i2, i3); }

static enum ggml_status solve_tri(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *A = dst->src[0], *B = dst->src[1];
    const struct ggmlc_solve_tri_params p = ggmlc_solve_tri_params_of(dst);
    const bool left = p.left, lower = p.lower, uni = p.unit_diag;
    const int64_t n = A->ne[0], n_rhs = left ? B->ne[0] : B->ne[1], units = n_rhs * B->ne[2] * B->ne[3];
    int64_t u0, u1;
    cpu_split_range(units, call->ith, call->nth, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const int64_t v = u % n_rhs, i2 = (u / n_rhs) % B->ne[2], i3 = u / (n_rhs * B->ne[2]);
        /* Left: column v of X from A X = B.  Right: row v of X from X A = B, i.e. A^T x = b.
         * Either way a triangular system over n unknowns, solved in dependency order. */
        const bool forward = left ? lower : !lower;
        for (int64_t step = 0; step < n; step++) {
            const int64_t p = forward ? step : n - 1 - step;
            double sum = 0.0;
            for (int64_t q = forward ? 0 : p + 1; q < (forward ? p : n); q++) {
                const float a_pq = left ? mat(A, p, q, i2, i3) : mat(A, q, p, i2, i3);
                const float x_q = left ? mat(dst, q, v, i2, i3) : mat(dst, v, q, i2, i3);
                sum += (double)a_pq * x_q;
            }
            const double diag = uni ? 1.0 : mat(A, p, p, i2, i3);
            const float rhs = left ? mat(B, p, v, i2, i3) : mat(B, v, p, i2, i3);
            const float x = (float)((rhs - sum) / diag);
            if (left) *(float *)cpu_elem_ptr(dst, v, p, i2, i3) = x;
            else *(float *)cpu_elem_ptr(dst, p, v, i2, i3) = x;
        }
    }
    return GGML_STATUS_SUCCESS;
}

void cpu_ops_seq_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_SSM_CONV] = ssm_conv;
    t->compute[GGML_OP_SSM_SCAN] = ssm_scan;
    t->compute[GGML_OP_RWKV_WKV6] = rwkv_wkv6;
    t->compute[GGML_OP_GATED_LINEAR_ATTN] = gated_linear_attn;
    t->compute[GGML_OP_RWKV_WKV7] = rwkv_wkv7;
    t->compute[GGML_OP_SOLVE_TRI] = solve_tri;
}
