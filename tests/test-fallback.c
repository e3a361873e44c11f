/*
 * test-fallback.c - the core's one CPU fallback (core/backend-fallback.c), with in-process
 * test backends and no plugin loaded:
 *   "cpu"  (CPU type, host buffers): ADD, MUL, SQR, SUB; counts its backends
 *   "stop" (GPU type, buffers the host may not address): claims ADD, MUL and SQR, declines
 *          SUB, and its graph_compute_from stops at every SQR (ABI 1.1), as a device whose
 *          kernel failed to build would
 * Checks that the core computes the stopped nodes on the CPU and resumes after them, that
 * one CPU backend is made per backend however many calls need it, and bad reports.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggmlc-plugin.h"
#include "host-buffer.h"
#include "testutil.h"

enum { DEV_CPU, DEV_STOP, N_DEVS };
static const char *const dev_names[N_DEVS] = {"cpu", "stop"};

static int n_cpu_backends, n_cpu_backends_freed; /* made and freed on the "cpu" device */
static char ran_on[64][GGML_MAX_NAME + 16];      /* "node@device" per executed node */
static int n_ran;
static int calls_from[16], n_calls; /* first of each graph_compute_from call */
static int bad_stop = -1;           /* >= 0: report this index (out of range) */

static ggml_backend_buffer_type_t stop_buft;

static enum ggml_status run(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const int dev = *(const int *)call->backend_ctx;
    if (n_ran < 64) snprintf(ran_on[n_ran++], sizeof ran_on[0], "%s@%s", dst->name, dev_names[dev]);
    const float *a = dst->src[0]->data, *b = dst->src[1] ? dst->src[1]->data : NULL;
    float *y = dst->data;
    for (int64_t i = 0; i < ggml_nelements(dst); i++) {
        const enum ggml_op op = dst->op;
        y[i] = op == GGML_OP_ADD   ? a[i] + b[i]
               : op == GGML_OP_MUL ? a[i] * b[i]
               : op == GGML_OP_SQR ? a[i] * a[i]
                                   : a[i] - b[i];
    }
    return GGML_STATUS_SUCCESS;
}

static ggmlc_op_fn cpu_ops[GGML_OP_COUNT], stop_ops[GGML_OP_COUNT];

static int dev_index(ggml_backend_dev_t dev) { return *(int *)ggmlc_device_context(dev); }
static const char *dev_name(ggml_backend_dev_t dev) { return dev_names[dev_index(dev)]; }
static void dev_memory(ggml_backend_dev_t dev, size_t *free_mem, size_t *total) {
    *free_mem = *total = 1u << 30;
}
static enum ggml_backend_dev_type dev_type(ggml_backend_dev_t dev) {
    return dev_index(dev) == DEV_CPU ? GGML_BACKEND_DEVICE_TYPE_CPU : GGML_BACKEND_DEVICE_TYPE_GPU;
}
static bool stop_supports(ggml_backend_dev_t dev, const struct ggml_tensor *op) {
    return op->op != GGML_OP_SUB;
}

static const char *backend_name(ggml_backend_t b) {
    return dev_names[*(int *)ggmlc_backend_context(b)];
}
static void cpu_backend_free(ggml_backend_t b) { n_cpu_backends_freed++; }

/* Computes nodes from first on, stopping at the first SQR it meets. */
static enum ggml_status stop_compute_from(ggml_backend_t backend, struct ggml_cgraph *g, int first,
                                          int *stopped_at) {
    if (n_calls < 16) calls_from[n_calls++] = first;
    const struct ggmlc_op_call call = {.nth = 1, .backend_ctx = ggmlc_backend_context(backend)};
    *stopped_at = ggml_graph_n_nodes(g);
    for (int i = first; i < ggml_graph_n_nodes(g); i++) {
        struct ggml_tensor *node = ggml_graph_node(g, i);
        if (ggmlc_op_is_view(node->op)) continue;
        if (node->op == GGML_OP_SQR) {
            *stopped_at = bad_stop >= 0 ? bad_stop : i;
            return GGML_STATUS_SUCCESS;
        }
        run(&call, node);
    }
    return GGML_STATUS_SUCCESS;
}

static ggml_backend_t dev_init(ggml_backend_dev_t dev, const char *params) {
    static const struct ggmlc_backend_iface cpu_iface = {
        .struct_size = sizeof cpu_iface, .get_name = backend_name, .free = cpu_backend_free};
    static const struct ggmlc_backend_iface stop_iface = {.struct_size = sizeof stop_iface,
                                                          .get_name = backend_name,
                                                          .graph_compute_from = stop_compute_from};
    const bool cpu = dev_index(dev) == DEV_CPU;
    n_cpu_backends += cpu;
    return ggmlc_backend_new(dev, cpu ? &cpu_iface : &stop_iface, ggmlc_device_context(dev));
}

static const char *stop_buft_name(ggml_backend_buffer_type_t t) { return "stop"; }
static size_t stop_align(ggml_backend_buffer_type_t t) { return 32; }
static ggml_backend_buffer_t stop_alloc(ggml_backend_buffer_type_t t, size_t size) {
    return host_buffer_new(t, size, 32, 0xff); /* NaN-poisoned: reading unwritten memory shows */
}
static ggml_backend_buffer_type_t dev_buft(ggml_backend_dev_t dev) {
    return dev_index(dev) == DEV_STOP ? stop_buft : ggml_backend_cpu_buffer_type();
}
static bool dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) {
    return dev_index(dev) == DEV_STOP ? buft == stop_buft : ggml_backend_buft_is_host(buft);
}

static ggml_backend_t stop_backend;

static void make_devices(void) {
    static int ids[N_DEVS] = {DEV_CPU, DEV_STOP};
    static const struct ggmlc_reg_iface reg_iface = {.struct_size = sizeof reg_iface};
    cpu_ops[GGML_OP_ADD] = cpu_ops[GGML_OP_MUL] = cpu_ops[GGML_OP_SQR] = cpu_ops[GGML_OP_SUB] = run;
    stop_ops[GGML_OP_ADD] = stop_ops[GGML_OP_MUL] = stop_ops[GGML_OP_SQR] = stop_ops[GGML_OP_SUB] =
        run;
    const ggmlc_op_fn *tables[N_DEVS] = {cpu_ops, stop_ops};
    ggml_backend_reg_t reg = ggmlc_reg_new("fallbacktest", &reg_iface, NULL);
    for (int d = 0; d < N_DEVS; d++) {
        const struct ggmlc_device_iface iface = {
            .struct_size = sizeof iface,
            .get_name = dev_name,
            .get_description = dev_name,
            .get_memory = dev_memory,
            .get_type = dev_type,
            .init_backend = dev_init,
            .get_buffer_type = dev_buft,
            .ops = tables[d],
            .n_ops = GGML_OP_COUNT,
            .supports_op = d == DEV_STOP ? stop_supports : NULL,
            .supports_buft = dev_supports_buft,
        };
        ggml_backend_dev_t dev = ggmlc_device_new(reg, &iface, &ids[d]);
        if (d == DEV_STOP) {
            static const struct ggmlc_buft_iface biface = {
                .struct_size = sizeof biface,
                .get_name = stop_buft_name,
                .alloc_buffer = stop_alloc,
                .get_alignment = stop_align,
            };
            stop_buft = ggmlc_buft_new(dev, &biface, NULL);
            stop_backend = ggml_backend_dev_init(dev, NULL);
        }
    }
    ggml_backend_register(reg); /* so that the fallback finds the "cpu" device */
}

static bool ran(const char *node, const char *dev) {
    char want[GGML_MAX_NAME + 16];
    snprintf(want, sizeof want, "%s@%s", node, dev);
    for (int i = 0; i < n_ran; i++)
        if (strcmp(ran_on[i], want) == 0) return true;
    return false;
}

static struct ggml_tensor *named(struct ggml_tensor *t, const char *name) {
    return ggml_set_name(t, name);
}

#define N 7

/* e = (sqr(x + y) * y)^2 + x on "stop": nodes a, b (SQR), c, d (SQR), e. */
static void test_stops_resume(void) {
    struct ggml_context *ctx = ggml_init(
        (struct ggml_init_params){16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N),
                       *y = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
    struct ggml_tensor *a = named(ggml_add(ctx, x, y), "a"), *b = named(ggml_sqr(ctx, a), "b");
    struct ggml_tensor *c = named(ggml_mul(ctx, b, y), "c"), *d = named(ggml_sqr(ctx, c), "d");
    struct ggml_tensor *e = named(ggml_add(ctx, d, x), "e");
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, e);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, stop_backend);
    float xv[N], yv[N], got[N], want[N];
    for (int i = 0; i < N; i++) {
        xv[i] = 0.5f * (float)i - 1.0f;
        yv[i] = 0.25f * (float)i + 0.5f;
        const float s = (xv[i] + yv[i]) * (xv[i] + yv[i]) * yv[i];
        want[i] = s * s + xv[i];
    }
    ggml_backend_tensor_set(x, xv, 0, sizeof xv);
    ggml_backend_tensor_set(y, yv, 0, sizeof yv);
    for (int round = 0; round < 3; round++) {
        n_ran = n_calls = 0;
        const enum ggml_status st = ggml_backend_graph_compute(stop_backend, g);
        ggml_backend_tensor_get(e, got, 0, sizeof got);
        bool right = st == GGML_STATUS_SUCCESS;
        for (int i = 0; i < N; i++) right &= got[i] == want[i];
        if (round) continue;
        tap_ok(right, "a graph the backend stops in twice computes right (%s)",
               st == GGML_STATUS_SUCCESS ? "ok" : ggmlc_last_error());
        tap_ok(n_calls == 3 && calls_from[0] == 0 && calls_from[1] == 2 && calls_from[2] == 4,
               "graph_compute_from called from nodes 0, 2, 4 (%d calls)", n_calls);
        tap_ok(ran("a", "stop") && ran("b", "cpu") && ran("c", "stop") && ran("d", "cpu") &&
                   ran("e", "stop"),
               "the stopped nodes ran on the CPU, the others on the backend");
    }
    tap_ok(n_cpu_backends == 1,
           "one CPU backend for six fallen-back nodes in three computes (%d made)", n_cpu_backends);

    /* the plugin reports an index outside [first, n]: an error, no crash */
    bad_stop = 99;
    const enum ggml_status st = ggml_backend_graph_compute(stop_backend, g);
    tap_ok(st == GGML_STATUS_FAILED && strstr(ggmlc_last_error(), "outside"),
           "a stop outside the graph is refused: %s", ggmlc_last_error());
    bad_stop = -1;
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

/* A declined node (SUB) goes through the scheduler, with the same cached CPU backend. */
static void test_declined_node(void) {
    struct ggml_context *ctx = ggml_init(
        (struct ggml_init_params){16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N),
                       *y = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
    struct ggml_tensor *s = named(ggml_sub(ctx, x, y), "s"), *m = named(ggml_mul(ctx, s, x), "m");
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, m);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, stop_backend);
    float xv[N], yv[N], got[N];
    for (int i = 0; i < N; i++) xv[i] = (float)i - 3.0f, yv[i] = 0.5f * (float)i;
    ggml_backend_tensor_set(x, xv, 0, sizeof xv);
    ggml_backend_tensor_set(y, yv, 0, sizeof yv);
    bool right = true;
    for (int round = 0; round < 2; round++) {
        n_ran = 0;
        right &= ggml_backend_graph_compute(stop_backend, g) == GGML_STATUS_SUCCESS;
        ggml_backend_tensor_get(m, got, 0, sizeof got);
        for (int i = 0; i < N; i++) right &= got[i] == (xv[i] - yv[i]) * xv[i];
    }
    tap_ok(right && ran("s", "cpu") && ran("m", "stop"),
           "a declined SUB runs on the CPU through the scheduler, twice");
    tap_ok(n_cpu_backends == 1, "still one CPU backend (%d made)", n_cpu_backends);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

int main(void) {
    /* no plugin: the fallback must find the test's own "cpu" device */
    static char config[] = "/tmp/test-fallback-XXXXXX";
    const int fd = mkstemp(config);
    if (fd < 0 || write(fd, "[ggmlc]\nbackends =\n", 19) != 19) return 1;
    close(fd);
    setenv("GGMLC_CONFIG", config, 1);
    make_devices();
    unlink(config);
    test_stops_resume();
    test_declined_node();
    ggml_backend_free(stop_backend);
    tap_ok(n_cpu_backends_freed == 1, "freeing the backend freed its CPU backend (%d freed)",
           n_cpu_backends_freed);
    return tap_done();
}
