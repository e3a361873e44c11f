/*
 * eager.c - ggmlc-bench's eager-autograd modes.
 *
 *   ggmlc-bench eager-mlp [--batch 256] [--steps 20] [--rounds 3] [--device NAME]
 *       the MLP 784-512-256-10 (ReLU, cross-entropy, AdamW) trained by eager tensors
 *       (ggmlc-autograd.h) and by the static-graph model API (ggmlc-nn.h) on the same data, in
 *       alternating rounds: ms per step of each and their ratio (static / eager)
 *   ggmlc-bench eager-op [--ops 200000] [--size 64] [--device NAME]
 *       a chain of adds of two --size element tensors, each result used by the next op:
 *       microseconds per op, computing included
 * bench/pytorch_eager.py times the same two loops in PyTorch.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggmlc.h"
#include "ggmlc-autograd.h"
#include "ggmlc-nn.h"
#include "counters.h"
#include "eager.h"

#define MLP_LAYERS 3
static const int64_t mlp_arch[MLP_LAYERS + 1] = {784, 512, 256, 10};

struct eager_options {
    int64_t batch, steps, ops, size;
    int rounds;
    const char *device;
};

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of this thread: the host's own work per step, whatever the device and the load. */
static double thread_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool parse(int argc, char **argv, struct eager_options *o) {
    *o = (struct eager_options){.batch = 256, .steps = 20, .ops = 200000, .size = 64, .rounds = 3};
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (strcmp(a, "--batch") == 0)
            o->batch = atoll(v);
        else if (strcmp(a, "--steps") == 0)
            o->steps = atoll(v);
        else if (strcmp(a, "--ops") == 0)
            o->ops = atoll(v);
        else if (strcmp(a, "--size") == 0)
            o->size = atoll(v);
        else if (strcmp(a, "--rounds") == 0)
            o->rounds = atoi(v);
        else if (strcmp(a, "--device") == 0)
            o->device = v;
        else
            return false;
    }
    return argc % 2 == 0 && o->batch > 0 && o->steps > 0 && o->ops > 0 && o->size > 0 &&
           o->rounds > 0;
}

/* ------------------------------------------------------------ eager MLP */

struct eager_mlp {
    ga_device *dev;
    ga_tensor *params[2 * MLP_LAYERS], *m[2 * MLP_LAYERS], *v[2 * MLP_LAYERS];
    int64_t step;
};

static bool mlp_init(struct eager_mlp *e, ga_device *dev) {
    e->dev = dev;
    e->step = 0;
    ga_manual_seed(42);
    for (int l = 0; l < MLP_LAYERS; l++) {
        const int64_t in = mlp_arch[l], out = mlp_arch[l + 1];
        ga_tensor *w = ga_randn(dev, GA_SHAPE(out, in));
        e->params[2 * l] = ga_requires_grad_(ga_mul_scalar(w, 0.05f), true);
        e->params[2 * l + 1] = ga_requires_grad_(ga_zeros(dev, GA_SHAPE(out)), true);
        ga_release(w);
    }
    for (int i = 0; i < 2 * MLP_LAYERS; i++) {
        if (!e->params[i]) return false;
        e->m[i] = ga_zeros_like(e->params[i]);
        e->v[i] = ga_zeros_like(e->params[i]);
    }
    return ga_synchronize(dev) == GGMLC_OK;
}

static void mlp_free(struct eager_mlp *e) {
    for (int i = 0; i < 2 * MLP_LAYERS; i++) {
        ga_release(e->params[i]);
        ga_release(e->m[i]);
        ga_release(e->v[i]);
    }
}

/* One training step on a batch; the loss is read (as a training loop prints it). */
static bool mlp_step(struct eager_mlp *e, const float *x, const float *y, int64_t batch) {
    ga_scope_begin();
    ga_tensor *h =
        ga_from_array(e->dev, x, (size_t)(batch * mlp_arch[0]), GA_SHAPE(batch, mlp_arch[0]));
    ga_tensor *labels = ga_from_array(e->dev, y, (size_t)batch, GA_SHAPE(batch));
    for (int l = 0; l < MLP_LAYERS; l++) {
        h = ga_linear(h, e->params[2 * l], e->params[2 * l + 1]);
        if (l + 1 < MLP_LAYERS) h = ga_relu(h);
    }
    ga_tensor *loss = ga_cross_entropy(h, labels, -100, 0);
    bool ok = loss && ga_backward(loss) == GGMLC_OK;
    e->step++;
    for (int i = 0; i < 2 * MLP_LAYERS && ok; i++) {
        ok = ga_adamw_step_(e->params[i], e->m[i], e->v[i], e->step, 1e-3f, 0.9f, 0.999f, 1e-8f,
                            0.01f) == GGMLC_OK;
        ga_zero_grad(e->params[i]);
    }
    const float value = ok ? ga_item(loss) : NAN;
    ok = ok && value == value; /* not NaN */
    ga_scope_end();
    return ok;
}

/* ----------------------------------------------------------- static MLP */

static ggmlc_model *static_mlp(const char *device) {
    ggmlc_model *m = ggmlc_sequential(&mlp_arch[0], 1);
    for (int l = 1; m && l <= MLP_LAYERS; l++)
        if (ggmlc_model_add(
                m, ggmlc_dense(mlp_arch[l], l < MLP_LAYERS ? GGMLC_ACT_RELU : GGMLC_ACT_NONE)) !=
            GGMLC_OK)
            return ggmlc_model_free(m), NULL;
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    co.weight_decay = 0.01f;
    co.backend = device ? device : "cpu";
    if (m && ggmlc_model_compile(m, &co) != GGMLC_OK) return ggmlc_model_free(m), NULL;
    return m;
}

static bool static_steps(ggmlc_model *m, const float *x, const float *y, int64_t n, int64_t batch) {
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 1;
    fo.batch_size = batch;
    fo.shuffle = false;
    fo.verbose = 0;
    return ggmlc_model_fit(m, x, (size_t)(n * mlp_arch[0]), y, (size_t)n, n, &fo, NULL) == GGMLC_OK;
}

/* The host-device round trips per step between two readings of the counters. */
static void print_counts(const char *what, const struct ggmlc_counters *a, const struct ggmlc_counters *b, int64_t steps) {
    printf("  %s per step: ", what);
    bench_print_counts_per_step(stdout, a, b, steps);
    printf("\n");
}

static int bench_mlp(const struct eager_options *o) {
    ga_device *dev = ga_device_get(o->device ? o->device : "CPU");
    const int64_t n = o->steps * o->batch;
    float *x = malloc((size_t)(n * mlp_arch[0]) * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    struct eager_mlp e = {0};
    ggmlc_model *model = static_mlp(o->device);
    if (!dev || !x || !y || !model || !mlp_init(&e, dev)) {
        fprintf(stderr, "ggmlc-bench: eager-mlp: %s\n", ggmlc_last_error());
        return 1;
    }
    srand(7);
    for (int64_t i = 0; i < n * mlp_arch[0]; i++) x[i] = (float)rand() / RAND_MAX;
    for (int64_t i = 0; i < n; i++) y[i] = (float)(i * 7 % mlp_arch[MLP_LAYERS]);
    double eager_best = 1e30, static_best = 1e30;
    bool ok = true;
    for (int r = 0; r <= o->rounds && ok; r++) { /* round 0 warms up both */
        struct ggmlc_counters c0, c1, c2;
        ggmlc_counters_get(&c0);
        double t0 = seconds(), h0 = thread_seconds();
        for (int64_t s = 0; s < o->steps && ok; s++)
            ok = mlp_step(&e, x + s * o->batch * mlp_arch[0], y + s * o->batch, o->batch);
        double t1 = seconds(), h1 = thread_seconds();
        ggmlc_counters_get(&c1);
        ok = ok && static_steps(model, x, y, n, o->batch);
        double t2 = seconds(), h2 = thread_seconds();
        ggmlc_counters_get(&c2);
        if (r == 0 || !ok) continue;
        double te = (t1 - t0) / (double)o->steps, ts = (t2 - t1) / (double)o->steps;
        printf("round %d: eager %.3f ms/step, static graph %.3f ms/step, static/eager %.3f\n", r,
               te * 1e3, ts * 1e3, ts / te);
        printf("  host CPU time of the calling thread: eager %.3f ms/step, static graph %.3f "
               "ms/step\n",
               (h1 - h0) * 1e3 / (double)o->steps, (h2 - h1) * 1e3 / (double)o->steps);
        if (r == 1) {
            print_counts("eager", &c0, &c1, o->steps);
            print_counts("static graph", &c1, &c2, o->steps);
        }
        if (te < eager_best) eager_best = te;
        if (ts < static_best) static_best = ts;
    }
    if (ok)
        printf("eager-mlp 784-512-256-10 batch %lld AdamW on %s: eager %.3f ms/step, static graph "
               "%.3f ms/step, static/eager %.3f (best of %d rounds of %lld steps)\n",
               (long long)o->batch, ga_device_name(dev), eager_best * 1e3, static_best * 1e3,
               static_best / eager_best, o->rounds, (long long)o->steps);
    else
        fprintf(stderr, "ggmlc-bench: eager-mlp failed: %s\n", ggmlc_last_error());
    mlp_free(&e);
    ggmlc_model_free(model);
    free(x);
    free(y);
    ga_shutdown();
    return ok ? 0 : 1;
}

/* -------------------------------------------------------------- eager op */

static int bench_op(const struct eager_options *o) {
    ga_device *dev = ga_device_get(o->device ? o->device : "CPU");
    ga_tensor *a = dev ? ga_zeros(dev, 1, &o->size) : NULL;
    ga_tensor *b = dev ? ga_ones(dev, 1, &o->size) : NULL;
    if (!a || !b) {
        fprintf(stderr, "ggmlc-bench: eager-op: %s\n", ggmlc_last_error());
        return 1;
    }
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        const double t0 = seconds();
        for (int64_t i = 0; i < o->ops; i++) {
            ga_tensor *c = ga_add(a, b);
            ga_release(a);
            a = c;
        }
        float *end = malloc((size_t)o->size * sizeof *end);
        /* the end of the chain: everything computed */
        bool ok = end && ga_to_host(a, end, (size_t)o->size) == GGMLC_OK;
        free(end);
        if (!ok) {
            fprintf(stderr, "ggmlc-bench: eager-op: %s\n", ggmlc_last_error());
            return 1;
        }
        const double t = (seconds() - t0) / (double)o->ops;
        if (t < best) best = t;
    }
    printf("eager-op add of two %lld-element tensors on %s, each result used by the next: "
           "%.3f us/op (best of 3 chains of %lld ops)\n",
           (long long)o->size, ga_device_name(dev), best * 1e6, (long long)o->ops);
    ga_release(a);
    ga_release(b);
    ga_shutdown();
    return 0;
}

int bench_eager(int argc, char **argv) {
    struct eager_options o;
    if (!parse(argc, argv, &o)) {
        fputs(
            "usage: ggmlc-bench eager-mlp [--batch 256] [--steps 20] [--rounds 3] [--device NAME]\n"
            "       ggmlc-bench eager-op [--ops 200000] [--size 64] [--device NAME]\n",
            stderr);
        return 2;
    }
    if (strcmp(argv[1], "eager-mlp") == 0) return bench_mlp(&o);
    return bench_op(&o);
}
