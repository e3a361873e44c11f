/*
 * test-oversubscribed.c - the CPU backend with four times more threads than CPUs (what
 * llama.cpp's default of 4 threads is on a 2-CPU machine): decode-shaped graphs, a new one
 * per round, whose nodes each split over all the threads and meet at a barrier, must give
 * the double-precision reference, and the backend must keep working when the thread count
 * changes between graphs.  A lost wake-up in the barrier's spin-yield-sleep path would hang
 * here (the test's timeout); a wrong release would give wrong numbers.  Speed belongs to
 * ggmlc-bench decode-graph --threads 8.
 */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

enum { K = 96, LAYERS = 24, ROUNDS = 12 };

static float weights[LAYERS][K * K], input[K];

/* CPUs this process may run on. */
static int online_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* x_{l+1} = x_l + 0.5 tanh(W_l x_l), in double. */
static void reference(double *x) {
    for (int i = 0; i < K; i++) x[i] = input[i];
    for (int l = 0; l < LAYERS; l++) {
        double h[K];
        for (int r = 0; r < K; r++) {
            double s = 0;
            for (int c = 0; c < K; c++) s += (double)weights[l][r * K + c] * x[c];
            h[r] = tanh(s);
        }
        for (int r = 0; r < K; r++) x[r] += 0.5 * h[r];
    }
}

/* One round: a fresh graph of the layers over weights already in buf's tensors. */
static bool compute_round(ggml_backend_t backend, struct ggml_tensor **w, struct ggml_tensor *x0,
                          float *out) {
    struct ggml_init_params ip = {4 * LAYERS * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *x = x0;
    for (int l = 0; l < LAYERS; l++)
        x = ggml_add(ctx, x, ggml_scale(ctx, ggml_tanh(ctx, ggml_mul_mat(ctx, w[l], x)), 0.5f));
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, x);
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    bool ok = ggml_gallocr_alloc_graph(galloc, gf) && ggml_backend_graph_compute(backend, gf) == GGML_STATUS_SUCCESS;
    if (ok) ggml_backend_tensor_get(x, out, 0, sizeof(float) * K);
    ggml_gallocr_free(galloc);
    ggml_free(ctx);
    return ok;
}

/* ROUNDS graphs on n_threads threads; the worst error against the reference (INFINITY on failure). */
static double run_rounds(ggml_backend_t backend, int n_threads, struct ggml_tensor **w, struct ggml_tensor *x0,
                         const double *ref) {
    ggml_backend_cpu_set_n_threads(backend, n_threads);
    double worst = 0;
    for (int round = 0; round < ROUNDS; round++) {
        float out[K];
        if (!compute_round(backend, w, x0, out)) return INFINITY;
        for (int i = 0; i < K; i++) {
            const double e = fabs(out[i] - ref[i]);
            worst = isnan(out[i]) || e > worst ? (isnan(out[i]) ? INFINITY : e) : worst;
        }
    }
    return worst;
}

int main(void) {
    test_seed(20);
    for (int l = 0; l < LAYERS; l++)
        for (int i = 0; i < K * K; i++) weights[l][i] = test_uniform(-0.25f, 0.25f);
    for (int i = 0; i < K; i++) input[i] = test_uniform(-1.0f, 1.0f);
    double ref[K];
    reference(ref);

    ggml_backend_t backend = ggml_backend_cpu_init();
    if (!tap_ok(backend != NULL, "CPU backend")) return tap_done();
    struct ggml_init_params ip = {(LAYERS + 1) * ggml_tensor_overhead(), NULL, true};
    struct ggml_context *wctx = ggml_init(ip);
    struct ggml_tensor *w[LAYERS];
    for (int l = 0; l < LAYERS; l++) w[l] = ggml_new_tensor_2d(wctx, GGML_TYPE_F32, K, K);
    struct ggml_tensor *x0 = ggml_new_tensor_1d(wctx, GGML_TYPE_F32, K);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(wctx, backend);
    for (int l = 0; l < LAYERS; l++) ggml_backend_tensor_set(w[l], weights[l], 0, sizeof weights[l]);
    ggml_backend_tensor_set(x0, input, 0, sizeof input);

    const int cpus = online_cpus(), over = 4 * cpus < 4 ? 4 : 4 * cpus;
    /* fp32 sums of 96 products in any order stay far within 1e-4 of the double result */
    const double tol = 1e-4;
    double e = run_rounds(backend, over, w, x0, ref);
    tap_ok(e <= tol, "%d threads on %d CPUs: %d new graphs of %d layers match the reference (worst %.2g)", over,
           cpus, ROUNDS, LAYERS, e);
    e = run_rounds(backend, cpus, w, x0, ref);
    tap_ok(e <= tol, "then %d threads (one per CPU) on the same backend (worst %.2g)", cpus, e);
    e = run_rounds(backend, 2 * over, w, x0, ref);
    tap_ok(e <= tol, "then %d threads (8 per CPU) (worst %.2g)", 2 * over, e);

    ggml_backend_buffer_free(buf);
    ggml_free(wctx);
    ggml_backend_free(backend);
    ggmlc_shutdown();
    return tap_done();
}
