/*
 * test-nn-multi.c - functional models of several inputs and outputs: a
 * dense layer shared by two inputs, a concatenation, two heads (MSE and
 * cross-entropy, loss weights).  Outputs, losses, metrics and SGD steps
 * against torch.nn (tests/golden/gen_nn_multi.py); a training run whose
 * total loss falls below a bound; save/load; hostile model files; the
 * errors for wrong numbers or shapes of arrays.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggmlc-nn.h"
#include "gguf.h"
#include "testutil.h"

enum { IN = 5, REG = 3, CLS = 4 };

/* Two inputs {5} through one shared Dense(6, tanh), concatenated, a Dense(7, relu) trunk, two heads. */
static ggmlc_model *two_headed(enum ggmlc_optimizer optimizer, float lr) {
    ggmlc_model *m = ggmlc_functional();
    ggmlc_node *a = ggmlc_input(m, (int64_t[]){IN}, 1), *b = ggmlc_input(m, (int64_t[]){IN}, 1);
    ggmlc_layer *shared = ggmlc_dense(6, GGMLC_ACT_TANH);
    ggmlc_node *ha = ggmlc_apply(m, shared, a), *hb = ggmlc_apply(m, shared, b); /* in this order: nodes are numbered */
    ggmlc_node *h = ggmlc_concatenate(m, ha, hb, 0);
    h = ggmlc_apply(m, ggmlc_dense(7, GGMLC_ACT_RELU), h);
    ggmlc_layer *reg = ggmlc_dense(REG, GGMLC_ACT_NONE), *cls = ggmlc_dense(CLS, GGMLC_ACT_SOFTMAX);
    ggmlc_layer_set_name(reg, "reg");
    ggmlc_layer_set_name(cls, "cls");
    ggmlc_node *outputs[2] = {ggmlc_apply(m, reg, h), ggmlc_apply(m, cls, h)};
    if (ggmlc_model_set_outputs(m, outputs, 2) != GGMLC_OK) {
        tap_diag("set_outputs: %s", ggmlc_last_error());
        ggmlc_model_free(m);
        return NULL;
    }
    struct ggmlc_compile_options o = ggmlc_compile_defaults();
    o.optimizer = optimizer;
    o.learning_rate = lr;
    o.losses = (enum ggmlc_loss[]){GGMLC_LOSS_MSE, GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY};
    o.loss_weights = (float[]){2.0f, 0.5f};
    o.output_metrics = (unsigned[]){GGMLC_METRIC_MAE, GGMLC_METRIC_ACCURACY};
    if (ggmlc_model_compile(m, &o) != GGMLC_OK) {
        tap_diag("compile: %s", ggmlc_last_error());
        ggmlc_model_free(m);
        return NULL;
    }
    return m;
}

static struct ggmlc_array vec(const float *data, int64_t n, int64_t size) {
    return (struct ggmlc_array){data, n, {size}, 1, (size_t)(n * size)};
}
static struct ggmlc_array labels(const float *data, int64_t n) { return (struct ggmlc_array){data, n, {1}, 1, (size_t)n}; }

static struct ggmlc_fit_options one_epoch(int64_t batch) {
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 1;
    fo.batch_size = batch;
    fo.shuffle = false;
    fo.verbose = 0;
    return fo;
}

static bool close_to(double a, double b, double tol) { return fabs(a - b) <= tol * (1 + fabs(b)); }

/* ------------------------------------------------------------ golden */

static void test_golden(const struct gold_set *set) {
    const struct gold_tensor *xa = gold_get(set, "x_a"), *xb = gold_get(set, "x_b"), *yr = gold_get(set, "y_reg"), *yc = gold_get(set, "y_cls");
    const struct gold_tensor *w0 = gold_get(set, "w0"), *w1 = gold_get(set, "w1"), *we = gold_get(set, "w_epoch");
    const struct gold_tensor *out_reg = gold_get(set, "out_reg"), *out_cls = gold_get(set, "out_cls");
    const struct gold_tensor *gl = gold_get(set, "losses"), *gm = gold_get(set, "metrics");
    ggmlc_model *m = two_headed(GGMLC_OPT_SGD, 0.1f);
    if (!tap_ok(m && xa && xb && yr && yc && w0 && w1 && we && out_reg && out_cls && gl && gm, "model built, golden data present")) {
        ggmlc_model_free(m);
        return;
    }
    const float *losses = gl->data, *metrics = gm->data; /* {total, MSE, cross-entropy}, {accuracy, MAE} */
    const int64_t n = xa->ne[1], nw = ggmlc_model_get_weights(m, NULL, 0);
    tap_ok(nw == (int64_t)w0->n, "%lld weights as in PyTorch: the shared layer has one weight set", (long long)nw);
    tap_ok(ggmlc_model_input_count(m) == 2 && ggmlc_model_output_count(m) == 2, "2 inputs, 2 outputs");
    int64_t shape[4];
    tap_ok(ggmlc_model_output_shape_at(m, 1, shape) == 1 && shape[0] == CLS && ggmlc_model_input_shape(m, 1, shape) == 1 && shape[0] == IN &&
               ggmlc_model_output_shape_at(m, 2, shape) == 0,
           "input and output shapes by index");
    ggmlc_model_set_weights(m, w0->data, w0->n);
    const struct ggmlc_array x[2] = {vec(xa->data, n, IN), vec(xb->data, n, IN)}, y[2] = {vec(yr->data, n, REG), labels(yc->data, n)};
    float *pr = malloc(sizeof(float) * (size_t)(n * REG)), *pc = malloc(sizeof(float) * (size_t)(n * CLS));
    for (int64_t batch = n; batch >= 3; batch -= n - 3) { /* whole batch, then 3 + 3 + 1 */
        memset(pr, 0, sizeof(float) * (size_t)(n * REG));
        memset(pc, 0, sizeof(float) * (size_t)(n * CLS));
        tap_ok(ggmlc_model_predict_multi(m, x, 2, batch, (float *[]){pr, pc}, (size_t[]){n * REG, n * CLS}, 2) == GGMLC_OK, "predict_multi, batch %lld", (long long)batch);
        ok_nmse(pr, out_reg->data, out_reg->n, 1e-10, "batch %lld: regression output equals torch.nn", (long long)batch);
        ok_nmse(pc, out_cls->data, out_cls->n, 1e-10, "batch %lld: classifier output (softmax) equals torch.nn", (long long)batch);
    }
    double loss = NAN, head_loss[2] = {NAN, NAN}, head_metrics[4] = {0};
    tap_ok(ggmlc_model_evaluate_multi(m, x, 2, y, 2, 3, &loss, head_loss, head_metrics) == GGMLC_OK, "evaluate_multi in batches of 3");
    tap_ok(close_to(loss, losses[0], 1e-5) && close_to(head_loss[0], losses[1], 1e-5) && close_to(head_loss[1], losses[2], 1e-5),
           "losses: total %.6f (torch %.6f) = 2 x MSE %.6f (%.6f) + 0.5 x cross-entropy %.6f (%.6f)", loss, losses[0], head_loss[0],
           losses[1], head_loss[1], losses[2]);
    tap_ok(isnan(head_metrics[0]) && close_to(head_metrics[1], metrics[1], 1e-5) && close_to(head_metrics[2], metrics[0], 1e-6) &&
               isnan(head_metrics[3]),
           "per-output metrics: regression MAE %.5f (torch %.5f), classifier accuracy %.4f (torch %.4f)", head_metrics[1], metrics[1],
           head_metrics[2], metrics[0]);

    float *w = malloc(sizeof(float) * (size_t)nw);
    struct ggmlc_fit_options fo = one_epoch(n);
    ggmlc_history *h = NULL;
    tap_ok(ggmlc_model_fit_multi(m, x, 2, y, 2, &fo, &h) == GGMLC_OK, "fit_multi: one SGD step on the whole batch");
    ggmlc_model_get_weights(m, w, (size_t)nw);
    ok_nmse(w, w1->data, w1->n, 1e-10, "every parameter after one SGD step on the weighted loss equals PyTorch's (shared layer included)");
    const struct ggmlc_epoch_logs *e = ggmlc_history_epoch(h, 0);
    tap_ok(e && e->n_outputs == 2 && close_to(e->loss, losses[0], 1e-5) && close_to(e->output_loss[0], losses[1], 1e-5) &&
               close_to(e->output_loss[1], losses[2], 1e-5) && close_to(e->output_accuracy[1], metrics[0], 1e-6) &&
               close_to(e->output_mae[0], metrics[1], 1e-5) && isnan(e->output_accuracy[0]) && isnan(e->val_output_loss[0]),
           "history: total and per-output losses and metrics of the step");
    ggmlc_history_free(h);

    ggmlc_model_set_weights(m, w0->data, w0->n);
    fo = one_epoch(3);
    tap_ok(ggmlc_model_fit_multi(m, x, 2, y, 2, &fo, NULL) == GGMLC_OK, "fit_multi: an epoch of batches 3 + 3 + 1");
    ggmlc_model_get_weights(m, w, (size_t)nw);
    ok_nmse(w, we->data, we->n, 1e-10, "weights after the epoch equal PyTorch's three steps (the smaller last batch too)");
    free(w);
    free(pr);
    free(pc);
    ggmlc_model_free(m);
}

/* ---------------------------------------------------------- training */

enum { N = 600 };

/* Targets that depend on both inputs of a sample: pairing a with another sample's b loses them. */
static void make_data(float *a, float *b, float *yr, float *yc, int n) {
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < IN; k++) {
            a[i * IN + k] = test_normal();
            b[i * IN + k] = test_normal();
        }
        const float *ai = a + i * IN, *bi = b + i * IN;
        yr[i * REG + 0] = 0.5f * (ai[0] + bi[0]);
        yr[i * REG + 1] = ai[1] - bi[2];
        yr[i * REG + 2] = 0.3f * (ai[3] - ai[4] + bi[3]);
        yc[i] = (float)((ai[2] > bi[2]) + 2 * (ai[1] + bi[1] > 0));
    }
}

/* One epoch with verbose 2 (a line per epoch): the total and every output's loss and metrics, train and validation. */
static void check_progress_line(ggmlc_model *m, const struct ggmlc_array *x, const struct ggmlc_array *y) {
    struct ggmlc_fit_options fo = one_epoch(64);
    fo.verbose = 2;
    fo.validation_split = 0.5f;
    FILE *capture = tmpfile();
    fflush(stdout);
    const int saved = dup(fileno(stdout));
    dup2(fileno(capture), fileno(stdout));
    ggmlc_model_fit_multi(m, x, 2, y, 2, &fo, NULL);
    fflush(stdout);
    dup2(saved, fileno(stdout));
    close(saved);
    char line[1024] = {0};
    rewind(capture);
    fread(line, 1, sizeof line - 1, capture);
    fclose(capture);
    const char *keys[] = {"Epoch 1/1", " - loss: ", " - reg_loss: ", " - reg_mae: ", " - cls_loss: ", " - cls_accuracy: ", " - val_loss: ",
                          " - val_reg_mae: ", " - val_cls_accuracy: "};
    bool all = true;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) all &= strstr(line, keys[i]) != NULL;
    tap_ok(all && !strstr(line, "reg_accuracy"), "the epoch line names every output's loss and metrics: %.*s", (int)strcspn(line, "\n"), line);
}

/* Early stopping that never sees an improvement after the first epoch stops after patience (1) more,
 * when it knows the per-output name; an unknown name is never measured, so training runs on. */
static void check_output_monitor(ggmlc_model *m, const struct ggmlc_array *x, const struct ggmlc_array *y) {
    const char *monitors[] = {"val_cls_loss", "val_reg_mae", "cls_accuracy", "val_nothing_loss"};
    const int want[] = {2, 2, 2, 4};
    for (int i = 0; i < 4; i++) {
        struct ggmlc_callback stop = ggmlc_early_stopping(monitors[i], 1e9, 1, false);
        struct ggmlc_fit_options fo = one_epoch(100);
        fo.epochs = 4;
        fo.validation_split = 0.2f;
        fo.callbacks = &stop;
        fo.n_callbacks = 1;
        ggmlc_history *h = NULL;
        ggmlc_model_fit_multi(m, x, 2, y, 2, &fo, &h);
        tap_ok(ggmlc_history_epochs(h) == want[i], "early stopping on '%s': %d epochs (want %d)", monitors[i], ggmlc_history_epochs(h), want[i]);
        ggmlc_history_free(h);
        ggmlc_callback_free(&stop);
    }
}

static void test_training(void) {
    static float a[N * IN], b[N * IN], yr[N * REG], yc[N];
    make_data(a, b, yr, yc, N);
    ggmlc_model *m = two_headed(GGMLC_OPT_ADAMW, 0.01f);
    if (!tap_ok(m != NULL, "a model to train")) return;
    const struct ggmlc_array x[2] = {vec(a, N, IN), vec(b, N, IN)}, y[2] = {vec(yr, N, REG), labels(yc, N)};
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 40;
    fo.batch_size = 50; /* 480 training samples = 9 x 50 + 30; 120 validation samples = 2 x 50 + 20 */
    fo.validation_split = 0.2f;
    fo.verbose = 0;
    ggmlc_history *h = NULL;
    tap_ok(ggmlc_model_fit_multi(m, x, 2, y, 2, &fo, &h) == GGMLC_OK, "fit_multi: 40 epochs, batches of 50, validation split 0.2");
    const int epochs = ggmlc_history_epochs(h);
    const struct ggmlc_epoch_logs *first = ggmlc_history_epoch(h, 0), *last = ggmlc_history_epoch(h, epochs - 1);
    if (!tap_ok(epochs == 40 && first && last, "history of 40 epochs")) {
        ggmlc_history_free(h);
        ggmlc_model_free(m);
        return;
    }
    tap_ok(last->loss < 0.25 * first->loss && last->val_loss < 0.35, "total loss fell from %.3f to %.3f (validation %.3f < 0.35)", first->loss,
           last->loss, last->val_loss);
    bool weighted = true;
    for (int e = 0; e < epochs; e++) {
        const struct ggmlc_epoch_logs *l = ggmlc_history_epoch(h, e);
        weighted &= close_to(l->loss, 2 * l->output_loss[0] + 0.5 * l->output_loss[1], 1e-4) &&
                    close_to(l->val_loss, 2 * l->val_output_loss[0] + 0.5 * l->val_output_loss[1], 1e-4);
    }
    tap_ok(weighted, "every epoch's total loss is 2 x regression + 0.5 x classification loss (train and validation)");
    tap_ok(last->val_output_accuracy[1] > 0.85 && last->val_accuracy == last->val_output_accuracy[1],
           "validation accuracy %.3f > 0.85 on classes that need each sample's two inputs together", last->val_output_accuracy[1]);
    ggmlc_history_free(h);

    check_progress_line(m, x, y);
    check_output_monitor(m, x, y);

    /* save and reload: identical predictions and the per-output losses and weights */
    char path[] = "/tmp/ggmlc-test-nn-multi-XXXXXX";
    close(mkstemp(path));
    tap_ok(ggmlc_model_save(m, path, true) == GGMLC_OK, "save the two-input, two-output model");
    ggmlc_model *r = ggmlc_model_load(path, NULL);
    tap_ok(r && ggmlc_model_input_count(r) == 2 && ggmlc_model_output_count(r) == 2, "load it back: 2 inputs, 2 outputs (%s)",
           r ? "ok" : ggmlc_last_error());
    if (r) {
        static float p1[2][N * CLS], p2[2][N * CLS];
        ggmlc_model_predict_multi(m, x, 2, 64, (float *[]){p1[0], p1[1]}, (size_t[]){N * REG, N * CLS}, 2);
        ggmlc_model_predict_multi(r, x, 2, 64, (float *[]){p2[0], p2[1]}, (size_t[]){N * REG, N * CLS}, 2);
        tap_ok(max_abs_diff(p1[0], p2[0], N * REG) == 0 && max_abs_diff(p1[1], p2[1], N * CLS) == 0,
               "both outputs after reload equal those before");
        double l1, l2, h1[2], h2[2];
        ggmlc_model_evaluate_multi(m, x, 2, y, 2, 100, &l1, h1, NULL);
        ggmlc_model_evaluate_multi(r, x, 2, y, 2, 100, &l2, h2, NULL);
        tap_ok(l1 == l2 && h1[0] == h2[0] && h1[1] == h2[1], "reloaded: same losses and loss weights (total %.4f)", l2);
        FILE *out = tmpfile();
        ggmlc_model_summary(r, out);
        char text[4096] = {0};
        rewind(out);
        fread(text, 1, sizeof text - 1, out);
        fclose(out);
        tap_ok(strstr(text, "input_2 (InputLayer)") && strstr(text, "Connected to") && strstr(text, "Dense_1[0], Dense_1[1]") &&
                   strstr(text, "Total params: 183") && strstr(text, "Outputs: reg, cls"),
               "summary: both inputs, the shared layer's two applications, their concatenation, 183 parameters, the outputs");
        ggmlc_model_free(r);
    }
    unlink(path);
    ggmlc_model_free(m);
}

/* ------------------------------------------ one input through the multi API */

static ggmlc_model *small_classifier(void) {
    ggmlc_model *m = ggmlc_sequential((int64_t[]){2}, 1);
    ggmlc_model_add(m, ggmlc_dense(8, GGMLC_ACT_RELU));
    ggmlc_model_add(m, ggmlc_dropout(0.2f));
    ggmlc_model_add(m, ggmlc_dense(3, GGMLC_ACT_SOFTMAX));
    struct ggmlc_compile_options o = ggmlc_compile_defaults();
    o.learning_rate = 0.01f;
    o.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    o.metrics = GGMLC_METRIC_ACCURACY;
    return ggmlc_model_compile(m, &o) == GGMLC_OK ? m : NULL;
}

/* fit_multi on a dataset's arrays trains a one-input model exactly as fit does (same shuffles, split, dropout). */
static void test_single_equivalence(void) {
    enum { NS = 203 };
    static float x[2 * NS], y[NS];
    for (int i = 0; i < NS; i++) {
        x[2 * i] = test_normal() + (float)(i % 3);
        x[2 * i + 1] = test_normal() - (float)(i % 3 == 1);
        y[i] = (float)(i % 3);
    }
    const struct ggmlc_dataset d = {.x = x, .y = y, .n = NS, .shape = {2}, .n_dims = 1, .n_classes = 3, .value_max = 1};
    ggmlc_model *m1 = small_classifier(), *m2 = small_classifier();
    if (!tap_ok(m1 && m2, "two identical classifiers")) {
        ggmlc_model_free(m1);
        ggmlc_model_free(m2);
        return;
    }
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 3;
    fo.batch_size = 16;
    fo.validation_split = 0.3f;
    fo.verbose = 0;
    ggmlc_history *h1 = NULL, *h2 = NULL;
    const struct ggmlc_array features = ggmlc_dataset_features(&d), labels_ = ggmlc_dataset_labels(&d);
    tap_ok(ggmlc_model_fit(m1, x, 2 * NS, y, NS, NS, &fo, &h1) == GGMLC_OK && ggmlc_model_fit_multi(m2, &features, 1, &labels_, 1, &fo, &h2) == GGMLC_OK,
           "fit and fit_multi on the same data");
    const int64_t nw = ggmlc_model_get_weights(m1, NULL, 0);
    float *w1 = malloc(sizeof(float) * (size_t)nw), *w2 = malloc(sizeof(float) * (size_t)nw);
    ggmlc_model_get_weights(m1, w1, (size_t)nw);
    ggmlc_model_get_weights(m2, w2, (size_t)nw);
    const struct ggmlc_epoch_logs *e1 = ggmlc_history_epoch(h1, 2), *e2 = ggmlc_history_epoch(h2, 2);
    tap_ok(max_abs_diff(w1, w2, (size_t)nw) == 0 && e1 && e2 && e1->val_loss == e2->val_loss && e1->val_accuracy == e2->val_accuracy &&
               e1->n_outputs == 1 && e1->output_loss[0] == e1->loss && e1->output_accuracy[0] == e1->metric_accuracy,
           "identical weights and history (validation loss %.5f; per-output entry 0 = the totals)", e1 ? e1->val_loss : NAN);
    free(w1);
    free(w2);
    ggmlc_history_free(h1);
    ggmlc_history_free(h2);
    ggmlc_model_free(m1);
    ggmlc_model_free(m2);
}

/* Token ids (an embedding reads them as integers) beside float features; one binary output. */
static void test_ids_and_features(void) {
    enum { NT = 240, T = 4, VOCAB = 9 };
    static float ids[NT * T], feats[NT * 2], target[NT];
    for (int i = 0; i < NT; i++) {
        int sevens = 0;
        for (int t = 0; t < T; t++) sevens += (ids[i * T + t] = (float)((i * 7 + t * 5 + i / 3) % VOCAB)) == 7;
        feats[2 * i] = test_normal();
        feats[2 * i + 1] = test_normal();
        target[i] = (float)(sevens > 0) * (feats[2 * i] > 0 ? 1.0f : 0.0f); /* needs both inputs */
    }
    ggmlc_model *m = ggmlc_functional();
    ggmlc_node *tok = ggmlc_input(m, (int64_t[]){T}, 1), *num = ggmlc_input(m, (int64_t[]){2}, 1);
    ggmlc_node *e = ggmlc_apply(m, ggmlc_flatten(), ggmlc_apply(m, ggmlc_embedding(VOCAB, 3), tok));
    ggmlc_node *h = ggmlc_concatenate(m, e, ggmlc_apply(m, ggmlc_dense(4, GGMLC_ACT_TANH), num), 0);
    ggmlc_node *out = ggmlc_apply(m, ggmlc_dense(1, GGMLC_ACT_SIGMOID), ggmlc_apply(m, ggmlc_dense(16, GGMLC_ACT_RELU), h));
    struct ggmlc_compile_options o = ggmlc_compile_defaults();
    o.learning_rate = 0.03f;
    o.loss = GGMLC_LOSS_BINARY_CROSSENTROPY;
    o.metrics = GGMLC_METRIC_ACCURACY;
    if (!tap_ok(ggmlc_model_set_outputs(m, &out, 1) == GGMLC_OK && ggmlc_model_compile(m, &o) == GGMLC_OK, "a model of token ids and features")) {
        ggmlc_model_free(m);
        return;
    }
    const struct ggmlc_array x[2] = {vec(ids, NT, T), vec(feats, NT, 2)}, y = vec(target, NT, 1);
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 60;
    fo.verbose = 0;
    ggmlc_history *h_ = NULL;
    ggmlc_model_fit_multi(m, x, 2, &y, 1, &fo, &h_);
    const struct ggmlc_epoch_logs *last = ggmlc_history_epoch(h_, ggmlc_history_epochs(h_) - 1);
    tap_ok(last && last->metric_accuracy > 0.9, "trained on token ids and features together: accuracy %.3f > 0.9", last ? last->metric_accuracy : NAN);
    ggmlc_history_free(h_);
    float p1[NT], p2[NT];
    char path[] = "/tmp/ggmlc-test-nn-multi-XXXXXX";
    close(mkstemp(path));
    ggmlc_model *r = ggmlc_model_save(m, path, false) == GGMLC_OK ? ggmlc_model_load(path, NULL) : NULL;
    tap_ok(r && ggmlc_model_predict_multi(m, x, 2, 50, (float *[]){p1}, (size_t[]){NT}, 1) == GGMLC_OK &&
               ggmlc_model_predict_multi(r, x, 2, 50, (float *[]){p2}, (size_t[]){NT}, 1) == GGMLC_OK && max_abs_diff(p1, p2, NT) == 0,
           "reloaded: the ids input is still read as integers, same predictions");
    unlink(path);
    ggmlc_model_free(r);
    ids[5] = VOCAB; /* sample 1 */
    tap_ok(ggmlc_model_predict_multi(m, x, 2, 50, (float *[]){p1}, (size_t[]){NT}, 1) == GGMLC_ERR_INVALID_ARG &&
               strstr(ggmlc_last_error(), "input 0: token id 9 of sample 1 is not an index below the vocabulary size 9"),
           "a token id outside the vocabulary: %s", ggmlc_last_error());
    ids[5] = -1;
    tap_ok(ggmlc_model_fit_multi(m, x, 2, &y, 1, &fo, NULL) == GGMLC_ERR_INVALID_ARG, "a negative token id: %s", ggmlc_last_error());
    ggmlc_model_free(m);
}

/* -------------------------------------------------- hostile model files */

enum edit { OUT_OF_RANGE, TOO_MANY_OUTPUTS, DUPLICATE_OUTPUT, INPUT_AS_OUTPUT, BAD_LINK, NEGATIVE_LINK, FEW_LOSSES, BAD_LOSS, NAN_WEIGHT,
            SEQUENTIAL, NO_INPUT_SHAPE, WRONG_INPUT_SHAPE, FUTURE_FORMAT, HUGE_HALVES, HUGE_UNITS, HUGE_INPUT, DECLARED_GIGABYTES, N_EDITS };
static const char *const edit_names[] = {"an output index past the nodes", "9 outputs", "the same output twice", "an input as output",
                                         "a node linked to a later node", "a layer node without input", "one loss for two outputs",
                                         "loss number 9", "a NaN loss weight", "a sequential model of two inputs",
                                         "an input shape of 0 dimensions", "a second input the shared layer cannot take",
                                         "format version 3", "a concatenation of two halves of 2^40", "7e18 units",
                                         "an input of 2^62 x 2^62", "layers declaring 20 GB of weights the file lacks"};

/* One edit of the two-headed model's metadata. */
static void edit_graph(struct gguf_context *out, const struct gguf_context *in, int e) {
    const int32_t n_nodes = gguf_get_val_i32(in, gguf_find_key(in, "ggmlc.model.n_nodes"));
    switch ((enum edit)e) {
    case OUT_OF_RANGE: gguf_set_arr_data(out, "ggmlc.model.outputs", GGUF_TYPE_INT32, (int32_t[]){n_nodes - 1, n_nodes}, 2); break;
    case TOO_MANY_OUTPUTS: gguf_set_arr_data(out, "ggmlc.model.outputs", GGUF_TYPE_INT32, (int32_t[9]){0}, 9); break;
    case DUPLICATE_OUTPUT: gguf_set_arr_data(out, "ggmlc.model.outputs", GGUF_TYPE_INT32, (int32_t[]){n_nodes - 1, n_nodes - 1}, 2); break;
    case INPUT_AS_OUTPUT: gguf_set_arr_data(out, "ggmlc.model.outputs", GGUF_TYPE_INT32, (int32_t[]){n_nodes - 1, 0}, 2); break;
    case BAD_LINK: gguf_set_arr_data(out, "ggmlc.node.3.links", GGUF_TYPE_INT32, (int32_t[]){1, 0, 200, -1, 0}, 5); break;
    case NEGATIVE_LINK: gguf_set_arr_data(out, "ggmlc.node.3.links", GGUF_TYPE_INT32, (int32_t[]){1, 0, -7, -1, 0}, 5); break;
    case FEW_LOSSES: gguf_set_arr_data(out, "ggmlc.compile.losses", GGUF_TYPE_INT32, (int32_t[]){0}, 1); break;
    case BAD_LOSS: gguf_set_arr_data(out, "ggmlc.compile.losses", GGUF_TYPE_INT32, (int32_t[]){0, 9}, 2); break;
    case SEQUENTIAL:
        gguf_set_val_bool(out, "ggmlc.model.sequential", true);
        gguf_set_arr_data(out, "ggmlc.model.outputs", GGUF_TYPE_INT32, (int32_t[]){n_nodes - 1}, 1);
        break;
    case NAN_WEIGHT: gguf_set_arr_data(out, "ggmlc.compile.loss_weights", GGUF_TYPE_FLOAT32, (float[]){1.0f, NAN}, 2); break;
    case NO_INPUT_SHAPE: gguf_set_arr_data(out, "ggmlc.node.1.shape", GGUF_TYPE_INT64, (int64_t[]){0}, 0); break;
    case WRONG_INPUT_SHAPE: gguf_set_arr_data(out, "ggmlc.node.1.shape", GGUF_TYPE_INT64, (int64_t[]){4}, 1); break;
    case FUTURE_FORMAT: gguf_set_val_u32(out, "ggmlc.format_version", 3); break;
    case HUGE_HALVES: gguf_set_val_i64(out, "ggmlc.layer.0.units", (int64_t)1 << 40); break; /* each half allowed, the sum not */
    case HUGE_UNITS: gguf_set_val_i64(out, "ggmlc.layer.0.units", 7000000000000000000); break; /* twice overflows int64 */
    case DECLARED_GIGABYTES: gguf_set_val_i64(out, "ggmlc.layer.0.units", (int64_t)1 << 28); break; /* refused before compiling */
    case HUGE_INPUT: gguf_set_arr_data(out, "ggmlc.node.0.shape", GGUF_TYPE_INT64, (int64_t[]){(int64_t)1 << 62, (int64_t)1 << 62}, 2); break;
    case N_EDITS: break;
    }
}

/* Copy src to dst, its metadata changed by edit(out, in, e) (tensors unchanged). */
static bool write_edited(const char *src, const char *dst, void (*edit)(struct gguf_context *, const struct gguf_context *, int), int e) {
    struct ggml_context *data = NULL;
    struct gguf_context *in = gguf_init_from_file(src, (struct gguf_init_params){.no_alloc = false, .ctx = &data});
    if (!in) return false;
    struct gguf_context *out = gguf_init_empty();
    gguf_set_kv(out, in);
    edit(out, in, e);
    for (int64_t i = 0; i < gguf_get_n_tensors(in); i++) gguf_add_tensor(out, ggml_get_tensor(data, gguf_get_tensor_name(in, i)));
    const bool ok = gguf_write_to_file(out, dst, false);
    gguf_free(out);
    gguf_free(in);
    ggml_free(data);
    return ok;
}

/* Save m, then load it back after each of n edits: the unedited copy loads, every edit is refused with
 * GGMLC_ERR_FORMAT and one message. */
static void check_edits(ggmlc_model *m, const char *what, void (*edit)(struct gguf_context *, const struct gguf_context *, int),
                        const char *const *names, int n) {
    char path[] = "/tmp/ggmlc-test-nn-multi-XXXXXX", edited[sizeof path + 8];
    close(mkstemp(path));
    snprintf(edited, sizeof edited, "%s.edit", path);
    if (tap_ok(m && ggmlc_model_save(m, path, false) == GGMLC_OK, "%s: a model file to damage", what)) {
        ggmlc_model *same = write_edited(path, edited, edit, n) ? ggmlc_model_load(edited, NULL) : NULL;
        tap_ok(same != NULL, "%s: the file copied without an edit loads (%s)", what, same ? "ok" : ggmlc_last_error());
        ggmlc_model_free(same);
        for (int e = 0; e < n; e++) {
            ggmlc_model *r = write_edited(path, edited, edit, e) ? ggmlc_model_load(edited, NULL) : NULL;
            tap_ok(r == NULL && ggmlc_last_status() == GGMLC_ERR_FORMAT, "%s: rejected with GGMLC_ERR_FORMAT: %s", names[e], ggmlc_last_error());
            ggmlc_model_free(r);
        }
    }
    unlink(edited);
    unlink(path);
}

enum window_edit { STRIDE_0, POOL_STRIDE_0, KERNEL_0, HUGE_KERNEL, HUGE_PADDING, WIDE_DILATION, HUGE_FILTERS, NEGATIVE_FILTERS,
                   N_WINDOW_EDITS };
static const char *const window_edit_names[] = {"a convolution of stride 0", "a pooling of stride 0", "a kernel of 0",
                                                "a kernel of 40000", "a padding of 2^31 - 1", "a dilation too wide for the input",
                                                "2^39 filters (a kernel of 9 * 2^40 elements)", "-3 filters"};

/* One edit of the convolution's (layer 0) or the pooling's (layer 1) settings. */
static void edit_windows(struct gguf_context *out, const struct gguf_context *in, int e) {
    (void)in;
    switch ((enum window_edit)e) {
    case STRIDE_0: gguf_set_val_i32(out, "ggmlc.layer.0.stride", 0); break;
    case POOL_STRIDE_0: gguf_set_val_i32(out, "ggmlc.layer.1.stride", 0); break;
    case KERNEL_0: gguf_set_arr_data(out, "ggmlc.layer.0.kernel", GGUF_TYPE_INT32, (int32_t[]){0, 3}, 2); break;
    case HUGE_KERNEL: gguf_set_arr_data(out, "ggmlc.layer.0.kernel", GGUF_TYPE_INT32, (int32_t[]){40000, 40000}, 2); break;
    case HUGE_PADDING: gguf_set_val_i32(out, "ggmlc.layer.0.padding", 2147483647); break;
    case WIDE_DILATION: gguf_set_val_i32(out, "ggmlc.layer.0.dilation", 30000); break;
    case HUGE_FILTERS: gguf_set_val_i64(out, "ggmlc.layer.0.units", (int64_t)1 << 39); break;
    case NEGATIVE_FILTERS: gguf_set_val_i64(out, "ggmlc.layer.0.units", -3); break;
    case N_WINDOW_EDITS: break;
    }
}

enum settings_edit { NAN_BETA1, BETA2_1, EPS_0, INF_EPS, INF_DECAY, NAN_DECAY, NEGATIVE_DECAY, NAN_RATE, MOMENTUM_1, OPTIMIZER_2,
                     LOSS_7, METRICS_8, ACTIVATION_42, ACTIVATION_NEGATIVE, DROPOUT_1, NAN_BN_MOMENTUM, BN_EPS_0, INF_SLOPE, POOL_5,
                     N_SETTINGS_EDITS };
static const char *const settings_edit_names[] = {
    "AdamW beta1 NaN", "AdamW beta2 1", "AdamW eps 0", "AdamW eps infinite", "weight decay infinite", "weight decay NaN",
    "weight decay -0.1", "learning rate NaN", "SGD momentum 1", "optimizer 2", "loss 7", "metrics 8", "activation 42",
    "activation -1", "dropout rate 1", "batch-norm momentum NaN", "batch-norm eps 0", "leaky ReLU slope infinite", "pooling 5"};

/* One edit of the compile settings or of a layer's settings (layers: Dense, BatchNorm, Dropout, Dense). */
static void edit_settings(struct gguf_context *out, const struct gguf_context *in, int e) {
    (void)in;
    switch ((enum settings_edit)e) {
    case NAN_BETA1: gguf_set_arr_data(out, "ggmlc.compile.adamw", GGUF_TYPE_FLOAT32, (float[]){NAN, 0.999f, 1e-8f}, 3); break;
    case BETA2_1: gguf_set_arr_data(out, "ggmlc.compile.adamw", GGUF_TYPE_FLOAT32, (float[]){0.9f, 1.0f, 1e-8f}, 3); break;
    case EPS_0: gguf_set_arr_data(out, "ggmlc.compile.adamw", GGUF_TYPE_FLOAT32, (float[]){0.9f, 0.999f, 0.0f}, 3); break;
    case INF_EPS: gguf_set_arr_data(out, "ggmlc.compile.adamw", GGUF_TYPE_FLOAT32, (float[]){0.9f, 0.999f, INFINITY}, 3); break;
    case INF_DECAY: gguf_set_val_f32(out, "ggmlc.compile.weight_decay", INFINITY); break;
    case NAN_DECAY: gguf_set_val_f32(out, "ggmlc.compile.weight_decay", NAN); break;
    case NEGATIVE_DECAY: gguf_set_val_f32(out, "ggmlc.compile.weight_decay", -0.1f); break;
    case NAN_RATE: gguf_set_val_f32(out, "ggmlc.compile.learning_rate", NAN); break;
    case MOMENTUM_1: gguf_set_val_f32(out, "ggmlc.compile.momentum", 1.0f); break;
    case OPTIMIZER_2: gguf_set_val_i32(out, "ggmlc.compile.optimizer", 2); break;
    case LOSS_7: gguf_set_val_i32(out, "ggmlc.compile.loss", 7); break;
    case METRICS_8: gguf_set_val_u32(out, "ggmlc.compile.metrics", 8); break;
    case ACTIVATION_42: gguf_set_val_i32(out, "ggmlc.layer.0.activation", 42); break;
    case ACTIVATION_NEGATIVE: gguf_set_val_i32(out, "ggmlc.layer.3.activation", -1); break;
    case DROPOUT_1: gguf_set_val_f32(out, "ggmlc.layer.2.rate", 1.0f); break;
    case NAN_BN_MOMENTUM: gguf_set_val_f32(out, "ggmlc.layer.1.momentum", NAN); break;
    case BN_EPS_0: gguf_set_val_f32(out, "ggmlc.layer.1.eps", 0.0f); break;
    case INF_SLOPE: gguf_set_val_f32(out, "ggmlc.layer.0.slope", INFINITY); break;
    case POOL_5: gguf_set_val_i32(out, "ggmlc.layer.2.pool", 5); break;
    case N_SETTINGS_EDITS: break;
    }
}

static void test_hostile_files(void) {
    ggmlc_model *m = two_headed(GGMLC_OPT_SGD, 0.1f);
    check_edits(m, "two heads", edit_graph, edit_names, N_EDITS);
    ggmlc_model_free(m);

    /* {2, 8, 8} -> Conv2D(3, 3x3) -> MaxPool2D(2) -> Flatten -> Dense(2) */
    m = ggmlc_sequential((int64_t[]){2, 8, 8}, 3);
    ggmlc_model_add(m, ggmlc_conv2d(3, 3, 3, 1, 0, 1, GGMLC_ACT_RELU));
    ggmlc_model_add(m, ggmlc_max_pool2d(2, 2));
    ggmlc_model_add(m, ggmlc_flatten());
    ggmlc_model_add(m, ggmlc_dense(2, GGMLC_ACT_NONE));
    struct ggmlc_compile_options o = ggmlc_compile_defaults();
    if (ggmlc_model_compile(m, &o) != GGMLC_OK) tap_diag("compile: %s", ggmlc_last_error());
    check_edits(m, "convolution", edit_windows, window_edit_names, N_WINDOW_EDITS);
    ggmlc_model_free(m);

    /* compile and layer settings out of range: training on them would make every weight NaN */
    m = ggmlc_sequential((int64_t[]){4}, 1);
    ggmlc_model_add(m, ggmlc_dense(3, GGMLC_ACT_LEAKY_RELU));
    ggmlc_model_add(m, ggmlc_batch_norm(0.9f, 1e-3f));
    ggmlc_model_add(m, ggmlc_dropout(0.2f));
    ggmlc_model_add(m, ggmlc_dense(2, GGMLC_ACT_NONE));
    o.metrics = GGMLC_METRIC_MAE;
    if (ggmlc_model_compile(m, &o) != GGMLC_OK) tap_diag("compile: %s", ggmlc_last_error());
    check_edits(m, "settings", edit_settings, settings_edit_names, N_SETTINGS_EDITS);
    ggmlc_model_free(m);
}

/* --------------------------------------------------------------- errors */

static void test_errors(void) {
    ggmlc_model *m = two_headed(GGMLC_OPT_SGD, 0.1f);
    if (!tap_ok(m != NULL, "a model to misuse")) return;
    static float a[4 * IN], b[4 * IN], yr[4 * REG], yc[4] = {0, 1, 2, 3}, bad_yc[4] = {0, 1, 4, 3}, out[4 * CLS];
    const struct ggmlc_array x[2] = {vec(a, 4, IN), vec(b, 4, IN)}, y[2] = {vec(yr, 4, REG), labels(yc, 4)};
    struct ggmlc_fit_options fo = one_epoch(2);
#define REFUSED(call, status, what, needle) \
    tap_ok((call) == (status) && strstr(ggmlc_last_error(), needle) != NULL, "%s: %s", what, ggmlc_last_error())
    REFUSED(ggmlc_model_fit_multi(m, x, 1, y, 2, &fo, NULL), GGMLC_ERR_SHAPE, "one input array for two inputs", "2 inputs, got 1");
    REFUSED(ggmlc_model_fit_multi(m, x, 2, y, 1, &fo, NULL), GGMLC_ERR_SHAPE, "one target array for two outputs", "2 outputs, got 1");
    REFUSED(ggmlc_model_fit_multi(m, x, 2, (struct ggmlc_array[]){vec(yr, 4, 2), labels(yc, 4)}, 2, &fo, NULL), GGMLC_ERR_SHAPE,
            "a target of the wrong shape", "target 0 has samples of shape (2), the model's output 0 takes (3)");
    REFUSED(ggmlc_model_fit_multi(m, (struct ggmlc_array[]){vec(a, 4, IN), {b, 4, {IN, 1}, 2, 4 * IN}}, 2, y, 2, &fo, NULL), GGMLC_ERR_SHAPE,
            "an input of the wrong shape", "input 1 has samples of shape (5, 1)");
    REFUSED(ggmlc_model_fit_multi(m, (struct ggmlc_array[]){vec(a, 4, IN), vec(b, 3, IN)}, 2, y, 2, &fo, NULL), GGMLC_ERR_SHAPE,
            "inputs of different sample counts", "input 1 has 3 samples");
    REFUSED(ggmlc_model_fit_multi(m, x, 2, (struct ggmlc_array[]){vec(yr, 4, REG), vec(yc, 4, CLS)}, 2, &fo, NULL), GGMLC_ERR_SHAPE,
            "one-hot targets for a sparse loss", "class indices");
    REFUSED(ggmlc_model_fit_multi(m, x, 2, (struct ggmlc_array[]){vec(yr, 4, REG), labels(bad_yc, 4)}, 2, &fo, NULL), GGMLC_ERR_INVALID_ARG,
            "a label outside the classes", "label 4 of sample 2");
    REFUSED(ggmlc_model_fit_multi(m, (struct ggmlc_array[]){vec(NULL, 4, IN), vec(b, 4, IN)}, 2, y, 2, &fo, NULL), GGMLC_ERR_INVALID_ARG,
            "an input without data", "input 0 has no data");
    REFUSED(ggmlc_model_fit_multi(m, (struct ggmlc_array[]){vec(a, 4, IN), {b, 4, {IN}, 1, 4 * IN - 1}}, 2, y, 2, &fo, NULL), GGMLC_ERR_SHAPE,
            "an array shorter than its samples", "input 1 holds 19 floats, but its 4 samples of shape (5) take 20");
    REFUSED(ggmlc_model_fit_multi(m, x, 2, (struct ggmlc_array[]){vec(yr, 4, REG), {yc, 4, {1}, 1, 0}}, 2, &fo, NULL), GGMLC_ERR_SHAPE,
            "a label array without a length", "target 1 holds 0 floats, but its 4 samples of shape (1) take 4");
    REFUSED(ggmlc_model_fit(m, a, 4 * IN, yr, 4 * REG, 4, &fo, NULL), GGMLC_ERR_SHAPE, "the one-input fit on two inputs", "use ggmlc_model_fit_multi");
    REFUSED(ggmlc_model_predict(m, a, 4 * IN, 4, 2, out, 4 * CLS), GGMLC_ERR_SHAPE, "the one-input predict", "use ggmlc_model_predict_multi");
    REFUSED(ggmlc_model_predict_multi(m, x, 2, 2, (float *[]){out}, (size_t[]){4 * REG}, 1), GGMLC_ERR_SHAPE, "one output array for two outputs",
            "got 1 output");
    REFUSED(ggmlc_model_predict_multi(m, x, 2, 2, (float *[]){yr, out}, (size_t[]){4 * REG, 3 * CLS}, 2), GGMLC_ERR_SHAPE,
            "an output array too short", "output array 1 holds 12 floats, but 4 samples of the model's output 1, shape (4), take 16");
    REFUSED(ggmlc_model_predict_multi(m, x, 2, 2, (float *[]){yr, out}, NULL, 2), GGMLC_ERR_SHAPE, "output arrays without lengths",
            "got 0 output arrays");
    REFUSED(ggmlc_model_evaluate_multi(m, x, 2, NULL, 0, 2, NULL, NULL, NULL), GGMLC_ERR_SHAPE, "evaluate without targets", "got 0 target");
    fo.val_inputs = x;
    REFUSED(ggmlc_model_fit_multi(m, x, 2, y, 2, &fo, NULL), GGMLC_ERR_INVALID_ARG, "validation inputs without targets", "val_targets");
    fo.val_targets = (struct ggmlc_array[]){vec(yr, 4, REG), vec(yc, 4, 1)};
    fo.val_inputs = (struct ggmlc_array[]){vec(a, 4, IN), vec(b, 4, 4)};
    REFUSED(ggmlc_model_fit_multi(m, x, 2, y, 2, &fo, NULL), GGMLC_ERR_SHAPE, "validation input of the wrong shape", "(validation data): input 1");
    fo.val_inputs = fo.val_targets = NULL;
    fo.class_weights = (float[]){1, 1, 1, 1};
    fo.n_class_weights = 4;
    REFUSED(ggmlc_model_fit_multi(m, x, 2, y, 2, &fo, NULL), GGMLC_ERR_INVALID_ARG, "class weights with two outputs", "one output");
    ggmlc_model_free(m);

    /* building: unconnected inputs, bad output lists, per-output settings */
    m = ggmlc_functional();
    ggmlc_node *in1 = ggmlc_input(m, (int64_t[]){3}, 1), *in2 = ggmlc_input(m, (int64_t[]){3}, 1);
    ggmlc_node *d1 = ggmlc_apply(m, ggmlc_dense(2, GGMLC_ACT_NONE), in1);
    tap_ok(ggmlc_model_set_outputs(m, (ggmlc_node *[]){d1}, 1) == GGMLC_ERR_INVALID_ARG && strstr(ggmlc_last_error(), "input 2"),
           "an input that leads to no output: %s", ggmlc_last_error());
    ggmlc_node *d2 = ggmlc_apply(m, ggmlc_dense(2, GGMLC_ACT_NONE), in2);
    tap_ok(ggmlc_model_set_outputs(m, (ggmlc_node *[]){d1, d1}, 2) == GGMLC_ERR_INVALID_ARG, "the same output twice: %s", ggmlc_last_error());
    tap_ok(ggmlc_model_set_outputs(m, (ggmlc_node *[]){d1, in2}, 2) == GGMLC_ERR_INVALID_ARG, "an input as output: %s", ggmlc_last_error());
    tap_ok(ggmlc_model_set_outputs(m, (ggmlc_node *[]){d1, d2}, 0) == GGMLC_ERR_INVALID_ARG &&
               ggmlc_model_set_outputs(m, (ggmlc_node *[9]){d1, d2}, 9) == GGMLC_ERR_INVALID_ARG,
           "0 or 9 outputs refused");
    ggmlc_model *other = ggmlc_functional();
    ggmlc_node *foreign = ggmlc_input(other, (int64_t[]){3}, 1);
    tap_ok(ggmlc_apply(m, ggmlc_dense(2, GGMLC_ACT_NONE), foreign) == NULL && ggmlc_model_set_outputs(m, (ggmlc_node *[]){d1, foreign}, 2) != GGMLC_OK,
           "nodes of another model refused: %s", ggmlc_last_error());
    ggmlc_model_free(other);
    tap_ok(ggmlc_model_set_outputs(m, (ggmlc_node *[]){d1, d2}, 2) == GGMLC_OK, "two outputs set");
    struct ggmlc_compile_options o = ggmlc_compile_defaults();
    o.loss_weights = (float[]){1.0f, -1.0f};
    tap_ok(ggmlc_model_compile(m, &o) == GGMLC_ERR_INVALID_ARG && strstr(ggmlc_last_error(), "output 1"), "a negative loss weight: %s",
           ggmlc_last_error());
    ggmlc_model_free(m);

    m = ggmlc_functional();
    int made = 0;
    for (int i = 0; i < GGMLC_MAX_IO + 1; i++) made += ggmlc_input(m, (int64_t[]){2}, 1) != NULL;
    tap_ok(made == GGMLC_MAX_IO, "at most %d inputs: %s", GGMLC_MAX_IO, ggmlc_last_error());
    ggmlc_model_free(m);
}

int main(void) {
    test_seed(9);
    struct gold_set *set = gold_load("nn_multi.gold");
    if (set) test_golden(set);
    else tap_ok(false, "golden data nn_multi.gold");
    gold_free(set);
    test_training();
    test_single_equivalence();
    test_ids_and_features();
    test_hostile_files();
    test_errors();
    return tap_done();
}
