/*
 * test-nn.c - the neural-network API: each layer's output and gradients
 * (through one SGD step) against torch.nn (golden data from
 * tests/golden/gen_nn_layers.py), training to a loss bound, save/load,
 * early stopping, learning-rate schedules and error paths.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggmlc-nn.h"
#include "testutil.h"

#define REFUSED(call, status, what, needle) \
    tap_ok((call) == (status) && strstr(ggmlc_last_error(), needle) != NULL, "%s: %s", what, ggmlc_last_error())

struct layer_case {
    const char *name;
    int64_t in_shape[3];
    int in_dims;
    ggmlc_layer *(*make)(void);
};

static ggmlc_layer *mk_dense(void) { return ggmlc_dense(5, GGMLC_ACT_NONE); }
static ggmlc_layer *mk_conv2d(void) { return ggmlc_conv2d(3, 3, 3, 1, 1, 1, GGMLC_ACT_NONE); }
static ggmlc_layer *mk_conv2d_s2(void) { return ggmlc_conv2d(4, 3, 3, 2, 0, 1, GGMLC_ACT_NONE); }
static ggmlc_layer *mk_conv1d(void) { return ggmlc_conv1d(4, 3, 1, 1, 1, GGMLC_ACT_NONE); }
static ggmlc_layer *mk_bn(void) { return ggmlc_batch_norm(0.9f, 1e-3f); }
static ggmlc_layer *mk_ln(void) { return ggmlc_layer_norm(1e-5f); }
static ggmlc_layer *mk_emb(void) { return ggmlc_embedding(9, 4); }
static ggmlc_layer *mk_lstm(void) { return ggmlc_lstm(4, true); }
static ggmlc_layer *mk_gru(void) { return ggmlc_gru(4, false); }
static ggmlc_layer *mk_pool(void) { return ggmlc_max_pool2d(2, 2); }

static const struct layer_case cases[] = {
    {"dense", {7}, 1, mk_dense},
    {"conv2d", {2, 6, 5}, 3, mk_conv2d},
    {"conv2d_stride2", {3, 7, 9}, 3, mk_conv2d_s2},
    {"conv1d", {3, 10}, 2, mk_conv1d},
    {"batch_norm", {5}, 1, mk_bn},
    {"layer_norm", {6}, 1, mk_ln},
    {"embedding", {3}, 1, mk_emb},
    {"lstm", {5, 3}, 2, mk_lstm},
    {"gru_last", {5, 3}, 2, mk_gru},
    {"max_pool2d", {3, 6, 4}, 3, mk_pool},
};

static const struct gold_tensor *gget(const struct gold_set *s, const char *c, const char *what) {
    char name[128];
    snprintf(name, sizeof name, "%s.%s", c, what);
    return gold_get(s, name);
}

static struct ggmlc_compile_options sgd_mse(void) {
    struct ggmlc_compile_options o = ggmlc_compile_defaults();
    o.optimizer = GGMLC_OPT_SGD;
    o.learning_rate = 0.1f;
    o.loss = GGMLC_LOSS_MSE;
    return o;
}

static void run_layer_case(const struct gold_set *set, const struct layer_case *c) {
    const struct gold_tensor *x = gget(set, c->name, "x"), *y = gget(set, c->name, "y"), *out = gget(set, c->name, "out");
    if (!x || !y || !out) {
        tap_ok(false, "%s: golden data present", c->name);
        return;
    }
    const int64_t n = x->ne[c->in_dims];
    ggmlc_model *m = ggmlc_sequential(c->in_shape, c->in_dims);
    ggmlc_model_add(m, c->make());
    struct ggmlc_compile_options o = sgd_mse();
    if (ggmlc_model_compile(m, &o) != GGMLC_OK) {
        tap_ok(false, "%s: compile (%s)", c->name, ggmlc_last_error());
        ggmlc_model_free(m);
        return;
    }
    const bool has_weights = strcmp(c->name, "max_pool2d") != 0;
    const struct gold_tensor *w0 = has_weights ? gget(set, c->name, "w0") : NULL, *w1 = has_weights ? gget(set, c->name, "w1") : NULL;
    const int64_t nw = ggmlc_model_get_weights(m, NULL, 0);
    if (w0) {
        tap_ok(nw == (int64_t)w0->n, "%s: %lld weights as in PyTorch", c->name, (long long)nw);
        ggmlc_model_set_weights(m, w0->data, w0->n);
    }
    float *pred = malloc(sizeof(float) * out->n);
    ggmlc_model_predict(m, x->data, x->n, n, n, pred, out->n);
    ok_nmse(pred, out->data, out->n, 1e-9, "%s: output equals torch.nn", c->name);
    if (w1) {
        struct ggmlc_fit_options fo = ggmlc_fit_defaults();
        fo.epochs = 1;
        fo.batch_size = n;
        fo.shuffle = false;
        fo.verbose = 0;
        ggmlc_model_fit(m, x->data, x->n, y->data, y->n, n, &fo, NULL);
        float *w = malloc(sizeof(float) * (size_t)nw);
        ggmlc_model_get_weights(m, w, (size_t)nw);
        ok_nmse(w, w1->data, w1->n, 1e-9, "%s: weights after one SGD step equal PyTorch's (gradients%s)", c->name,
                strcmp(c->name, "batch_norm") == 0 ? " and moving statistics" : "");
        free(w);
    }
    free(pred);
    ggmlc_model_free(m);
}

/* ------------------------------------------------------- training */

enum { N = 400, CLASSES = 3 };

/* Three separable classes in 2-D: labels are class indices. */
static void make_data(float *x, float *y, int n) {
    for (int i = 0; i < n; i++) {
        const int k = i % CLASSES;
        x[2 * i] = (float)k * 2.0f - 2.0f + 0.3f * test_normal();
        x[2 * i + 1] = (k == 1 ? 1.5f : -0.5f) + 0.3f * test_normal();
        y[i] = (float)k;
    }
}

static ggmlc_model *classifier(unsigned metrics) {
    ggmlc_model *m = ggmlc_sequential((int64_t[]){2}, 1);
    ggmlc_model_add(m, ggmlc_dense(16, GGMLC_ACT_RELU));
    ggmlc_model_add(m, ggmlc_dropout(0.1f));
    ggmlc_model_add(m, ggmlc_dense(CLASSES, GGMLC_ACT_SOFTMAX));
    struct ggmlc_compile_options o = ggmlc_compile_defaults();
    o.learning_rate = 0.02f;
    o.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    o.metrics = metrics;
    ggmlc_model_compile(m, &o);
    return m;
}

static void test_training(void) {
    static float x[2 * N], y[N];
    make_data(x, y, N);
    ggmlc_model *m = classifier(GGMLC_METRIC_ACCURACY);
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 15;
    fo.verbose = 0;
    fo.validation_split = 0.25f;
    ggmlc_history *h = NULL;
    tap_ok(ggmlc_model_fit(m, x, 2 * N, y, N, N, &fo, &h) == GGMLC_OK, "fit runs 15 epochs with a validation split");
    const struct ggmlc_epoch_logs *first = ggmlc_history_epoch(h, 0), *last = ggmlc_history_epoch(h, ggmlc_history_epochs(h) - 1);
    tap_ok(ggmlc_history_epochs(h) == 15 && last->loss < first->loss, "history: loss fell from %.3f to %.3f", first->loss, last->loss);
    tap_ok(last->val_accuracy > 0.95, "validation accuracy %.3f > 0.95", last->val_accuracy);
    double loss, metrics[2];
    ggmlc_model_evaluate(m, x, 2 * N, y, N, N, 64, &loss, metrics);
    tap_ok(loss < 0.2 && metrics[0] > 0.95, "evaluate: loss %.3f < 0.2, accuracy %.3f", loss, metrics[0]);

    /* save and reload: identical predictions */
    char path[] = "/tmp/ggmlc-test-nn-XXXXXX";
    const int fd = mkstemp(path);
    close(fd);
    float p1[2 * CLASSES * 8], p2[2 * CLASSES * 8];
    ggmlc_model_predict(m, x, 2 * 16, 16, 16, p1, 16 * CLASSES);
    tap_ok(ggmlc_model_save(m, path, true) == GGMLC_OK, "save to GGUF");
    ggmlc_model *r = ggmlc_model_load(path, NULL);
    tap_ok(r != NULL, "load it back (%s)", r ? "ok" : ggmlc_last_error());
    if (r) {
        ggmlc_model_predict(r, x, 2 * 16, 16, 16, p2, 16 * CLASSES);
        tap_ok(max_abs_diff(p1, p2, 16 * CLASSES) == 0, "predictions after reload equal those before");
        tap_ok(ggmlc_model_param_count(r, false) == ggmlc_model_param_count(m, false), "same parameter count");
        ggmlc_model_free(r);
    }
    FILE *f = fopen(path, "r+b");
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fclose(f);
    tap_ok(truncate(path, size / 2) == 0 && ggmlc_model_load(path, NULL) == NULL && ggmlc_last_status() == GGMLC_ERR_FORMAT,
           "a truncated model file is rejected with GGMLC_ERR_FORMAT");
    unlink(path);
    ggmlc_history_free(h);
    ggmlc_model_free(m);
}

static void test_callbacks(void) {
    static float x[2 * N], y[N], noise_y[N];
    make_data(x, y, N);
    for (int i = 0; i < N; i++) noise_y[i] = (float)((i / CLASSES) % CLASSES); /* independent of the class i % 3 */
    ggmlc_model *m = classifier(0);
    struct ggmlc_callback cbs[2] = {ggmlc_early_stopping("val_loss", 0.0, 2, true), ggmlc_lr_step_decay(2, 0.5)};
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 40;
    fo.verbose = 0;
    fo.val_x = x;
    fo.val_x_len = 2 * N;
    fo.val_y = noise_y;
    fo.val_y_len = N;
    fo.n_val = N;
    fo.callbacks = cbs;
    fo.n_callbacks = 2;
    ggmlc_history *h = NULL;
    ggmlc_model_fit(m, x, 2 * N, y, N, N, &fo, &h);
    const int epochs = ggmlc_history_epochs(h);
    tap_ok(epochs < 40, "early stopping stopped after %d of 40 epochs on a validation loss that does not improve", epochs);
    int best = 0;
    for (int e = 1; e < epochs; e++) best = ggmlc_history_epoch(h, e)->val_loss < ggmlc_history_epoch(h, best)->val_loss ? e : best;
    tap_ok(epochs == best + 2 + 1, "it stopped patience (2) epochs after the best epoch %d", best);
    double loss;
    ggmlc_model_evaluate(m, x, 2 * N, noise_y, N, N, 32, &loss, NULL);
    tap_ok(fabs(loss - ggmlc_history_epoch(h, best)->val_loss) < 1e-4, "best weights restored: val loss %.5f = best %.5f", loss,
           ggmlc_history_epoch(h, best)->val_loss);
    bool schedule_ok = true;
    for (int e = 0; e < epochs; e++) schedule_ok &= fabs(ggmlc_history_epoch(h, e)->learning_rate - 0.02 * pow(0.5, e / 2)) < 1e-9;
    tap_ok(schedule_ok, "step decay halved the learning rate every 2 epochs");
    for (int i = 0; i < 2; i++) ggmlc_callback_free(&cbs[i]);
    ggmlc_history_free(h);
    ggmlc_model_free(m);
}

static void test_errors(void) {
    ggmlc_model *m = ggmlc_sequential((int64_t[]){5}, 1);
    tap_ok(ggmlc_model_add(m, ggmlc_conv2d(3, 3, 3, 1, 0, 1, GGMLC_ACT_NONE)) == GGMLC_ERR_SHAPE &&
           strstr(ggmlc_last_error(), "Conv2D") != NULL, "a Conv2D on a 1-D input is refused: %s", ggmlc_last_error());
    float x[5] = {0}, y[1] = {0};
    tap_ok(ggmlc_model_fit(m, x, 5, y, 1, 1, NULL, NULL) == GGMLC_ERR_SHAPE, "fit of that model returns the refusal: %s",
           ggmlc_last_error());
    tap_ok(ggmlc_dense(0, GGMLC_ACT_NONE) == NULL && ggmlc_dropout(1.5f) == NULL, "invalid layer arguments give NULL");
    tap_ok(ggmlc_model_load("/nonexistent/model.gguf", NULL) == NULL, "loading a missing file fails cleanly");
    FILE *out = tmpfile();
    ggmlc_model_add(m, ggmlc_dense(4, GGMLC_ACT_RELU));
    ggmlc_model_summary(m, out);
    char text[4096] = {0};
    rewind(out);
    fread(text, 1, sizeof text - 1, out);
    fclose(out);
    tap_ok(strstr(text, "Dense") && strstr(text, "(None, 4)") && strstr(text, "Total params: 24"), "summary lists layers, shapes and 24 parameters");
    ggmlc_model_free(m);
}

/* A refused ggmlc_model_add leaves a model that compile and fit refuse with the first error; so is
 * a model without layers: neither trains with a loss of 0 and no word. */
static void test_refused_add(void) {
    float x[2 * 4] = {0}, y[4] = {0};
    ggmlc_model *m = ggmlc_sequential((int64_t[]){2}, 1);
    ggmlc_model_add(m, ggmlc_dense(4, GGMLC_ACT_RELU));
    tap_ok(ggmlc_model_add(m, ggmlc_dense(0, GGMLC_ACT_NONE)) == GGMLC_ERR_INVALID_ARG, "a NULL layer (dense of 0 units) is refused");
    ggmlc_model_add(m, ggmlc_conv2d(3, 3, 3, 1, 0, 1, GGMLC_ACT_NONE)); /* a second refusal: the first is reported */
    ggmlc_model_add(m, ggmlc_dense(1, GGMLC_ACT_NONE));
    const enum ggmlc_status st = ggmlc_model_compile(m, NULL);
    tap_ok(st == GGMLC_ERR_INVALID_ARG && strstr(ggmlc_last_error(), "ggmlc_model_compile: a layer was refused") &&
               strstr(ggmlc_last_error(), "units") && !strstr(ggmlc_last_error(), "Conv2D"),
           "compile refuses a model that had a refused add, with the first refusal: %s", ggmlc_last_error());
    tap_ok(ggmlc_model_fit(m, x, 2 * 4, y, 4, 4, NULL, NULL) == GGMLC_ERR_INVALID_ARG &&
               strstr(ggmlc_last_error(), "ggmlc_model_fit: a layer was refused"),
           "fit refuses it too: %s", ggmlc_last_error());
    ggmlc_model_free(m);

    m = ggmlc_sequential((int64_t[]){2}, 1);
    tap_ok(ggmlc_model_add(m, ggmlc_conv2d(3, 3, 3, 1, 0, 1, GGMLC_ACT_NONE)) == GGMLC_ERR_SHAPE &&
               ggmlc_model_compile(m, NULL) == GGMLC_ERR_SHAPE && strstr(ggmlc_last_error(), "Conv2D"),
           "a layer refused for its input shape: compile returns that status and message: %s", ggmlc_last_error());
    ggmlc_model_free(m);

    m = ggmlc_sequential((int64_t[]){2}, 1);
    tap_ok(ggmlc_model_compile(m, NULL) == GGMLC_ERR_INVALID_ARG && strstr(ggmlc_last_error(), "no layers"),
           "compile refuses a model with no layers: %s", ggmlc_last_error());
    tap_ok(ggmlc_model_fit(m, x, 2 * 4, y, 4, 4, NULL, NULL) == GGMLC_ERR_INVALID_ARG, "and fit refuses it uncompiled");
    ggmlc_model_free(m);

    m = ggmlc_sequential((int64_t[]){2}, 1);
    ggmlc_model_add(m, ggmlc_dense(1, GGMLC_ACT_NONE));
    ggmlc_model_compile(m, NULL);
    ggmlc_model_add(m, ggmlc_dense(1, GGMLC_ACT_NONE)); /* refused: already compiled; the model is unchanged */
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 1, fo.verbose = 0;
    tap_ok(ggmlc_model_fit(m, x, 2 * 4, y, 4, 4, &fo, NULL) == GGMLC_OK, "an add refused after compile leaves the compiled model usable");
    ggmlc_model_free(m);
}

/* The summary of a model read into text. */
static void summary_text(ggmlc_model *m, char *text, size_t size) {
    FILE *out = tmpfile();
    ggmlc_model_summary(m, out);
    rewind(out);
    const size_t n = fread(text, 1, size - 1, out);
    text[n] = '\0';
    fclose(out);
}

/* The summary says where the model computes: nowhere yet, then the backend compile chose. */
static void test_summary_device(void) {
    static char text[8192];
    ggmlc_model *m = ggmlc_sequential((int64_t[]){2}, 1);
    ggmlc_model_add(m, ggmlc_dense(3, GGMLC_ACT_NONE));
    summary_text(m, text, sizeof text);
    tap_ok(strstr(text, "\nDevice: none yet") != NULL, "summary before compile: no device yet");
    struct ggmlc_compile_options o = ggmlc_compile_defaults();
    o.backend = "CPU";
    tap_ok(ggmlc_model_compile(m, &o) == GGMLC_OK, "compile on the backend named CPU (%s)", ggmlc_last_error());
    summary_text(m, text, sizeof text);
    tap_ok(strstr(text, "\nDevice: CPU") != NULL && strstr(text, "Fallback:") == NULL, "summary after compile names the CPU backend it computes on");
    ggmlc_model_free(m);
}

/* The table's lines between its first "=" rule and the next: the header, then one per row. */
static bool table_lines_aligned(const char *text, const char *needle, size_t *width) {
    const char *p = strstr(text, "Layer (type)");
    if (!p) return false;
    const char *eol = strchr(p, '\n');
    const size_t header = (size_t)(eol - p) + 1; /* with the leading space */
    const char *rule = eol + 1, *row = strchr(rule, '\n') + 1;
    *width = (size_t)(strchr(rule, '\n') - rule);
    bool aligned = header <= *width, found = false;
    for (; *row != '='; row = strchr(row, '\n') + 1) {
        const size_t len = (size_t)(strchr(row, '\n') - row);
        aligned &= len == header; /* no unnamed fourth column, no overflowing name */
        found |= strstr(row, needle) != NULL && strstr(row, needle) < row + len;
    }
    return aligned && found;
}

/* A sequential model's table has three named columns; a long layer name widens its column. */
static void test_summary_columns(void) {
    static char text[8192];
    static const char long_name[] = "a_dense_layer_with_a_name_well_beyond_the_column";
    ggmlc_model *m = ggmlc_sequential((int64_t[]){2}, 1);
    ggmlc_model_add(m, ggmlc_dense(3, GGMLC_ACT_RELU));
    ggmlc_layer *l = ggmlc_dense(2, GGMLC_ACT_NONE);
    ggmlc_layer_set_name(l, long_name);
    ggmlc_model_add(m, l);
    summary_text(m, text, sizeof text);
    size_t width = 0;
    tap_ok(table_lines_aligned(text, long_name, &width) && width > 65, "sequential summary: header and rows of one width, the long name whole "
           "(rule of %zu columns)", width);
    ggmlc_model_free(m);
}

/* ------------------------------------------------ one batch, clipping */

enum { NB = 4 };
static const float batch_x[2 * NB] = {1, 2, -1, 0.5f, 3, -2, 0.25f, 1}, batch_y[NB] = {2, -1, 0.5f, 4};

/* Dense(1) on 2 features, MSE, plain SGD of rate 0.1 with the given clipping. */
static ggmlc_model *linear_model(float clip_norm, float clip_value) {
    ggmlc_model *m = ggmlc_sequential((int64_t[]){2}, 1);
    ggmlc_model_add(m, ggmlc_dense(1, GGMLC_ACT_NONE));
    struct ggmlc_compile_options o = ggmlc_compile_defaults();
    o.optimizer = GGMLC_OPT_SGD;
    o.learning_rate = 0.1f;
    o.metrics = GGMLC_METRIC_MAE;
    o.clip_norm = clip_norm;
    o.clip_value = clip_value;
    ggmlc_model_compile(m, &o);
    return m;
}

/* MSE and its gradient (kernel 0, kernel 1, bias) for weights w, worked out by hand in double. */
static double linear_loss_grad(const float w[3], double grad[3]) {
    double loss = 0;
    grad[0] = grad[1] = grad[2] = 0;
    for (int i = 0; i < NB; i++) {
        const double e = (double)w[0] * batch_x[2 * i] + (double)w[1] * batch_x[2 * i + 1] + w[2] - batch_y[i];
        loss += e * e / NB;
        grad[0] += 2 * e * batch_x[2 * i] / NB, grad[1] += 2 * e * batch_x[2 * i + 1] / NB, grad[2] += 2 * e / NB;
    }
    return loss;
}

/* One step with clipping against the same step worked out by hand: the weights move by
 * -rate * clipped gradient. */
static void check_clipped_step(const char *what, float clip_norm, float clip_value) {
    ggmlc_model *m = linear_model(clip_norm, clip_value);
    float w0[3], w1[3];
    ggmlc_model_get_weights(m, w0, 3);
    double grad[3], loss, metrics[2];
    const double want_loss = linear_loss_grad(w0, grad);
    double norm = 0;
    for (int j = 0; j < 3; j++) {
        if (clip_value > 0) grad[j] = fmax(-clip_value, fmin(clip_value, grad[j]));
        norm += grad[j] * grad[j];
    }
    norm = sqrt(norm);
    const double scale = clip_norm > 0 && norm > clip_norm ? clip_norm / norm : 1;
    if ((clip_value > 0 || clip_norm > 0) && clip_norm < 1000) /* the worked-out step must differ from the plain one */
        tap_ok(scale < 1 || fabs(grad[0]) == clip_value || fabs(grad[1]) == clip_value, "%s clips this gradient "
               "(norm %.3f after clipping by value)", what, norm);
    const enum ggmlc_status st = ggmlc_model_train_on_batch(m, batch_x, 2 * NB, batch_y, NB, NB, &loss, metrics);
    ggmlc_model_get_weights(m, w1, 3);
    double err = fabs(loss - want_loss) / want_loss;
    for (int j = 0; j < 3; j++) err = fmax(err, fabs((double)w1[j] - ((double)w0[j] - 0.1 * scale * grad[j])));
    tap_ok(st == GGMLC_OK && err < 1e-5 && isnan(metrics[0]) && metrics[1] > 0, "train_on_batch, %s: loss %.5f and weights as worked out "
           "by hand (error %.2g)", what, loss, err);
    ggmlc_model_free(m);
}

static void test_on_batch_and_clipping(void) {
    ggmlc_model *m = linear_model(0, 0);
    float w[3];
    ggmlc_model_get_weights(m, w, 3);
    double grad[3], loss = 0, metrics[2];
    const double want = linear_loss_grad(w, grad);
    const enum ggmlc_status st = ggmlc_model_test_on_batch(m, batch_x, 2 * NB, batch_y, NB, NB, &loss, metrics);
    tap_ok(st == GGMLC_OK && fabs(loss - want) < 1e-5 * want, "test_on_batch: loss %.5f = %.5f worked out by hand", loss, want);
    float w_after[3];
    ggmlc_model_get_weights(m, w_after, 3);
    tap_ok(memcmp(w, w_after, sizeof w) == 0, "test_on_batch leaves the weights alone");
    tap_ok(ggmlc_model_train_on_batch(m, batch_x, 2 * NB - 1, batch_y, NB, NB, &loss, NULL) == GGMLC_ERR_SHAPE &&
               strstr(ggmlc_last_error(), "ggmlc_model_train_on_batch: x holds 7 floats"),
           "train_on_batch checks the lengths: %s", ggmlc_last_error());
    ggmlc_model_free(m);
    check_clipped_step("no clipping", 0, 0);
    check_clipped_step("clip_value 0.5", 0, 0.5f);
    check_clipped_step("clip_norm 0.5", 0.5f, 0);
    check_clipped_step("clip_norm 1000 (not reached)", 1000, 0);
    check_clipped_step("clip_value 1 then clip_norm 0.5", 0.5f, 1);
    /* the clipping settings travel with a saved model: the reloaded one takes the same clipped step */
    char path[] = "/tmp/ggmlc-test-clip-XXXXXX";
    close(mkstemp(path));
    m = linear_model(0.5f, 0);
    ggmlc_model *r = ggmlc_model_save(m, path, true) == GGMLC_OK ? ggmlc_model_load(path, NULL) : NULL;
    float wm[3], wr[3] = {0};
    ggmlc_model_train_on_batch(m, batch_x, 2 * NB, batch_y, NB, NB, NULL, NULL);
    ggmlc_model_get_weights(m, wm, 3);
    if (r) ggmlc_model_train_on_batch(r, batch_x, 2 * NB, batch_y, NB, NB, NULL, NULL), ggmlc_model_get_weights(r, wr, 3);
    tap_ok(r && max_abs_diff(wm, wr, 3) < 1e-6, "a reloaded model clips as the saved one did (%s)", r ? "loaded" : ggmlc_last_error());
    ggmlc_model_free(r);
    ggmlc_model_free(m);
    unlink(path);
    struct ggmlc_compile_options o = ggmlc_compile_defaults();
    o.clip_norm = -1;
    m = ggmlc_sequential((int64_t[]){2}, 1);
    ggmlc_model_add(m, ggmlc_dense(1, GGMLC_ACT_NONE));
    REFUSED(ggmlc_model_compile(m, &o), GGMLC_ERR_INVALID_ARG, "a negative clip_norm", "clip_norm -1 is not a finite number >= 0");
    ggmlc_model_free(m);
}

/* fit continued with initial_epoch: epochs numbered on, the schedule goes on, the CSV log grows. */
static void test_initial_epoch_and_csv(void) {
    static float x[2 * N], y[N];
    make_data(x, y, N);
    char path[] = "/tmp/ggmlc-test-csv-XXXXXX";
    close(mkstemp(path));
    ggmlc_model *m = classifier(GGMLC_METRIC_ACCURACY);
    struct ggmlc_callback cbs[2] = {ggmlc_lr_step_decay(2, 0.5), ggmlc_csv_logger(path, false)};
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 2, fo.verbose = 0, fo.callbacks = cbs, fo.n_callbacks = 2, fo.validation_split = 0.25f;
    ggmlc_history *h1 = NULL, *h2 = NULL;
    tap_ok(cbs[1].on_epoch_end && ggmlc_model_fit(m, x, 2 * N, y, N, N, &fo, &h1) == GGMLC_OK, "fit epochs 0..1 with a CSV log");
    fo.initial_epoch = 2, fo.epochs = 4;
    ggmlc_callback_free(&cbs[1]);
    cbs[1] = ggmlc_csv_logger(path, true);
    tap_ok(ggmlc_model_fit(m, x, 2 * N, y, N, N, &fo, &h2) == GGMLC_OK && ggmlc_history_epochs(h2) == 2 &&
               ggmlc_history_epoch(h2, 0)->epoch == 2 && ggmlc_history_epoch(h2, 1)->epoch == 3,
           "fit with initial_epoch 2, epochs 4: two epochs numbered 2 and 3");
    tap_ok(ggmlc_history_epochs(h2) == 2 && fabs(ggmlc_history_epoch(h2, 0)->learning_rate - 0.01) < 1e-9 &&
               fabs(ggmlc_model_get_learning_rate(m) - 0.005) < 1e-9,
           "the step decay went on: rate 0.01 in epoch 2, 0.005 after epoch 3");
    FILE *f = fopen(path, "r");
    char line[512];
    int lines = 0, ok = 1;
    while (f && fgets(line, sizeof line, f)) {
        if (lines == 0) ok &= strcmp(line, "epoch,loss,accuracy,mae,val_loss,val_accuracy,val_mae,learning_rate,seconds\n") == 0;
        if (lines > 0) {
            const ggmlc_history *h = lines <= 2 ? h1 : h2;
            const struct ggmlc_epoch_logs *l = ggmlc_history_epoch(h, (lines - 1) % 2);
            int epoch = 0;
            double loss = 0, acc = 0, val_loss = 0;
            ok &= l && sscanf(line, "%d,%lf,%lf,,%lf,", &epoch, &loss, &acc, &val_loss) == 4 && epoch == lines &&
                  fabs(loss - l->loss) < 1e-6 * l->loss && fabs(acc - l->metric_accuracy) < 1e-6 && fabs(val_loss - l->val_loss) < 1e-6 * l->val_loss;
        }
        lines++;
    }
    if (f) fclose(f);
    tap_ok(lines == 5 && ok, "the CSV log: a header and epochs 1..4 with the history's values, the MAE column empty (%d lines)", lines);
    struct ggmlc_callback bad = ggmlc_csv_logger("/nonexistent/dir/log.csv", false);
    tap_ok(!bad.on_epoch_end && ggmlc_last_status() == GGMLC_ERR_IO && strstr(ggmlc_last_error(), "/nonexistent/dir/log.csv"),
           "a CSV log that cannot be written: no callback, %s", ggmlc_last_error());
    fo.initial_epoch = 4;
    REFUSED(ggmlc_model_fit(m, x, 2 * N, y, N, N, &fo, NULL), GGMLC_ERR_INVALID_ARG, "initial_epoch = epochs", "initial_epoch 4 is not in [0, epochs = 4)");
    for (int i = 0; i < 2; i++) ggmlc_callback_free(&cbs[i]);
    ggmlc_history_free(h1);
    ggmlc_history_free(h2);
    ggmlc_model_free(m);
    unlink(path);
}

/* Plain arrays whose length disagrees with the model's shapes: refused before any read. */
static void test_lengths(void) {
    static float x[3 * N], y[N], out[CLASSES * N];
    make_data(x, y, N);
    ggmlc_model *m = classifier(GGMLC_METRIC_ACCURACY);
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 1;
    fo.verbose = 0;
    double loss;
    REFUSED(ggmlc_model_fit(m, x, 3 * N, y, N, N, &fo, NULL), GGMLC_ERR_SHAPE, "fit on samples of 3 features for a model of 2",
            "ggmlc_model_fit: input 0 has samples of shape (3), the model's input 0 takes (2)");
    REFUSED(ggmlc_model_evaluate(m, x, 3 * N, y, N, N, 32, &loss, NULL), GGMLC_ERR_SHAPE, "evaluate on samples of 3 features",
            "input 0 has samples of shape (3), the model's input 0 takes (2)");
    REFUSED(ggmlc_model_predict(m, x, 3 * N, N, 32, out, CLASSES * N), GGMLC_ERR_SHAPE, "predict on samples of 3 features",
            "input 0 has samples of shape (3), the model's input 0 takes (2)");
    REFUSED(ggmlc_model_fit(m, x, 2 * N - 1, y, N, N, &fo, NULL), GGMLC_ERR_SHAPE, "an input length that n does not divide",
            "x holds 799 floats, not the same number for each of its 400 samples");
    REFUSED(ggmlc_model_fit(m, x, 2 * N, y, N - 1, N, &fo, NULL), GGMLC_ERR_SHAPE, "one label short", "y holds 399 floats");
    REFUSED(ggmlc_model_fit(m, x, 2 * N, y, 2 * N, N, &fo, NULL), GGMLC_ERR_SHAPE, "two values per sample for class indices",
            "target 0 has samples of shape (2), the model's output 0 takes (1) (class indices)");
    REFUSED(ggmlc_model_predict(m, x, 2 * N, N, 32, out, CLASSES * N - 1), GGMLC_ERR_SHAPE, "a prediction array one float short",
            "output array 0 holds 1199 floats, but 400 samples of the model's output 0, shape (3), take 1200");
    fo.val_x = x, fo.val_x_len = 3 * 10, fo.val_y = y, fo.val_y_len = 10, fo.n_val = 10;
    REFUSED(ggmlc_model_fit(m, x, 2 * N, y, N, N, &fo, NULL), GGMLC_ERR_SHAPE, "validation data of 3 features",
            "ggmlc_model_fit (validation data): input 0 has samples of shape (3)");
    fo.val_x = NULL;
    fo.class_weights = (const float[]){1, 2}, fo.n_class_weights = 2;
    REFUSED(ggmlc_model_fit(m, x, 2 * N, y, N, N, &fo, NULL), GGMLC_ERR_SHAPE, "2 class weights for 3 classes", "2 class weights for an output of 3");
    fo.class_weights = (const float[]){1, NAN, 1}, fo.n_class_weights = 3;
    REFUSED(ggmlc_model_fit(m, x, 2 * N, y, N, N, &fo, NULL), GGMLC_ERR_INVALID_ARG, "a NaN class weight", "class weight 1 is nan");
    fo.class_weights = (const float[]){1, 2, 1};
    tap_ok(ggmlc_model_fit(m, x, 2 * N, y, N, N, &fo, NULL) == GGMLC_OK, "three class weights for three classes (%s)", ggmlc_last_error());
    const int64_t nw = ggmlc_model_get_weights(m, NULL, 0);
    float *w = malloc(sizeof(float) * (size_t)nw);
    tap_ok(nw == 2 * 16 + 16 + 16 * CLASSES + CLASSES && ggmlc_model_get_weights(m, w, (size_t)nw - 1) == -1 &&
               ggmlc_last_status() == GGMLC_ERR_SHAPE && ggmlc_model_get_weights(m, w, (size_t)nw) == nw,
           "get_weights: %lld weights, refused into an array one float short", (long long)nw);
    REFUSED(ggmlc_model_set_weights(m, w, (size_t)nw + 1), GGMLC_ERR_SHAPE, "set_weights from an array of another length",
            "the model has 99 weights, the array holds 100 floats");
    tap_ok(ggmlc_model_set_weights(m, w, (size_t)nw) == GGMLC_OK, "set_weights with the right length");
    free(w);
    ggmlc_model_free(m);
}

/* Settings compile refuses: each would make training's weights NaN or use another optimizer. */
enum bad_setting { BETA1_NAN, BETA2_1, EPS_0, DECAY_INF, RATE_INF, MOMENTUM_NEGATIVE, OPTIMIZER_5, N_BAD_SETTINGS };

static void set_bad(struct ggmlc_compile_options *o, enum bad_setting b) {
    switch (b) {
    case BETA1_NAN: o->beta1 = NAN; break;
    case BETA2_1: o->beta2 = 1; break;
    case EPS_0: o->eps = 0; break;
    case DECAY_INF: o->weight_decay = INFINITY; break;
    case RATE_INF: o->learning_rate = INFINITY; break;
    case MOMENTUM_NEGATIVE: o->momentum = -0.5f; break;
    case OPTIMIZER_5: o->optimizer = (enum ggmlc_optimizer)5; break;
    case N_BAD_SETTINGS: break;
    }
}

static void test_compile_settings(void) {
    static const char *const needles[] = {"beta1 nan is not in [0, 1)", "beta2 1 is not in [0, 1)", "eps 0 is not a finite number > 0",
                                          "weight decay inf is not", "learning rate inf is not", "momentum -0.5 is not in [0, 1)",
                                          "optimizer 5 is not a known one"};
    for (int b = 0; b < N_BAD_SETTINGS; b++) {
        struct ggmlc_compile_options o = ggmlc_compile_defaults();
        set_bad(&o, (enum bad_setting)b);
        ggmlc_model *m = ggmlc_sequential((int64_t[]){2}, 1);
        ggmlc_model_add(m, ggmlc_dense(1, GGMLC_ACT_NONE));
        REFUSED(ggmlc_model_compile(m, &o), GGMLC_ERR_INVALID_ARG, "compile refuses a setting", needles[b]);
        ggmlc_model_free(m);
    }
}

/* Huge inputs overflow the loss: fit stops with an error (on by default), or trains on when asked. */
static void test_nan_loss(void) {
    static float x[2 * 64], y[64];
    for (int i = 0; i < 64; i++) x[2 * i] = 1e20f, x[2 * i + 1] = (float)i, y[i] = 1;
    for (int stop = 1; stop >= 0; stop--) {
        ggmlc_model *m = ggmlc_sequential((int64_t[]){2}, 1);
        ggmlc_model_add(m, ggmlc_dense(1, GGMLC_ACT_NONE));
        ggmlc_layer_set_initializer(ggmlc_model_layer(m, 0), GGMLC_INIT_ONES);
        ggmlc_model_compile(m, NULL);
        struct ggmlc_fit_options fo = ggmlc_fit_defaults();
        fo.epochs = 2;
        fo.batch_size = 16;
        fo.verbose = 0;
        fo.stop_on_nan = stop;
        ggmlc_history *h = NULL;
        const enum ggmlc_status st = ggmlc_model_fit(m, x, 2 * 64, y, 64, 64, &fo, &h);
        if (stop) {
            tap_ok(st == GGMLC_ERR_INVALID_ARG && strstr(ggmlc_last_error(), "training stopped in epoch 1, batch 1: the loss is ") &&
                       ggmlc_history_epochs(h) == 0,
                   "a loss that overflows stops training (on by default): %s", ggmlc_last_error());
        } else {
            tap_ok(st == GGMLC_OK && ggmlc_history_epochs(h) == 2 && !isfinite(ggmlc_history_epoch(h, 1)->loss),
                   "stop_on_nan false: training goes on with a loss of %g", ggmlc_history_epochs(h) ? ggmlc_history_epoch(h, 0)->loss : 0.0);
        }
        ggmlc_history_free(h);
        ggmlc_model_free(m);
    }
}

int main(void) {
    test_seed(5);
    struct gold_set *set = gold_load("nn_layers.gold");
    for (size_t i = 0; set && i < sizeof cases / sizeof cases[0]; i++) run_layer_case(set, &cases[i]);
    gold_free(set);
    test_training();
    test_callbacks();
    test_errors();
    test_refused_add();
    test_summary_device();
    test_summary_columns();
    test_lengths();
    test_compile_settings();
    test_nan_loss();
    test_on_batch_and_clipping();
    test_initial_epoch_and_csv();
    return tap_done();
}
