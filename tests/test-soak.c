/*
 * test-soak.c - long runs in constant memory, and no leaked descriptors or
 * threads:
 *   - training: optimizer steps of a small MLP through ggml-opt;
 *   - generation: one token at a time, each a fresh small graph attending
 *     over a key cache that grows inside one fixed backend buffer;
 *   - backends: CPU backends (each with its thread pool) created, used and
 *     freed again and again.
 * Resident memory (/proc/self/statm) is sampled once the run has warmed up
 * and at the end; the growth must stay under a stated bound.  make check
 * runs short counts; SOAK_STEPS / SOAK_TOKENS / SOAK_BACKENDS give the full
 * ones (tools/soak.sh: 10,000 steps, 10,000 tokens, 1,000 backends).
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-opt.h"
#include "ggmlc.h"
#include "testutil.h"

#define RSS_BOUND_KB 4096 /* allowed growth after warm-up */

/* AddressSanitizer keeps freed memory in quarantine: resident memory then says nothing about leaks
 * (LeakSanitizer checks those at exit instead). */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* tap_ok on the growth of resident memory, skipped under AddressSanitizer. */
static void check_growth(const char *what, long growth_kb) {
    if (UNDER_ASAN)
        tap_skip("AddressSanitizer's quarantine holds freed memory", "%s: resident memory growth", what);
    else
        tap_ok(growth_kb < RSS_BOUND_KB, "%s: resident memory grew %ld KiB after warm-up (bound %d KiB)", what, growth_kb,
               RSS_BOUND_KB);
}

static long env_count(const char *name, long def) {
    const char *v = getenv(name);
    return v && atol(v) > 0 ? atol(v) : def;
}

static long rss_kb(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* ---------------------------------------------------------- training */

enum { IN = 4, HIDDEN = 16, OUT = 3, BATCH = 8, N_DATA = 64 };

static void soak_training(ggml_backend_t backend, long steps) {
    ggml_backend_sched_t sched = ggml_backend_sched_new(&backend, NULL, 1, 1024, false, true);
    ggml_opt_dataset_t ds = ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, IN, OUT, N_DATA, 1);
    float *x = ggml_get_data_f32(ggml_opt_dataset_data(ds)), *y = ggml_get_data_f32(ggml_opt_dataset_labels(ds));
    test_fill_uniform(x, N_DATA * IN, -1, 1);
    for (int i = 0; i < N_DATA; i++)
        for (int c = 0; c < OUT; c++) y[i * OUT + c] = c == i % OUT ? 1.0f : 0.0f;
    struct ggml_context *ctx_static = ggml_init((struct ggml_init_params){8 * ggml_tensor_overhead(), NULL, true});
    struct ggml_context *ctx_compute = ggml_init((struct ggml_init_params){32 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    struct ggml_tensor *in = ggml_new_tensor_2d(ctx_static, GGML_TYPE_F32, IN, BATCH);
    struct ggml_tensor *w1 = ggml_new_tensor_2d(ctx_static, GGML_TYPE_F32, IN, HIDDEN);
    struct ggml_tensor *w2 = ggml_new_tensor_2d(ctx_static, GGML_TYPE_F32, HIDDEN, OUT);
    ggml_set_input(in);
    ggml_set_param(w1);
    ggml_set_param(w2);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx_static, backend);
    float wv[IN * HIDDEN];
    test_fill_uniform(wv, IN * HIDDEN, -0.5f, 0.5f);
    ggml_backend_tensor_set(w1, wv, 0, sizeof(float) * IN * HIDDEN);
    ggml_backend_tensor_set(w2, wv, 0, sizeof(float) * HIDDEN * OUT);
    struct ggml_tensor *out = ggml_mul_mat(ctx_compute, w2, ggml_tanh(ctx_compute, ggml_mul_mat(ctx_compute, w1, in)));
    struct ggml_opt_params params = ggml_opt_default_params(sched, GGML_OPT_LOSS_TYPE_CROSS_ENTROPY);
    params.ctx_compute = ctx_compute;
    params.inputs = in;
    params.outputs = out;
    ggml_opt_context_t opt = ggml_opt_init(params);
    ggml_opt_result_t res = ggml_opt_result_init();
    const long per_epoch = N_DATA / BATCH, epochs = (steps + per_epoch - 1) / per_epoch;
    long rss_warm = 0;
    double first_loss = NAN, last_loss = NAN;
    for (long e = 0; opt && e < epochs; e++) {
        ggml_opt_result_reset(res);
        ggml_opt_epoch(opt, ds, res, NULL, N_DATA, NULL, NULL);
        ggml_opt_result_loss(res, &last_loss, NULL);
        if (e == 0) first_loss = last_loss;
        if (e == epochs / 10) rss_warm = rss_kb();
    }
    const long growth = rss_kb() - rss_warm;
    tap_ok(opt && isfinite(last_loss) && last_loss < first_loss, "training: %ld optimizer steps, loss %.4f -> %.4f", epochs * per_epoch,
           first_loss, last_loss);
    check_growth("training", opt ? growth : RSS_BOUND_KB);
    ggml_opt_result_free(res);
    ggml_opt_free(opt);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx_compute);
    ggml_free(ctx_static);
    ggml_opt_dataset_free(ds);
    ggml_backend_sched_free(sched);
}

/* -------------------------------------------------------- generation */

enum { D = 16 };

/* Token t: store its key in the cache, attend with its query over keys 0..t, return the
 * attention-weighted mean of the keys' first component. */
static float generate_token(ggml_backend_t backend, ggml_gallocr_t galloc, struct ggml_tensor *cache, long t, const float *q_host,
                            const float *k_host) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    struct ggml_tensor *k = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, D), *q = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, D);
    ggml_set_input(k);
    ggml_set_input(q);
    struct ggml_tensor *slot = ggml_view_1d(ctx, cache, D, (size_t)t * D * sizeof(float));
    struct ggml_tensor *store = ggml_cpy(ctx, k, slot);
    struct ggml_tensor *keys = ggml_view_2d(ctx, cache, D, t + 1, cache->nb[1], 0);
    struct ggml_tensor *weights = ggml_soft_max(ctx, ggml_mul_mat(ctx, keys, q)); /* (t+1) scores */
    struct ggml_tensor *first = ggml_view_2d(ctx, cache, 1, t + 1, cache->nb[1], 0);
    struct ggml_tensor *mixed = ggml_mul_mat(ctx, ggml_cont(ctx, ggml_transpose(ctx, first)), weights);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, store);
    ggml_build_forward_expand(gf, mixed);
    float result = NAN;
    if (ggml_gallocr_alloc_graph(galloc, gf)) {
        ggml_backend_tensor_set(k, k_host, 0, sizeof(float) * D);
        ggml_backend_tensor_set(q, q_host, 0, sizeof(float) * D);
        if (ggml_backend_graph_compute(backend, gf) == GGML_STATUS_SUCCESS) ggml_backend_tensor_get(mixed, &result, 0, sizeof result);
    }
    ggml_free(ctx);
    return result;
}

static void soak_generation(ggml_backend_t backend, long tokens) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){2 * ggml_tensor_overhead(), NULL, true});
    struct ggml_tensor *cache = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, D, tokens);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    ggml_backend_buffer_clear(buf, 0);
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    float q[D], k[D];
    long rss_warm = 0, bad = 0;
    for (long t = 0; t < tokens; t++) {
        for (int i = 0; i < D; i++) {
            q[i] = 0.0f;
            k[i] = i == 0 ? (float)(t % 5) : 0.0f; /* first components cycle 0..4; equal scores: the mean is their mean */
        }
        const float got = generate_token(backend, galloc, cache, t, q, k);
        double want = 0;
        for (long s = 0; s <= t; s++) want += (double)(s % 5);
        want /= (double)(t + 1);
        bad += !(fabs(got - want) < 1e-3);
        if (t == tokens / 10) rss_warm = rss_kb();
    }
    const long growth = rss_kb() - rss_warm;
    tap_ok(bad == 0, "generation: %ld tokens over a growing cache, %ld wrong", tokens, bad);
    check_growth("generation", growth);
    ggml_gallocr_free(galloc);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

/* ---------------------------------------------------------- backends */

static void soak_backends(long count) {
    ggml_backend_free(ggml_backend_cpu_init()); /* the registry and plugin are loaded once, before counting */
    const int fds = count_entries("/proc/self/fd"), threads = count_entries("/proc/self/task");
    long failures = 0;
    for (long i = 0; i < count; i++) {
        ggml_backend_t b = ggml_backend_cpu_init();
        if (!b) {
            failures++;
            continue;
        }
        ggml_backend_cpu_set_n_threads(b, 2);
        struct ggml_context *ctx = ggml_init((struct ggml_init_params){8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
        struct ggml_tensor *a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64);
        ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, b);
        ggml_backend_buffer_clear(buf, 0);
        struct ggml_cgraph *gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, ggml_scale_inplace(ctx, a, 2.0f));
        failures += ggml_backend_graph_compute(b, gf) != GGML_STATUS_SUCCESS; /* starts the thread pool */
        ggml_backend_buffer_free(buf);
        ggml_free(ctx);
        ggml_backend_free(b);
    }
    const int fds_after = count_entries("/proc/self/fd"), threads_after = count_entries("/proc/self/task");
    tap_ok(failures == 0, "backends: %ld CPU backends created, used and freed", count);
    tap_ok(fds_after == fds, "backends: open file descriptors %d before, %d after", fds, fds_after);
    tap_ok(threads_after == threads, "backends: threads %d before, %d after", threads, threads_after);
}

int main(void) {
    test_seed(5);
    ggml_backend_t backend = ggml_backend_cpu_init();
    if (!backend) return tap_skip_all("no CPU backend");
    ggml_backend_cpu_set_n_threads(backend, 1);
    soak_training(backend, env_count("SOAK_STEPS", 800));
    soak_generation(backend, env_count("SOAK_TOKENS", 800));
    ggml_backend_free(backend);
    soak_backends(env_count("SOAK_BACKENDS", 200));
    return tap_done();
}
