/* test-cpu-api.c - ggml-cpu.h: graph computation on host contexts with 1 and 2 threads,
 * the CPU backend on backend buffers, thread pools, abort callbacks, chains of one-task
 * nodes between split ones, element access, custom operators with their task counts,
 * CPU feature flags. */
#include <dirent.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

static struct ggml_context *host_ctx(size_t mb) { return ggml_init((struct ggml_init_params){mb << 20, NULL, false}); }

/* y = silu((a + b) * a) - a / 3, summed per row: big enough to be split between threads. */
static struct ggml_tensor *small_graph(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) {
    struct ggml_tensor *t = ggml_mul(ctx, ggml_add(ctx, a, b), a);
    t = ggml_sub(ctx, ggml_silu(ctx, t), ggml_scale(ctx, a, 1.0f / 3.0f));
    return ggml_sum_rows(ctx, t);
}

static void test_threads_agree(void) {
    struct ggml_context *ctx = host_ctx(64);
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 301, 257);
    struct ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 301);
    test_seed(7);
    test_fill_uniform(ggml_get_data_f32(a), (size_t)ggml_nelements(a), -2.0f, 2.0f);
    test_fill_uniform(ggml_get_data_f32(b), (size_t)ggml_nelements(b), -1.0f, 1.0f);
    struct ggml_tensor *y = small_graph(ctx, a, b);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    tap_ok(ggml_graph_compute_with_ctx(ctx, g, 1) == GGML_STATUS_SUCCESS, "graph computes on 1 thread");
    float *one = malloc(257 * sizeof(float)), *two = malloc(257 * sizeof(float));
    memcpy(one, y->data, 257 * sizeof(float));
    memset(y->data, 0, 257 * sizeof(float));
    tap_ok(ggml_graph_compute_with_ctx(ctx, g, 2) == GGML_STATUS_SUCCESS, "graph computes on 2 threads");
    memcpy(two, y->data, 257 * sizeof(float));
    tap_ok(memcmp(one, two, 257 * sizeof(float)) == 0, "1 and 2 threads give identical results");
    /* an independent check of one row */
    double ref = 0;
    const float *pa = ggml_get_data_f32(a), *pb = ggml_get_data_f32(b);
    for (int i = 0; i < 301; i++) {
        const float x = (pa[5 * 301 + i] + pb[i]) * pa[5 * 301 + i];
        ref += x / (1.0f + expf(-x)) - pa[5 * 301 + i] / 3.0f;
    }
    tap_ok(fabs(one[5] - ref) < 1e-3 * (1 + fabs(ref)), "row 5 matches a direct computation (%g vs %g)", one[5], ref);
    free(one);
    free(two);
    ggml_free(ctx);
}

static bool abort_always(void *data) {
    (void)data;
    return true;
}

/* A fingerprint of this process's threads (Linux: /proc/self/task): their count and the sum
 * of their ids, so that a pool whose workers were replaced shows up. */
static unsigned long long thread_fingerprint(void) {
    DIR *dir = opendir("/proc/self/task");
    if (!dir) return 0;
    unsigned long long n = 0, sum = 0;
    for (struct dirent *e; (e = readdir(dir));)
        if (e->d_name[0] != '.') n++, sum += strtoull(e->d_name, NULL, 10);
    closedir(dir);
    return n << 48 ^ sum;
}

static void test_backend(void) {
    ggml_backend_t be = ggml_backend_cpu_init();
    if (!tap_ok(be != NULL, "ggml_backend_cpu_init: %s", be ? ggml_backend_name(be) : ggmlc_last_error())) return;
    tap_ok(ggml_backend_is_cpu(be), "ggml_backend_is_cpu");
    tap_ok(ggml_backend_cpu_reg() && strcmp(ggml_backend_reg_name(ggml_backend_cpu_reg()), "cpu") == 0, "the registry is named cpu");
    ggml_backend_dev_t dev = ggml_backend_get_device(be);
    tap_ok(dev && ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU && strcmp(ggml_backend_dev_name(dev), "CPU") == 0,
           "one device CPU of type CPU");
    size_t free_mem = 0, total = 0;
    ggml_backend_dev_memory(dev, &free_mem, &total);
    tap_ok(total > 0 && free_mem <= total, "device memory %zu of %zu bytes free", free_mem, total);

    struct ggml_context *ctx = ggml_init((struct ggml_init_params){64 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 301, 257);
    struct ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 301);
    struct ggml_tensor *y = small_graph(ctx, a, b);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, be);
    tap_ok(buf != NULL, "ggml_backend_alloc_ctx_tensors on the CPU backend");
    float *in_a = malloc(301 * 257 * sizeof(float)), *in_b = malloc(301 * sizeof(float));
    test_seed(7);
    test_fill_uniform(in_a, 301 * 257, -2.0f, 2.0f);
    test_fill_uniform(in_b, 301, -1.0f, 1.0f);
    ggml_backend_tensor_set(a, in_a, 0, ggml_nbytes(a));
    ggml_backend_tensor_set(b, in_b, 0, ggml_nbytes(b));
    float out1[257], out2[257];
    ggml_backend_cpu_set_n_threads(be, 1);
    tap_ok(ggml_backend_graph_compute(be, g) == GGML_STATUS_SUCCESS, "backend computes with 1 thread");
    ggml_backend_tensor_get(y, out1, 0, sizeof out1);
    ggml_backend_cpu_set_n_threads(be, 2);
    tap_ok(ggml_backend_graph_compute(be, g) == GGML_STATUS_SUCCESS, "backend computes with 2 threads");
    ggml_backend_tensor_get(y, out2, 0, sizeof out2);
    tap_ok(memcmp(out1, out2, sizeof out1) == 0, "the backend's results do not depend on the thread count");
    /* llama.cpp sets its thread pool, usually NULL, before every graph: the backend's own
     * workers must survive that (they were stopped and started again, per token). */
    const unsigned long long threads_before = thread_fingerprint();
    ggml_backend_cpu_set_threadpool(be, NULL);
    ggml_backend_graph_compute(be, g);
    tap_ok(thread_fingerprint() == threads_before,
           "ggml_backend_cpu_set_threadpool(NULL) keeps the backend's own worker threads");

    struct ggml_threadpool_params tpp = ggml_threadpool_params_default(2);
    struct ggml_threadpool *tp = ggml_threadpool_new(&tpp);
    tap_ok(tp && ggml_threadpool_get_n_threads(tp) == 2, "ggml_threadpool_new with 2 threads");
    ggml_backend_cpu_set_threadpool(be, tp);
    ggml_threadpool_pause(tp);
    memset(out2, 0, sizeof out2);
    tap_ok(ggml_backend_graph_compute(be, g) == GGML_STATUS_SUCCESS, "backend computes on a lent (paused) thread pool");
    ggml_backend_tensor_get(y, out2, 0, sizeof out2);
    tap_ok(memcmp(out1, out2, sizeof out1) == 0, "same result on the lent pool");
    ggml_backend_cpu_set_threadpool(be, NULL);
    ggml_threadpool_free(tp);
    struct ggml_threadpool_params tpp2 = ggml_threadpool_params_default(2);
    tap_ok(ggml_threadpool_params_match(&tpp, &tpp2), "ggml_threadpool_params_match");
    tpp2.cpumask[0] = true; /* both threads on CPU 0: slower, still right */
    tpp2.strict_cpu = true;
    tap_ok(!ggml_threadpool_params_match(&tpp, &tpp2), "params with a cpumask differ");
    struct ggml_threadpool *pinned = ggml_threadpool_new(&tpp2);
    ggml_backend_cpu_set_threadpool(be, pinned);
    memset(out2, 0, sizeof out2);
    const enum ggml_status pinned_st = ggml_backend_graph_compute(be, g);
    ggml_backend_tensor_get(y, out2, 0, sizeof out2);
    tap_ok(pinned_st == GGML_STATUS_SUCCESS && memcmp(out1, out2, sizeof out1) == 0, "a pool pinned by cpumask computes the same");
    ggml_backend_cpu_set_threadpool(be, NULL);
    ggml_threadpool_free(pinned);

    ggml_backend_cpu_set_abort_callback(be, abort_always, NULL);
    const enum ggml_status aborted = ggml_backend_graph_compute(be, g);
    ggml_backend_cpu_set_abort_callback(be, NULL, NULL);
    tap_ok(aborted == GGML_STATUS_ABORTED, "ggml_backend_cpu_set_abort_callback stops the backend's computation");
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    ggml_backend_get_features_t features = (ggml_backend_get_features_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features");
    bool names_ok = features != NULL;
    for (struct ggml_backend_feature *f = features ? features(reg) : NULL; f && f->name; f++) names_ok &= strchr(f->name, '=') == NULL;
    tap_ok(names_ok, "ggml_backend_get_features lists instruction sets by name");

    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    free(in_a);
    free(in_b);
    ggml_backend_free(be);
}

/* ggml's CPU registry answers these names (llama-bench calls "ggml_threadpool_new" unchecked;
 * llama.cpp asks for the extra buffer types and the NUMA functions). */
static void test_reg_proc_names(void) {
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    typedef struct ggml_threadpool *(*tp_new_t)(struct ggml_threadpool_params *);
    typedef void (*tp_free_t)(struct ggml_threadpool *);
    tp_new_t tp_new = (tp_new_t)ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new");
    tp_free_t tp_free = (tp_free_t)ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free");
    struct ggml_threadpool_params tpp = ggml_threadpool_params_default(2);
    struct ggml_threadpool *tp = tp_new && tp_free ? tp_new(&tpp) : NULL;
    tap_ok(tp && ggml_threadpool_get_n_threads(tp) == 2, "the CPU registry's ggml_threadpool_new makes a 2-thread pool");
    if (tp) tp_free(tp);
    ggml_backend_dev_get_extra_bufts_t extra =
        (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    ggml_backend_buffer_type_t *bufts = extra ? extra(ggml_backend_reg_dev_get(reg, 0)) : NULL;
    tap_ok(bufts && bufts[0] && strcmp(ggml_backend_buft_name(bufts[0]), "CPU_REPACK") == 0 && bufts[1] == NULL,
           "its extra buffer types: CPU_REPACK only (test-cpu-repack checks it)");
    bool (*is_numa)(void) = (bool (*)(void))ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_is_numa");
    tap_ok(is_numa && ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_numa_init") &&
               ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_set_use_ref") && !is_numa(),
           "ggml_backend_cpu_numa_init, _is_numa (false) and _set_use_ref are served");
    tap_ok(ggml_backend_reg_get_proc_address(reg, "ggml_no_such_function") == NULL &&
               ggml_backend_reg_get_proc_address(reg, NULL) == NULL && ggml_backend_reg_get_proc_address(NULL, "ggml_threadpool_new") == NULL,
           "an unknown name, a NULL name or registry give NULL");
}

/* A zero-sized buffer is ggml's dummy buffer: size 0, no base (llama.cpp's no_alloc load). */
static void test_empty_buffer(void) {
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 0);
    tap_ok(buf && ggml_backend_buffer_get_size(buf) == 0 && ggml_backend_buffer_get_base(buf) == NULL,
           "a 0-byte buffer exists, with size 0 and no base");
    if (buf) ggml_backend_buffer_free(buf);
}

static atomic_int abort_calls;
static bool abort_after_two(void *data) {
    (void)data;
    return atomic_fetch_add(&abort_calls, 1) + 1 >= 2;
}

static void test_abort(void) {
    struct ggml_context *ctx = host_ctx(4);
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    ggml_set_f32(x, 1.0f);
    struct ggml_tensor *y = x;
    for (int i = 0; i < 10; i++) y = ggml_add(ctx, y, x);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    struct ggml_cplan plan = ggml_graph_plan(g, 2, NULL);
    plan.abort_callback = abort_after_two;
    const enum ggml_status st = ggml_graph_compute(g, &plan);
    tap_ok(st == GGML_STATUS_ABORTED && atomic_load(&abort_calls) == 2, "the abort callback stops the computation (called %d times)",
           atomic_load(&abort_calls));
    plan.abort_callback = NULL;
    const enum ggml_status st2 = ggml_graph_compute(g, &plan);
    const float v = ggml_get_f32_1d(y, 3);
    tap_ok(st2 == GGML_STATUS_SUCCESS && v == 11.0f, "without it the chain of adds gives 11 (%g)", v);
    ggml_free(ctx);
}

/* Layers of a product split between threads followed by a chain of one-task nodes (the walker runs
 * such a chain on the thread that completed the product): h = rms_norm(silu(W h + h) / 2). */
static struct ggml_tensor *chained_layers(struct ggml_context *ctx, struct ggml_tensor *w,
                                          struct ggml_tensor *x, int layers) {
    struct ggml_tensor *h = x;
    for (int l = 0; l < layers; l++) {
        struct ggml_tensor *p = ggml_add(ctx, ggml_mul_mat(ctx, w, h), h);
        h = ggml_rms_norm(ctx, ggml_scale(ctx, ggml_silu(ctx, p), 0.5f), 1e-6f);
    }
    return h;
}

/* The same layers computed directly, in double. */
static void chained_reference(const float *w, const float *x, int n, int layers, double *h) {
    double *p = malloc((size_t)n * sizeof *p);
    for (int i = 0; i < n; i++) h[i] = x[i];
    for (int l = 0; l < layers; l++) {
        double squares = 0;
        for (int r = 0; r < n; r++) {
            double s = h[r];
            for (int c = 0; c < n; c++) s += (double)w[(size_t)r * n + c] * h[c];
            p[r] = 0.5 * s / (1.0 + exp(-s));
            squares += p[r] * p[r];
        }
        const double scale = 1.0 / sqrt(squares / n + 1e-6);
        for (int r = 0; r < n; r++) h[r] = p[r] * scale;
    }
    free(p);
}

static atomic_int chain_polls;
static bool abort_after_seven(void *data) {
    (void)data;
    return atomic_fetch_add(&chain_polls, 1) + 1 >= 7;
}

/* ggml_graph_compute on nth threads with an optional abort callback, every node's memory filled with
 * NaNs first (a node started before its inputs were complete must not find the last run's values). */
static enum ggml_status compute_planned(struct ggml_cgraph *g, int nth,
                                        ggml_abort_callback abort_cb) {
    for (int i = 0; i < ggml_graph_n_nodes(g); i++)
        memset(ggml_graph_node(g, i)->data, 0xff, ggml_nbytes(ggml_graph_node(g, i)));
    struct ggml_cplan plan = ggml_graph_plan(g, nth, NULL);
    void *work = plan.work_size ? malloc(plan.work_size) : NULL;
    plan.work_data = work;
    plan.abort_callback = abort_cb;
    const enum ggml_status st = ggml_graph_compute(g, &plan);
    free(work);
    return st;
}

static void stuck(int sig) {
    (void)sig;
    static const char msg[] = "Bail out! the graph walker hung\n";
    (void)!write(STDOUT_FILENO, msg, sizeof msg - 1);
    _exit(1);
}

/* The same graph with all threads on one CPU (the pool's threads are made after the pinning, so
 * they inherit it): the caller is then often descheduled while the workers run ahead through
 * the whole graph, which once let the caller, arriving late at the first node of several tasks,
 * set the count of complete nodes back to 0 and leave the others waiting forever. */
static void test_owner_chains_on_one_cpu(struct ggml_cgraph *g, struct ggml_tensor *y,
                                         const float *one) {
    cpu_set_t saved, pinned;
    if (sched_getaffinity(0, sizeof saved, &saved) != 0) {
        tap_skip("no CPU affinity", "chains on one CPU");
        return;
    }
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &saved)) cpu++;
    CPU_ZERO(&pinned);
    CPU_SET(cpu, &pinned);
    sched_setaffinity(0, sizeof pinned, &pinned);
    bool same = true;
    for (int rep = 0; rep < 6 && same; rep++) {
        const int nth = 5 + rep % 2; /* a new pool each time: its threads inherit the pinning */
        same = compute_planned(g, nth, NULL) == GGML_STATUS_SUCCESS &&
               memcmp(one, y->data, ggml_nbytes(y)) == 0;
    }
    sched_setaffinity(0, sizeof saved, &saved);
    tap_ok(same, "on one CPU, 5 and 6 threads in turn, six times: 1 thread's bits, no hang");
}

static void test_owner_chains(void) {
    enum { N = 257, LAYERS = 24 };
    signal(SIGALRM, stuck); /* a hang fails the test instead of stopping make check */
    alarm(180);
    struct ggml_context *ctx = host_ctx(32);
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, N),
                       *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
    test_seed(11);
    test_fill_uniform(ggml_get_data_f32(w), (size_t)N * N, -0.1f, 0.1f);
    test_fill_uniform(ggml_get_data_f32(x), N, -1.0f, 1.0f);
    struct ggml_tensor *y = chained_layers(ctx, w, x, LAYERS);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    float one[N], many[N];
    double ref[N], worst = 0;
    tap_ok(compute_planned(g, 1, NULL) == GGML_STATUS_SUCCESS,
           "%d layers of a split product and a chain of one-task nodes, 1 thread", LAYERS);
    memcpy(one, y->data, sizeof one);
    chained_reference(ggml_get_data_f32(w), ggml_get_data_f32(x), N, LAYERS, ref);
    for (int i = 0; i < N; i++) worst = fmax(worst, fabs(one[i] - ref[i]));
    tap_ok(worst < 1e-4, "they match a direct computation in double (worst difference %g)", worst);
    const int threads[] = {3, 8};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        const enum ggml_status st = compute_planned(g, threads[t], NULL);
        memcpy(many, y->data, sizeof many);
        tap_ok(st == GGML_STATUS_SUCCESS && memcmp(one, many, sizeof one) == 0,
               "%d threads give 1 thread's bits", threads[t]);
    }
    const enum ggml_status aborted = compute_planned(g, 4, abort_after_seven);
    tap_ok(aborted == GGML_STATUS_ABORTED && atomic_load(&chain_polls) == 7,
           "an abort among the chains stops the graph on 4 threads (status %d, %d polls)", aborted,
           atomic_load(&chain_polls));
    const enum ggml_status again = compute_planned(g, 4, NULL);
    memcpy(many, y->data, sizeof many);
    tap_ok(again == GGML_STATUS_SUCCESS && memcmp(one, many, sizeof one) == 0,
           "the next computation on 4 threads is whole");
    test_owner_chains_on_one_cpu(g, y, one);
    alarm(0);
    ggml_free(ctx);
}

/* Whole-tensor reductions large enough to be split: partial sums meet after a barrier. */
static void test_split_reductions(void) {
    struct ggml_context *ctx = host_ctx(16);
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 301, 211);
    struct ggml_tensor *i = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 301, 211), *j = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 301, 211);
    test_seed(3);
    double ref = 0;
    int64_t equal = 0;
    for (int k = 0; k < 301 * 211; k++) {
        const float v = test_uniform(-1.0f, 1.0f);
        ((float *)a->data)[k] = v;
        ref += v;
        ((int32_t *)i->data)[k] = (int32_t)(test_uniform(0.0f, 3.0f));
        ((int32_t *)j->data)[k] = (int32_t)(test_uniform(0.0f, 3.0f));
        equal += ((int32_t *)i->data)[k] == ((int32_t *)j->data)[k];
    }
    /* rows longer than the 1024-value blocks of the vectorized sum, and a tail */
    struct ggml_tensor *long_rows = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5000, 3);
    double row_ref[3] = {0, 0, 0};
    for (int k = 0; k < 15000; k++) {
        const float v = test_uniform(-1.0f, 3.0f);
        ((float *)long_rows->data)[k] = v;
        row_ref[k / 5000] += v;
    }
    struct ggml_tensor *s = ggml_sum(ctx, a), *c = ggml_count_equal(ctx, i, j), *rows = ggml_sum_rows(ctx, long_rows);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, s);
    ggml_build_forward_expand(g, c);
    ggml_build_forward_expand(g, rows);
    ggml_graph_compute_with_ctx(ctx, g, 2);
    double worst = 0;
    for (int r = 0; r < 3; r++) worst = fmax(worst, fabs(ggml_get_f32_1d(rows, r) - row_ref[r]) / fabs(row_ref[r]));
    tap_ok(worst < 1e-6, "sum_rows of 5000-value rows: relative error %.2g", worst);
    const float got = ggml_get_f32_1d(s, 0);
    tap_ok(fabs(got - ref) < 1e-4, "ggml_sum over 2 threads: %.6f (direct %.6f)", got, ref);
    tap_ok(*(int64_t *)c->data == equal, "ggml_count_equal over 2 threads: %lld (direct %lld)", (long long)*(int64_t *)c->data,
           (long long)equal);
    ggml_free(ctx);
}

/* One long row: the threads split its columns (also with a tiled second operand). */
static void test_long_row(void) {
    struct ggml_context *ctx = host_ctx(16);
    const int n = 100003;
    struct ggml_tensor *a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n - 3), *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 10);
    struct ggml_tensor *c = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
    for (int i = 0; i < n - 3; i++) ggml_set_f32_1d(a, i, (float)(i % 97) - 48.0f);
    for (int i = 0; i < 10; i++) ggml_set_f32_1d(b, i, (float)i);
    for (int i = 0; i < n; i++) ggml_set_f32_1d(c, i, (float)(i % 13) - 6.0f);
    struct ggml_tensor *tiled = ggml_add(ctx, a, b), *act = ggml_relu(ctx, ggml_mul(ctx, c, c));
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, tiled);
    ggml_build_forward_expand(g, act);
    ggml_graph_compute_with_ctx(ctx, g, 2);
    bool ok = true;
    for (int i = 0; i < n - 3; i++) ok &= ggml_get_f32_1d(tiled, i) == (float)(i % 97) - 48.0f + (float)(i % 10);
    for (int i = 0; i < n; i++) ok &= ggml_get_f32_1d(act, i) == ((float)(i % 13) - 6.0f) * ((float)(i % 13) - 6.0f);
    tap_ok(ok, "a single row of %d elements split between 2 threads (tiled add, mul, relu)", n);
    ggml_free(ctx);
}

static void test_element_access(void) {
    struct ggml_context *ctx = host_ctx(1);
    struct ggml_tensor *f = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 3, 4, 2);
    ggml_set_f32(f, 0.5f);
    ggml_set_f32_nd(f, 2, 1, 1, 0, -3.25f);
    tap_ok(ggml_get_f32_1d(f, 2 + 3 * 1 + 12 * 1) == -3.25f && ggml_get_f32_1d(f, 0) == 0.5f, "f16 element access by flat and 4-D index");
    struct ggml_tensor *t = ggml_transpose(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 3, 5));
    for (int i = 0; i < 15; i++) ggml_set_i32_1d(t, i, i * 10);
    tap_ok(ggml_get_i32_nd(t, 4, 2, 0, 0) == 140 && ggml_get_i32_1d(t, 7) == 70, "i32 access follows a transposed view's strides");
    struct ggml_tensor *s = ggml_new_f32(ctx, 2.5f), *i = ggml_new_i32(ctx, -7);
    tap_ok(ggml_get_f32_1d(s, 0) == 2.5f && ggml_get_i32_1d(i, 0) == -7, "ggml_new_f32 / ggml_new_i32");
    ggmlc_clear_error();
    tap_ok(ggml_get_f32_1d(s, 1) == 0.0f && ggmlc_last_status() == GGMLC_ERR_INVALID_ARG, "an index out of range is an error, not a crash");
    float row[3] = {1.0f, -2.0f, 65504.0f}, back[3];
    ggml_fp16_t h[3];
    ggml_cpu_fp32_to_fp16(row, h, 3);
    ggml_cpu_fp16_to_fp32(h, back, 3);
    tap_ok(memcmp(row, back, sizeof row) == 0, "ggml_cpu_fp32_to_fp16 round trip");
    ggml_free(ctx);
}

/* y = 2 * a, each task writing its own slice; counts the tasks that ran. */
static atomic_int tasks_seen, max_nth;
static void double_it(struct ggml_tensor *dst, const struct ggml_tensor *a, int ith, int nth, void *userdata) {
    atomic_fetch_add(&tasks_seen, 1);
    if (nth > atomic_load(&max_nth)) atomic_store(&max_nth, nth);
    const float k = *(const float *)userdata;
    const int64_t n = ggml_nelements(dst), per = (n + nth - 1) / nth;
    for (int64_t i = ith * per; i < n && i < (ith + 1) * per; i++) ((float *)dst->data)[i] = k * ((const float *)a->data)[i];
}

static void fill_iota(struct ggml_tensor *dst, int ith, int nth, void *userdata) {
    (void)userdata;
    for (int64_t i = ith; i < ggml_nelements(dst); i += nth) ((float *)dst->data)[i] = (float)i + ggml_get_f32_1d(dst->src[0], 0);
}

/* dst = a + b (+ c): the two- and three-operand forms, every task a strided share. */
static void add2(struct ggml_tensor *dst, const struct ggml_tensor *a, const struct ggml_tensor *b, int ith, int nth, void *ud) {
    (void)ud;
    for (int64_t i = ith; i < ggml_nelements(dst); i += nth)
        ((float *)dst->data)[i] = ((const float *)a->data)[i] + ((const float *)b->data)[i];
}
static void add3(struct ggml_tensor *dst, const struct ggml_tensor *a, const struct ggml_tensor *b, const struct ggml_tensor *c, int ith,
                 int nth, void *ud) {
    (void)ud;
    for (int64_t i = ith; i < ggml_nelements(dst); i += nth)
        ((float *)dst->data)[i] = ((const float *)a->data)[i] + ((const float *)b->data)[i] + ((const float *)c->data)[i];
}
/* dst (a view of src[0]) *= src[1][0] */
static void scale_by_arg(struct ggml_tensor *dst, int ith, int nth, void *ud) {
    (void)ud;
    const float k = ((const float *)dst->src[1]->data)[0];
    for (int64_t i = ith; i < ggml_nelements(dst); i += nth) ((float *)dst->data)[i] *= k;
}

static void test_custom_forms(void) {
    struct ggml_context *ctx = host_ctx(4);
    struct ggml_tensor *a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 37), *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 37);
    struct ggml_tensor *c = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 37), *k = ggml_new_f32(ctx, -2.0f);
    for (int i = 0; i < 37; i++) {
        ggml_set_f32_1d(a, i, (float)i);
        ggml_set_f32_1d(b, i, 100.0f);
        ggml_set_f32_1d(c, i, 0.5f);
    }
    struct ggml_tensor *y2 = ggml_map_custom2(ctx, a, b, add2, 2, NULL), *y3 = ggml_map_custom3(ctx, a, b, c, add3, GGML_N_TASKS_MAX, NULL);
    struct ggml_tensor *args[1] = {k};
    struct ggml_tensor *yi = ggml_custom_inplace(ctx, ggml_dup(ctx, a), args, 1, scale_by_arg, 2, NULL);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y2);
    ggml_build_forward_expand(g, y3);
    ggml_build_forward_expand(g, yi);
    ggml_graph_compute_with_ctx(ctx, g, 2);
    tap_ok(ggml_get_f32_1d(y2, 36) == 136.0f && ggml_get_f32_1d(y3, 1) == 101.5f, "map_custom2 and map_custom3");
    tap_ok(yi->data == yi->src[0]->data && ggml_get_f32_1d(yi, 36) == -72.0f, "custom_inplace overwrites its first operand");
    ggml_free(ctx);
}

static void test_custom(void) {
    struct ggml_context *ctx = host_ctx(4);
    struct ggml_tensor *a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1000);
    for (int i = 0; i < 1000; i++) ggml_set_f32_1d(a, i, (float)i);
    float k = 2.0f;
    struct ggml_tensor *y = ggml_map_custom1(ctx, a, double_it, GGML_N_TASKS_MAX, &k);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    ggml_graph_compute_with_ctx(ctx, g, 2);
    const int seen = atomic_load(&tasks_seen);
    tap_ok(seen == 2 && atomic_load(&max_nth) == 2 && ggml_get_f32_1d(y, 999) == 1998.0f,
           "map_custom1 with GGML_N_TASKS_MAX runs on every thread (%d tasks)", seen);
    atomic_store(&tasks_seen, 0);
    atomic_store(&max_nth, 0);
    struct ggml_tensor *y1 = ggml_map_custom1_inplace(ctx, a, double_it, 1, &k);
    g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y1);
    ggml_graph_compute_with_ctx(ctx, g, 2);
    tap_ok(atomic_load(&tasks_seen) == 1 && atomic_load(&max_nth) == 1 && y1->data == a->data && ggml_get_f32_1d(a, 10) == 20.0f,
           "map_custom1_inplace with n_tasks = 1 runs once, in place");
    struct ggml_tensor *off = ggml_new_f32(ctx, 0.5f);
    struct ggml_tensor *args[1] = {off};
    struct ggml_tensor *c = ggml_custom_4d(ctx, GGML_TYPE_F32, 5, 3, 1, 1, args, 1, fill_iota, 2, NULL);
    g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, c);
    ggml_graph_compute_with_ctx(ctx, g, 2);
    tap_ok(c && c->ne[0] == 5 && c->ne[1] == 3 && ggml_get_f32_1d(c, 14) == 14.5f && ggml_get_f32_1d(c, 3) == 3.5f,
           "custom_4d: given shape, its arguments as sources, both tasks ran");
    tap_ok(ggml_map_custom1(ctx, a, NULL, 1, NULL) == NULL && strstr(ggmlc_last_error(), "ggml_map_custom1"), "a NULL function is rejected");
    ggml_free(ctx);
}

static void test_errors_and_features(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, true});
    struct ggml_tensor *a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
    struct ggml_tensor *y = ggml_relu(ctx, a);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    const enum ggml_status st = ggml_graph_compute_with_ctx(ctx, g, 1);
    tap_ok(st == GGML_STATUS_FAILED && strstr(ggmlc_last_error(), "no data"),
           "a graph of unallocated tensors is refused: %s", ggmlc_last_error());
    /* an allocated node whose input is not */
    struct ggml_context *half = ggml_init((struct ggml_init_params){1 << 20, NULL, true});
    struct ggml_tensor *in = ggml_new_tensor_1d(half, GGML_TYPE_F32, 8);
    ggml_set_no_alloc(half, false);
    struct ggml_tensor *out = ggml_relu(half, in);
    struct ggml_cgraph *g2 = ggml_new_graph(half);
    ggml_build_forward_expand(g2, out);
    const enum ggml_status st2 = ggml_graph_compute_with_ctx(half, g2, 1);
    tap_ok(out->data && st2 == GGML_STATUS_FAILED && strstr(ggmlc_last_error(), "has no data"), "an unallocated input is refused: %s",
           ggmlc_last_error());
    ggml_free(half);
    ggml_free(ctx);
    tap_ok(ggml_cpu_has_avx2() == 0 || ggml_cpu_has_avx() == 1, "AVX2 implies AVX (avx=%d avx2=%d avx512=%d f16c=%d fma=%d)",
           ggml_cpu_has_avx(), ggml_cpu_has_avx2(), ggml_cpu_has_avx512(), ggml_cpu_has_f16c(), ggml_cpu_has_fma());
    const struct ggml_type_traits_cpu *tr = ggml_get_type_traits_cpu(GGML_TYPE_F32);
    tap_ok(tr != NULL && tr->nrows == 1, "ggml_get_type_traits_cpu answers for F32");
    /* as in ggml, I32 has a from_float (ggml's test-dup copies f32 to i32 when it has one) */
    const struct ggml_type_traits_cpu *ti = ggml_get_type_traits_cpu(GGML_TYPE_I32);
    const float f[4] = {1.9f, -2.7f, 3e9f, 40.0f};
    int32_t i32[4] = {0};
    if (ti->from_float) ti->from_float(f, i32, 4);
    tap_ok(ti->from_float && i32[0] == 1 && i32[1] == -2 && i32[2] == INT32_MAX && i32[3] == 40,
           "I32's from_float truncates toward zero and saturates: %d %d %d %d", i32[0], i32[1], i32[2], i32[3]);
}

/* ggml_backend_graph_copy of graphs with many nodes, views and shared sources: the copy computes
 * what the original does. */
static void test_graph_copy(void) {
    ggml_backend_t be = ggml_backend_cpu_init();
    bool all_ok = be != NULL;
    int bad_round = -1;
    for (int round = 0; all_ok && round < 20; round++) {
        struct ggml_context *ctx = ggml_init((struct ggml_init_params){8 << 20, NULL, false});
        struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64);
        for (int i = 0; i < 64; i++) ((float *)x->data)[i] = 0.01f * (float)(i + round);
        struct ggml_tensor *y = x;
        for (int k = 0; k < 150; k++) {
            struct ggml_tensor *half = ggml_view_1d(ctx, y, 32, (size_t)(k % 2) * 32 * sizeof(float));
            y = ggml_add(ctx, y, ggml_repeat(ctx, ggml_scale(ctx, half, 0.5f), y));
        }
        struct ggml_cgraph *g = ggml_new_graph_custom(ctx, 2048, false);
        ggml_build_forward_expand(g, y);
        struct ggml_backend_graph_copy copy = ggml_backend_graph_copy(be, g);
        if (!copy.graph || ggml_backend_graph_compute(be, copy.graph) != GGML_STATUS_SUCCESS) {
            all_ok = false;
        } else {
            float got[64];
            ggml_backend_tensor_get(ggml_graph_node(copy.graph, -1), got, 0, sizeof got);
            ggml_graph_compute_with_ctx(ctx, g, 1);
            all_ok = memcmp(got, y->data, sizeof got) == 0;
        }
        if (!all_ok) bad_round = round;
        if (copy.graph) ggml_backend_graph_copy_free(copy);
        ggml_free(ctx);
    }
    tap_ok(all_ok, "ggml_backend_graph_copy of 20 graphs of 600 nodes computes as the originals (%s%d)",
           bad_round < 0 ? "" : "failed in round ", bad_round < 0 ? 20 : bad_round);
    if (be) ggml_backend_free(be);
}

int main(void) {
    ggml_cpu_init();
    test_threads_agree();
    test_backend();
    test_reg_proc_names();
    test_empty_buffer();
    test_abort();
    test_owner_chains();
    test_split_reductions();
    test_long_row();
    test_element_access();
    test_custom();
    test_custom_forms();
    test_errors_and_features();
    test_graph_copy();
    return tap_done();
}
