/*
 * layers-rnn.c - LSTM and GRU, unrolled over the sequence into the graph
 * (gate order and equations as PyTorch's: LSTM i, f, g, o; GRU r, z, n with
 * n = tanh(W_n x + b_in + r * (U_n h + b_hn))).  Input {T, F}; output
 * {units} (last step) or {T, units} with return_sequences.
 */
#include "nn-impl.h"

static enum ggmlc_status rnn_setup(ggmlc_layer *l, const int64_t *in, int in_dims, int64_t *out, int *out_dims, int gates) {
    if (in_dims != 2) return ggmlc__nn_bad_input(l, "a {T, F}", in_dims);
    const int64_t f = in[1], u = l->cfg.units;
    if (l->cfg.return_sequences) {
        out[0] = in[0];
        out[1] = u;
        *out_dims = 2;
    } else {
        out[0] = u;
        *out_dims = 1;
    }
    ggmlc__nn_add_param(l, "kernel", 2, (int64_t[]){f, gates * u}, l->kernel_init, f, u);
    ggmlc__nn_add_param(l, "recurrent_kernel", 2, (int64_t[]){u, gates * u}, l->kernel_init, u, u);
    ggmlc__nn_add_param(l, "bias", 1, (int64_t[]){gates * u}, GGMLC_INIT_ZEROS, f, u);
    ggmlc__nn_add_param(l, "recurrent_bias", 1, (int64_t[]){gates * u}, GGMLC_INIT_ZEROS, u, u);
    return GGMLC_OK;
}

static enum ggmlc_status lstm_setup(ggmlc_layer *l, const int64_t *in, int in_dims, int64_t *out, int *out_dims) {
    return rnn_setup(l, in, in_dims, out, out_dims, 4);
}

static enum ggmlc_status gru_setup(ggmlc_layer *l, const int64_t *in, int in_dims, int64_t *out, int *out_dims) {
    return rnn_setup(l, in, in_dims, out, out_dims, 3);
}

/* Rows [k*u, (k+1)*u) of a [gates*u, N] matrix, contiguous. */
static struct ggml_tensor *gate(struct ggml_context *ctx, struct ggml_tensor *g, int k, int64_t u) {
    return ggml_cont(ctx, ggml_view_2d(ctx, g, u, g->ne[1], g->nb[1], (size_t)k * u * g->nb[0]));
}

/* The input projection of every step at once: [gates*u, T, N], plus the input bias. */
static struct ggml_tensor *project_inputs(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x) {
    return ggml_add(b->ctx, ggml_mul_mat(b->ctx, l->params[0].t, x), l->params[2].t);
}

/* Step t of the projected inputs: [gates*u, N]. */
static struct ggml_tensor *step_of(struct ggml_context *ctx, struct ggml_tensor *xp, int64_t t) {
    return ggml_cont(ctx, ggml_view_2d(ctx, xp, xp->ne[0], xp->ne[2], xp->nb[2], (size_t)t * xp->nb[1]));
}

/* Collect the outputs: the last one, or all stacked into [u, T, N]. */
static struct ggml_tensor *rnn_output(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *seq, struct ggml_tensor *h) {
    if (!l->cfg.return_sequences) return h;
    return seq;
}

static struct ggml_tensor *append_step(struct nn_build *b, struct ggml_tensor *seq, struct ggml_tensor *h) {
    struct ggml_tensor *h3 = ggml_reshape_3d(b->ctx, h, h->ne[0], 1, h->ne[1]);
    return seq ? ggml_concat(b->ctx, seq, h3, 1) : h3;
}

static struct ggml_tensor *zero_state(struct nn_build *b, int64_t u) {
    return ggml_fill(b->ctx, ggml_new_tensor_2d(b->ctx, GGML_TYPE_F32, u, b->batch), 0.0f);
}

static struct ggml_tensor *lstm_forward(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x) {
    struct ggml_context *ctx = b->ctx;
    const int64_t u = l->cfg.units, T = x->ne[1];
    struct ggml_tensor *xp = project_inputs(l, b, x), *h = zero_state(b, u), *c = zero_state(b, u), *seq = NULL;
    for (int64_t t = 0; t < T; t++) {
        struct ggml_tensor *g = ggml_add(ctx, ggml_add(ctx, step_of(ctx, xp, t), ggml_mul_mat(ctx, l->params[1].t, h)), l->params[3].t);
        struct ggml_tensor *i = ggml_sigmoid(ctx, gate(ctx, g, 0, u)), *f = ggml_sigmoid(ctx, gate(ctx, g, 1, u));
        struct ggml_tensor *gg = ggml_tanh(ctx, gate(ctx, g, 2, u)), *o = ggml_sigmoid(ctx, gate(ctx, g, 3, u));
        c = ggml_add(ctx, ggml_mul(ctx, f, c), ggml_mul(ctx, i, gg));
        h = ggml_mul(ctx, o, ggml_tanh(ctx, c));
        if (l->cfg.return_sequences) seq = append_step(b, seq, h);
    }
    return rnn_output(l, b, seq, h);
}

static struct ggml_tensor *gru_forward(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x) {
    struct ggml_context *ctx = b->ctx;
    const int64_t u = l->cfg.units, T = x->ne[1];
    struct ggml_tensor *xp = project_inputs(l, b, x), *h = zero_state(b, u), *seq = NULL;
    for (int64_t t = 0; t < T; t++) {
        struct ggml_tensor *xs = step_of(ctx, xp, t);
        struct ggml_tensor *hs = ggml_add(ctx, ggml_mul_mat(ctx, l->params[1].t, h), l->params[3].t);
        struct ggml_tensor *r = ggml_sigmoid(ctx, ggml_add(ctx, gate(ctx, xs, 0, u), gate(ctx, hs, 0, u)));
        struct ggml_tensor *z = ggml_sigmoid(ctx, ggml_add(ctx, gate(ctx, xs, 1, u), gate(ctx, hs, 1, u)));
        struct ggml_tensor *n = ggml_tanh(ctx, ggml_add(ctx, gate(ctx, xs, 2, u), ggml_mul(ctx, r, gate(ctx, hs, 2, u))));
        /* h = (1 - z) * n + z * h = n + z * (h - n) */
        h = ggml_add(ctx, n, ggml_mul(ctx, z, ggml_sub(ctx, h, n)));
        if (l->cfg.return_sequences) seq = append_step(b, seq, h);
    }
    return rnn_output(l, b, seq, h);
}

const struct layer_ops ggmlc__nn_lstm_ops = {"LSTM", lstm_setup, lstm_forward};
const struct layer_ops ggmlc__nn_gru_ops = {"GRU", gru_setup, gru_forward};

static ggmlc_layer *new_rnn(const struct layer_ops *ops, int64_t units, bool return_sequences) {
    if (units <= 0) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: units must be positive", ops->kind);
        return NULL;
    }
    ggmlc_layer *l = ggmlc__nn_layer_new(ops, GGMLC_ACT_NONE);
    if (!l) return NULL;
    l->cfg.units = units;
    l->cfg.return_sequences = return_sequences;
    return l;
}

ggmlc_layer *ggmlc_lstm(int64_t units, bool return_sequences) { return new_rnn(&ggmlc__nn_lstm_ops, units, return_sequences); }
ggmlc_layer *ggmlc_gru(int64_t units, bool return_sequences) { return new_rnn(&ggmlc__nn_gru_ops, units, return_sequences); }
