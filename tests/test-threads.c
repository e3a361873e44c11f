/*
 * test-threads.c - concurrent use of separate contexts: several threads,
 * each with its own context, CPU backend (with its own thread pool) and
 * scheduler, build and compute graphs at the same time, and must each get
 * exactly the single-threaded answer.  Meant for ThreadSanitizer too
 * (tools/sanitize-check.sh): it exercises the registry's once-init, the
 * CPU thread pool, the scheduler and the allocator from several threads.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

enum { N_THREADS = 4, ROUNDS = 6, N = 37, M = 29 };

struct job {
    int id;
    float out[M];
    bool ok;
};

static float input_value(int id, int i) { return sinf(0.1f * (float)(i + 7 * id)) * 2.0f; }

/* y = relu(W x) + 0.5 * sum(x), W[r][c] = cos(r + c), computed by the backend through a scheduler. */
static bool compute_once(ggml_backend_t backend, ggml_backend_sched_t sched, int id, float *out) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    if (!ctx) return false;
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, M), *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
    ggml_set_input(x);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    bool ok = buf != NULL;
    if (ok) {
        float wv[N * M], xv[N];
        for (int r = 0; r < M; r++)
            for (int c = 0; c < N; c++) wv[r * N + c] = cosf((float)(r + c));
        for (int c = 0; c < N; c++) xv[c] = input_value(id, c);
        ggml_backend_tensor_set(w, wv, 0, sizeof wv);
        ggml_backend_tensor_set(x, xv, 0, sizeof xv);
        struct ggml_tensor *y = ggml_add(ctx, ggml_relu(ctx, ggml_mul_mat(ctx, w, x)), ggml_scale(ctx, ggml_sum(ctx, x), 0.5f));
        struct ggml_cgraph *gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, y);
        ggml_backend_sched_reset(sched);
        ok = ggml_backend_sched_graph_compute(sched, gf) == GGML_STATUS_SUCCESS;
        if (ok) ggml_backend_tensor_get(y, out, 0, sizeof(float) * M);
    }
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    return ok;
}

static void reference(int id, float *out) {
    double sum = 0;
    for (int c = 0; c < N; c++) sum += input_value(id, c);
    for (int r = 0; r < M; r++) {
        double acc = 0;
        for (int c = 0; c < N; c++) acc += cos((double)(r + c)) * input_value(id, c);
        out[r] = (float)((acc > 0 ? acc : 0) + 0.5 * sum);
    }
}

static void *worker(void *arg) {
    struct job *job = arg;
    ggml_backend_t backend = ggml_backend_cpu_init();
    if (!backend) return NULL;
    ggml_backend_cpu_set_n_threads(backend, 2);
    ggml_backend_sched_t sched = ggml_backend_sched_new(&backend, NULL, 1, 64, false, true);
    float ref[M];
    reference(job->id, ref);
    job->ok = sched != NULL;
    for (int round = 0; job->ok && round < ROUNDS; round++) {
        job->ok = compute_once(backend, sched, job->id, job->out) && max_abs_diff(job->out, ref, M) < 1e-3;
    }
    ggml_backend_sched_free(sched);
    ggml_backend_free(backend);
    return NULL;
}

int main(void) {
    pthread_t threads[N_THREADS];
    struct job jobs[N_THREADS];
    /* no ggmlc_init first: the threads race for the registry's first load */
    for (int i = 0; i < N_THREADS; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].id = i;
        pthread_create(&threads[i], NULL, worker, &jobs[i]);
    }
    for (int i = 0; i < N_THREADS; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < N_THREADS; i++)
        tap_ok(jobs[i].ok, "thread %d: %d graphs on its own context, backend and scheduler match the reference", i, ROUNDS);
    ggmlc_shutdown();
    return tap_done();
}
