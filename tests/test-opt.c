/*
 * test-opt.c - ggml-opt: datasets, gradient accumulation, and a small MLP
 * trained with ggml_opt_fit on fixed data until its loss falls below a bound.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-opt.h"
#include "ggmlc.h"
#include "testutil.h"

enum { N_IN = 2, N_HIDDEN = 32, N_CLASSES = 4, N_DATA = 512, BATCH = 32 };

/* Four Gaussian blobs on a circle: class k centred at angle k*pi/2. */
static void make_blobs(ggml_opt_dataset_t ds) {
    float *x = ggml_get_data_f32(ggml_opt_dataset_data(ds));
    float *y = ggml_opt_dataset_labels(ds) ? ggml_get_data_f32(ggml_opt_dataset_labels(ds)) : NULL;
    for (int64_t i = 0; i < ggml_opt_dataset_ndata(ds); i++) {
        const int k = i % N_CLASSES;
        x[2 * i + 0] = 2.0f * cosf((float)k * (float)M_PI / 2) + 0.5f * test_normal();
        x[2 * i + 1] = 2.0f * sinf((float)k * (float)M_PI / 2) + 0.5f * test_normal();
        for (int c = 0; y && c < N_CLASSES; c++) y[N_CLASSES * i + c] = c == k ? 1.0f : 0.0f;
    }
}

static void test_dataset(void) {
    ggml_opt_dataset_t ds = ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, 3, 1, 8, 2);
    float *x = ggml_get_data_f32(ggml_opt_dataset_data(ds)), *y = ggml_get_data_f32(ggml_opt_dataset_labels(ds));
    for (int i = 0; i < 8; i++) {
        for (int j = 0; j < 3; j++) x[3 * i + j] = (float)(10 * i + j);
        y[i] = (float)i;
    }
    float batch[3 * 4], labels[4];
    ggml_opt_dataset_get_batch_host(ds, batch, sizeof batch, labels, 1);
    tap_ok(batch[0] == 40 && batch[11] == 72 && labels[0] == 4 && labels[3] == 7, "get_batch_host copies batch 1 in order");
    ggml_opt_dataset_get_batch_host(ds, batch, sizeof batch, labels, 2);
    tap_ok(ggmlc_last_status() == GGMLC_ERR_INVALID_ARG, "a batch past the end is an error, not a read out of bounds");
    ggml_opt_dataset_free(ds);
}

/* As in ggml: ndata need not be a multiple of the shard size; batches are made of the whole
 * shards, the datapoints after them are never in a batch. */
static void test_dataset_partial_shard(void) {
    ggml_opt_dataset_t ds = ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, 3, 1, 7, 2);
    tap_ok(ds != NULL && ggml_opt_dataset_ndata(ds) == 7, "7 datapoints in shards of 2 are accepted");
    if (!ds) return;
    float *x = ggml_get_data_f32(ggml_opt_dataset_data(ds)), *y = ggml_get_data_f32(ggml_opt_dataset_labels(ds));
    for (int i = 0; i < 7; i++) {
        for (int j = 0; j < 3; j++) x[3 * i + j] = (float)(10 * i + j);
        y[i] = (float)i;
    }
    float batch[3 * 2], labels[2];
    ggmlc_clear_error();
    ggml_opt_dataset_get_batch_host(ds, batch, sizeof batch, labels, 2);
    tap_ok(ggmlc_last_status() == GGMLC_OK && batch[0] == 40 && batch[5] == 52 && labels[1] == 5,
           "the third whole shard is batch 2");
    ggml_opt_dataset_get_batch_host(ds, batch, sizeof batch, labels, 3);
    tap_ok(ggmlc_last_status() == GGMLC_ERR_INVALID_ARG, "datapoint 7, in no whole shard, is in no batch");

    /* ggml checks a batch tensor's type and byte size only: a flat one is fine */
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 * ggml_tensor_overhead() + 1024, NULL, false});
    struct ggml_tensor *flat = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3 * 4), *flat_labels = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggmlc_clear_error();
    ggml_opt_dataset_get_batch(ds, flat, flat_labels, 0);
    const float *fx = ggml_get_data_f32(flat), *fy = ggml_get_data_f32(flat_labels);
    tap_ok(ggmlc_last_status() == GGMLC_OK && fx[0] == 0 && fx[11] == 32 && fy[0] == 0 && fy[3] == 3,
           "a flat batch tensor of two shards' bytes gets batch 0");
    ggml_opt_dataset_get_batch(ds, flat, flat_labels, 1);
    tap_ok(ggmlc_last_status() == GGMLC_ERR_INVALID_ARG, "batch 1 of two shards would need the partial fourth shard: an error");
    struct ggml_tensor *odd = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3 * 3);
    ggml_opt_dataset_get_batch(ds, odd, NULL, 0);
    tap_ok(ggmlc_last_status() == GGMLC_ERR_SHAPE, "a batch that is not whole shards is an error");
    ggml_free(ctx);
    ggml_opt_dataset_free(ds);
}

struct mlp {
    struct ggml_context *ctx_static, *ctx_compute;
    ggml_backend_buffer_t buf;
    struct ggml_tensor *inputs, *logits, *w1, *b1, *w2, *b2;
};

static void mlp_init(struct mlp *m, ggml_backend_t backend) {
    m->ctx_static = ggml_init((struct ggml_init_params){16 * ggml_tensor_overhead(), NULL, true});
    m->inputs = ggml_new_tensor_2d(m->ctx_static, GGML_TYPE_F32, N_IN, BATCH);
    m->w1 = ggml_new_tensor_2d(m->ctx_static, GGML_TYPE_F32, N_IN, N_HIDDEN);
    m->b1 = ggml_new_tensor_1d(m->ctx_static, GGML_TYPE_F32, N_HIDDEN);
    m->w2 = ggml_new_tensor_2d(m->ctx_static, GGML_TYPE_F32, N_HIDDEN, N_CLASSES);
    m->b2 = ggml_new_tensor_1d(m->ctx_static, GGML_TYPE_F32, N_CLASSES);
    ggml_set_input(m->inputs);
    m->buf = ggml_backend_alloc_ctx_tensors(m->ctx_static, backend);
    struct ggml_tensor *params[] = {m->w1, m->b1, m->w2, m->b2};
    for (int i = 0; i < 4; i++) {
        const int64_t n = ggml_nelements(params[i]);
        float *v = malloc(sizeof(float) * (size_t)n);
        const float scale = 1.0f / sqrtf((float)params[i]->ne[0]);
        for (int64_t j = 0; j < n; j++) v[j] = scale * test_uniform(-1, 1);
        ggml_backend_tensor_set(params[i], v, 0, sizeof(float) * (size_t)n);
        free(v);
        ggml_set_param(params[i]);
    }
    m->ctx_compute = ggml_init((struct ggml_init_params){64 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    struct ggml_tensor *h = ggml_tanh(m->ctx_compute, ggml_add(m->ctx_compute, ggml_mul_mat(m->ctx_compute, m->w1, m->inputs), m->b1));
    m->logits = ggml_add(m->ctx_compute, ggml_mul_mat(m->ctx_compute, m->w2, h), m->b2);
}

static void mlp_free(struct mlp *m) {
    ggml_backend_buffer_free(m->buf);
    ggml_free(m->ctx_static);
    ggml_free(m->ctx_compute);
}

static struct ggml_opt_optimizer_params fast_adamw(void *userdata) {
    struct ggml_opt_optimizer_params p = ggml_opt_get_default_optimizer_params(userdata);
    p.adamw.alpha = 0.02f;
    return p;
}

static void test_fit(ggml_backend_sched_t sched, ggml_backend_t backend) {
    ggml_opt_dataset_t ds = ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, N_IN, N_CLASSES, N_DATA, 1);
    make_blobs(ds);
    struct mlp m;
    mlp_init(&m, backend);
    ggml_opt_fit(sched, m.ctx_compute, m.inputs, m.logits, ds, GGML_OPT_LOSS_TYPE_CROSS_ENTROPY, GGML_OPT_OPTIMIZER_TYPE_ADAMW,
                 fast_adamw, 20, BATCH, 0.0f, true);

    /* evaluate the trained model on the whole dataset */
    struct ggml_opt_params params = ggml_opt_default_params(sched, GGML_OPT_LOSS_TYPE_CROSS_ENTROPY);
    params.ctx_compute = m.ctx_compute;
    params.inputs = m.inputs;
    params.outputs = m.logits;
    params.build_type = GGML_OPT_BUILD_TYPE_FORWARD;
    ggml_opt_context_t opt = ggml_opt_init(params);
    ggml_opt_result_t result = ggml_opt_result_init();
    ggml_opt_epoch(opt, ds, NULL, result, 0, NULL, NULL);
    double loss, acc, unc;
    int64_t ndata;
    ggml_opt_result_loss(result, &loss, &unc);
    ggml_opt_result_accuracy(result, &acc, NULL);
    ggml_opt_result_ndata(result, &ndata);
    tap_ok(ndata == N_DATA, "evaluation saw all %d datapoints", N_DATA);
    tap_ok(loss < 0.25, "MLP trained with ggml_opt_fit: cross-entropy %.4f < 0.25", loss);
    tap_ok(acc > 0.9, "MLP accuracy %.1f%% > 90%%", 100 * acc);
    ggml_opt_result_free(result);
    ggml_opt_free(opt);
    mlp_free(&m);
    ggml_opt_dataset_free(ds);
}

/* Accumulating the gradients of two identical batches over opt_period = 2 must give the step
 * one batch gives with opt_period = 1: as in ggml, a loss per datapoint (MSE) is averaged over
 * the period (same learning rate), a SUM loss summed (the single batch needs twice the rate).
 * The reported loss: the mean over the batches, for SUM their sum. */
static void test_accumulation(ggml_backend_sched_t sched, ggml_backend_t backend, enum ggml_opt_loss_type loss_type) {
    const bool sum = loss_type == GGML_OPT_LOSS_TYPE_SUM;
    const char *name = sum ? "SUM" : "MSE";
    float after[2][N_IN * N_HIDDEN], before[N_IN * N_HIDDEN];
    double loss[2];
    for (int run = 0; run < 2; run++) {
        const int period = run == 0 ? 2 : 1;
        test_seed(99);
        /* SUM has no labels: its dataset neither (ggml requires the two to agree; ggmlc would ignore them) */
        ggml_opt_dataset_t ds = ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, N_IN, sum ? 0 : N_CLASSES, period * BATCH, 1);
        make_blobs(ds);
        if (period == 2) { /* the second batch repeats the first */
            float *x = ggml_get_data_f32(ggml_opt_dataset_data(ds));
            memcpy(x + N_IN * BATCH, x, sizeof(float) * N_IN * BATCH);
            if (!sum) {
                float *y = ggml_get_data_f32(ggml_opt_dataset_labels(ds));
                memcpy(y + N_CLASSES * BATCH, y, sizeof(float) * N_CLASSES * BATCH);
            }
        }
        test_seed(7); /* identical initial weights in both runs */
        struct mlp m;
        mlp_init(&m, backend);
        ggml_backend_tensor_get(m.w1, before, 0, sizeof before);
        struct ggml_opt_optimizer_params sgd = ggml_opt_get_default_optimizer_params(NULL);
        sgd.sgd.alpha = sum ? 0.05f * (float)(3 - period) : 0.5f;
        sgd.sgd.wd = 0.0f; /* the two runs differ in the rate: decay would tell them apart */
        struct ggml_opt_params params = ggml_opt_default_params(sched, loss_type);
        params.ctx_compute = m.ctx_compute;
        params.inputs = m.inputs;
        params.outputs = sum ? ggml_sqr(m.ctx_compute, m.logits) : m.logits;
        params.optimizer = GGML_OPT_OPTIMIZER_TYPE_SGD;
        params.get_opt_pars = ggml_opt_get_constant_optimizer_params;
        params.get_opt_pars_ud = &sgd;
        params.opt_period = period;
        ggml_opt_context_t opt = ggml_opt_init(params);
        ggml_opt_result_t result = ggml_opt_result_init();
        ggml_opt_epoch(opt, ds, result, NULL, period * BATCH, NULL, NULL);
        ggml_opt_result_loss(result, &loss[run], NULL);
        ggml_backend_tensor_get(m.w1, after[run], 0, sizeof after[run]);
        ggml_opt_result_free(result);
        ggml_opt_free(opt);
        mlp_free(&m);
        ggml_opt_dataset_free(ds);
    }
    tap_ok(max_abs_diff(after[1], before, N_IN * N_HIDDEN) > 1e-3, "%s: the SGD step moved the weights (by up to %.2g)", name,
           max_abs_diff(after[1], before, N_IN * N_HIDDEN));
    tap_ok(max_abs_diff(after[0], after[1], N_IN * N_HIDDEN) < 1e-6, "%s: gradient accumulation over opt_period = 2 (max diff %.2g)",
           name, max_abs_diff(after[0], after[1], N_IN * N_HIDDEN));
    const double want = sum ? 2 * loss[1] : loss[1];
    tap_ok(fabs(loss[0] - want) <= 1e-5 * fabs(want), "%s: the loss of two identical batches is %s: %.6g (one batch: %.6g)", name,
           sum ? "their sum" : "their mean", loss[0], loss[1]);
}

/* ggml_opt_epoch's two routes for the batches: copied up from the host dataset each step
 * (GGMLC_OPT_DEVICE_DATA=0), or gathered by the graph from a copy of the dataset made at the
 * epoch's start (=1 forces it on the CPU too).  The gathering route shows in the graph: GET_ROWS
 * nodes, which the MLP has none of, counted by the scheduler's eval callback. */
struct route_run {
    double loss[2], acc[2], val_loss[2];
    int32_t pred[N_DATA];
    float w1[N_IN * N_HIDDEN], last_inputs[N_IN * BATCH];
    int get_rows;
};

static bool count_get_rows(struct ggml_tensor *t, bool ask, void *user) {
    if (ask && t->op == GGML_OP_GET_ROWS) ++*(int *)user;
    return false;
}

/* A route chosen (GGMLC_OPT_DEVICE_DATA), the blobs in shards of shard datapoints, an MLP. */
static ggml_opt_dataset_t route_setup(const char *route, uint64_t seed, int64_t shard, struct mlp *m, ggml_backend_t backend) {
    setenv("GGMLC_OPT_DEVICE_DATA", route, 1);
    test_seed(seed);
    ggml_opt_dataset_t ds = ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, N_IN, N_CLASSES, N_DATA, shard);
    make_blobs(ds);
    mlp_init(m, backend);
    return ds;
}

/* Two epochs through ggml_opt_epoch: shuffled shards of 2 datapoints, opt_period 2, a quarter
 * held out for validation, and the dataset changed between the epochs (the copy must follow). */
static struct route_run run_route(ggml_backend_sched_t sched, ggml_backend_t backend, const char *route) {
    struct route_run r = {.get_rows = 0};
    struct mlp m;
    ggml_opt_dataset_t ds = route_setup(route, 5, 2, &m, backend);
    struct ggml_opt_params params = ggml_opt_default_params(sched, GGML_OPT_LOSS_TYPE_CROSS_ENTROPY);
    params.ctx_compute = m.ctx_compute, params.inputs = m.inputs, params.outputs = m.logits;
    params.get_opt_pars = fast_adamw;
    params.opt_period = 2;
    ggml_opt_context_t opt = ggml_opt_init(params);
    ggml_opt_result_t train = ggml_opt_result_init(), val = ggml_opt_result_init();
    ggml_backend_sched_set_eval_callback(sched, count_get_rows, &r.get_rows);
    for (int e = 0; e < 2; e++) {
        ggml_opt_result_reset(train), ggml_opt_result_reset(val);
        ggml_opt_dataset_shuffle(opt, ds, N_DATA * 3 / 4);
        ggml_opt_epoch(opt, ds, train, val, N_DATA * 3 / 4, NULL, NULL);
        ggml_opt_result_loss(train, &r.loss[e], NULL);
        ggml_opt_result_accuracy(train, &r.acc[e], NULL);
        ggml_opt_result_loss(val, &r.val_loss[e], NULL);
        ggml_get_data_f32(ggml_opt_dataset_data(ds))[0] += 5.0f; /* seen by the next epoch */
    }
    ggml_backend_sched_set_eval_callback(sched, NULL, NULL);
    ggml_opt_result_pred(train, r.pred);
    ggml_backend_tensor_get(m.w1, r.w1, 0, sizeof r.w1);
    ggml_backend_tensor_get(m.inputs, r.last_inputs, 0, sizeof r.last_inputs);
    ggml_opt_result_free(train), ggml_opt_result_free(val);
    ggml_opt_free(opt);
    mlp_free(&m);
    ggml_opt_dataset_free(ds);
    unsetenv("GGMLC_OPT_DEVICE_DATA");
    return r;
}

/* ggml_opt_fit over 3 epochs (the dataset copied once) on a route: the weights it ends with. */
static int fit_route(ggml_backend_sched_t sched, ggml_backend_t backend, const char *route, float *w1) {
    int get_rows = 0;
    struct mlp m;
    ggml_opt_dataset_t ds = route_setup(route, 6, 1, &m, backend);
    ggml_backend_sched_set_eval_callback(sched, count_get_rows, &get_rows);
    ggml_opt_fit(sched, m.ctx_compute, m.inputs, m.logits, ds, GGML_OPT_LOSS_TYPE_CROSS_ENTROPY, GGML_OPT_OPTIMIZER_TYPE_ADAMW,
                 fast_adamw, 3, BATCH, 0.25f, true);
    ggml_backend_sched_set_eval_callback(sched, NULL, NULL);
    ggml_backend_tensor_get(m.w1, w1, 0, sizeof(float) * N_IN * N_HIDDEN);
    mlp_free(&m);
    ggml_opt_dataset_free(ds);
    unsetenv("GGMLC_OPT_DEVICE_DATA");
    return get_rows;
}

static void test_gather_routes(ggml_backend_sched_t sched, ggml_backend_t backend) {
    static struct route_run host, gathered;
    host = run_route(sched, backend, "0");
    gathered = run_route(sched, backend, "1");
    tap_ok(ggmlc_last_status() == GGMLC_OK, "both routes train (%s)", ggmlc_last_error());
    tap_ok(host.get_rows == 0 && gathered.get_rows > 0, "the batches come from the host on one route (%d gathers), "
           "from the graph on the other (%d)", host.get_rows, gathered.get_rows);
    bool same = true;
    for (int e = 0; e < 2; e++)
        same &= host.loss[e] == gathered.loss[e] && host.acc[e] == gathered.acc[e] && host.val_loss[e] == gathered.val_loss[e];
    tap_ok(same, "gathered batches give the same losses and accuracies (epoch 2: training %.6f, %.4f, validation %.6f)",
           gathered.loss[1], gathered.acc[1], gathered.val_loss[1]);
    tap_ok(memcmp(host.pred, gathered.pred, sizeof host.pred) == 0 && memcmp(host.w1, gathered.w1, sizeof host.w1) == 0,
           "and the same predictions and weights, bit for bit");
    tap_ok(memcmp(host.last_inputs, gathered.last_inputs, sizeof host.last_inputs) == 0,
           "the inputs hold the last batch afterwards on both routes");
    tap_ok(host.loss[1] != host.loss[0], "the epochs differ (%.6f, %.6f)", host.loss[0], host.loss[1]);
    float fit_host[N_IN * N_HIDDEN], fit_gathered[N_IN * N_HIDDEN];
    const int fit_gathers = fit_route(sched, backend, "1", fit_gathered);
    tap_ok(fit_route(sched, backend, "0", fit_host) == 0 && fit_gathers > 0 && ggmlc_last_status() == GGMLC_OK &&
           memcmp(fit_host, fit_gathered, sizeof fit_host) == 0,
           "ggml_opt_fit (one copy for its 3 epochs, %d gathers) ends with the same weights on both routes", fit_gathers);
}

/* ggml_opt_result_loss of no batch at all is 0, as in ggml. */
static void test_empty_result(void) {
    ggml_opt_result_t r = ggml_opt_result_init();
    double loss = -1, unc = 0;
    ggml_opt_result_loss(r, &loss, &unc);
    tap_ok(loss == 0.0 && isnan(unc), "the loss of no batch is 0 with an unknown uncertainty");
    ggml_opt_result_free(r);
}

int main(void) {
    test_seed(42);
    test_dataset();
    test_dataset_partial_shard();
    test_empty_result();
    ggml_backend_t backend = ggml_backend_cpu_init();
    if (!backend) return tap_skip_all("no CPU backend");
    ggml_backend_sched_t sched = ggml_backend_sched_new(&backend, NULL, 1, 16 * GGML_DEFAULT_GRAPH_SIZE, false, true);
    test_fit(sched, backend);
    test_accumulation(sched, backend, GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR);
    test_accumulation(sched, backend, GGML_OPT_LOSS_TYPE_SUM);
    test_gather_routes(sched, backend);
    ggml_backend_sched_free(sched);
    ggml_backend_free(backend);
    return tap_done();
}
