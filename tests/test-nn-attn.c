/*
 * test-nn-attn.c - attention, Transformer and Stable-Diffusion layers of the
 * model API against PyTorch 1.13 (tests/golden/gen_nn_attn_layers.py): the
 * output, and the weights after one SGD step, of a small functional model per
 * case whose inputs pass through Dense layers first (their weights' update
 * checks the gradient reaching the block's inputs); the step's change of the
 * weights (the gradients themselves) is compared too.  Then save/load round
 * trips, sequential use, position embeddings (hand-computed) and bad input.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggmlc-nn.h"
#include "gguf.h"
#include "testutil.h"

#define REFUSED(call, status, what, needle)                                                  \
    tap_ok((call) == (status) && strstr(ggmlc_last_error(), needle) != NULL, "%s: %s", what, \
           ggmlc_last_error())

/* ----------------------------------------------------------- the layers */

static ggmlc_layer *mk_mha(void) {
    struct ggmlc_attention_options o = ggmlc_attention_defaults(2);
    return ggmlc_multi_head_attention(&o);
}

static ggmlc_layer *mk_mha_dropout_tiny(
    void) { /* the soft_max + mul_mat path of attention dropout, dropping ~nothing */
    struct ggmlc_attention_options o = ggmlc_attention_defaults(2);
    o.dropout = 1e-6f;
    return ggmlc_multi_head_attention(&o);
}

static ggmlc_layer *mk_mha_dropout_half(void) { /* predictions run without dropout */
    struct ggmlc_attention_options o = ggmlc_attention_defaults(2);
    o.dropout = 0.5f;
    return ggmlc_multi_head_attention(&o);
}

static ggmlc_layer *mk_mha_gqa_rope(void) {
    struct ggmlc_attention_options o = ggmlc_attention_defaults(4);
    o.n_kv_head = 2;
    o.causal = o.fused_qkv = o.rope = true;
    o.bias = false;
    return ggmlc_multi_head_attention(&o);
}

static ggmlc_layer *mk_mha_alibi(void) {
    struct ggmlc_attention_options o = ggmlc_attention_defaults(6);
    o.causal = true;
    o.alibi_max_bias = 8.0f;
    return ggmlc_multi_head_attention(&o);
}

static ggmlc_layer *mk_enc_post_gelu(void) {
    struct ggmlc_transformer_options o = ggmlc_transformer_defaults(2, 12);
    return ggmlc_transformer_encoder(&o);
}

static ggmlc_layer *mk_enc_pre_rms_swiglu(void) {
    struct ggmlc_transformer_options o = ggmlc_transformer_defaults(4, 10);
    o.attn.n_kv_head = 2;
    o.pre_norm = true;
    o.norm = GGMLC_NORM_RMS;
    o.mlp = GGMLC_MLP_SWIGLU;
    return ggmlc_transformer_encoder(&o);
}

static ggmlc_layer *mk_enc_pre(void) {
    struct ggmlc_transformer_options o = ggmlc_transformer_defaults(2, 12);
    o.pre_norm = true;
    return ggmlc_transformer_encoder(&o);
}

static ggmlc_layer *mk_dec(void) {
    struct ggmlc_transformer_options o = ggmlc_transformer_defaults(2, 12);
    o.pre_norm = true;
    return ggmlc_transformer_decoder(&o);
}

static ggmlc_layer *mk_unet_res8(void) { return ggmlc_unet_res_block(8, 2); }
static ggmlc_layer *mk_unet_res4(void) { return ggmlc_unet_res_block(4, 2); }
static ggmlc_layer *mk_spatial(void) { return ggmlc_spatial_transformer(2, 4, 2); }

struct attn_case {
    const char *name, *gold; /* the test's name and its golden case */
    ggmlc_layer *(*make)(void);
    int n_in;
    int in_dims[2];
    int64_t pre[2]; /* width of the Dense layer before each input, 0 for none */
};

static const struct attn_case cases[] = {
    {"mha", "mha", mk_mha, 1, {2}, {8}},
    {"mha attention dropout path", "mha", mk_mha_dropout_tiny, 1, {2}, {8}},
    {"mha gqa rope fused causal", "mha_gqa_rope", mk_mha_gqa_rope, 1, {2}, {16}},
    {"mha alibi causal", "mha_alibi", mk_mha_alibi, 1, {2}, {12}},
    {"mha padding mask", "mha_pad", mk_mha, 2, {2, 1}, {8, 0}},
    {"mha cross-attention", "mha_cross", mk_mha, 2, {2, 2}, {8, 6}},
    {"encoder post-norm gelu", "enc_post_gelu", mk_enc_post_gelu, 1, {2}, {8}},
    {"encoder pre-norm rms swiglu gqa", "enc_pre_rms_swiglu", mk_enc_pre_rms_swiglu, 1, {2}, {8}},
    {"encoder padding mask", "enc_pad", mk_enc_pre, 2, {2, 1}, {8, 0}},
    {"decoder cross-attention", "dec_cross", mk_dec, 2, {2, 2}, {8, 6}},
    {"decoder gpt block", "dec_gpt", mk_dec, 1, {2}, {8}},
    {"unet res block", "unet_res", mk_unet_res8, 2, {3, 1}, {5, 6}},
    {"unet res block same channels", "unet_res_same", mk_unet_res4, 2, {3, 1}, {3, 6}},
    {"spatial transformer", "spatial", mk_spatial, 2, {3, 2}, {3, 6}},
};

static const struct gold_tensor *gget(const struct gold_set *s, const char *c, const char *what) {
    char name[128];
    snprintf(name, sizeof name, "%s.%s", c, what);
    return gold_get(s, name);
}

/* A golden input as a model array: its shape without the batch (the outermost dimension). */
static struct ggmlc_array gold_array(const struct gold_tensor *t, int dims) {
    struct ggmlc_array a = {t->data, t->ne[dims], {0}, dims, t->n};
    for (int i = 0; i < dims; i++) a.shape[i] = t->ne[dims - 1 - i];
    return a;
}

/* The case's model: Dense layers on the inputs, then the layer; NULL when refused. */
static ggmlc_model *build(const struct attn_case *c, const struct ggmlc_array *x,
                          ggmlc_layer *layer) {
    ggmlc_model *m = ggmlc_functional();
    ggmlc_node *z[2] = {NULL, NULL};
    for (int i = 0; i < c->n_in; i++) {
        z[i] = ggmlc_input(m, x[i].shape, x[i].n_dims);
        if (c->pre[i]) z[i] = ggmlc_apply(m, ggmlc_dense(c->pre[i], GGMLC_ACT_NONE), z[i]);
    }
    ggmlc_node *out =
        c->n_in == 2 ? ggmlc_apply2(m, layer, z[0], z[1]) : ggmlc_apply(m, layer, z[0]);
    struct ggmlc_compile_options o = ggmlc_compile_defaults();
    o.optimizer = GGMLC_OPT_SGD;
    o.learning_rate = 0.1f;
    if (!out || ggmlc_model_set_outputs(m, &out, 1) != GGMLC_OK ||
        ggmlc_model_compile(m, &o) != GGMLC_OK) {
        tap_ok(false, "%s: model built (%s)", c->name, ggmlc_last_error());
        ggmlc_model_free(m);
        return NULL;
    }
    return m;
}

static float *predict(ggmlc_model *m, const struct ggmlc_array *x, int n_x, size_t n_out) {
    float *pred = calloc(n_out, sizeof(float));
    float *outs[1] = {pred};
    if (ggmlc_model_predict_multi(m, x, n_x, x[0].n, outs, &n_out, 1) != GGMLC_OK)
        tap_diag("predict: %s", ggmlc_last_error());
    return pred;
}

/* Save, load, predict again: the same outputs. */
static void check_round_trip(const struct attn_case *c, ggmlc_model *m, const struct ggmlc_array *x,
                             const float *pred, size_t n) {
    char path[] = "/tmp/ggmlc-test-attn-XXXXXX";
    const int fd = mkstemp(path);
    if (fd >= 0) close(fd);
    ggmlc_model *back =
        ggmlc_model_save(m, path, false) == GGMLC_OK ? ggmlc_model_load(path, NULL) : NULL;
    float *again = back ? predict(back, x, c->n_in, n) : NULL;
    tap_ok(again && memcmp(again, pred, n * sizeof(float)) == 0 &&
               ggmlc_model_param_count(back, false) == ggmlc_model_param_count(m, false),
           "%s: saved and loaded, the same predictions (%s)", c->name,
           back ? "loaded" : ggmlc_last_error());
    free(again);
    ggmlc_model_free(back);
    unlink(path);
}

static void run_case(const struct gold_set *set, const struct attn_case *c) {
    const struct gold_tensor *g[2] = {gget(set, c->gold, "x0"),
                                      c->n_in == 2 ? gget(set, c->gold, "x1") : NULL},
                             *y = gget(set, c->gold, "y"), *out = gget(set, c->gold, "out"),
                             *w0 = gget(set, c->gold, "w0"), *w1 = gget(set, c->gold, "w1");
    if (!g[0] || (c->n_in == 2 && !g[1]) || !y || !out || !w0 || !w1) {
        tap_ok(false, "%s: golden data present", c->name);
        return;
    }
    struct ggmlc_array x[2];
    for (int i = 0; i < c->n_in; i++) x[i] = gold_array(g[i], c->in_dims[i]);
    const struct ggmlc_array yt = gold_array(y, c->in_dims[0]);
    ggmlc_model *m = build(c, x, c->make());
    if (!m) return;
    const int64_t nw = ggmlc_model_get_weights(m, NULL, 0);
    tap_ok(nw == (int64_t)w0->n, "%s: %lld weights as in PyTorch (%zu)", c->name, (long long)nw,
           w0->n);
    if (nw != (int64_t)w0->n) {
        ggmlc_model_free(m);
        return;
    }
    ggmlc_model_set_weights(m, w0->data, w0->n);
    float *pred = predict(m, x, c->n_in, out->n);
    ok_nmse(pred, out->data, out->n, 1e-9, "%s: output equals PyTorch's", c->name);
    check_round_trip(c, m, x, pred, out->n);
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 1;
    fo.batch_size = x[0].n;
    fo.shuffle = false;
    fo.verbose = 0;
    const enum ggmlc_status st = ggmlc_model_fit_multi(m, x, c->n_in, &yt, 1, &fo, NULL);
    float *w = malloc(sizeof(float) * (size_t)nw), *dw = malloc(sizeof(float) * (size_t)nw),
          *dref = malloc(sizeof(float) * (size_t)nw);
    ggmlc_model_get_weights(m, w, (size_t)nw);
    for (int64_t i = 0; i < nw; i++) {
        dw[i] = w[i] - ((const float *)w0->data)[i];
        dref[i] = ((const float *)w1->data)[i] - ((const float *)w0->data)[i];
    }
    tap_ok(st == GGMLC_OK, "%s: one training step (%s)", c->name,
           st == GGMLC_OK ? "ok" : ggmlc_last_error());
    ok_nmse(w, w1->data, w1->n, 1e-9, "%s: weights after one SGD step equal PyTorch's", c->name);
    ok_nmse(dw, dref, (size_t)nw, 1e-6,
            "%s: the step (gradients of weights and inputs) equals PyTorch's", c->name);
    free(w);
    free(dw);
    free(dref);
    free(pred);
    ggmlc_model_free(m);
}

/* Attention dropout is off when predicting: the output of a layer with dropout 0.5 is PyTorch's. */
static void test_dropout_off(const struct gold_set *set) {
    const struct gold_tensor *x0 = gget(set, "mha", "x0"), *out = gget(set, "mha", "out"),
                             *w0 = gget(set, "mha", "w0");
    if (!x0 || !out || !w0) return;
    const struct attn_case c = {
        "mha dropout 0.5 when predicting", "mha", mk_mha_dropout_half, 1, {2}, {8}};
    struct ggmlc_array x = gold_array(x0, 2);
    ggmlc_model *m = build(&c, &x, c.make());
    if (!m) return;
    ggmlc_model_set_weights(m, w0->data, w0->n);
    float *pred = predict(m, &x, 1, out->n);
    ok_nmse(pred, out->data, out->n, 1e-9, "%s: output equals PyTorch's without dropout", c.name);
    free(pred);
    ggmlc_model_free(m);
}

/* A GPT block in a sequential model: the functional case's results. */
static void test_sequential(const struct gold_set *set) {
    const struct gold_tensor *x0 = gget(set, "dec_gpt", "x0"), *out = gget(set, "dec_gpt", "out"),
                             *w0 = gget(set, "dec_gpt", "w0");
    if (!x0 || !out || !w0) return;
    ggmlc_model *m = ggmlc_sequential((int64_t[]){x0->ne[1], x0->ne[0]}, 2);
    ggmlc_model_add(m, ggmlc_dense(8, GGMLC_ACT_NONE));
    ggmlc_model_add(m, mk_dec());
    ggmlc_model_compile(m, NULL);
    ggmlc_model_set_weights(m, w0->data, w0->n);
    float *pred = calloc(out->n, sizeof(float));
    ggmlc_model_predict(m, x0->data, x0->n, x0->ne[2], 8, pred, out->n);
    ok_nmse(pred, out->data, out->n, 1e-9,
            "a decoder block in a sequential model: PyTorch's output");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ggmlc_model_summary(m, f);
    fclose(f);
    tap_ok(text && strstr(text, "TransformerDecoder") && strstr(text, "(None, 5, 8)"),
           "the summary lists the block and its shape");
    free(text);
    free(pred);
    ggmlc_model_free(m);
}

/* A tiny language model: per-token probabilities, the per-token cross-entropy (PyTorch's
 * CrossEntropyLoss over every position) with one class index per position, and its SGD step. */
static void test_token_loss(const struct gold_set *set) {
    const struct gold_tensor *x = gget(set, "lm", "x0"), *y = gget(set, "lm", "y"), *out = gget(set, "lm", "out");
    const struct gold_tensor *w0 = gget(set, "lm", "w0"), *w1 = gget(set, "lm", "w1"), *loss = gget(set, "lm", "loss");
    if (!x || !y || !out || !w0 || !w1 || !loss) return;
    const int64_t T = x->ne[0], n = x->ne[1], vocab = out->ne[0];
    ggmlc_model *m = ggmlc_sequential((int64_t[]){T}, 1);
    ggmlc_model_add(m, ggmlc_embedding(vocab, 8));
    ggmlc_model_add(m, ggmlc_positional_embedding(T, true));
    ggmlc_model_add(m, mk_dec());
    ggmlc_model_add(m, ggmlc_dense(vocab, GGMLC_ACT_SOFTMAX));
    struct ggmlc_compile_options o = ggmlc_compile_defaults();
    o.optimizer = GGMLC_OPT_SGD;
    o.learning_rate = 0.1f;
    o.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    o.metrics = GGMLC_METRIC_ACCURACY;
    ggmlc_model_compile(m, &o);
    tap_ok(ggmlc_model_set_weights(m, w0->data, w0->n) == GGMLC_OK, "language model: PyTorch's %zu weights set", w0->n);
    float *pred = calloc(out->n, sizeof(float)), *w = calloc(w1->n, sizeof(float));
    ggmlc_model_predict(m, x->data, x->n, n, n, pred, out->n);
    ok_nmse(pred, out->data, out->n, 1e-9, "language model: per-token probabilities equal PyTorch's");
    double l = 0, acc[2] = {0, 0};
    const enum ggmlc_status st = ggmlc_model_train_on_batch(m, x->data, x->n, y->data, y->n, n, &l, acc);
    const double want = ((const float *)loss->data)[0];
    int64_t right = 0; /* tokens whose most probable class is the label, from the predictions */
    for (int64_t i = 0; i < (int64_t)y->n; i++) {
        int64_t best = 0;
        for (int64_t v = 1; v < vocab; v++) best = pred[i * vocab + v] > pred[i * vocab + best] ? v : best;
        right += best == (int64_t)((const float *)y->data)[i];
    }
    tap_ok(st == GGMLC_OK && fabs(l - want) < 1e-5 * want && fabs(acc[0] - (double)right / (double)y->n) < 1e-9,
           "language model: per-token cross-entropy %.6f, PyTorch's %.6f; token accuracy %.3f (%lld of %zu) (%s)", l,
           want, acc[0], (long long)right, y->n, st == GGMLC_OK ? "ok" : ggmlc_last_error());
    ggmlc_model_get_weights(m, w, w1->n);
    ok_nmse(w, w1->data, w1->n, 1e-9, "language model: weights after one SGD step equal PyTorch's");
    REFUSED(ggmlc_model_train_on_batch(m, x->data, x->n, y->data, (size_t)n, n, &l, acc), GGMLC_ERR_SHAPE,
            "one label per sample for a {T, V} output", "takes (5) (class indices)");
    free(pred);
    free(w);
    ggmlc_model_free(m);
}

/* Twenty decoder blocks with dropout (80 dropout masks a step): the training loss, measured with
 * dropout, differs from the test loss of the same batch and weights, which test_on_batch repeats. */
static void test_deep_dropout(void) {
    enum { T = 4, D = 8, N = 4 };
    static float x[N * T * D], y[N * T * D];
    for (int i = 0; i < N * T * D; i++) x[i] = test_uniform(-1, 1), y[i] = test_uniform(-1, 1);
    ggmlc_model *m = ggmlc_sequential((int64_t[]){T, D}, 2);
    struct ggmlc_transformer_options o = ggmlc_transformer_defaults(2, 8);
    o.pre_norm = true;
    o.dropout = 0.3f;
    for (int i = 0; i < 20; i++) ggmlc_model_add(m, ggmlc_transformer_decoder(&o));
    const enum ggmlc_status cst = ggmlc_model_compile(m, NULL);
    double test1 = NAN, test2 = NAN, train = NAN;
    const size_t n = N * T * D;
    const bool ok = cst == GGMLC_OK && ggmlc_model_test_on_batch(m, x, n, y, n, N, &test1, NULL) == GGMLC_OK &&
                    ggmlc_model_test_on_batch(m, x, n, y, n, N, &test2, NULL) == GGMLC_OK &&
                    ggmlc_model_train_on_batch(m, x, n, y, n, N, &train, NULL) == GGMLC_OK;
    tap_ok(ok && test1 == test2 && isfinite(train) && train != test1,
           "20 decoder blocks with dropout: training loss %.5f (dropped), test loss %.5f twice (%s)", train, test1,
           ok ? "ok" : ggmlc_last_error());
    ggmlc_model_free(m);
}

/* Sinusoidal positions (hand-computed) and a learned table, added to zeros. */
static void test_positional(void) {
    enum { T = 4, D = 6 };
    static float zeros[2 * T * D], pred[2 * T * D];
    ggmlc_model *m = ggmlc_sequential((int64_t[]){T, D}, 2);
    ggmlc_model_add(m, ggmlc_positional_embedding(16, false));
    ggmlc_model_add(m, ggmlc_dense(D, GGMLC_ACT_NONE));
    ggmlc_layer_set_initializer(ggmlc_model_layer(m, 1), GGMLC_INIT_ZEROS);
    ggmlc_model_compile(m, NULL);
    float w[D * D + D] = {0};
    for (int i = 0; i < D; i++) w[i * D + i] = 1; /* identity */
    ggmlc_model_set_weights(m, w, D * D + D);
    ggmlc_model_predict(m, zeros, 2 * T * D, 2, 2, pred, 2 * T * D);
    double err = 0;
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < D / 2; i++) {
            const double a = t * pow(10000.0, -2.0 * i / D);
            err = fmax(err, fabs(pred[T * D + t * D + 2 * i] - sin(a)) +
                                fabs(pred[t * D + 2 * i + 1] - cos(a)));
        }
    }
    tap_ok(err < 1e-5, "sinusoidal positions: sin at 2i, cos at 2i+1 (max error %g)", err);
    ggmlc_model_free(m);

    m = ggmlc_sequential((int64_t[]){T, D}, 2);
    ggmlc_model_add(m, ggmlc_positional_embedding(5, true));
    ggmlc_model_compile(m, NULL);
    float table[5 * D];
    for (int i = 0; i < 5 * D; i++) table[i] = (float)i;
    ggmlc_model_set_weights(m, table, 5 * D);
    ggmlc_model_predict(m, zeros, 2 * T * D, 2, 2, pred, 2 * T * D);
    tap_ok(memcmp(pred, table, sizeof(float) * T * D) == 0 &&
               memcmp(pred + T * D, table, sizeof(float) * T * D) == 0,
           "learned positions: the table's first T rows are added");
    ggmlc_model_free(m);
    REFUSED(ggmlc_positional_embedding(0, true) ? GGMLC_OK : ggmlc_last_status(),
            GGMLC_ERR_INVALID_ARG, "max_len 0", "max_len 0");
    m = ggmlc_sequential((int64_t[]){T, D}, 2);
    REFUSED(ggmlc_model_add(m, ggmlc_positional_embedding(3, true)), GGMLC_ERR_SHAPE,
            "4 positions, max_len 3", "exceed max_len 3");
    ggmlc_model_free(m);
}

static void test_bad_input(void) {
    ggmlc_model *m = ggmlc_sequential((int64_t[]){5, 8}, 2);
    struct ggmlc_attention_options o = ggmlc_attention_defaults(3);
    REFUSED(ggmlc_model_add(m, ggmlc_multi_head_attention(&o)), GGMLC_ERR_SHAPE,
            "3 heads on a width of 8",
            "the model width is not a multiple of the head count (width 8, 3 heads");
    ggmlc_model_free(m);
    o = ggmlc_attention_defaults(4);
    o.n_kv_head = 3;
    tap_ok(!ggmlc_multi_head_attention(&o) && ggmlc_last_status() == GGMLC_ERR_INVALID_ARG &&
               strstr(ggmlc_last_error(), "multiple of n_kv_head 3"),
           "4 query heads over 3 key/value heads refused: %s", ggmlc_last_error());
    o.n_kv_head = 0;
    o.dropout = 1.0f;
    tap_ok(!ggmlc_multi_head_attention(&o) &&
               strstr(ggmlc_last_error(), "dropout 1 is not in [0, 1)"),
           "dropout 1 refused: %s", ggmlc_last_error());
    struct ggmlc_transformer_options to = ggmlc_transformer_defaults(2, 0);
    tap_ok(!ggmlc_transformer_encoder(&to) &&
               strstr(ggmlc_last_error(), "ff 0 is not in [1, 2^40]"),
           "MLP width 0 refused: %s", ggmlc_last_error());

    m = ggmlc_functional();
    ggmlc_node *x = ggmlc_input(m, (int64_t[]){5, 8}, 2), *mask = ggmlc_input(m, (int64_t[]){6}, 1);
    ggmlc_node *img = ggmlc_input(m, (int64_t[]){6, 4, 4}, 3),
               *emb = ggmlc_input(m, (int64_t[]){3}, 1);
    tap_ok(!ggmlc_apply2(m, mk_mha(), x, mask) && ggmlc_last_status() == GGMLC_ERR_SHAPE &&
               strstr(ggmlc_last_error(), "{5} padding mask"),
           "a padding mask of 6 for 5 positions: %s", ggmlc_last_error());
    tap_ok(!ggmlc_apply2(m, ggmlc_dense(4, GGMLC_ACT_NONE), x, mask) &&
               strstr(ggmlc_last_error(), "takes one input"),
           "a second input to a Dense layer: %s", ggmlc_last_error());
    tap_ok(!ggmlc_apply(m, ggmlc_unet_res_block(8, 2), img) &&
               strstr(ggmlc_last_error(), "needs a {E} timestep embedding"),
           "a UNet block without its timestep embedding: %s", ggmlc_last_error());
    tap_ok(!ggmlc_apply2(m, ggmlc_unet_res_block(8, 4), img, emb) &&
               ggmlc_last_status() == GGMLC_ERR_SHAPE &&
               strstr(ggmlc_last_error(), "4 groups do not divide 6"),
           "group count not dividing the channels: %s", ggmlc_last_error());
    tap_ok(!ggmlc_apply2(m, ggmlc_spatial_transformer(2, 4, 2), img, emb) &&
               strstr(ggmlc_last_error(), "{S, Dc} context"),
           "a spatial transformer given a vector as context: %s", ggmlc_last_error());
    tap_ok(!ggmlc_apply2(m, mk_mha(), x, NULL) &&
               strstr(ggmlc_last_error(), "second input is NULL"),
           "a NULL second input: %s", ggmlc_last_error());
    ggmlc_model_free(m);
}

/* Training end to end: is the first token of a sequence also its last?  Equality across
 * positions needs attention (the block's MLP sees one position at a time). */
static void test_training(void) {
    enum { T = 6, V = 4, N = 768, D = 16 };
    static float x[N * T], y[N];
    for (int i = 0; i < N; i++) {
        for (int t = 0; t < T; t++)
            x[i * T + t] = (float)(int)test_uniform(0.0f, (float)V - 0.001f);
        if (i % 2) x[i * T + T - 1] = x[i * T]; /* half the samples match */
        y[i] = x[i * T + T - 1] == x[i * T] ? 1.0f : 0.0f;
    }
    ggmlc_model *m = ggmlc_sequential((int64_t[]){T}, 1);
    ggmlc_model_add(m, ggmlc_embedding(V, D));
    ggmlc_model_add(m, ggmlc_positional_embedding(T, true));
    struct ggmlc_transformer_options o = ggmlc_transformer_defaults(2, 32);
    o.pre_norm = true;
    ggmlc_model_add(m, ggmlc_transformer_encoder(&o));
    ggmlc_model_add(m, ggmlc_flatten());
    ggmlc_model_add(m, ggmlc_dense(2, GGMLC_ACT_SOFTMAX));
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    co.metrics = GGMLC_METRIC_ACCURACY;
    co.learning_rate = 3e-3f;
    ggmlc_model_compile(m, &co);
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 12;
    fo.verbose = 0;
    fo.validation_split = 0.25f;
    ggmlc_history *h = NULL;
    const enum ggmlc_status st = ggmlc_model_fit(m, x, N * T, y, N, N, &fo, &h);
    const struct ggmlc_epoch_logs *last =
        h ? ggmlc_history_epoch(h, ggmlc_history_epochs(h) - 1) : NULL;
    tap_ok(st == GGMLC_OK && last && last->val_accuracy >= 0.9,
           "a Transformer encoder learns first == last token: validation "
           "accuracy %.3f, loss %.3f (%s)",
           last ? last->val_accuracy : 0.0, last ? last->val_loss : 0.0,
           st == GGMLC_OK ? "fit ok" : ggmlc_last_error());
    ggmlc_history_free(h);
    ggmlc_model_free(m);
}

/* A saved attention model whose layer settings a file forged: each refused with GGMLC_ERR_FORMAT. */
static const struct forged {
    const char *what;
    int64_t attn[5]; /* heads, kv_heads, ff, flags, groups */
    float attn_f[2]; /* ALiBi max bias, rope base */
} forgeries[] = {
    {"4 heads over 3 key/value heads", {4, 3, 0, 4, 0}, {0, 1e4f}},
    {"0 heads", {0, 0, 0, 4, 0}, {0, 1e4f}},
    {"3 heads on a width of 8", {3, 3, 0, 4, 0}, {0, 1e4f}},
    {"unknown flags", {4, 2, 0, 1 << 20, 0}, {0, 1e4f}},
    {"a NaN ALiBi bias", {4, 2, 0, 4, 0}, {NAN, 1e4f}},
    {"rope base 0", {4, 2, 0, 4, 0}, {0, 0}},
};

static bool write_forged(const char *src, const char *dst, const struct forged *f) {
    struct ggml_context *data = NULL;
    struct gguf_context *in = gguf_init_from_file(src, (struct gguf_init_params){false, &data});
    if (!in) return false;
    struct gguf_context *out = gguf_init_empty();
    gguf_set_kv(out, in);
    if (f) {
        gguf_set_arr_data(out, "ggmlc.layer.0.attn", GGUF_TYPE_INT64, f->attn, 5);
        gguf_set_arr_data(out, "ggmlc.layer.0.attn_f", GGUF_TYPE_FLOAT32, f->attn_f, 2);
    }
    for (int64_t i = 0; i < gguf_get_n_tensors(in); i++)
        gguf_add_tensor(out, ggml_get_tensor(data, gguf_get_tensor_name(in, i)));
    const bool ok = gguf_write_to_file(out, dst, false);
    gguf_free(out);
    gguf_free(in);
    ggml_free(data);
    return ok;
}

static void test_forged_files(void) {
    ggmlc_model *m = ggmlc_sequential((int64_t[]){5, 8}, 2);
    struct ggmlc_attention_options o = ggmlc_attention_defaults(4);
    o.n_kv_head = 2;
    ggmlc_model_add(m, ggmlc_multi_head_attention(&o));
    ggmlc_model_compile(m, NULL);
    char path[] = "/tmp/ggmlc-test-attn-XXXXXX", forged[sizeof path + 8];
    close(mkstemp(path));
    snprintf(forged, sizeof forged, "%s.forged", path);
    ggmlc_model *same = ggmlc_model_save(m, path, false) == GGMLC_OK && write_forged(path, forged, NULL)
                            ? ggmlc_model_load(forged, NULL)
                            : NULL;
    tap_ok(same != NULL, "an attention model file copied unchanged loads (%s)",
           same ? "ok" : ggmlc_last_error());
    ggmlc_model_free(same);
    for (size_t i = 0; i < sizeof forgeries / sizeof forgeries[0]; i++) {
        ggmlc_model *r = write_forged(path, forged, &forgeries[i]) ? ggmlc_model_load(forged, NULL) : NULL;
        tap_ok(!r && ggmlc_last_status() == GGMLC_ERR_FORMAT, "a file with %s: GGMLC_ERR_FORMAT: %s",
               forgeries[i].what, ggmlc_last_error());
        ggmlc_model_free(r);
    }
    unlink(forged);
    unlink(path);
    ggmlc_model_free(m);
}

int main(void) {
    struct gold_set *set = gold_load("nn_attn_layers.gold");
    for (size_t i = 0; set && i < sizeof cases / sizeof cases[0]; i++) run_case(set, &cases[i]);
    if (set) {
        test_dropout_off(set);
        test_sequential(set);
        test_token_loss(set);
    }
    gold_free(set);
    test_positional();
    test_bad_input();
    test_forged_files();
    test_deep_dropout();
    test_seed(22);
    if (!getenv("GGMLC_NN_ATTN_NO_TRAINING"))
        test_training(); /* minutes on lavapipe: the Vulkan rerun leaves it out */
    return tap_done();
}
