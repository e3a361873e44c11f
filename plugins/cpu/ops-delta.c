/* ops-delta.c - the gated delta rule (GGML_OP_GATED_DELTA_NET) of Qwen3-Next and
 * Kimi linear attention.  Work splits by (head, sequence): each unit owns one state.
 *
 * The state of a head is an S x S matrix M, stored with the value index outer:
 * M[j*S + i] couples key channel i to value channel j, so every product below
 * walks a contiguous row. */
#include <math.h>

#include "cpu-convops.h"

struct delta_token {
    const float *q, *k, *v, *g; /* g: one gate or S (one per key channel) */
    float beta;
    bool per_key_gate;
};

/* One token: decay, delta update, readout; delta is S floats of scratch. */
static void delta_step(int64_t S, float *M, const struct delta_token *tk, float *delta, float *out) {
    if (tk->per_key_gate) {
        for (int64_t i = 0; i < S; i++) delta[i] = expf(tk->g[i]);
        for (int64_t j = 0; j < S; j++)
            for (int64_t i = 0; i < S; i++) M[j * S + i] *= delta[i];
    } else {
        const float decay = expf(tk->g[0]);
        for (int64_t x = 0; x < S * S; x++) M[x] *= decay;
    }
    for (int64_t j = 0; j < S; j++) { /* delta = beta * (v - M k) */
        float mk = 0.0f;
        for (int64_t i = 0; i < S; i++) mk += M[j * S + i] * tk->k[i];
        delta[j] = (tk->v[j] - mk) * tk->beta;
    }
    const float scale = 1.0f / sqrtf((float)S);
    for (int64_t j = 0; j < S; j++) {
        float mq = 0.0f;
        for (int64_t i = 0; i < S; i++) {
            M[j * S + i] += delta[j] * tk->k[i];
            mq += M[j * S + i] * tk->q[i];
        }
        out[j] = mq * scale;
    }
}

static inline const float *row_at(const struct ggml_tensor *t, int64_t i1, int64_t i2, int64_t i3) {
    return (const float *)cpu_elem_ptr(t, 0, i1, i2, i3);
}

static enum ggml_status gated_delta_net(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2];
    const struct ggml_tensor *g = dst->src[3], *beta = dst->src[4], *state = dst->src[5];
    const int64_t S = v->ne[0], H = v->ne[1], T = v->ne[2], n_seqs = v->ne[3];
    const int64_t K = ggmlc_op_param_i32(dst, 0), head_state = S * S;
    float *out = (float *)dst->data, *states = out + S * H * T * n_seqs;
    float *delta = (float *)call->wdata + call->ith * S;
    int64_t u0, u1;
    cpu_split_range(H * n_seqs, call->ith, call->nth, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const int64_t h = u % H, s = u / H;
        /* q/k heads repeat over the value heads (h % H_k), sequences in blocks */
        const int64_t hq = h % q->ne[1], sq = s / (n_seqs / q->ne[3]);
        const int64_t hk = h % k->ne[1], sk = s / (n_seqs / k->ne[3]);
        float *M = states + u * head_state; /* slot 0 doubles as the working state */
        memcpy(M, (const float *)state->data + u * head_state, (size_t)head_state * sizeof(float));
        for (int64_t t = 0; t < T; t++) {
            const struct delta_token tk = {
                .q = row_at(q, hq, t, sq), .k = row_at(k, hk, t, sk), .v = row_at(v, h, t, s),
                .g = (const float *)g->data + ((s * T + t) * H + h) * g->ne[0],
                .beta = ((const float *)beta->data)[(s * T + t) * H + h], .per_key_gate = g->ne[0] == S,
            };
            delta_step(S, M, &tk, delta, out + ((s * T + t) * H + h) * S);
            const int64_t slot = T - 1 - t; /* snapshot s holds the state s tokens before the end */
            if (slot > 0 && slot < K)
                memcpy(states + slot * head_state * H * n_seqs + u * head_state, M, (size_t)head_state * sizeof(float));
        }
    }
    return GGML_STATUS_SUCCESS;
}

static size_t gated_delta_net_work(const struct ggml_tensor *node, int n_threads) {
    return (size_t)n_threads * (size_t)node->src[2]->ne[0] * sizeof(float);
}

void cpu_ops_delta_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_GATED_DELTA_NET] = gated_delta_net;
    t->work_size[GGML_OP_GATED_DELTA_NET] = gated_delta_net_work;
}
