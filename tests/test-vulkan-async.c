/*
 * test-vulkan-async.c - ggml_backend_graph_compute_async and ggml_backend_synchronize on
 * Vulkan (lavapipe in CI): compute_async returns once the work is submitted, synchronize
 * waits for it, transfers wait by themselves, and two devices compute at the same time.
 *
 * The second device is a second instance of the same Vulkan device: a copy of the plugin
 * loaded under another name (its own VkInstance and VkDevice).  Results are compared with
 * the CPU backend on the same graph: a chain of matrix products, heavy enough (about 0.13
 * GFLOP) that waiting for it is measurable against submitting it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggml.h"
#include "ggmlc.h"
#include "testutil.h"

#define DIM    256
#define LAYERS 4

/* out = W^LAYERS x (x is DIM x DIM) on one backend. */
struct chain {
    struct ggml_context *ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor *w, *x, *out;
    struct ggml_cgraph *graph;
};

static float w_data[DIM * DIM], x_data[DIM * DIM], x2_data[DIM * DIM];

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool chain_new(struct chain *c, ggml_backend_t backend) {
    const size_t mem = (LAYERS + 8) * ggml_tensor_overhead() + ggml_graph_overhead();
    c->ctx = ggml_init((struct ggml_init_params){mem, NULL, true});
    c->w = ggml_new_tensor_2d(c->ctx, GGML_TYPE_F32, DIM, DIM);
    c->x = ggml_new_tensor_2d(c->ctx, GGML_TYPE_F32, DIM, DIM);
    struct ggml_tensor *h = c->x;
    for (int l = 0; l < LAYERS; l++) h = ggml_mul_mat(c->ctx, c->w, h);
    c->out = h;
    c->graph = ggml_new_graph(c->ctx);
    ggml_build_forward_expand(c->graph, c->out);
    c->buf = ggml_backend_alloc_ctx_tensors(c->ctx, backend);
    if (!c->buf) return false;
    ggml_backend_tensor_set(c->w, w_data, 0, sizeof w_data);
    ggml_backend_tensor_set(c->x, x_data, 0, sizeof x_data);
    return true;
}

static void chain_free(struct chain *c) {
    ggml_backend_buffer_free(c->buf);
    ggml_free(c->ctx);
}

static float got[DIM * DIM], want[DIM * DIM], want2[DIM * DIM];

/* The reference results for x and x2, on the CPU. */
static bool reference(ggml_backend_t cpu) {
    struct chain c;
    bool ok = chain_new(&c, cpu) && ggml_backend_graph_compute(cpu, c.graph) == GGML_STATUS_SUCCESS;
    ggml_backend_tensor_get(c.out, want, 0, sizeof want);
    ggml_backend_tensor_set(c.x, x2_data, 0, sizeof x2_data);
    ok = ok && ggml_backend_graph_compute(cpu, c.graph) == GGML_STATUS_SUCCESS;
    ggml_backend_tensor_get(c.out, want2, 0, sizeof want2);
    chain_free(&c);
    return ok;
}

/* compute_async returns before the work is done; synchronize waits; get reads the result. */
static void check_one_backend(ggml_backend_t vk) {
    struct chain c;
    if (!tap_ok(chain_new(&c, vk), "the chain is allocated on %s", ggml_backend_name(vk))) return;
    /* a first run builds the pipelines, which would dominate the times below */
    ggml_backend_graph_compute(vk, c.graph);
    const double t0 = now_s();
    const enum ggml_status st = ggml_backend_graph_compute_async(vk, c.graph);
    const double t1 = now_s();
    ggml_backend_synchronize(vk);
    const double t2 = now_s();
    tap_diag("%s: compute_async %.2f ms, synchronize %.2f ms", ggml_backend_name(vk),
             1e3 * (t1 - t0), 1e3 * (t2 - t1));
    tap_ok(st == GGML_STATUS_SUCCESS && t1 - t0 < t2 - t1,
           "compute_async returns before the work is done (%.2f ms, then %.2f ms of waiting)",
           1e3 * (t1 - t0), 1e3 * (t2 - t1));
    ggml_backend_tensor_get(c.out, got, 0, sizeof got);
    ok_nmse(got, want, DIM * DIM, 1e-6, "after synchronize the result equals the CPU's");

    /* no synchronize: get waits for the work by itself; a set while the work is in flight
     * waits for it too, so the running graph still reads the old input */
    memset(got, 0, sizeof got);
    ggml_backend_graph_compute_async(vk, c.graph);
    ggml_backend_tensor_get(c.out, got, 0, sizeof got);
    ok_nmse(got, want, DIM * DIM, 1e-6, "get right after compute_async reads the finished result");
    ggml_backend_graph_compute_async(vk, c.graph);
    ggml_backend_tensor_set(c.x, x2_data, 0, sizeof x2_data);
    ggml_backend_synchronize(vk);
    ggml_backend_tensor_get(c.out, got, 0, sizeof got);
    ok_nmse(got, want, DIM * DIM, 1e-6,
            "a set during compute_async does not reach the running graph");
    ggml_backend_graph_compute(vk, c.graph);
    ggml_backend_tensor_get(c.out, got, 0, sizeof got);
    ok_nmse(got, want2, DIM * DIM, 1e-6, "the next compute reads the new input");
    chain_free(&c);
}

/* Two backends, each given its graph before either is waited for; on two devices (concurrent)
 * the second submit does not wait for the first graph. */
static void check_two_backends(ggml_backend_t a, ggml_backend_t b, const char *what,
                               bool concurrent) {
    struct chain ca, cb;
    if (!tap_ok(chain_new(&ca, a) && chain_new(&cb, b), "%s: both chains allocated", what)) return;
    ggml_backend_tensor_set(cb.x, x2_data, 0, sizeof x2_data);
    ggml_backend_graph_compute(a, ca.graph); /* pipelines built */
    ggml_backend_graph_compute(b, cb.graph);
    const double t0 = now_s();
    const enum ggml_status sa = ggml_backend_graph_compute_async(a, ca.graph);
    const enum ggml_status sb = ggml_backend_graph_compute_async(b, cb.graph);
    const double t1 = now_s();
    ggml_backend_synchronize(a);
    ggml_backend_synchronize(b);
    const double t2 = now_s();
    tap_diag("%s: both submitted in %.2f ms, both done %.2f ms later", what, 1e3 * (t1 - t0),
             1e3 * (t2 - t1));
    tap_ok(sa == GGML_STATUS_SUCCESS && sb == GGML_STATUS_SUCCESS, "%s: both compute_async succeed",
           what);
    if (concurrent)
        tap_ok(t1 - t0 < t2 - t1, "%s: both were submitted before either finished", what);
    ggml_backend_tensor_get(ca.out, got, 0, sizeof got);
    ok_nmse(got, want, DIM * DIM, 1e-6, "%s: the first backend's result equals the CPU's", what);
    ggml_backend_tensor_get(cb.out, got, 0, sizeof got);
    ok_nmse(got, want2, DIM * DIM, 1e-6, "%s: the second backend's result equals the CPU's", what);
    chain_free(&ca);
    chain_free(&cb);
}

/* A second instance of the Vulkan plugin: a copy of the library under another name. */
static ggml_backend_reg_t load_second_instance(const char *build_dir, char *dir, char *copy) {
    char src[1024], cmd[3 * 1024];
    snprintf(src, sizeof src, "%s/tests/plugin-copies/vulkan.so", build_dir);
    if (!mkdtemp(dir)) return NULL;
    snprintf(copy, 1024, "%s/vulkan2.so", dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, copy);
    return system(cmd) == 0 ? ggml_backend_load(copy) : NULL;
}

int main(void) {
    const char *build_dir = test_vulkan_env();
    if (!build_dir) return tap_skip_all("GGMLC_BUILDDIR is not set");
    ggmlc_init();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) return tap_skip_all("no Vulkan device");
    test_seed(25);
    const float a = 1.7320508f / 16.0f; /* sqrt(3 / DIM): the chain keeps its scale */
    test_fill_uniform(w_data, DIM * DIM, -a, a);
    test_fill_uniform(x_data, DIM * DIM, -1.0f, 1.0f);
    test_fill_uniform(x2_data, DIM * DIM, -1.0f, 1.0f);
    ggml_backend_t cpu = ggml_backend_init_by_name("cpu", NULL);
    ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, 0);
    ggml_backend_t vk = ggml_backend_dev_init(dev, NULL),
                   vk_same = ggml_backend_dev_init(dev, NULL);
    if (tap_ok(cpu && vk && vk_same && reference(cpu),
               "the CPU reference and two Vulkan backends")) {
        check_one_backend(vk);
        check_two_backends(vk, vk_same, "two backends of one device", false);
        char dir[] = "/tmp/test-vulkan-async-XXXXXX", copy[1024] = "";
        ggml_backend_reg_t reg2 = load_second_instance(build_dir, dir, copy);
        ggml_backend_t vk2 = reg2 && ggml_backend_reg_dev_count(reg2)
                                 ? ggml_backend_dev_init(ggml_backend_reg_dev_get(reg2, 0), NULL)
                                 : NULL;
        if (tap_ok(vk2 != NULL, "a second instance of the device (%s)",
                   vk2 ? "ok" : ggmlc_last_error()))
            check_two_backends(vk, vk2, "two device instances", true);
        ggml_backend_free(vk2);
        if (copy[0]) unlink(copy);
        rmdir(dir);
    }
    ggml_backend_free(vk);
    ggml_backend_free(vk_same);
    ggml_backend_free(cpu);
    ggmlc_shutdown();
    return tap_done();
}
