/*
 * test-nn-groups.c - the model API's grouped optimizer updates (nn/optim-group.c): one update
 * node per group of packed parameters must give the weights the per-tensor updates give.
 * The reference is the same model compiled with clip_value 1e30: clipping keeps the
 * per-tensor updates, and a clamp at +-1e30 leaves every gradient as it is.  Checked on the
 * CPU for AdamW with weight decay, SGD with momentum and plain SGD, on a model with a
 * convolution, batch normalisation (statistics outside the groups) and dense layers; a model
 * saved with its optimizer state and loaded again continues as the per-tensor one does; on
 * Vulkan (when there is a device) the grouped step has one optimizer dispatch (counted in
 * the GGMLC_DEBUG=vulkan-ops log), trains to the CPU's weights (moving statistics included)
 * and reads nothing back per step (the batch-norm statistics are updated by the step graph).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggmlc.h"
#include "ggmlc-nn.h"
#include "testutil.h"

enum { SIDE = 6, N_CLASSES = 3, N_DATA = 48, BATCH = 16, EPOCHS = 2, MAX_W = 4096 };

static float x[N_DATA * SIDE * SIDE], y[N_DATA];

static void make_data(void) {
    test_seed(3);
    for (int i = 0; i < N_DATA; i++) {
        const int k = i % N_CLASSES;
        for (int p = 0; p < SIDE * SIDE; p++) x[i * SIDE * SIDE + p] = (p % N_CLASSES == k) + 0.5f * test_normal();
        y[i] = (float)k;
    }
}

/* conv 3x3 (4 filters), batch norm, flatten, dense 8, dense 3: parameters of several shapes,
 * two that are not trained (the moving statistics). */
static ggmlc_model *new_model(enum ggmlc_optimizer opt, float momentum, bool per_tensor, const char *backend) {
    const int64_t shape[3] = {1, SIDE, SIDE};
    ggmlc_model *m = ggmlc_sequential(shape, 3);
    ggmlc_model_add(m, ggmlc_conv2d(4, 3, 3, 1, -1, 1, GGMLC_ACT_RELU));
    ggmlc_model_add(m, ggmlc_batch_norm(0.9f, 1e-5f));
    ggmlc_model_add(m, ggmlc_flatten());
    ggmlc_model_add(m, ggmlc_dense(8, GGMLC_ACT_RELU));
    ggmlc_model_add(m, ggmlc_dense(N_CLASSES, GGMLC_ACT_SOFTMAX));
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.optimizer = opt;
    co.learning_rate = opt == GGMLC_OPT_ADAMW ? 0.01f : 0.05f;
    co.weight_decay = 0.01f;
    co.momentum = momentum;
    co.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    co.metrics = GGMLC_METRIC_ACCURACY;
    co.seed = 9;
    co.backend = backend;
    if (per_tensor) co.clip_value = 1e30f;
    if (ggmlc_model_compile(m, &co) != GGMLC_OK) {
        tap_diag("compile: %s", ggmlc_last_error());
        ggmlc_model_free(m);
        return NULL;
    }
    return m;
}

static bool fit(ggmlc_model *m, int epochs) {
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = epochs;
    fo.batch_size = BATCH;
    fo.verbose = 0;
    const bool ok = m && ggmlc_model_fit(m, x, sizeof x / sizeof x[0], y, N_DATA, N_DATA, &fo, NULL) == GGMLC_OK;
    if (m && !ok) tap_diag("fit: %s", ggmlc_last_error());
    return ok;
}

/* The largest difference between the weights of a and b relative to the largest weight; -1
 * when they cannot be compared. */
static double weights_gap(ggmlc_model *a, ggmlc_model *b) {
    static float wa[MAX_W], wb[MAX_W];
    const int64_t na = a ? ggmlc_model_get_weights(a, wa, MAX_W) : -1, nb = b ? ggmlc_model_get_weights(b, wb, MAX_W) : -1;
    if (na <= 0 || na != nb) return -1;
    double gap = 0, scale = 1e-30;
    for (int64_t i = 0; i < na; i++) {
        gap = fmax(gap, fabs((double)wa[i] - wb[i]));
        scale = fmax(scale, fabs((double)wb[i]));
    }
    return gap / scale;
}

static void check_same_as_per_tensor(const char *name, enum ggmlc_optimizer opt, float momentum) {
    ggmlc_model *grouped = new_model(opt, momentum, false, "cpu"), *single = new_model(opt, momentum, true, "cpu");
    const bool ok = fit(grouped, EPOCHS) && fit(single, EPOCHS);
    const double gap = ok ? weights_gap(grouped, single) : -1;
    tap_ok(gap >= 0 && gap <= 1e-6, "%s: %d grouped steps give the per-tensor steps' weights (gap %.3g of the largest weight)", name,
           EPOCHS * N_DATA / BATCH, gap);
    ggmlc_model_free(grouped);
    ggmlc_model_free(single);
}

/* Saved with the optimizer state after an epoch, loaded, one more epoch: the grouped model's
 * moments went to the file and came back into their places in the groups. */
static void check_save_load(void) {
    char path_g[64], path_s[64];
    snprintf(path_g, sizeof path_g, "/tmp/test-nn-groups-%d-g.gguf", (int)getpid());
    snprintf(path_s, sizeof path_s, "/tmp/test-nn-groups-%d-s.gguf", (int)getpid());
    ggmlc_model *grouped = new_model(GGMLC_OPT_ADAMW, 0, false, "cpu"), *single = new_model(GGMLC_OPT_ADAMW, 0, true, "cpu");
    bool ok = fit(grouped, 1) && fit(single, 1) && ggmlc_model_save(grouped, path_g, true) == GGMLC_OK &&
              ggmlc_model_save(single, path_s, true) == GGMLC_OK;
    ggmlc_model *lg = ok ? ggmlc_model_load(path_g, "cpu") : NULL, *ls = ok ? ggmlc_model_load(path_s, "cpu") : NULL;
    ok = ok && lg && ls && fit(lg, 1) && fit(ls, 1);
    const double gap = ok ? weights_gap(lg, ls) : -1;
    tap_ok(gap >= 0 && gap <= 1e-6, "a grouped model saved with its AdamW state and loaded trains on as the per-tensor one (gap %.3g)",
           gap);
    remove(path_g);
    remove(path_s);
    ggmlc_model_free(lg);
    ggmlc_model_free(ls);
    ggmlc_model_free(grouped);
    ggmlc_model_free(single);
}

/* ---------------------------------------------------------------- Vulkan */

/* What the vulkan-ops log says: each graph's summary line comes before its dispatches. */
struct dispatch_log {
    int opt_in_graph;          /* optimizer dispatches of the graph being listed */
    int most_opt;              /* in any graph */
    int dispatches_last_graph; /* all dispatches of the last graph */
};

static void count_dispatches(enum ggml_log_level level, const char *text, void *user) {
    (void)level;
    struct dispatch_log *l = user;
    const char *graph = strstr(text, "graph of ");
    if (graph) {
        l->opt_in_graph = 0;
        const char *d = strstr(graph, "nodes: ");
        if (d) l->dispatches_last_graph = atoi(d + 7);
    } else if (strstr(text, "optstep_f32")) {
        l->most_opt = ++l->opt_in_graph > l->most_opt ? l->opt_in_graph : l->most_opt;
    }
}

static void check_vulkan(const char *dev) {
    struct dispatch_log grouped_log = {0}, single_log = {0};
    ggmlc_model *cpu = new_model(GGMLC_OPT_ADAMW, 0, false, "cpu");
    ggmlc_model *vk = new_model(GGMLC_OPT_ADAMW, 0, false, dev), *vk_single = new_model(GGMLC_OPT_ADAMW, 0, true, dev);
    struct ggmlc_counters before, after;
    ggml_log_set(count_dispatches, &grouped_log);
    ggmlc_counters_get(&before);
    bool ok = fit(vk, EPOCHS);
    ggmlc_counters_get(&after);
    ggml_log_set(count_dispatches, &single_log);
    ok = ok && fit(vk_single, EPOCHS);
    ggml_log_set(NULL, NULL);
    ok = ok && fit(cpu, EPOCHS);
    tap_ok(ok, "the model trains on %s and on the CPU", dev);
    const double gap = ok ? weights_gap(vk, cpu) : -1;
    tap_ok(gap >= 0 && gap <= 1e-4, "grouped steps on %s give the CPU's weights (gap %.3g of the largest weight)", dev, gap);
    tap_ok(grouped_log.most_opt == 1, "a grouped training step has one optimizer dispatch (%d; per tensor %d)", grouped_log.most_opt,
           single_log.most_opt);
    tap_ok(single_log.most_opt >= 6 && grouped_log.dispatches_last_graph + single_log.most_opt - 1 <= single_log.dispatches_last_graph,
           "the grouped step saves at least the other optimizer dispatches (%d dispatches per step, per tensor %d)",
           grouped_log.dispatches_last_graph, single_log.dispatches_last_graph);
    const unsigned long long reads = (unsigned long long)(after.reads_from_device - before.reads_from_device);
    tap_ok(reads <= EPOCHS, "%d steps read from the device %llu times (once per epoch: the batch-norm statistics move on the device)",
           EPOCHS * N_DATA / BATCH, reads);
    ggmlc_model_free(cpu);
    ggmlc_model_free(vk);
    ggmlc_model_free(vk_single);
}

/* Vulkan's test configuration where the build has the plugin, else make check's (the CPU). */
static void set_test_config(void) {
    setenv("GGMLC_DEBUG", "vulkan-ops", 1); /* the dispatches, counted in check_vulkan */
    test_vulkan_env();
}

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_WARN) fputs(text, stderr);
}

int main(void) {
    set_test_config();
    ggmlc_init();
    ggml_log_set(quiet, NULL); /* the vulkan-ops lines only where counted */
    make_data();
    check_same_as_per_tensor("AdamW, weight decay 0.01", GGMLC_OPT_ADAMW, 0);
    check_same_as_per_tensor("SGD, momentum 0.9", GGMLC_OPT_SGD, 0.9f);
    check_same_as_per_tensor("SGD", GGMLC_OPT_SGD, 0);
    check_save_load();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (reg && ggml_backend_reg_dev_count(reg) > 0) {
        check_vulkan(ggml_backend_dev_name(ggml_backend_reg_dev_get(reg, 0)));
        ggml_log_set(quiet, NULL);
    } else {
        tap_skip("no Vulkan device", "grouped steps on Vulkan");
    }
    ggmlc_shutdown();
    return tap_done();
}
