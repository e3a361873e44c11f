/*
 * train-epoch-opt.c - `ggmlc-bench train-epoch --api opt`: the MLP of train-epoch (784-256-128-10,
 * ReLU, cross-entropy, AdamW 1e-3) trained through ggml's own training API, ggml-opt
 * (ggml_opt_init and ggml_opt_epoch over a ggml_opt_dataset, shuffled each epoch as
 * ggml_opt_fit does), on a named backend with the CPU behind it in the scheduler: what a ggml
 * program's training loop costs on ggmlc, beside the model API's (issue 24 wants both fast).
 * With more than one epoch, ggml_opt_fit's epoch is timed too (the same MLP, trained on).
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
#include "counters.h"
#include "train-epoch.h"
#include "../tools/tool-options.h"

enum { OPT_LAYERS = 3 };
static const int64_t opt_arch[OPT_LAYERS + 1] = {784, 256, 128, 10};

struct opt_mlp {
    struct ggml_context *ctx_static, *ctx_compute;
    ggml_backend_buffer_t buffer;
    struct ggml_tensor *inputs, *logits;
};

/* ggml-opt's dataset of d's first whole batches: 784 floats per image, labels one-hot. */
static ggml_opt_dataset_t opt_dataset(const struct ggmlc_dataset *d, int64_t batch) {
    const int64_t n = d->n / batch * batch;
    ggml_opt_dataset_t ds = n > 0 ? ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, 784, 10, n, 1) : NULL;
    if (!ds) return NULL;
    memcpy(ggml_get_data_f32(ggml_opt_dataset_data(ds)), d->x, sizeof(float) * 784 * (size_t)n);
    float *y = ggml_get_data_f32(ggml_opt_dataset_labels(ds));
    memset(y, 0, sizeof(float) * 10 * (size_t)n);
    for (int64_t i = 0; i < n; i++) y[i * 10 + (int64_t)d->y[i]] = 1.0f;
    return ds;
}

/* Uniform weights in +-1/sqrt(fan in) (PyTorch's default range) from a fixed LCG; zero biases. */
static void fill_layer(struct ggml_tensor *w, struct ggml_tensor *b, uint64_t *state) {
    const int64_t n = ggml_nelements(w);
    float *v = malloc(sizeof(float) * (size_t)n), *z = calloc((size_t)b->ne[0], sizeof(float));
    const float bound = 1.0f / sqrtf((float)w->ne[0]);
    for (int64_t i = 0; v && i < n; i++) {
        *state = *state * 6364136223846793005u + 1442695040888963407u;
        v[i] = bound * (2.0f * (float)(*state >> 40) / (float)(1u << 24) - 1.0f);
    }
    if (v && z) ggml_backend_tensor_set(w, v, 0, ggml_nbytes(w)), ggml_backend_tensor_set(b, z, 0, ggml_nbytes(b));
    free(v), free(z);
}

static bool opt_mlp_init(struct opt_mlp *m, ggml_backend_t backend, int64_t batch, unsigned seed) {
    memset(m, 0, sizeof *m);
    m->ctx_static = ggml_init((struct ggml_init_params){16 * ggml_tensor_overhead(), NULL, true});
    m->ctx_compute = ggml_init((struct ggml_init_params){64 * ggml_tensor_overhead(), NULL, true});
    if (!m->ctx_static || !m->ctx_compute) return false;
    m->inputs = ggml_new_tensor_2d(m->ctx_static, GGML_TYPE_F32, opt_arch[0], batch);
    ggml_set_input(m->inputs);
    struct ggml_tensor *w[OPT_LAYERS], *b[OPT_LAYERS];
    for (int l = 0; l < OPT_LAYERS; l++) {
        w[l] = ggml_new_tensor_2d(m->ctx_static, GGML_TYPE_F32, opt_arch[l], opt_arch[l + 1]);
        b[l] = ggml_new_tensor_1d(m->ctx_static, GGML_TYPE_F32, opt_arch[l + 1]);
    }
    if (!(m->buffer = ggml_backend_alloc_ctx_tensors(m->ctx_static, backend))) return false;
    uint64_t state = seed * 2654435761u + 1;
    struct ggml_tensor *x = m->inputs;
    for (int l = 0; l < OPT_LAYERS; l++) {
        fill_layer(w[l], b[l], &state);
        ggml_set_param(w[l]), ggml_set_param(b[l]);
        x = ggml_add(m->ctx_compute, ggml_mul_mat(m->ctx_compute, w[l], x), b[l]);
        if (l + 1 < OPT_LAYERS) x = ggml_relu(m->ctx_compute, x);
    }
    m->logits = x;
    return true;
}

static void opt_mlp_free(struct opt_mlp *m) {
    if (m->buffer) ggml_backend_buffer_free(m->buffer);
    if (m->ctx_static) ggml_free(m->ctx_static);
    if (m->ctx_compute) ggml_free(m->ctx_compute);
}

/* ggml's default AdamW at train-epoch's learning rate, 1e-3, without weight decay. */
static struct ggml_opt_optimizer_params adamw_1e3(void *userdata) {
    struct ggml_opt_optimizer_params p = ggml_opt_get_default_optimizer_params(userdata);
    p.adamw.alpha = 1e-3f;
    p.adamw.wd = 0.0f;
    return p;
}

/* Epochs through ggml_opt_epoch; prints each and the mean of those after the first. */
static int run_opt_epochs(ggml_opt_context_t opt, ggml_opt_dataset_t ds, int epochs, int64_t steps) {
    ggml_opt_result_t result = ggml_opt_result_init();
    double later = 0;
    for (int e = 0; result && e < epochs; e++) {
        struct ggmlc_counters c0, c1;
        ggml_opt_result_reset(result);
        ggml_opt_dataset_shuffle(opt, ds, -1);
        ggmlc_counters_get(&c0);
        const int64_t t0 = ggml_time_us();
        ggml_opt_epoch(opt, ds, result, NULL, ggml_opt_dataset_ndata(ds), NULL, NULL);
        const double s = (double)(ggml_time_us() - t0) * 1e-6;
        ggmlc_counters_get(&c1);
        double loss, unc, acc;
        ggml_opt_result_loss(result, &loss, &unc);
        ggml_opt_result_accuracy(result, &acc, &unc);
        if (ggmlc_last_status() != GGMLC_OK) break;
        bench_print_epoch(e + 1, s, steps, loss, acc, &c0, &c1);
        if (e > 0 || epochs == 1) later += s;
    }
    ggml_opt_result_free(result);
    if (!result || ggmlc_last_status() != GGMLC_OK) {
        tool_fail("ggmlc-bench", "ggml-opt training failed: %s", ggmlc_last_error());
        return 1;
    }
    const double mean = later / (epochs > 1 ? epochs - 1 : 1);
    bench_print_epoch_mean(mean, epochs > 1, steps);
    return 0;
}

/* An epoch of ggml_opt_fit (which makes its own optimization context and copies the dataset to
 * the device once, not per epoch): the time of a fit of 1 + epochs epochs less that of a fit of
 * one, over epochs, so that the setup and the first epoch (command buffers recorded) cancel. */
static int print_fit_epoch(ggml_backend_sched_t sched, const struct opt_mlp *m, ggml_opt_dataset_t ds, int epochs) {
    double seconds[2];
    for (int i = 0; i < 2; i++) {
        const int64_t t0 = ggml_time_us();
        ggml_opt_fit(sched, m->ctx_compute, m->inputs, m->logits, ds, GGML_OPT_LOSS_TYPE_CROSS_ENTROPY,
                     GGML_OPT_OPTIMIZER_TYPE_ADAMW, adamw_1e3, i == 0 ? 1 : 1 + epochs, m->inputs->ne[1], 0.0f, true);
        seconds[i] = (double)(ggml_time_us() - t0) * 1e-6;
    }
    if (ggmlc_last_status() != GGMLC_OK) {
        tool_fail("ggmlc-bench", "ggml_opt_fit failed: %s", ggmlc_last_error());
        return 1;
    }
    printf("ggml_opt_fit: epoch time %.3f s (fits of 1 and %d epochs: %.3f s, %.3f s)\n", (seconds[1] - seconds[0]) / epochs,
           1 + epochs, seconds[0], seconds[1]);
    return 0;
}

int bench_train_epoch_opt(const char *backend_name, int64_t batch, int epochs, unsigned seed, const struct ggmlc_dataset *d) {
    ggml_backend_t backend = backend_name ? ggml_backend_init_by_name(backend_name, NULL) : ggml_backend_init_best();
    ggml_backend_t cpu = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    const bool on_cpu = backend && ggml_backend_dev_type(ggml_backend_get_device(backend)) == GGML_BACKEND_DEVICE_TYPE_CPU;
    ggml_backend_t list[2] = {backend, cpu};
    ggml_backend_sched_t sched = backend && cpu ? ggml_backend_sched_new(list, NULL, on_cpu ? 1 : 2, 4096, false, true) : NULL;
    ggml_opt_dataset_t ds = opt_dataset(d, batch);
    struct opt_mlp m = {0};
    int rc = 1;
    if (!sched || !ds || !opt_mlp_init(&m, backend, batch, seed)) {
        tool_fail("ggmlc-bench", "cannot set up ggml-opt on %s: %s", backend_name ? backend_name : "the best backend", ggmlc_last_error());
    } else {
        struct ggml_opt_params p = ggml_opt_default_params(sched, GGML_OPT_LOSS_TYPE_CROSS_ENTROPY);
        p.ctx_compute = m.ctx_compute, p.inputs = m.inputs, p.outputs = m.logits;
        p.get_opt_pars = adamw_1e3;
        ggml_opt_context_t opt = ggml_opt_init(p);
        const int64_t steps = ggml_opt_dataset_ndata(ds) / batch;
        printf("train-epoch mlp through ggml-opt, batch %lld, %lld samples, backend %s\n", (long long)batch,
               (long long)ggml_opt_dataset_ndata(ds), ggml_backend_name(backend));
        if (opt) rc = run_opt_epochs(opt, ds, epochs, steps);
        else tool_fail("ggmlc-bench", "ggml_opt_init: %s", ggmlc_last_error());
        if (opt) ggml_opt_free(opt);
        if (rc == 0 && epochs > 1) rc = print_fit_epoch(sched, &m, ds, epochs - 1);
    }
    opt_mlp_free(&m);
    if (ds) ggml_opt_dataset_free(ds);
    if (sched) ggml_backend_sched_free(sched);
    if (cpu) ggml_backend_free(cpu);
    if (backend) ggml_backend_free(backend);
    return rc;
}
