/*
 * test-vulkan-fit-syncs.c - a training epoch through the model API on Vulkan makes no host
 * round trip per step beyond the one graph: the loss and metrics are summed on the device and
 * read once per pass (nn/fit-device.c), the data go up once per fit and each step gathers its
 * batch on the device (nn/device-data.c), and the small per-step writes (sample indices,
 * optimizer hyperparameters, the gradient seed) ride along with the next graph
 * (plugins/vulkan/vk-deferred.c).  Counted with ggmlc_counters_get: it fails when the host
 * reads back every step.  The logged loss, accuracy and mean absolute error must equal the
 * CPU's, and deferred writes must land in order and never outlive their buffer.  Skipped,
 * visibly, when there is no Vulkan device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-opt.h"
#include "ggmlc.h"
#include "ggmlc-nn.h"
#include "testutil.h"

enum { N_IN = 16, N_CLASSES = 4, N_DATA = 320, BATCH = 16, EPOCHS = 2 };
#define STEPS (N_DATA / BATCH)

/* Each epoch's counters, taken when it ends. */
struct epoch_counts {
    struct ggmlc_counters at[EPOCHS + 1];
    int n;
};

static bool take_counts(ggmlc_model *m, const struct ggmlc_epoch_logs *logs, void *user) {
    (void)m, (void)logs;
    struct epoch_counts *c = user;
    ggmlc_counters_get(&c->at[++c->n]);
    return true;
}

struct run {
    double loss[EPOCHS], metric[EPOCHS];
    double refit_loss; /* of a second fit on half the data, with class weights */
    struct epoch_counts counts;
    bool ok;
};

/* Four classes: the class's quarter of the inputs is bright, plus noise. */
static void make_data(float *x, float *y_sparse, float *y_onehot) {
    test_seed(11);
    for (int i = 0; i < N_DATA; i++) {
        const int k = i % N_CLASSES;
        for (int p = 0; p < N_IN; p++) x[i * N_IN + p] = (p / 4 == k) + 0.4f * test_normal();
        y_sparse[i] = (float)k;
        for (int c = 0; c < N_CLASSES; c++) y_onehot[i * N_CLASSES + c] = c == k;
    }
}

/* 16-32-4 on backend, trained EPOCHS epochs: sparse cross-entropy with accuracy, or MSE on
 * one-hot targets with the mean absolute error. */
static struct run train(const char *backend, bool mse, const float *x, const float *y) {
    struct run r = {.ok = false};
    const int64_t in = N_IN;
    ggmlc_model *m = ggmlc_sequential(&in, 1);
    ggmlc_model_add(m, ggmlc_dense(32, GGMLC_ACT_RELU));
    ggmlc_model_add(m, ggmlc_dense(N_CLASSES, mse ? GGMLC_ACT_NONE : GGMLC_ACT_SOFTMAX));
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.loss = mse ? GGMLC_LOSS_MSE : GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    co.metrics = mse ? GGMLC_METRIC_MAE : GGMLC_METRIC_ACCURACY;
    co.seed = 5;
    co.backend = backend;
    if (ggmlc_model_compile(m, &co) != GGMLC_OK) {
        tap_diag("compile on %s: %s", backend, ggmlc_last_error());
        ggmlc_model_free(m);
        return r;
    }
    struct ggmlc_callback cb = {.on_epoch_end = take_counts, .user = &r.counts};
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = EPOCHS;
    fo.batch_size = BATCH;
    fo.verbose = 0;
    fo.callbacks = &cb;
    fo.n_callbacks = 1;
    ggmlc_history *h = NULL;
    ggmlc_counters_get(&r.counts.at[0]);
    const size_t y_len = mse ? (size_t)N_DATA * N_CLASSES : (size_t)N_DATA;
    r.ok = ggmlc_model_fit(m, x, (size_t)N_DATA * N_IN, y, y_len, N_DATA, &fo, &h) == GGMLC_OK;
    if (!r.ok) tap_diag("fit on %s: %s", backend, ggmlc_last_error());
    for (int e = 0; r.ok && e < EPOCHS; e++) {
        const struct ggmlc_epoch_logs *l = ggmlc_history_epoch(h, e);
        r.loss[e] = l->loss;
        r.metric[e] = mse ? l->metric_mae : l->metric_accuracy;
    }
    ggmlc_history_free(h);
    /* again on other data (fewer samples: the device copy is made anew), class weights folded
     * into the labels there */
    static const float weights[N_CLASSES] = {1.0f, 2.0f, 1.0f, 0.5f};
    fo.callbacks = NULL, fo.n_callbacks = 0, fo.epochs = 1;
    if (!mse) fo.class_weights = weights, fo.n_class_weights = N_CLASSES;
    const size_t half_x = (size_t)N_DATA / 2 * N_IN;
    r.ok = r.ok && ggmlc_model_fit(m, x, half_x, y, y_len / 2, N_DATA / 2, &fo, &h) == GGMLC_OK;
    if (r.ok) r.refit_loss = ggmlc_history_epoch(h, 0)->loss;
    ggmlc_history_free(h);
    ggmlc_model_free(m);
    return r;
}

static double rel_gap(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-12); }

static void check_counts(const struct run *vk) {
    const struct ggmlc_counters *a = &vk->counts.at[1], *b = &vk->counts.at[2];
    const double reads = (double)(b->reads_from_device - a->reads_from_device);
    const double waits = (double)(b->waits - a->waits) / STEPS;
    const double submits = (double)(b->submits - a->submits) / STEPS;
    tap_ok(reads <= 2, "an epoch of %d steps reads from the device %.0f times (at most 2: once per "
           "pass, not per step)", STEPS, reads);
    tap_ok(submits <= 1.2 && waits <= 1.2, "per step %.2f submits and %.2f waits (the graph's one)",
           submits, waits);
    const double bytes = (double)(b->bytes_to_device - a->bytes_to_device) / STEPS;
    tap_ok(bytes < BATCH * N_IN * sizeof(float), "per step %.0f bytes go up: the batch's sample "
           "indices, not its %zu bytes of samples (gathered from the data on the device)", bytes,
           BATCH * N_IN * sizeof(float));
    tap_ok(b->fallback_nodes == a->fallback_nodes, "no node of the epoch ran on the CPU (%llu)",
           (unsigned long long)(b->fallback_nodes - a->fallback_nodes));
}

static void check_same(const char *what, const struct run *vk, const struct run *cpu) {
    double loss_gap = 0, metric_gap = 0;
    for (int e = 0; e < EPOCHS; e++) {
        loss_gap = fmax(loss_gap, rel_gap(vk->loss[e], cpu->loss[e]));
        metric_gap = fmax(metric_gap, rel_gap(vk->metric[e], cpu->metric[e]));
    }
    tap_ok(loss_gap < 1e-5, "%s: epoch losses equal the CPU's (%.6f vs %.6f, worst gap %.2g)",
           what, vk->loss[EPOCHS - 1], cpu->loss[EPOCHS - 1], loss_gap);
    const char *weighted = strcmp(what, "accuracy") ? "" : " with class weights";
    tap_ok(rel_gap(vk->refit_loss, cpu->refit_loss) < 1e-5, "%s: a second fit on other data%s "
           "equals the CPU's (%.6f vs %.6f)", what, weighted, vk->refit_loss, cpu->refit_loss);
    tap_ok(metric_gap < 1e-5, "%s: epoch metrics equal the CPU's (%.6f vs %.6f, worst gap %.2g)",
           what, vk->metric[EPOCHS - 1], cpu->metric[EPOCHS - 1], metric_gap);
}

/* Small writes kept for the next command buffer land in the order they were made, a memset
 * among them; a buffer freed with writes pending takes them along (nothing is written into
 * memory that another buffer may have by then). */
static void check_deferred_writes(ggml_backend_t vk) {
    struct ggml_init_params params = {4 * ggml_tensor_overhead(), NULL, true};
    struct ggml_context *ctx = ggml_init(params);
    struct ggml_tensor *t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 256);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, vk);
    float ones[128], twos[128], got[256];
    for (int i = 0; i < 128; i++) ones[i] = 1, twos[i] = 2;
    ggml_backend_tensor_set(t, ones, 0, sizeof ones);             /* [0, 128) = 1 */
    ggml_backend_tensor_set(t, twos, 64 * sizeof(float), sizeof twos); /* [64, 192) = 2 */
    ggml_backend_tensor_memset(t, 0, 160 * sizeof(float), 96 * sizeof(float)); /* [160, 256) = 0 */
    ggml_backend_tensor_get(t, got, 0, sizeof got);
    bool in_order = true;
    for (int i = 0; i < 256; i++) in_order &= got[i] == (i < 64 ? 1.0f : i < 160 ? 2.0f : 0.0f);
    tap_ok(in_order, "deferred writes and a memset land in the order they were made");
    float threes[256];
    for (int i = 0; i < 256; i++) threes[i] = 3;
    ggml_backend_tensor_set(t, threes, 0, sizeof threes);
    ggml_backend_tensor_get(t, got, 0, sizeof got);   /* done: the memory holds threes */
    ggml_backend_tensor_set(t, ones, 0, sizeof ones); /* pending when its buffer goes */
    ggml_backend_buffer_free(buf);
    struct ggml_context *ctx2 = ggml_init(params);
    struct ggml_tensor *t2 = ggml_new_tensor_1d(ctx2, GGML_TYPE_F32, 256);
    buf = ggml_backend_alloc_ctx_tensors(ctx2, vk); /* may get the same memory */
    ggml_backend_tensor_get(t2, got, 0, sizeof got);  /* the next command buffer: a read */
    bool dropped = true;
    for (int i = 0; i < 128; i++) dropped &= got[i] != 1.0f;
    tap_ok(dropped, "a write pending when its buffer is freed does not reach the next buffer");
    ggml_backend_buffer_free(buf);
    ggml_free(ctx2);
    ggml_free(ctx);
}


/* ggml-opt's batch of a dataset goes to a device tensor in one write per tensor (a write per
 * datapoint would cost a transfer each) and holds the datapoints the host batch holds. */
static void check_opt_batch(ggml_backend_t vk) {
    ggml_opt_dataset_t ds = ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, N_IN, N_CLASSES, N_DATA, 1);
    float *data = ggml_get_data_f32(ggml_opt_dataset_data(ds)), *labels = ggml_get_data_f32(ggml_opt_dataset_labels(ds));
    for (int i = 0; i < N_DATA * N_IN; i++) data[i] = (float)i;
    for (int i = 0; i < N_DATA * N_CLASSES; i++) labels[i] = (float)-i;
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 * ggml_tensor_overhead(), NULL, true});
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N_IN, BATCH);
    struct ggml_tensor *y = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N_CLASSES, BATCH);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, vk);
    struct ggmlc_counters a, b;
    ggmlc_counters_get(&a);
    ggml_opt_dataset_get_batch(ds, x, y, 3);
    ggmlc_counters_get(&b);
    static float got_x[BATCH * N_IN], got_y[BATCH * N_CLASSES], want_x[BATCH * N_IN], want_y[BATCH * N_CLASSES];
    ggml_backend_tensor_get(x, got_x, 0, sizeof got_x);
    ggml_backend_tensor_get(y, got_y, 0, sizeof got_y);
    ggml_opt_dataset_get_batch_host(ds, want_x, sizeof want_x, want_y, 3);
    tap_ok(b.writes_to_device - a.writes_to_device == 2, "ggml-opt's batch of %d datapoints goes up in %llu writes (2)", BATCH,
           (unsigned long long)(b.writes_to_device - a.writes_to_device));
    tap_ok(memcmp(got_x, want_x, sizeof got_x) == 0 && memcmp(got_y, want_y, sizeof got_y) == 0 && want_x[0] == 3 * BATCH * N_IN,
           "the device batch holds the datapoints and labels of the host batch");
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_opt_dataset_free(ds);
}

/* An epoch through ggml-opt (ggml_opt_epoch: a ggml program's training loop) of a 16-32-4 MLP
 * on backend (with the CPU behind it): the loss, accuracy and predictions, and the counters. */
struct opt_run {
    double loss, acc;
    int32_t pred[N_DATA];
    struct ggmlc_counters before, after;
    bool ok;
};

static struct opt_run opt_epoch(ggml_backend_t backend, ggml_backend_t cpu, const float *x, const float *y_onehot,
                                const char *route) {
    struct opt_run r = {.ok = false};
    setenv("GGMLC_OPT_DEVICE_DATA", route, 1);
    ggml_backend_t list[2] = {backend, cpu};
    ggml_backend_sched_t sched = ggml_backend_sched_new(list, NULL, backend == cpu ? 1 : 2, 1024, false, true);
    ggml_opt_dataset_t ds = ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, N_IN, N_CLASSES, N_DATA, 1);
    memcpy(ggml_get_data_f32(ggml_opt_dataset_data(ds)), x, sizeof(float) * N_DATA * N_IN);
    memcpy(ggml_get_data_f32(ggml_opt_dataset_labels(ds)), y_onehot, sizeof(float) * N_DATA * N_CLASSES);
    struct ggml_context *ctx_static = ggml_init((struct ggml_init_params){8 * ggml_tensor_overhead(), NULL, true});
    struct ggml_context *ctx_compute = ggml_init((struct ggml_init_params){32 * ggml_tensor_overhead(), NULL, true});
    struct ggml_tensor *in = ggml_new_tensor_2d(ctx_static, GGML_TYPE_F32, N_IN, BATCH);
    struct ggml_tensor *w1 = ggml_new_tensor_2d(ctx_static, GGML_TYPE_F32, N_IN, 32), *w2 = ggml_new_tensor_2d(ctx_static, GGML_TYPE_F32, 32, N_CLASSES);
    ggml_set_input(in);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx_static, backend);
    test_seed(3);
    static float w[32 * N_IN];
    for (int i = 0; i < 32 * N_IN; i++) w[i] = 0.3f * test_normal();
    ggml_backend_tensor_set(w1, w, 0, ggml_nbytes(w1));
    ggml_backend_tensor_set(w2, w, 0, ggml_nbytes(w2));
    ggml_set_param(w1), ggml_set_param(w2);
    struct ggml_tensor *logits = ggml_mul_mat(ctx_compute, w2, ggml_relu(ctx_compute, ggml_mul_mat(ctx_compute, w1, in)));
    struct ggml_opt_params p = ggml_opt_default_params(sched, GGML_OPT_LOSS_TYPE_CROSS_ENTROPY);
    p.ctx_compute = ctx_compute, p.inputs = in, p.outputs = logits;
    ggml_opt_context_t opt = ggml_opt_init(p);
    ggml_opt_result_t res = ggml_opt_result_init();
    if (opt && res) {
        ggmlc_counters_get(&r.before);
        ggml_opt_epoch(opt, ds, res, NULL, N_DATA, NULL, NULL);
        ggmlc_counters_get(&r.after);
        double unc;
        int64_t n;
        ggml_opt_result_loss(res, &r.loss, &unc);
        ggml_opt_result_accuracy(res, &r.acc, &unc);
        ggml_opt_result_ndata(res, &n);
        ggml_opt_result_pred(res, r.pred);
        r.ok = n == N_DATA && ggmlc_last_status() == GGMLC_OK;
    }
    ggml_opt_result_free(res);
    ggml_opt_free(opt);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx_compute), ggml_free(ctx_static);
    ggml_opt_dataset_free(ds);
    ggml_backend_sched_free(sched);
    unsetenv("GGMLC_OPT_DEVICE_DATA");
    return r;
}

/* Through ggml-opt a step is one submit and one wait: the loss, number correct and predictions
 * (graph outputs) come back with the graph's command buffer.  ggml_opt_epoch copies the dataset
 * up at its start and each step's graph gathers its batch there (core/opt-gather.c): what goes
 * up per step is the batch's sample numbers, the hyperparameters and the gradients' reset, not
 * the batch.  The results equal those of batches copied up from the host, and the CPU's. */
static void check_opt_epoch(ggml_backend_t vk, const float *x, const float *y_onehot) {
    ggml_backend_t cpu = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    static struct opt_run on_vk, on_vk_host, on_cpu;
    on_vk = opt_epoch(vk, cpu, x, y_onehot, "auto"), on_cpu = opt_epoch(cpu, cpu, x, y_onehot, "auto");
    on_vk_host = opt_epoch(vk, cpu, x, y_onehot, "0");
    ggml_backend_free(cpu);
    if (!tap_ok(on_vk.ok && on_cpu.ok && on_vk_host.ok, "an epoch through ggml-opt runs on Vulkan (both routes) and on the CPU (%s)",
                ggmlc_last_error()))
        return;
    const struct ggmlc_counters *a = &on_vk.before, *b = &on_vk.after;
    const double reads = (double)(b->reads_from_device - a->reads_from_device) / STEPS;
    const double waits = (double)(b->waits - a->waits) / STEPS;
    const double submits = (double)(b->submits - a->submits) / STEPS;
    tap_ok(reads == 3 && waits == 1 && submits == 1, "ggml-opt reads each step's results back with its graph: %.2f reads, %.2f submits, %.2f waits per step",
           reads, submits, waits);
    const size_t dataset_bytes = sizeof(float) * N_DATA * (N_IN + N_CLASSES), batch_bytes = sizeof(float) * BATCH * (N_IN + N_CLASSES);
    const double writes = (double)(b->writes_to_device - a->writes_to_device - 2) / STEPS;
    const double bytes = (double)(b->bytes_to_device - a->bytes_to_device - dataset_bytes) / STEPS;
    tap_ok(writes <= 3 && bytes < batch_bytes / 4, "after the dataset's copy (2 writes, %zu bytes) a step writes %.2f times, %.0f bytes "
           "(its batch: %zu bytes)", dataset_bytes, writes, bytes, batch_bytes);
    const double host_bytes = (double)(on_vk_host.after.bytes_to_device - on_vk_host.before.bytes_to_device) / STEPS;
    tap_ok(host_bytes >= batch_bytes, "with GGMLC_OPT_DEVICE_DATA=0 each step writes its batch (%.0f bytes)", host_bytes);
    tap_ok(on_vk.loss == on_vk_host.loss && on_vk.acc == on_vk_host.acc && memcmp(on_vk.pred, on_vk_host.pred, sizeof on_vk.pred) == 0,
           "gathered batches give the loss (%.6f), accuracy and predictions of batches from the host", on_vk.loss);
    tap_ok(rel_gap(on_vk.loss, on_cpu.loss) < 1e-5 && on_vk.acc == on_cpu.acc && memcmp(on_vk.pred, on_cpu.pred, sizeof on_vk.pred) == 0,
           "ggml-opt's loss (%.6f, CPU %.6f), accuracy (%.4f) and predictions equal the CPU's", on_vk.loss, on_cpu.loss, on_vk.acc);
}

int main(void) {
    test_vulkan_env();
    ggmlc_init();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) return tap_skip_all("no Vulkan device");
    const char *dev = ggml_backend_dev_name(ggml_backend_reg_dev_get(reg, 0));
    static float x[N_DATA * N_IN], y[N_DATA], y_onehot[N_DATA * N_CLASSES];
    make_data(x, y, y_onehot);
    const struct run vk = train(dev, false, x, y), cpu = train("cpu", false, x, y);
    if (tap_ok(vk.ok && cpu.ok, "an MLP trains on %s and on the CPU", dev)) {
        check_counts(&vk);
        check_same("accuracy", &vk, &cpu);
    }
    const struct run vk_mse = train(dev, true, x, y_onehot);
    const struct run cpu_mse = train("cpu", true, x, y_onehot);
    if (tap_ok(vk_mse.ok && cpu_mse.ok, "an MLP with MSE trains on %s and on the CPU", dev))
        check_same("mean absolute error", &vk_mse, &cpu_mse);
    ggml_backend_t vk_backend = ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), NULL);
    if (tap_ok(vk_backend != NULL, "the Vulkan backend starts")) {
        check_deferred_writes(vk_backend);
        check_opt_batch(vk_backend);
        check_opt_epoch(vk_backend, x, y_onehot);
    }
    ggml_backend_free(vk_backend);
    ggmlc_shutdown();
    return tap_done();
}
