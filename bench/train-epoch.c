/*
 * train-epoch.c - `ggmlc-bench train-epoch`: training epochs of the models of ggmlc-train
 * (mlp: 784-256-128-10; cnn: conv 3x3 32, pool 2, conv 3x3 64, pool 2, dense 128, dense 10)
 * through ggmlc_model_fit on a named backend, on Fashion-MNIST or on synthetic images of
 * its shape.  Per epoch: seconds, steps/s, and per step the host-device round trips of
 * ggmlc_counters_get (submits, waits, transfers and their bytes, CPU fallback nodes): on a
 * GPU a small step's time is mostly those, whatever the kernels' speed.
 *
 *   ggmlc-bench train-epoch [--model mlp|cnn] [--batch 32] [--epochs 3] [--backend NAME]
 *                           [--data synthetic|fashion|DIR] [--samples N] [--seed S]
 *                           [--api model|opt]
 *
 * --api opt trains the MLP through ggml-opt instead (bench/train-epoch-opt.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"
#include "ggmlc-nn.h"
#include "counters.h"
#include "train-epoch.h"
#include "../tools/tool-options.h"

struct epoch_options {
    const char *model, *backend, *data, *api;
    long long batch, samples;
    int epochs;
    unsigned seed;
};

/* What the epoch-end callback keeps: each epoch's counters (the difference to the last). */
struct epoch_watch {
    int64_t steps; /* training steps of one epoch */
    struct ggmlc_counters last;
};

static bool parse_epoch_args(int argc, char **argv, struct epoch_options *o) {
    *o = (struct epoch_options){.model = "mlp", .data = "synthetic", .api = "model", .batch = 32, .epochs = 3,
                                .samples = 60000, .seed = 42};
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (strcmp(a, "--model") == 0) o->model = v;
        else if (strcmp(a, "--backend") == 0) o->backend = v;
        else if (strcmp(a, "--data") == 0) o->data = v;
        else if (strcmp(a, "--batch") == 0) o->batch = atoll(v);
        else if (strcmp(a, "--samples") == 0) o->samples = atoll(v);
        else if (strcmp(a, "--epochs") == 0) o->epochs = atoi(v);
        else if (strcmp(a, "--seed") == 0) o->seed = (unsigned)atoi(v);
        else if (strcmp(a, "--api") == 0) o->api = v;
        else return false;
    }
    const bool opt = strcmp(o->api, "opt") == 0;
    const bool model_ok = strcmp(o->model, "mlp") == 0 || (strcmp(o->model, "cnn") == 0 && !opt);
    if (!opt && strcmp(o->api, "model") != 0) return false;
    return argc % 2 == 0 && model_ok && o->batch > 0 && o->epochs > 0 && o->samples > 0 &&
           o->samples <= 10000000;
}

/* Synthetic Fashion-MNIST: n images 1x28x28 of uniform pixels in [0, 1), ten classes. */
static enum ggmlc_status synthetic_images(int64_t n, unsigned seed, struct ggmlc_dataset *d) {
    *d = (struct ggmlc_dataset){.n = n, .shape = {1, 28, 28}, .n_dims = 3, .n_classes = 10,
                                .value_max = 1};
    d->x = malloc(sizeof(float) * 784 * (size_t)n);
    d->y = malloc(sizeof(float) * (size_t)n);
    if (!d->x || !d->y) {
        ggmlc_dataset_free(d);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "no memory for %lld synthetic images",
                               (long long)n);
    }
    uint64_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < 784 * n; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        d->x[i] = (float)(s >> 40) / (float)(1u << 24);
    }
    for (int64_t i = 0; i < n; i++) d->y[i] = (float)(i * 7 % 10);
    return GGMLC_OK;
}

static enum ggmlc_status load_epoch_data(const struct epoch_options *o, struct ggmlc_dataset *d) {
    if (strcmp(o->data, "synthetic") == 0) return synthetic_images(o->samples, o->seed, d);
    const char *dir = strcmp(o->data, "fashion") == 0 ? NULL : o->data;
    enum ggmlc_status st = ggmlc_dataset_load_fashion_mnist(dir, true, d);
    if (st == GGMLC_OK) ggmlc_dataset_normalize(d);
    return st;
}

/* Adds the layers in order; false (model freed) when one is refused. */
static bool add_layers(ggmlc_model *m, ggmlc_layer **layers, int n) {
    for (int i = 0; i < n; i++) {
        if (ggmlc_model_add(m, layers[i]) != GGMLC_OK) {
            ggmlc_model_free(m);
            return false;
        }
    }
    return true;
}

/* ggmlc-train's model for 28x28 images, compiled as it does (AdamW 1e-3, sparse labels). */
static ggmlc_model *epoch_model(const struct epoch_options *o) {
    const bool cnn = strcmp(o->model, "cnn") == 0;
    const int64_t image[3] = {1, 28, 28}, flat = 784;
    ggmlc_model *m = cnn ? ggmlc_sequential(image, 3) : ggmlc_sequential(&flat, 1);
    if (!m) return NULL;
    if (cnn) { /* each list is made only when used: a layer not added to the model would leak */
        ggmlc_layer *conv[] = {ggmlc_conv2d(32, 3, 3, 1, -1, 1, GGMLC_ACT_RELU), ggmlc_max_pool2d(2, 2),
                               ggmlc_conv2d(64, 3, 3, 1, -1, 1, GGMLC_ACT_RELU), ggmlc_max_pool2d(2, 2),
                               ggmlc_flatten(), ggmlc_dense(128, GGMLC_ACT_RELU),
                               ggmlc_dense(10, GGMLC_ACT_SOFTMAX)};
        if (!add_layers(m, conv, 7)) return NULL;
    } else {
        ggmlc_layer *mlp[] = {ggmlc_dense(256, GGMLC_ACT_RELU), ggmlc_dense(128, GGMLC_ACT_RELU),
                              ggmlc_dense(10, GGMLC_ACT_SOFTMAX)};
        if (!add_layers(m, mlp, 3)) return NULL;
    }
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.optimizer = GGMLC_OPT_ADAMW;
    co.learning_rate = 1e-3f;
    co.weight_decay = 0;
    co.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    co.metrics = GGMLC_METRIC_ACCURACY;
    co.seed = o->seed;
    co.backend = o->backend;
    if (ggmlc_model_compile(m, &co) != GGMLC_OK) {
        ggmlc_model_free(m);
        return NULL;
    }
    return m;
}

static bool print_epoch(ggmlc_model *m, const struct ggmlc_epoch_logs *logs, void *user) {
    (void)m;
    struct epoch_watch *w = user;
    struct ggmlc_counters c;
    ggmlc_counters_get(&c);
    bench_print_epoch(logs->epoch + 1, logs->seconds, w->steps, logs->loss, logs->metric_accuracy, &w->last, &c);
    w->last = c;
    return true;
}

/* Mean seconds of the epochs after the first (which builds and plans the graphs), or of the
 * only one. */
static double steady_epoch_s(const ggmlc_history *h) {
    const int n = ggmlc_history_epochs(h);
    double sum = 0;
    for (int e = n > 1 ? 1 : 0; e < n; e++) sum += ggmlc_history_epoch(h, e)->seconds;
    return n > 1 ? sum / (n - 1) : sum;
}

static int train_epochs(const struct epoch_options *o, ggmlc_model *m, struct ggmlc_dataset *d) {
    struct epoch_watch watch = {.steps = (d->n + o->batch - 1) / o->batch};
    struct ggmlc_callback cb = {.on_epoch_end = print_epoch, .user = &watch};
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = o->epochs;
    fo.batch_size = o->batch;
    fo.verbose = 0;
    fo.callbacks = &cb;
    fo.n_callbacks = 1;
    ggmlc_history *h = NULL;
    printf("train-epoch %s, batch %lld, %lld samples (%s), backend %s\n", o->model, o->batch,
           (long long)d->n, o->data, o->backend ? o->backend : "(default)");
    ggmlc_counters_get(&watch.last);
    const size_t x_len = (size_t)d->n * (size_t)ggmlc_dataset_sample_size(d);
    if (ggmlc_model_fit(m, d->x, x_len, d->y, (size_t)d->n, d->n, &fo, &h) != GGMLC_OK) {
        tool_fail("ggmlc-bench", "training failed: %s", ggmlc_last_error());
        ggmlc_history_free(h);
        return 1;
    }
    const double s = steady_epoch_s(h);
    bench_print_epoch_mean(s, ggmlc_history_epochs(h) > 1, watch.steps);
    ggmlc_history_free(h);
    return 0;
}

int bench_train_epoch(int argc, char **argv) {
    struct epoch_options o;
    if (!parse_epoch_args(argc, argv, &o)) {
        fputs("usage: ggmlc-bench train-epoch [--model mlp|cnn] [--batch 32] [--epochs 3] "
              "[--backend NAME] [--data synthetic|fashion|DIR] [--samples 60000] [--seed 42] "
              "[--api model|opt] (opt: the mlp only)\n",
              stderr);
        return 2;
    }
    struct ggmlc_dataset d;
    if (load_epoch_data(&o, &d) != GGMLC_OK) {
        tool_fail("ggmlc-bench", "cannot load the data '%s': %s", o.data, ggmlc_last_error());
        return 1;
    }
    if (strcmp(o.api, "opt") == 0) {
        const int rc = bench_train_epoch_opt(o.backend, o.batch, o.epochs, o.seed, &d);
        ggmlc_dataset_free(&d);
        return rc;
    }
    ggmlc_model *m = epoch_model(&o);
    if (!m) {
        tool_fail("ggmlc-bench", "cannot build the model: %s", ggmlc_last_error());
        ggmlc_dataset_free(&d);
        return 1;
    }
    const int rc = train_epochs(&o, m, &d);
    ggmlc_model_free(m);
    ggmlc_dataset_free(&d);
    return rc;
}
