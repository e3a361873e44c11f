/*
 * test-faults.c - allocation-failure injection (core/fault-inject.h).
 *
 * Each workload runs once to count its allocations (host allocations of
 * libggmlc and backend buffers), then once per allocation with exactly that
 * one failing.  Every run must either report an error (a NULL, a false, or
 * a status in ggmlc_last_status) or succeed with the right answer, must not
 * crash, and a clean run right after must succeed: the library stays
 * usable.  Leaks on the error paths are caught when this runs under
 * AddressSanitizer (tools/sanitize-check.sh).  Each workload runs in a
 * fork()ed child, so a crash fails that workload only.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault-inject.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-opt.h"
#include "ggmlc-nn.h"
#include "ggmlc.h"
#include "gguf.h"
#include "testutil.h"

enum outcome { CORRECT, ERROR_REPORTED, WRONG };

static char scratch[256]; /* a private folder for the files the workloads write */

static enum outcome status_or(bool ok, bool correct) {
    if (ok && ggmlc_last_status() == GGMLC_OK) return correct ? CORRECT : WRONG;
    return ERROR_REPORTED;
}

/* ------------------------------------------------------------ workloads */

static ggml_backend_t gpu_backend_init(void) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU);
    return dev ? ggml_backend_dev_init(dev, NULL) : NULL;
}

/* Context, graph, allocation in a backend buffer and compute: y = softmax(W x + b). */
static enum outcome compute_on(ggml_backend_t (*backend_init)(void)) {
    ggml_backend_t backend = backend_init();
    if (!backend) return ERROR_REPORTED;
    enum outcome result = ERROR_REPORTED;
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){32 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    ggml_backend_buffer_t buf = NULL;
    ggml_gallocr_t galloc = NULL;
    if (!ctx) goto done;
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5, 3), *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5);
    struct ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    if (!w || !x || !b || !(buf = ggml_backend_alloc_ctx_tensors(ctx, backend))) goto done;
    struct ggml_tensor *y = ggml_soft_max(ctx, ggml_add(ctx, ggml_mul_mat(ctx, w, x), b));
    struct ggml_cgraph *gf = y ? ggml_new_graph(ctx) : NULL;
    if (!gf) goto done;
    ggml_build_forward_expand(gf, y);
    float wv[15], xv[5] = {1, -2, 3, 0.5f, -1}, bv[3] = {0.1f, -0.2f, 0.3f}, yv[3], ref[3], sum = 0;
    for (int i = 0; i < 15; i++) wv[i] = 0.1f * (float)(i % 7) - 0.3f;
    ggml_backend_tensor_set(w, wv, 0, sizeof wv);
    ggml_backend_tensor_set(x, xv, 0, sizeof xv);
    ggml_backend_tensor_set(b, bv, 0, sizeof bv);
    galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    if (!galloc || !ggml_gallocr_alloc_graph(galloc, gf)) goto done;
    if (ggml_backend_graph_compute(backend, gf) != GGML_STATUS_SUCCESS) goto done;
    ggml_backend_tensor_get(y, yv, 0, sizeof yv);
    for (int r = 0; r < 3; r++) {
        ref[r] = bv[r];
        for (int c = 0; c < 5; c++) ref[r] += wv[5 * r + c] * xv[c];
        sum += (ref[r] = expf(ref[r]));
    }
    bool same = true;
    for (int r = 0; r < 3; r++) same = same && fabsf(yv[r] - ref[r] / sum) < 1e-5f;
    result = status_or(true, same);
done:
    ggml_gallocr_free(galloc);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(backend);
    return result;
}

static enum outcome compute_workload(void) { return compute_on(ggml_backend_cpu_init); }

/* The same on the Vulkan plugin's device: its buffers fail like an out-of-memory device. */
static enum outcome gpu_compute_workload(void) { return compute_on(gpu_backend_init); }

/* Reading the configuration and loading the CPU plugin it names. */
static enum outcome config_workload(void) {
    ggmlc_shutdown();
    const enum ggmlc_status status = ggmlc_init();
    bool has_cpu = false;
    struct ggmlc_backend_info info;
    for (size_t i = 0; ggmlc_backend_get_info(i, &info); i++) has_cpu = has_cpu || (strcmp(info.name, "cpu") == 0 && info.loaded);
    return status_or(status == GGMLC_OK, has_cpu && ggmlc_config_file_count() == 1);
}

static void gguf_path(char *buf, size_t size) { snprintf(buf, size, "%s/model.gguf", scratch); }

/* Writing a GGUF file with metadata and two tensors (to a temporary file, renamed). */
static enum outcome gguf_write_workload(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 16, NULL, false});
    struct gguf_context *gguf = gguf_init_empty();
    enum outcome result = ERROR_REPORTED;
    if (!ctx || !gguf) goto done;
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 7, 3), *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 9);
    if (!a || !b) goto done;
    ggml_set_name(a, "weight");
    ggml_set_name(b, "bias");
    for (int i = 0; i < 21; i++) ((float *)a->data)[i] = (float)i - 10.5f;
    memset(b->data, 0, ggml_nbytes(b));
    gguf_set_val_u32(gguf, "test.count", 1234);
    gguf_set_val_str(gguf, "general.name", "fault test");
    gguf_add_tensor(gguf, a);
    gguf_add_tensor(gguf, b);
    char path[512];
    gguf_path(path, sizeof path);
    result = status_or(gguf_write_to_file(gguf, path, false), true);
done:
    gguf_free(gguf);
    ggml_free(ctx);
    return result;
}

/* Reading that file back, tensor data included. */
static enum outcome gguf_read_workload(void) {
    char path[512];
    gguf_path(path, sizeof path);
    struct ggml_context *ctx = NULL;
    struct gguf_context *gguf = gguf_init_from_file(path, (struct gguf_init_params){false, &ctx});
    if (!gguf) return ERROR_REPORTED;
    const int64_t key = gguf_find_key(gguf, "test.count");
    struct ggml_tensor *a = ctx ? ggml_get_tensor(ctx, "weight") : NULL;
    const bool correct = key >= 0 && gguf_get_val_u32(gguf, key) == 1234 && gguf_get_n_tensors(gguf) == 2 && a &&
                         ((float *)a->data)[20] == 9.5f;
    gguf_free(gguf);
    ggml_free(ctx);
    return status_or(ctx != NULL, correct);
}

/* A few optimizer steps of a linear model through ggml-opt. */
static enum outcome opt_workload(void) {
    enum { N_IN = 3, N_OUT = 2, N_DATA = 16, BATCH = 4 };
    ggml_backend_t backend = ggml_backend_cpu_init();
    ggml_backend_sched_t sched = backend ? ggml_backend_sched_new(&backend, NULL, 1, 1024, false, true) : NULL;
    ggml_opt_dataset_t ds = ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, N_IN, N_OUT, N_DATA, 1);
    struct ggml_context *ctx_static = ggml_init((struct ggml_init_params){8 * ggml_tensor_overhead(), NULL, true});
    struct ggml_context *ctx_compute = ggml_init((struct ggml_init_params){16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    ggml_backend_buffer_t buf = NULL;
    ggml_opt_context_t opt = NULL;
    ggml_opt_result_t res = ggml_opt_result_init();
    enum outcome result = ERROR_REPORTED;
    if (!sched || !ds || !ctx_static || !ctx_compute || !res) goto done;
    float *x = ggml_get_data_f32(ggml_opt_dataset_data(ds)), *y = ggml_get_data_f32(ggml_opt_dataset_labels(ds));
    for (int i = 0; i < N_DATA * N_IN; i++) x[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    for (int i = 0; i < N_DATA * N_OUT; i++) y[i] = (float)((i * 13) % 5) / 5.0f;
    struct ggml_tensor *in = ggml_new_tensor_2d(ctx_static, GGML_TYPE_F32, N_IN, BATCH);
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx_static, GGML_TYPE_F32, N_IN, N_OUT);
    if (!in || !w) goto done;
    ggml_set_input(in);
    ggml_set_param(w);
    if (!(buf = ggml_backend_alloc_ctx_tensors(ctx_static, backend))) goto done;
    const float w0[N_IN * N_OUT] = {0.1f, -0.2f, 0.3f, 0.05f, 0.4f, -0.1f};
    ggml_backend_tensor_set(w, w0, 0, sizeof w0);
    struct ggml_tensor *out = ggml_mul_mat(ctx_compute, w, in);
    if (!out) goto done;
    struct ggml_opt_params params = ggml_opt_default_params(sched, GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR);
    params.ctx_compute = ctx_compute;
    params.inputs = in;
    params.outputs = out;
    if (!(opt = ggml_opt_init(params))) goto done;
    ggml_opt_epoch(opt, ds, res, NULL, N_DATA, NULL, NULL);
    double loss;
    int64_t ndata;
    ggml_opt_result_loss(res, &loss, NULL);
    ggml_opt_result_ndata(res, &ndata);
    result = status_or(true, ndata == N_DATA && isfinite(loss) && loss > 0);
done:
    ggml_opt_free(opt);
    ggml_opt_result_free(res);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx_compute);
    ggml_free(ctx_static);
    ggml_opt_dataset_free(ds);
    ggml_backend_sched_free(sched);
    ggml_backend_free(backend);
    return result;
}

/* The model API: build, compile, fit an epoch, save, load back and predict. */
static enum outcome nn_workload(void) {
    enum { N_SAMPLES = 8 };
    float x[N_SAMPLES * 3], y[N_SAMPLES], p1[2], p2[2];
    for (int i = 0; i < N_SAMPLES * 3; i++) x[i] = (float)((i * 7) % 5) - 2.0f;
    for (int i = 0; i < N_SAMPLES; i++) y[i] = (float)(i % 2);
    ggmlc_model *m = ggmlc_sequential((int64_t[]){3}, 1), *loaded = NULL;
    ggmlc_layer *hidden = ggmlc_dense(5, GGMLC_ACT_RELU), *out = ggmlc_dense(2, GGMLC_ACT_NONE);
    enum outcome result = ERROR_REPORTED;
    if (!m || !hidden || !out) {
        ggmlc_layer_free(hidden);
        ggmlc_layer_free(out);
        goto done;
    }
    const bool added_hidden = ggmlc_model_add(m, hidden) == GGMLC_OK;
    if (!added_hidden) ggmlc_layer_free(hidden);
    const bool added_out = ggmlc_model_add(m, out) == GGMLC_OK;
    if (!added_out) ggmlc_layer_free(out);
    if (!added_hidden || !added_out) goto done;
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    co.backend = "cpu";
    struct ggmlc_fit_options fo = ggmlc_fit_defaults();
    fo.epochs = 1;
    fo.batch_size = 4;
    fo.verbose = 0;
    char path[512];
    snprintf(path, sizeof path, "%s/model-nn.gguf", scratch);
    if (ggmlc_model_compile(m, &co) != GGMLC_OK || ggmlc_model_fit(m, x, sizeof x / sizeof x[0], y, N_SAMPLES, N_SAMPLES, &fo, NULL) != GGMLC_OK ||
        ggmlc_model_save(m, path, true) != GGMLC_OK || !(loaded = ggmlc_model_load(path, "cpu")))
        goto done;
    if (ggmlc_model_predict(m, x, 3, 1, 1, p1, 2) != GGMLC_OK || ggmlc_model_predict(loaded, x, 3, 1, 1, p2, 2) != GGMLC_OK) goto done;
    result = status_or(true, p1[0] == p2[0] && p1[1] == p2[1]);
done:
    ggmlc_model_free(loaded);
    ggmlc_model_free(m);
    return result;
}

/* A gzip'd CSV dataset. */
static enum outcome dataset_workload(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/data.csv", scratch);
    struct ggmlc_dataset d;
    memset(&d, 0, sizeof d);
    if (ggmlc_dataset_load_csv(path, &d) != GGMLC_OK) return ERROR_REPORTED;
    const bool correct = d.n == 3 && d.shape[0] == 2 && d.x[5] == 6.5f && d.y[2] == 2.0f && d.n_classes == 3;
    ggmlc_dataset_free(&d);
    return status_or(true, correct);
}

/* ------------------------------------------------------------ driver */

static void quiet_log(enum ggml_log_level level, const char *text, void *user_data) {}

/* In the child: every allocation point of the workload; exit status 0 when all behaved. */
static int try_every_point(enum outcome (*workload)(void), const char *name, long *points) {
    ggmlc_fault_fail_alloc_at(0);
    ggmlc_clear_error();
    if (workload() != CORRECT) {
        printf("# %s: the clean run failed: %s\n", name, ggmlc_last_error());
        return 1;
    }
    const long total = ggmlc_fault_alloc_count();
    int bad = 0;
    for (long n = 1; n <= total; n++) {
        ggmlc_clear_error();
        ggmlc_fault_fail_alloc_at(n);
        const enum outcome faulty = workload();
        const bool triggered = ggmlc_fault_triggered();
        ggmlc_fault_fail_alloc_at(0);
        ggmlc_clear_error();
        const enum outcome clean = workload();
        if (faulty == WRONG || (faulty == ERROR_REPORTED && !triggered) || clean != CORRECT) {
            if (bad++ < 5)
                printf("# %s: allocation %ld of %ld: %s; the clean run after it %s\n", name, n, total,
                       faulty == WRONG ? "a wrong result reported as success" : faulty == CORRECT ? "tolerated" : "an error",
                       clean == CORRECT ? "succeeded" : "failed");
        }
    }
    *points = total;
    return bad ? 1 : 0;
}

static void run_workload(enum outcome (*workload)(void), const char *name) {
    const char *only = getenv("TEST_FAULTS_ONLY"); /* for debugging one workload */
    if (only && !strstr(name, only)) return;
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        tap_ok(false, "%s: pipe", name);
        return;
    }
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        ggml_log_set(quiet_log, NULL);
        long points = 0;
        const int rc = try_every_point(workload, name, &points);
        if (write(pipefd[1], &points, sizeof points) != sizeof points) _exit(3);
        fflush(stdout);
        ggmlc_shutdown();
        exit(rc); /* exit, not _exit: LeakSanitizer checks at exit */
    }
    close(pipefd[1]);
    long points = 0;
    const bool got = read(pipefd[0], &points, sizeof points) == sizeof points;
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    const bool clean_exit = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (WIFSIGNALED(status)) printf("# %s: the child died of signal %d\n", name, WTERMSIG(status));
    tap_ok(clean_exit && got && points > 0, "%s: each of its %ld allocations failed in turn: error or right answer, then a clean run",
           name, points);
}

/* The GPU workload, with the configuration of the Vulkan plugin (Vulkan objects are made in the
 * children only: they do not survive fork). */
static void run_vulkan_workload(void) {
    const char *build = getenv("GGMLC_BUILDDIR");
    char ini[1024];
    snprintf(ini, sizeof ini, "%s/tests/ggmlc-test-vulkan.ini", build ? build : ".");
    if (!build || access(ini, R_OK) != 0) {
        tap_skip("the Vulkan plugin is not built", "GPU compute: every allocation failed in turn");
        return;
    }
    fflush(stdout);
    const pid_t probe = fork();
    if (probe == 0) {
        ggml_log_set(quiet_log, NULL);
        setenv("GGMLC_CONFIG", ini, 1);
        _exit(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU) ? 0 : 77);
    }
    int status = 0;
    waitpid(probe, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        tap_skip("no Vulkan device", "GPU compute: every allocation failed in turn");
        return;
    }
    const char *saved = getenv("GGMLC_CONFIG");
    char *restore = saved ? strdup(saved) : NULL;
    setenv("GGMLC_CONFIG", ini, 1);
    run_workload(gpu_compute_workload, "GPU (Vulkan) context + graph + compute");
    if (restore) setenv("GGMLC_CONFIG", restore, 1);
    free(restore);
}

/* The distinct files named libggmlc* mapped into this process (at most max, each of up to 512
 * bytes); whether the CPU plugin is among the mappings. */
static int mapped_cores(char paths[][512], int max, bool *cpu_plugin) {
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) return -1;
    int n = 0;
    char line[1024];
    *cpu_plugin = false;
    while (fgets(line, sizeof line, maps)) {
        char *path = strchr(line, '/');
        if (!path) continue;
        path[strcspn(path, "\n")] = '\0';
        const char *base = strrchr(path, '/') + 1;
        *cpu_plugin = *cpu_plugin || strcmp(base, "cpu.so") == 0;
        if (strncmp(base, "libggmlc", 8) != 0) continue;
        bool seen = false;
        for (int i = 0; i < n; i++) seen = seen || strcmp(paths[i], path) == 0;
        if (!seen && n < max) snprintf(paths[n++], 512, "%s", path);
    }
    fclose(maps);
    return n;
}

/* This program runs on the test build of the core (tests/hooks/), and the CPU plugin, linked with
 * libggmlc.so.0, binds to that same copy: a second core in the process would have its own
 * registry, error state and allocation count, out of the hooks' reach. */
static void one_core_loaded(void) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    char paths[4][512];
    bool cpu_plugin = false;
    const int n = mapped_cores(paths, 4, &cpu_plugin);
    for (int i = 0; i < n; i++) tap_diag("mapped: %s", paths[i]);
    tap_ok(cpu && cpu_plugin && n == 1 && strstr(paths[0], "/tests/hooks/"),
           "with the CPU plugin loaded, one core is mapped: the test build");
    ggml_backend_free(cpu);
    ggmlc_shutdown();
}

int main(void) {
    snprintf(scratch, sizeof scratch, "/tmp/ggmlc-faults-XXXXXX");
    if (!mkdtemp(scratch)) return tap_skip_all("cannot make a scratch folder");
    run_workload(compute_workload, "context + graph + compute");
    run_workload(config_workload, "configuration + plugin load");
    run_workload(gguf_write_workload, "GGUF write");
    run_workload(gguf_read_workload, "GGUF read");
    run_workload(opt_workload, "ggml-opt epoch");
    run_workload(nn_workload, "model fit, save, load, predict");
    char csv[512];
    snprintf(csv, sizeof csv, "%s/data.csv", scratch);
    FILE *f = fopen(csv, "w");
    if (f) fputs("1,2,0\n3.5,-4,1\n5,6.5,2\n", f), fclose(f);
    run_workload(dataset_workload, "CSV dataset");
    unlink(csv);
    snprintf(csv, sizeof csv, "%s/model-nn.gguf", scratch);
    unlink(csv);
    run_vulkan_workload();
    one_core_loaded();
    char path[512];
    gguf_path(path, sizeof path);
    unlink(path);
    rmdir(scratch);
    return tap_done();
}
