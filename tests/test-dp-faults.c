/*
 * test-dp-faults.c - a replica that fails in the middle of data-parallel training (an allocation
 * of its step fails, as when a device runs out of memory) ends ggmlc_model_fit_dp with an error
 * on every replica within bounded time, never a hang or a crash; runs on the test build of
 * libggmlc (core/fault-inject.h), failing allocations spread over a whole fit.
 *
 * Allocation 73 of the 138 of a 2-replica fit (DP_FAULT_FROM=73 starts there) is the gradient
 * buckets' packed buffer: a failed index once stayed behind as the graph's, and the next step
 * wrote through its NULL buffer.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fault-inject.h"
#include "ggmlc-dp.h"
#include "testutil.h"

enum { N = 256, FEATURES = 16, CLASSES = 4, BATCH = 32 };

static ggmlc_model *build(void) {
    ggmlc_model *m = ggmlc_sequential((int64_t[]){FEATURES}, 1);
    ggmlc_model_add(m, ggmlc_dense(16, GGMLC_ACT_RELU));
    ggmlc_model_add(m, ggmlc_dense(CLASSES, GGMLC_ACT_SOFTMAX));
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    co.backend = "CPU";
    if (ggmlc_model_compile(m, &co) != GGMLC_OK) {
        ggmlc_model_free(m);
        return NULL;
    }
    return m;
}

/* A fit of 2 replicas over 2 epochs with allocation number fail_at failing (0: none); the
 * allocations it counted and whether the failure happened. */
static enum ggmlc_status fit_failing_at(long fail_at, const float *x, const float *y, double *secs,
                                        long *count, bool *triggered) {
    ggmlc_model *reps[2] = {build(), build()};
    if (!reps[0] || !reps[1]) return GGMLC_ERR_NOMEM;
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 2;
    fo.batch_size = BATCH;
    fo.verbose = 0;
    struct ggmlc_dp_options dp = ggmlc_dp_defaults();
    dp.timeout_s = 20;
    const int64_t t0 = ggml_time_us();
    ggmlc_fault_fail_alloc_at(fail_at);
    const enum ggmlc_status st =
        ggmlc_model_fit_dp(reps, 2, NULL, &dp, x, N * FEATURES, y, N, N, &fo, NULL);
    *count = ggmlc_fault_alloc_count();
    *triggered = ggmlc_fault_triggered();
    ggmlc_fault_fail_alloc_at(0);
    *secs = (double)(ggml_time_us() - t0) / 1e6;
    ggmlc_model_free(reps[0]);
    ggmlc_model_free(reps[1]);
    return st;
}

int main(void) {
    alarm(600); /* a hang fails the test instead of stopping the suite */
    ggmlc_init();
    float *x = malloc(sizeof(float) * N * FEATURES), *y = malloc(sizeof(float) * N);
    test_seed(5);
    test_fill_uniform(x, N * FEATURES, -1, 1);
    for (int i = 0; i < N; i++) y[i] = (float)(i % CLASSES);
    double secs;
    long total, count;
    bool triggered;
    enum ggmlc_status st = fit_failing_at(0, x, y, &secs, &total, &triggered);
    tap_ok(st == GGMLC_OK, "a fit of 2 replicas without faults (%ld allocations counted)", total);
    int failed = 0, slow = 0, points = 0;
    for (long k = getenv("DP_FAULT_FROM") ? atol(getenv("DP_FAULT_FROM")) : 1; k <= total;
         k += total / 24 + 1) {
        st = fit_failing_at(k, x, y, &secs, &count, &triggered);
        if (!triggered) continue;
        points++;
        failed += st != GGMLC_OK;
        slow += secs > 10;
        if (st != GGMLC_OK && k > total / 2 && k <= total / 2 + total / 24 + 1)
            tap_diag("allocation %ld of %ld fails, mid-training: %s", k, total, ggmlc_last_error());
    }
    tap_ok(slow == 0, "each of %d failing points ends the fit within 10 s", points);
    tap_ok(failed > points / 2,
           "%d of %d failing allocations end the fit with an error (others "
           "are absorbed, as a failed progress line)",
           failed, points);
    st = fit_failing_at(0, x, y, &secs, &count, &triggered);
    tap_ok(st == GGMLC_OK, "a fit after them trains again");
    free(x), free(y);
    ggmlc_shutdown();
    return tap_done();
}
