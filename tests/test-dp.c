/*
 * test-dp.c - data-parallel training (ggmlc-dp.h) in one process.
 *
 * The thread communicator's all-reduce against hand-computed sums, with identical bits on every
 * member; its timeout and abort (no hang); the gradient all-reduce of tensors in several buckets.
 * Then the model API: two CPU replicas (one thread each) trained for 20 steps end with the
 * weights of one model trained by ggmlc_model_fit on the whole batches (MLP and CNN, equal and
 * unequal shares); two "processes" (threads joined by an outer communicator) likewise; a
 * checkpoint of 2 replicas resumed on 3 equals one replica throughout; models
 * that differ and a transport that fails mid-training end in an error, not a hang; a CPU and a
 * Vulkan (lavapipe) replica end with the weights of the CPU alone (skipped without Vulkan).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggmlc-dp.h"
#include "testutil.h"

enum { N_SAMPLES = 640, BATCH = 32, FEATURES = 64, CLASSES = 10 };

/* ------------------------------------------------------ communicator */

struct member_run {
    ggmlc_comm *comm;
    float data[5];
    enum ggmlc_status st;
    int calls; /* how many all-reduce calls to make */
    enum ggmlc_reduce_op op;
};

static void *member_main(void *arg) {
    struct member_run *r = arg;
    for (int c = 0; c < r->calls && r->st == GGMLC_OK; c++)
        r->st = ggmlc_comm_allreduce(r->comm, r->data, 5, r->op);
    return NULL;
}

static void run_members(struct member_run *runs, int n) {
    pthread_t t[8];
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, member_main, &runs[i]);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

static void test_thread_allreduce(void) {
    ggmlc_comm *c[3];
    if (!tap_ok(ggmlc_comm_threads(3, NULL, c) == GGMLC_OK, "three thread members")) return;
    tap_ok(ggmlc_comm_rank(c[2]) == 2 && ggmlc_comm_size(c[0]) == 3, "ranks 0..2 of 3");
    struct member_run runs[3];
    for (int i = 0; i < 3; i++) {
        runs[i] = (struct member_run){.comm = c[i], .calls = 1};
        for (int k = 0; k < 5; k++) runs[i].data[k] = (float)(i + 1) * (float)(k + 1) * 0.1f;
    }
    run_members(runs, 3);
    bool same = true, sums = true;
    for (int i = 0; i < 3; i++) {
        same = same && runs[i].st == GGMLC_OK &&
               memcmp(runs[i].data, runs[0].data, sizeof runs[0].data) == 0;
        for (int k = 0; k < 5; k++)
            sums = sums && fabsf(runs[i].data[k] - 0.6f * (float)(k + 1)) < 1e-6f;
    }
    tap_ok(sums, "sum over 3 members: 0.1 (k+1) (1 + 2 + 3) = 0.6 (k+1)");
    tap_ok(same, "every member gets the same bits");
    for (int i = 0; i < 3; i++)
        runs[i] = (struct member_run){.comm = c[i],
                                      .data = {(float)i, -(float)i, 5, 0, 1},
                                      .calls = 1,
                                      .op = GGMLC_REDUCE_MAX};
    run_members(runs, 3);
    tap_ok(runs[1].st == GGMLC_OK && runs[1].data[0] == 2 && runs[1].data[1] == 0 &&
               runs[1].data[2] == 5,
           "maximum over members of (i, -i, 5): (2, 0, 5)");
    for (int i = 0; i < 3; i++) ggmlc_comm_free(c[i]);
}

static void test_thread_timeout_and_abort(void) {
    ggmlc_comm *c[2];
    if (ggmlc_comm_threads(2, NULL, c) != GGMLC_OK) return;
    ggmlc_comm_set_timeout(c[0], 0.3);
    struct member_run lone = {.comm = c[0], .calls = 1}; /* member 1 never comes */
    const int64_t t0 = ggml_time_us();
    member_main(&lone);
    const double waited = (double)(ggml_time_us() - t0) / 1e6;
    tap_ok(lone.st == GGMLC_ERR_BACKEND && strstr(ggmlc_last_error(), "within") && waited < 5,
           "a member alone fails after its timeout (%.2f s): %s", waited, ggmlc_last_error());
    struct member_run late = {.comm = c[1], .calls = 1};
    member_main(&late);
    tap_ok(late.st == GGMLC_ERR_BACKEND, "the group stays stopped for the other member: %s",
           ggmlc_last_error());
    for (int i = 0; i < 2; i++) ggmlc_comm_free(c[i]);

    if (ggmlc_comm_threads(2, NULL, c) != GGMLC_OK) return;
    ggmlc_comm_abort(c[1], "device lost");
    struct member_run after = {.comm = c[0], .calls = 1};
    member_main(&after);
    tap_ok(after.st == GGMLC_ERR_BACKEND && strstr(ggmlc_last_error(), "device lost"),
           "an aborted member's reason reaches the others: %s", ggmlc_last_error());
    for (int i = 0; i < 2; i++) ggmlc_comm_free(c[i]);
}

struct tensor_run {
    ggmlc_comm *comm;
    struct ggml_tensor *t[3];
    float scale;
    enum ggmlc_status st;
};

static void *tensor_main(void *arg) {
    struct tensor_run *r = arg;
    r->st = ggmlc_dp_allreduce_tensors(r->comm, r->t, 3, r->scale,
                                       40); /* 10 floats a bucket: 4 buckets */
    return NULL;
}

/* Member i's tensors hold i + 1; scales 0.25 and 0.75: each element becomes 0.25 + 1.5. */
static void test_tensor_allreduce(ggml_backend_t cpu) {
    ggmlc_comm *c[2];
    if (ggmlc_comm_threads(2, NULL, c) != GGMLC_OK) return;
    struct ggml_context *ctx =
        ggml_init((struct ggml_init_params){16 * ggml_tensor_overhead(), NULL, true});
    struct tensor_run runs[2];
    const int64_t sizes[3] = {7, 12, 3};
    for (int i = 0; i < 2; i++) {
        runs[i] = (struct tensor_run){.comm = c[i], .scale = i ? 0.75f : 0.25f};
        for (int k = 0; k < 3; k++) runs[i].t[k] = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, sizes[k]);
    }
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, cpu);
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 3; k++) {
            float v[12];
            for (int e = 0; e < 12; e++) v[e] = (float)(i + 1);
            ggml_backend_tensor_set(runs[i].t[k], v, 0, ggml_nbytes(runs[i].t[k]));
        }
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, tensor_main, &runs[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    bool ok = runs[0].st == GGMLC_OK && runs[1].st == GGMLC_OK;
    for (int i = 0; i < 2 && ok; i++) {
        for (int k = 0; k < 3; k++) {
            float v[12];
            ggml_backend_tensor_get(runs[i].t[k], v, 0, ggml_nbytes(runs[i].t[k]));
            for (int e = 0; e < sizes[k]; e++) ok = ok && v[e] == 1.75f;
        }
    }
    tap_ok(ok,
           "tensors of 7, 12 and 3 floats in buckets of 10: 0.25 * 1 + 0.75 * 2 = 1.75 everywhere");
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    for (int i = 0; i < 2; i++) ggmlc_comm_free(c[i]);
}

/* ------------------------------------------------------ model API */

struct data {
    float *x, *y;
};

/* The first N_SAMPLES digits, pixels in [0, 1]. */
static bool load_data(struct data *d) {
    struct ggmlc_dataset all;
    if (ggmlc_dataset_load_digits(&all) != GGMLC_OK) return false;
    ggmlc_dataset_normalize(&all);
    d->x = malloc(sizeof(float) * N_SAMPLES * FEATURES);
    d->y = malloc(sizeof(float) * N_SAMPLES);
    memcpy(d->x, all.x, sizeof(float) * N_SAMPLES * FEATURES);
    memcpy(d->y, all.y, sizeof(float) * N_SAMPLES);
    ggmlc_dataset_free(&all);
    return true;
}

enum kind { MLP, CNN, MLP_WIDER };

static ggmlc_model *build(enum kind kind, const char *backend) {
    ggmlc_model *m;
    if (kind == CNN) {
        m = ggmlc_sequential((int64_t[]){1, 8, 8}, 3);
        ggmlc_model_add(m, ggmlc_conv2d(4, 3, 3, 1, -1, 1, GGMLC_ACT_RELU));
        ggmlc_model_add(m, ggmlc_max_pool2d(2, 2));
        ggmlc_model_add(m, ggmlc_flatten());
    } else {
        m = ggmlc_sequential((int64_t[]){FEATURES}, 1);
        ggmlc_model_add(m, ggmlc_dense(kind == MLP_WIDER ? 33 : 32, GGMLC_ACT_RELU));
    }
    ggmlc_model_add(m, ggmlc_dense(CLASSES, GGMLC_ACT_SOFTMAX));
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    co.metrics = GGMLC_METRIC_ACCURACY;
    co.learning_rate = 1e-2f;
    co.seed = 7;
    co.backend = backend;
    if (ggmlc_model_compile(m, &co) != GGMLC_OK) {
        tap_diag("compile on %s: %s", backend ? backend : "default", ggmlc_last_error());
        ggmlc_model_free(m);
        return NULL;
    }
    return m;
}

static struct ggmlc_fit_options one_epoch(void) {
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 1; /* 640 / 32 = 20 steps */
    fo.batch_size = BATCH;
    fo.shuffle = false;
    fo.verbose = 0;
    return fo;
}

static float *weights_of(ggmlc_model *m, int64_t *n) {
    *n = ggmlc_model_get_weights(m, NULL, 0);
    float *w = malloc(sizeof(float) * (size_t)*n);
    ggmlc_model_get_weights(m, w, (size_t)*n);
    return w;
}

/* One model trained by ggmlc_model_fit on the whole batches: the reference weights. */
static float *reference(enum kind kind, const struct data *d, int64_t *n, double *loss) {
    ggmlc_model *m = build(kind, "CPU");
    if (!m) return NULL;
    struct ggmlc_fit_options fo = one_epoch();
    ggmlc_history *h = NULL;
    ggmlc_model_fit(m, d->x, N_SAMPLES * FEATURES, d->y, N_SAMPLES, N_SAMPLES, &fo, &h);
    *loss = ggmlc_history_epoch(h, 0)->loss;
    float *w = weights_of(m, n);
    ggmlc_history_free(h);
    ggmlc_model_free(m);
    return w;
}

static double max_rel_diff(const float *a, const float *b, int64_t n) {
    double worst = 0;
    for (int64_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)a[i] - b[i]) / (fabs((double)b[i]) + 1e-3));
    return worst;
}

/* The weights of a against b's within 2e-4 (relative; the order of sums differs). */
static void ok_same_weights(ggmlc_model *a, ggmlc_model *b, const char *what) {
    int64_t na, nb;
    float *wa = weights_of(a, &na), *wb = weights_of(b, &nb);
    const double diff = max_rel_diff(wa, wb, nb);
    tap_ok(na == nb && diff < 2e-4, "weights %s (largest relative difference %.2g)", what, diff);
    free(wa), free(wb);
}

/* Passed as the shares: measure them (timed forward passes) instead. */
static const float measured[1];

/* Replicas on the given devices against the reference; weights (may be NULL) their shares. */
static void check_replicas(const char *what, enum kind kind, const struct data *d,
                           const char *const *devices, int n, const float *shares) {
    int64_t n_ref, n_w[4];
    double ref_loss = NAN;
    float *ref = reference(kind, d, &n_ref, &ref_loss);
    if (!tap_ok(ref != NULL, "%s: the reference model trains", what)) return;
    ggmlc_model *reps[4] = {0};
    for (int i = 0; i < n; i++) reps[i] = build(kind, devices[i]);
    struct ggmlc_fit_options fo = one_epoch();
    struct ggmlc_dp_options dp = ggmlc_dp_defaults();
    dp.weights = shares == measured ? NULL : shares;
    dp.measure = shares == measured;
    dp.bucket_bytes = 1024; /* several buckets, reduced while backward goes on */
    ggmlc_history *h = NULL;
    const enum ggmlc_status st = ggmlc_model_fit_dp(reps, n, NULL, &dp, d->x, N_SAMPLES * FEATURES,
                                                    d->y, N_SAMPLES, N_SAMPLES, &fo, &h);
    if (!tap_ok(st == GGMLC_OK, "%s: ggmlc_model_fit_dp runs (%s)", what,
                st == GGMLC_OK ? "ok" : ggmlc_last_error()))
        goto done;
    float *w[4];
    for (int i = 0; i < n; i++) w[i] = weights_of(reps[i], &n_w[i]);
    const double diff = max_rel_diff(w[0], ref, n_ref);
    tap_ok(n_w[0] == n_ref && diff < 2e-4,
           "%s: the weights after 20 steps equal single-device training on the whole batches "
           "(largest relative difference %.2g of %lld weights)",
           what, diff, (long long)n_ref);
    bool same = true;
    for (int i = 1; i < n; i++)
        same = same && memcmp(w[i], w[0], sizeof(float) * (size_t)n_ref) == 0;
    tap_ok(same, "%s: every replica holds the same weights, bit for bit", what);
    const double loss = ggmlc_history_epoch(h, 0)->loss;
    tap_ok(fabs(loss - ref_loss) < 1e-4 * fabs(ref_loss) + 1e-5,
           "%s: the epoch's loss %.6f is the reference's %.6f", what, loss, ref_loss);
    for (int i = 0; i < n; i++) free(w[i]);
done:
    ggmlc_history_free(h);
    for (int i = 0; i < n; i++) ggmlc_model_free(reps[i]);
    free(ref);
}

/* ---------------------------------------------- two "processes" */

struct process_run {
    ggmlc_comm *outer;
    ggmlc_model *model;
    const struct data *d;
    enum ggmlc_status st;
    char error[256];
};

static void *process_main(void *arg) {
    struct process_run *p = arg;
    struct ggmlc_fit_options fo = one_epoch();
    fo.shuffle = true;
    fo.epochs = 2;
    p->st = ggmlc_model_fit_dp(&p->model, 1, p->outer, NULL, p->d->x, N_SAMPLES * FEATURES, p->d->y,
                               N_SAMPLES, N_SAMPLES, &fo, NULL);
    snprintf(p->error, sizeof p->error, "%s", ggmlc_last_error());
    return NULL;
}

/* Two "processes" of one replica each, joined by an outer communicator, against one process of
 * one replica, shuffled epochs: the seeded sharding and the outer reduction. */
static void test_outer(const struct data *d) {
    ggmlc_comm *outer[2];
    ggmlc_comm_threads(2, NULL, outer);
    struct process_run runs[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        runs[i] = (struct process_run){.outer = outer[i], .model = build(MLP, "CPU"), .d = d};
        pthread_create(&t[i], NULL, process_main, &runs[i]);
    }
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    struct process_run alone = {.model = build(MLP, "CPU"), .d = d};
    process_main(&alone);
    tap_ok(runs[0].st == GGMLC_OK && runs[1].st == GGMLC_OK && alone.st == GGMLC_OK,
           "two processes of a replica each train (%s)", runs[1].error);
    ok_same_weights(runs[1].model, alone.model, "after two shuffled epochs, one replica's");
    for (int i = 0; i < 2; i++) ggmlc_model_free(runs[i].model), ggmlc_comm_free(outer[i]);
    ggmlc_model_free(alone.model);
}

/* ------------------------------------------------------ resuming */

static enum ggmlc_status fit_epochs(ggmlc_model **reps, int n, const struct data *d, int first,
                                    int epochs) {
    struct ggmlc_fit_options fo = one_epoch();
    fo.shuffle = true;
    fo.initial_epoch = first;
    fo.epochs = epochs;
    return ggmlc_model_fit_dp(reps, n, NULL, NULL, d->x, N_SAMPLES * FEATURES, d->y, N_SAMPLES,
                              N_SAMPLES, &fo, NULL);
}

/* Epoch 1 on 2 replicas, saved with the optimizer state, epoch 2 on 3 replicas loaded from the
 * file: the weights of 2 epochs on one replica (the permutations depend on seed and epoch only). */
static void test_resume(const struct data *d) {
    char path[] = "/tmp/ggmlc-test-dp-XXXXXX";
    const int fd = mkstemp(path);
    if (fd >= 0) close(fd);
    ggmlc_model *two[2] = {build(MLP, "CPU"), build(MLP, "CPU")}, *one = build(MLP, "CPU"),
                *three[3] = {0};
    enum ggmlc_status st = fit_epochs(two, 2, d, 0, 1);
    if (st == GGMLC_OK) st = ggmlc_model_save(two[0], path, true);
    for (int i = 0; i < 3 && st == GGMLC_OK; i++)
        st = (three[i] = ggmlc_model_load(path, "CPU")) ? GGMLC_OK : ggmlc_last_status();
    if (st == GGMLC_OK) st = fit_epochs(three, 3, d, 1, 2);
    if (st == GGMLC_OK) st = fit_epochs(&one, 1, d, 0, 2);
    if (tap_ok(st == GGMLC_OK, "2 replicas, a checkpoint, then 3 replicas train (%s)",
               st == GGMLC_OK ? "ok" : ggmlc_last_error())) {
        ok_same_weights(three[2], one, "resumed on 3 replicas, those of 2 epochs on one");
    }
    for (int i = 0; i < 3; i++) ggmlc_model_free(three[i]);
    for (int i = 0; i < 2; i++) ggmlc_model_free(two[i]);
    ggmlc_model_free(one);
    unlink(path);
}

/* ------------------------------------------------------ failures */

/* An outer transport of one member that fails its fail_at-th call, as a dead rank would. */
struct flaky {
    int calls, fail_at;
};

static enum ggmlc_status flaky_allreduce(void *impl, float *data, size_t n, enum ggmlc_reduce_op op,
                                         double timeout_s) {
    struct flaky *f = impl;
    if (++f->calls == f->fail_at)
        return ggmlc_set_error(GGMLC_ERR_BACKEND, "rank 1 is gone (test)");
    return GGMLC_OK;
}

static const struct ggmlc_comm_ops flaky_ops = {"flaky", flaky_allreduce, NULL, NULL};

static void test_failures(const struct data *d) {
    ggmlc_model *reps[2] = {build(MLP, "CPU"), build(MLP_WIDER, "CPU")};
    struct ggmlc_fit_options fo = one_epoch();
    enum ggmlc_status st = ggmlc_model_fit_dp(reps, 2, NULL, NULL, d->x, N_SAMPLES * FEATURES, d->y,
                                              N_SAMPLES, N_SAMPLES, &fo, NULL);
    tap_ok(st == GGMLC_ERR_INVALID_ARG && strstr(ggmlc_last_error(), "differ"),
           "replicas of different models are refused: %s", ggmlc_last_error());
    ggmlc_model_free(reps[1]);
    reps[1] = build(MLP, "CPU");
    struct flaky f = {0, 12}; /* in the middle of the first steps' buckets */
    ggmlc_comm *outer = ggmlc_comm_new(&flaky_ops, &f, 0, 1);
    const int64_t t0 = ggml_time_us();
    st = ggmlc_model_fit_dp(reps, 2, outer, NULL, d->x, N_SAMPLES * FEATURES, d->y, N_SAMPLES,
                            N_SAMPLES, &fo, NULL);
    const double took = (double)(ggml_time_us() - t0) / 1e6;
    tap_ok(st == GGMLC_ERR_BACKEND && strstr(ggmlc_last_error(), "rank 1 is gone") && took < 10,
           "a transport failing mid-training ends the fit with its error in %.2f s: %s", took,
           ggmlc_last_error());
    ggmlc_comm_free(outer);
    const float bad[2] = {1, 0};
    struct ggmlc_dp_options dp = ggmlc_dp_defaults();
    dp.weights = bad;
    st = ggmlc_model_fit_dp(reps, 2, NULL, &dp, d->x, N_SAMPLES * FEATURES, d->y, N_SAMPLES,
                            N_SAMPLES, &fo, NULL);
    tap_ok(st == GGMLC_ERR_INVALID_ARG, "a weight of 0 is refused: %s", ggmlc_last_error());
    st = ggmlc_model_fit_dp(reps, 2, NULL, NULL, d->x, 5, d->y, N_SAMPLES, N_SAMPLES, &fo, NULL);
    tap_ok(st == GGMLC_ERR_SHAPE, "data of the wrong length are refused: %s", ggmlc_last_error());
    for (int i = 0; i < 2; i++) ggmlc_model_free(reps[i]);
}

/* ------------------------------------------------------ Vulkan */

static void test_vulkan(const struct data *d) {
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) {
        tap_skip("no Vulkan device", "CPU + Vulkan replicas");
        return;
    }
    const char *devices[2] = {"CPU", ggml_backend_dev_name(ggml_backend_reg_dev_get(reg, 0))};
    check_replicas("CPU + Vulkan MLP", MLP, d, devices, 2, NULL);
    check_replicas("CPU + Vulkan CNN", CNN, d, devices, 2, (const float[]){1, 3});
    check_replicas("CPU + Vulkan MLP, measured shares", MLP, d, devices, 2, measured);
}

int main(void) {
    test_vulkan_env(); /* Vulkan's test configuration where built, else make check's */
    ggmlc_init();
    test_thread_allreduce();
    test_thread_timeout_and_abort();
    ggml_backend_t cpu = ggml_backend_init_by_name("cpu", NULL);
    test_tensor_allreduce(cpu);
    ggml_backend_free(cpu);
    struct data d;
    if (!tap_ok(load_data(&d), "the digits load")) return tap_done();
    static const char *const two_cpus[2] = {"CPU", "CPU"};
    check_replicas("2 CPU replicas MLP", MLP, &d, two_cpus, 2, NULL);
    check_replicas("2 CPU replicas MLP, shares 1:3", MLP, &d, two_cpus, 2, (const float[]){1, 3});
    check_replicas("2 CPU replicas CNN", CNN, &d, two_cpus, 2, NULL);
    check_replicas("2 CPU replicas MLP, measured shares", MLP, &d, two_cpus, 2, measured);
    test_outer(&d);
    test_resume(&d);
    test_failures(&d);
    test_vulkan(&d);
    free(d.x), free(d.y);
    ggmlc_shutdown();
    return tap_done();
}
